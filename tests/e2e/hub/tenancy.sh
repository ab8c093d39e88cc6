#!/usr/bin/env bash
# tenancy.sh - an attacker tenant, end to end on the lab (issue 34, "How we
# will know"; docs/security.md). Namespace ANS on onprem enforces Pod
# Security `restricted`; its ServiceAccount may only create, read and delete
# Jobs there, and every attacker Job is created through that ServiceAccount's
# kubeconfig. Namespace VNS is the victim: objects under
# s3://datasets/VNS/private/ and an open multipart upload under
# s3://checkpoints/VNS/ in onprem's store, a Secret, its own team. The hub
# reaches every member as a ServiceAccount bound to deploy/rbac's
# spillway-member role, so the API servers' audit logs show what it did.
# The hub config (tenancy.grants, buckets) is the test's own: ANS may read
# s3://datasets/ANS/ and write s3://checkpoints/ANS/ and s3://SCRATCH/ANS/
# as team ANS, at the default priorities; SCRATCH has no name in the cloud
# regions. Each attempt is asserted from outside the hub:
#   1. inputs under the victim's prefix: blocked (NotGranted) naming the
#      input, the same words whether the prefix exists or not; nothing of
#      the victim's prefix in the us-east-1 or us-west-2 store;
#   2. outputs under the victim's prefix: blocked; the victim's multipart
#      upload still open;
#   3. a privileged, hostNetwork, hostPath / pod: blocked with home's
#      PodSecurity message (BurstRefused); no such pod on a cloud cluster;
#   4. the cloud namespace ANS, made by the hub for a benign burst (home's
#      Pod Security labels, spillway.io/made-for), re-marked as made for
#      another origin: after a hub restart a new Job is blocked naming it;
#   5. imagePullSecrets naming a Secret ANS lacks (VNS has it): blocked
#      naming it; a secret volume named ../../kube-system/secrets/x: blocked
#      as not a DNS-1123 name;
#   6. spillway.io/team naming VNS's team, spillway.io/priority production:
#      blocked;
#   7. outputs in a granted bucket with no name in the cloud regions:
#      blocked; nothing written to a bucket of that name in the cloud stores.
#   9. a namespace with no grant yet, as every one is on upgrading from a
#      hub without grants: a Job without data bursts and completes once,
#      one with inputs is blocked saying the namespace has no grant;
#   8. what an older hub leaves (docs/security.md, "Upgrading"): a Job in
#      flight across a restart with its record stripped of the outputs
#      field and its mirror of the proof is followed once, its outputs
#      held to the grant and copied home.
#  10. team budgets (docs/hub.md, "Team budgets"): namespace BNS's team
#      BTEAM has $5 a month, spent already (the spend entry of a $10 run
#      this month, there before the restart behind 1,500 other runs' and
#      read by the new leader page by page); a
#      burstable Job of BNS stays at home blocked with BudgetExhausted, no
#      mirror anywhere,
#      while team ANS's Jobs (a budget of $100,000) burst and complete;
#      spillctl report budget and /metrics show both teams' figures.
# Then the audit logs: the hub's identity made no request in VNS, kube-system
# or any namespace but ANS (cluster-wide list and watch aside); the attacker
# Jobs were all created by the attacker's identity. Last, the same Jobs
# with what the grant allows burst and complete once (the watcher), the
# attempts stay blocked with no mirror anywhere.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PY=python3
ROLE="$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml"
CLUSTERS=(onprem cloud-spot cloud-ondemand)
HUB_SA_NS=sw-tenancy-hub
HUB_USER="system:serviceaccount:$HUB_SA_NS:spillway-hub"
PORT=19464
HUB_NO_TENANCY=1

UPLOAD=""
ten_cleanup() {
    local c
    if [ -n "${VNS:-}" ]; then
        [ -z "$UPLOAD" ] || s3req DELETE "$SW_LAB_S3_ENDPOINT_ONPREM" onprem "checkpoints/$VNS/x/ckpt.bin?uploadId=$UPLOAD" >/dev/null 2>&1 || true
        "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem rm datasets "$VNS/" >/dev/null 2>&1 || true
        "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem rm datasets "$ANS/" >/dev/null 2>&1 || true
        "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem rm checkpoints "$ANS/" >/dev/null 2>&1 || true
        for ep in "$SW_LAB_S3_ENDPOINT_US_EAST_1 us-east-1" "$SW_LAB_S3_ENDPOINT_US_WEST_2 us-west-2"; do
            # shellcheck disable=SC2086
            for bp in "datasets $ANS/" "datasets $VNS/" "checkpoints $ANS/" "checkpoints $VNS/" "$SCRATCH $ANS/"; do
                "$S3TOOL" $ep rm $bp >/dev/null 2>&1 || true
            done
        done
    fi
    hub_cleanup
    for c in "${CLUSTERS[@]}"; do
        kc "$c" delete clusterrolebinding sw-tenancy-hub --ignore-not-found >/dev/null 2>&1 || true
        kc "$c" delete namespace "$HUB_SA_NS" --wait=false --ignore-not-found >/dev/null 2>&1 || true
    done
}

hub_setup tenancy
trap ten_cleanup EXIT
T0=$(date +%s) # after the lab's hub lock: the test's own time
SUF=$(echo "$NS" | cut -d- -f2-)
ANS="atk-$SUF"
VNS="vic-$SUF"
VTEAM="vteam-$SUF"
SCRATCH="scratch-$SUF"
UNS="nogrant-$SUF"
BNS="budget-$SUF"
BTEAM="bteam-$SUF"
HUB_EXTRA_NS+=("$ANS" "$VNS" "$UNS" "$BNS")
AKC="$HUB_TMP/attacker.kubeconfig"
akc() { "$SW_LAB_KUBECTL" --kubeconfig "$AKC" --request-timeout=20s "$@"; }
# fail_later MSG: a failure that does not stop the attempts after it; the
# test fails at its end, naming each.
LATER=()
fail_later() {
    echo "FAIL (at the end): $*" >&2
    LATER+=("$*")
}

for c in "${CLUSTERS[@]}"; do
    for f in "$SW_LAB_DIR/$c/audit.log"; do
        [ -f "$f" ] || fail "no audit log $f: the lab's API servers write one (tests/testbed/audit-policy.yaml)"
    done
done
SINCE=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)

# ---- the hub's identity: a ServiceAccount with the member role --------------
for c in "${CLUSTERS[@]}"; do
    kc "$c" delete clusterrolebinding sw-tenancy-hub --ignore-not-found >/dev/null
    kc "$c" delete namespace "$HUB_SA_NS" --ignore-not-found --timeout=60s >/dev/null
    kc "$c" apply -f "$ROLE" >/dev/null
    kc "$c" create namespace "$HUB_SA_NS" >/dev/null
    kc "$c" create serviceaccount spillway-hub -n "$HUB_SA_NS" >/dev/null
    kc "$c" create clusterrolebinding sw-tenancy-hub --clusterrole=spillway-member \
        --serviceaccount="$HUB_SA_NS:spillway-hub" >/dev/null
done
# sa_config CLUSTER NS SA FILE: a kubeconfig holding only SA's token.
sa_config() {
    cat >"$4" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: $1
  cluster:
    server: $(kc "$1" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
    certificate-authority-data: $(base64 -w0 "$SW_LAB_DIR/$1/pki/ca.crt")
users:
- name: $3
  user:
    token: $(kc "$1" create token "$3" -n "$2" --duration=1h)
contexts:
- name: $1
  context: {cluster: $1, user: $3}
current-context: $1
YAML
    chmod 600 "$4"
}
for c in "${CLUSTERS[@]}"; do sa_config "$c" "$HUB_SA_NS" spillway-hub "$HUB_TMP/$c-hub.kubeconfig"; done
"$SPILLCTL" cluster add onprem --replace --kubeconfig "$HUB_TMP/onprem-hub.kubeconfig" --role onprem \
    --region onprem --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >/dev/null
"$SPILLCTL" cluster add cloud-spot --replace --kubeconfig "$HUB_TMP/cloud-spot-hub.kubeconfig" --role cloud \
    --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
"$SPILLCTL" cluster add cloud-ondemand --replace --kubeconfig "$HUB_TMP/cloud-ondemand-hub.kubeconfig" --role cloud \
    --region us-west-2 --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null

# ---- the tenants ------------------------------------------------------------
kc onprem create namespace "$ANS" >/dev/null
kc onprem label namespace "$ANS" pod-security.kubernetes.io/enforce=restricted >/dev/null
kc onprem create namespace "$VNS" >/dev/null
kc onprem create namespace "$UNS" >/dev/null
kc onprem create namespace "$BNS" >/dev/null
kc onprem create serviceaccount attacker -n "$ANS" >/dev/null
kc onprem create role jobs-only -n "$ANS" --verb=create,get,list,watch,delete --resource=jobs.batch >/dev/null
kc onprem create rolebinding jobs-only -n "$ANS" --role=jobs-only --serviceaccount="$ANS:attacker" >/dev/null
sa_config onprem "$ANS" attacker "$AKC"
ATK_USER="system:serviceaccount:$ANS:attacker"
for _ in $(seq 1 20); do [ "$(akc auth can-i create jobs.batch -n "$ANS" 2>/dev/null)" = yes ] && break; sleep 0.25; done
[ "$(akc auth can-i create jobs.batch -n "$ANS" 2>/dev/null || true)" = yes ] || hub_fail "the attacker cannot create Jobs in $ANS"
for what in "create pods -n $ANS" "get secrets -n $ANS" "create jobs.batch -n $VNS" "get jobs.batch -n $VNS" "patch jobs.batch -n $ANS"; do
    # shellcheck disable=SC2086
    [ "$(akc auth can-i $what 2>/dev/null || true)" = no ] || hub_fail "the attacker may $what"
done
# The victim's data, upload and Secret.
s3on() { "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem "$@" >/dev/null; }
s3on put datasets "$VNS/private/weights-0.bin" 65536 1
s3on put datasets "$VNS/private/weights-1.bin" 4096 2
s3on put datasets "$ANS/in/part-0.bin" 65536 3
# s3req METHOD ENDPOINT REGION PATH: a signed request apart from the hub
# (curl's SigV4 signs the query as written: its parameters sorted, each
# with "=", and "/" in values as %2F, as the store canonicalises them).
s3req() {
    curl -sf -X "$1" --aws-sigv4 "aws:amz:$3:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$2/$4"
}
# s3keys ENDPOINT REGION BUCKET PREFIX: the keys under PREFIX (fails when
# the store does not answer: an error is not "empty").
s3keys() {
    local out
    out=$(s3req GET "$1" "$2" "$3?list-type=2&prefix=${4//\//%2F}") || hub_fail "cannot list s3://$3/$4 in $2's store"
    echo "$out" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g' || true
}
UPLOAD=$(s3req POST "$SW_LAB_S3_ENDPOINT_ONPREM" onprem "checkpoints/$VNS/x/ckpt.bin?uploads=" |
    grep -o '<UploadId>[^<]*</UploadId>' | sed 's/<[^>]*>//g') || true
[ -n "$UPLOAD" ] || hub_fail "could not start the victim's multipart upload"
[ "$("$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem uploads checkpoints "$VNS/")" = 1 ] ||
    hub_fail "the victim's multipart upload is not listed"
kc onprem create secret generic victim-pull -n "$VNS" --from-literal=token=victim >/dev/null
[ -z "$(s3keys "$SW_LAB_S3_ENDPOINT_ONPREM" onprem datasets "$VNS/private/" | grep -v "^$VNS/private/weights-[01].bin$")" ] &&
    [ "$(s3keys "$SW_LAB_S3_ENDPOINT_ONPREM" onprem datasets "$VNS/private/" | wc -l)" = 2 ] ||
    hub_fail "the listing helper does not see the victim's 2 objects in onprem's store"
# A bucket the grant covers but no buckets: entry names in the cloud: it
# exists in every store (in the cloud, as someone else's would).
for ep in "$SW_LAB_S3_ENDPOINT_ONPREM onprem" "$SW_LAB_S3_ENDPOINT_US_EAST_1 us-east-1" "$SW_LAB_S3_ENDPOINT_US_WEST_2 us-west-2"; do
    # shellcheck disable=SC2086
    "$S3TOOL" $ep mb "$SCRATCH" >/dev/null
done

# ---- the hub config: buckets and grants of the test's own -------------------
hub_config "$HUB_TMP/hub.yaml" "$PORT"
cat >>"$HUB_TMP/hub.yaml" <<YAML
buckets:
  datasets: {us-east-1: datasets, us-west-2: datasets}
  checkpoints: {us-east-1: checkpoints, us-west-2: checkpoints}
tenancy:
  grants:
  - cluster: onprem
    namespace: $ANS
    teams: [$ANS]
    read: ["s3://datasets/$ANS/"]
    write: ["s3://checkpoints/$ANS/", "s3://$SCRATCH/$ANS/"]
  - cluster: onprem
    namespace: $VNS
    teams: [$VTEAM]
    priorities: [training, production]
    read: ["s3://datasets/$VNS/"]
    write: ["s3://checkpoints/$VNS/"]
  - cluster: onprem
    namespace: $BNS
    teams: [$BTEAM]
budgets:
- team: $BTEAM
  amount: 5
- team: $ANS
  amount: 100000
  period: month
YAML

# ---- the Jobs ---------------------------------------------------------------
RESTRICTED_CSEC="{allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}"
# job NAME FORM ANNOTATIONS [POD_EXTRA] [CONTAINER_EXTRA] [CONTAINER_SECURITY]:
# a cloud-first Job of one 1-GPU pod of 3 s (JOB_DELAY), delegated (FORM delegated) or
# annotation-only; its pod meets Pod Security restricted unless told
# otherwise. ANNOTATIONS, POD_EXTRA and CONTAINER_EXTRA are YAML lines
# indented 4, 6 and 8.
job() {
    local managed=""
    [ "$2" = delegated ] && managed="  managedBy: spillway.io/hub"
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  annotations:
    spillway.io/burst: cloud-first
    spillway.io/expected-runtime: 1h
${3:-}
spec:
$managed
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "${JOB_DELAY:-3s}"}
    spec:
      restartPolicy: Never
      securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
${4:-}
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "1"}}
        securityContext: ${6:-$RESTRICTED_CSEC}
${5:-}
YAML
}
# submit NAME ARGS...: job NAME ARGS... created through the attacker's
# kubeconfig; the API server's warnings kept in $HUB_TMP/warn-NAME.
submit() {
    local n=$1
    job "$@" | akc create -n "$ANS" -f - >/dev/null 2>"$HUB_TMP/warn-$n" ||
        hub_fail "the attacker could not create Job $n: $(cat "$HUB_TMP/warn-$n")"
}
# Home saturated, so that annotation-only Jobs wait there (non-burstable
# fillers in $NS: 2 x 4 GPUs).
for f in filler-0 filler-1; do
    cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: $f}
spec:
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3600s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: hold
        image: registry.example/hold:1
        resources: {limits: {nvidia.com/gpu: "4"}}
YAML
done
for _ in $(seq 1 60); do
    [ "$(kc onprem get pods -n "$NS" --field-selector=status.phase=Running -o name | wc -l)" = 2 ] && break
    sleep 0.5
done
[ "$(kc onprem get pods -n "$NS" --field-selector=status.phase=Running -o name | wc -l)" = 2 ] ||
    hub_fail "onprem was not saturated"

NS_WATCH=$NS
NS=$ANS watcher_start
NS=$NS_WATCH
hub_start "$HUB_TMP/hub.yaml"
for _ in $(seq 1 80); do [ "$(leader_of "$PORT")" = 1 ] && break; sleep 0.25; done
[ "$(leader_of "$PORT")" = 1 ] || hub_fail "the hub did not take the lease"

ANN_IN_V="    spillway.io/inputs: s3://datasets/$VNS/private/"
ANN_OUT_V="    spillway.io/outputs: s3://checkpoints/$VNS/x/"
submit ok-first delegated
submit in-a annotation "$ANN_IN_V"
submit in-d delegated "$ANN_IN_V"
submit in-none delegated "    spillway.io/inputs: s3://datasets/$VNS/nothing-here/"
submit out-a annotation "$ANN_OUT_V"
submit out-d delegated "$ANN_OUT_V"
submit priv delegated "" "      hostNetwork: true
      volumes: [{name: root, hostPath: {path: /}}]" \
    "        volumeMounts: [{name: root, mountPath: /host}]" "{privileged: true, allowPrivilegeEscalation: true}"
submit pull delegated "" "      imagePullSecrets: [{name: victim-pull}]"
TRAVERSAL=1
if ! job walk delegated "" "      volumes: [{name: s, secret: {secretName: ../../kube-system/secrets/x}}]" \
    "        volumeMounts: [{name: s, mountPath: /s}]" | akc create -n "$ANS" -f - >/dev/null 2>"$HUB_TMP/warn-walk"; then
    # The API server refused the Job itself: the name never reaches the hub.
    TRAVERSAL=""
    echo "NOTE: the API server refused a Job whose secret volume is ../../kube-system/secrets/x; skipping that sub-case: $(cat "$HUB_TMP/warn-walk")"
fi
submit team delegated "    spillway.io/team: $VTEAM"
submit prod delegated "    spillway.io/priority: production"
submit unmapped delegated "    spillway.io/outputs: s3://$SCRATCH/$ANS/out/"
# 9. Namespace UNS has no grant, as every namespace has on the day a hub
# without grants is upgraded (created by the platform, not the attacker).
job ng-plain delegated | kc onprem create -n "$UNS" -f - >/dev/null
job ng-in delegated "    spillway.io/inputs: s3://datasets/$UNS/in/" | kc onprem create -n "$UNS" -f - >/dev/null

# origin_ann NAME KEY: an annotation of origin NAME, as its author reads it.
origin_ann() {
    akc get job "$1" -n "$ANS" -o jsonpath="{.metadata.annotations.spillway\.io/$2}"
}
# mirrors NAME: how many Jobs in any cluster name origin NAME's UID.
mirrors() {
    local uid c n=0
    uid=$(akc get job "$1" -n "$ANS" -o jsonpath='{.metadata.uid}')
    for c in "${CLUSTERS[@]}"; do
        n=$((n + $(kc "$c" get jobs -A -l "spillway.io/origin-uid=$uid" -o name | wc -l)))
    done
    echo "$n"
}
# blocked NAME EVENT TEXT...: origin NAME shows spillway.io/state blocked
# (within 60 s) with a spillway.io/reason holding each TEXT, a Warning
# Event EVENT, for a delegated Job the condition SpillwayBlocked, and no
# mirror anywhere. Prints the reason.
blocked() {
    local n=$1 ev=$2 st="" why t i
    shift 2
    for i in $(seq 1 240); do
        st=$(origin_ann "$n" state)
        [ "$st" = blocked ] && break
        sleep 0.25
    done
    [ "$st" = blocked ] || hub_fail "$n: spillway.io/state is \"$st\" after 60 s, not blocked (reason \"$(origin_ann "$n" reason)\")"
    why=$(origin_ann "$n" reason)
    for t in "$@"; do
        grep -qF -- "$t" <<<"$why" || hub_fail "$n: the reason \"$why\" does not say \"$t\""
    done
    for i in $(seq 1 40); do
        [ "$(kc onprem get events -n "$ANS" --field-selector "involvedObject.name=$n,reason=$ev,type=Warning" -o name | wc -l)" -ge 1 ] && break
        sleep 0.25
    done
    [ "$i" -lt 40 ] || hub_fail "$n: no Warning Event $ev; its Events: $(kc onprem get events -n "$ANS" --field-selector "involvedObject.name=$n" -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}')"
    if [ -n "$(akc get job "$n" -n "$ANS" -o jsonpath='{.spec.managedBy}')" ]; then
        for i in $(seq 1 40); do
            [ "$(akc get job "$n" -n "$ANS" -o jsonpath='{.status.conditions[?(@.type=="SpillwayBlocked")].status}')" = True ] && break
            sleep 0.25
        done
        [ "$i" -lt 40 ] || hub_fail "$n: no condition SpillwayBlocked on the delegated origin"
    fi
    [ "$(mirrors "$n")" = 0 ] || hub_fail "$n: blocked, yet it has a mirror"
    echo "$why"
}

# ---- 1. inputs under the victim's prefix ------------------------------------
r=$(blocked in-a NotGranted "spillway.io/inputs" "s3://datasets/$VNS/private/")
blocked in-d NotGranted "spillway.io/inputs" "s3://datasets/$VNS/private/" >/dev/null
rn=$(blocked in-none NotGranted "spillway.io/inputs" "s3://datasets/$VNS/nothing-here/")
[ "${rn//nothing-here/private}" = "$r" ] ||
    hub_fail "the refusal tells an existing prefix from a missing one: \"$r\" vs \"$rn\""
pass "1. inputs s3://datasets/$VNS/private/ (annotation-only and delegated): blocked, \"$r\"; the same words for a prefix that does not exist"

# ---- 2. outputs under the victim's prefix -----------------------------------
r=$(blocked out-a NotGranted "spillway.io/outputs" "s3://checkpoints/$VNS/x/")
blocked out-d NotGranted "spillway.io/outputs" "s3://checkpoints/$VNS/x/" >/dev/null
pass "2. outputs s3://checkpoints/$VNS/x/: blocked, \"$r\""

# ---- 3. a privileged pod ----------------------------------------------------
grep -q "would violate PodSecurity \"restricted" "$HUB_TMP/warn-priv" ||
    hub_fail "home did not warn about the privileged Job: $(cat "$HUB_TMP/warn-priv")"
r=$(blocked priv BurstRefused "home cluster onprem would not admit" "PodSecurity \"restricted" "privileged" "hostNetwork")
# The record's reason (and so the annotation) is cut; the Event is whole.
ev=$(kc onprem get events -n "$ANS" --field-selector involvedObject.name=priv,reason=BurstRefused -o jsonpath='{.items[*].message}')
grep -qF 'restricted volume type "hostPath"' <<<"$ev" ||
    fail_later "priv: the BurstRefused Event does not carry admission's message whole (the hostPath volume unnamed): $ev"
pass "3. privileged, hostNetwork, hostPath / pod: blocked with home's admission, Event \"$ev\""

# ---- 5. Secrets -------------------------------------------------------------
r=$(blocked pull BurstRefused "Secret $ANS/victim-pull" "does not exist in cluster onprem")
for c in cloud-spot cloud-ondemand; do
    [ -z "$(kc "$c" get secrets -A --field-selector metadata.name=victim-pull -o name)" ] ||
        hub_fail "a Secret victim-pull exists in $c"
done
pass "5a. imagePullSecrets victim-pull (in $VNS, not in $ANS): blocked, \"$r\""
if [ -n "$TRAVERSAL" ]; then
    r=$(blocked walk BurstRefused "../../kube-system/secrets/x" "DNS-1123")
    pass "5b. secret volume ../../kube-system/secrets/x: blocked, \"$r\""
fi

# ---- 6. team and priority ---------------------------------------------------
r=$(blocked team NotGranted "spillway.io/team" "$VTEAM")
pass "6a. spillway.io/team $VTEAM (the victim's): blocked, \"$r\""
r=$(blocked prod NotGranted "spillway.io/priority" "production")
pass "6b. spillway.io/priority production: blocked, \"$r\""

# ---- 7. a bucket with no name in the cloud ------------------------------------
r=$(blocked unmapped BurstBlocked "bucket $SCRATCH has no name in region")
pass "7. outputs s3://$SCRATCH/$ANS/out/ (granted, no name in the cloud regions): blocked, \"$r\""

# ---- 4. namespaces (and 8. what an older hub left) ----------------------------
# 8. A Job in flight across the restart below as an older hub leaves one:
# its record without the outputs field, its mirror without a proof. The
# new hub follows the mirror, reads the outputs from the annotation, holds
# them to the grant and copies them home; the Job runs once.
JOB_DELAY=40s submit up-out delegated "    spillway.io/outputs: s3://checkpoints/$ANS/up/"
UPK="onprem/$ANS/up-out"
wait_record "$UPK" state running 90
[ -n "$(record_field "$UPK" outputs)" ] || hub_fail "up-out's record has no outputs field to take away: $(rcli GET "spillway:job:$UPK")"
UPC=$(record_field "$UPK" targetCluster) UPM=$(record_field "$UPK" mirror)
case $UPC in
cloud-spot) UPEP="$SW_LAB_S3_ENDPOINT_US_EAST_1 us-east-1" ;;
*) UPEP="$SW_LAB_S3_ENDPOINT_US_WEST_2 us-west-2" ;;
esac
# (What the Job writes, as burst.sh's do: under the attempt's own prefix.)
# shellcheck disable=SC2086
"$S3TOOL" $UPEP put checkpoints "$ANS/up/attempt-1/model.pt" 4096 7 >/dev/null
[ -n "$(kc "$UPC" get job "$UPM" -n "$ANS" -o jsonpath='{.metadata.annotations.spillway\.io/proof}')" ] ||
    hub_fail "up-out's mirror $UPM in $UPC carries no proof to take away"
akc wait --for=condition=complete job/ok-first -n "$ANS" --timeout=120s >/dev/null ||
    hub_fail "the benign Job ok-first did not complete (state \"$(origin_ann ok-first state)\", reason \"$(origin_ann ok-first reason)\")"
uid=$(akc get job ok-first -n "$ANS" -o jsonpath='{.metadata.uid}')
TC=""
for c in cloud-spot cloud-ondemand; do
    [ -n "$(kc "$c" get jobs -n "$ANS" -l "spillway.io/origin-uid=$uid" -o name 2>/dev/null)" ] && TC=$c
done
[ -n "$TC" ] || hub_fail "ok-first completed, but no mirror of it in a cloud cluster"
[ "$(kc "$TC" get namespace "$ANS" -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}')" = restricted ] ||
    hub_fail "namespace $ANS in $TC lacks home's pod-security enforce=restricted: $(kc "$TC" get namespace "$ANS" -o jsonpath='{.metadata.labels}')"
[ "$(kc "$TC" get namespace "$ANS" -o jsonpath='{.metadata.annotations.spillway\.io/made-for}')" = "onprem/$ANS" ] ||
    hub_fail "namespace $ANS in $TC is not marked spillway.io/made-for onprem/$ANS"
# The namespace re-marked as another origin's (and one in the other cloud
# cluster made so, in case the next Job goes there); the check is kept per
# hub process, so the hub restarts.
OC=cloud-ondemand
[ "$TC" = cloud-ondemand ] && OC=cloud-spot
MADE_OC=""
if ! kc "$OC" get namespace "$ANS" >/dev/null 2>&1; then
    kc "$OC" create namespace "$ANS" >/dev/null
    kc "$OC" label namespace "$ANS" pod-security.kubernetes.io/enforce=restricted >/dev/null
    MADE_OC=1
fi
for c in "$TC" "$OC"; do kc "$c" annotate namespace "$ANS" spillway.io/made-for="other/$ANS" --overwrite >/dev/null; done
kill -9 "$HUB_PID"
wait "$HUB_PID" 2>/dev/null || true
rcli SET "spillway:job:$UPK" "$(rcli GET "spillway:job:$UPK" | jq -c 'del(.outputs)')" >/dev/null
[ -z "$(record_field "$UPK" outputs)" ] || hub_fail "up-out's record still has its outputs field"
kc "$UPC" annotate job "$UPM" -n "$ANS" spillway.io/proof- >/dev/null
# 10. BTEAM's budget spent before the new leader starts: an ended record
# (ok-first's, made BNS's and BTEAM's) of a $10 run on spot that finished
# 5 s ago (1 GPU at $7,200 an hour for 5 s).
NOWMS=$(($(date +%s%3N)))
rcli GET "spillway:job:onprem/$ANS/ok-first" | jq -c --arg ns "$BNS" --arg team "$BTEAM" --argjson now "$NOWMS" \
    '.key = "onprem/\($ns)/spent-before" | .namespace = $ns | .name = "spent-before" | .uid = "budget-seed-\($ns)"
     | .team = $team | .capacity = "spot" | .state = "succeeded" | .gpus = 1 | .billedGpus = 1
     | .pricePerGpuHour = 7200 | .startedMs = ($now - 10000) | .finishedMs = ($now - 5000)' >"$HUB_TMP/seed.json"
[ -s "$HUB_TMP/seed.json" ] || hub_fail "no record of ok-first to seed BTEAM's spend from"
rcli ZADD spillway:ended "$((NOWMS - 5000))" "$(cat "$HUB_TMP/seed.json")" >/dev/null
# The budgets read its spend entry, behind 1,500 entries of other runs
# that ended just before it (more than a page, all at one score; of a
# namespace without a grant, counted for no budget), and one that does not
# parse: the read pages through all of them.
jq -c '{uid, cluster, namespace, team, capacity, billedGpus, pricePerGpuHour, startedMs, finishedMs}' \
    "$HUB_TMP/seed.json" >"$HUB_TMP/seed-spend.json"
FLOOD=()
for i in $(seq 1 1500); do
    FLOOD+=("$((NOWMS - 6000))" "{\"uid\":\"flood-$i\",\"cluster\":\"onprem\",\"namespace\":\"flood\",\"team\":\"\",\"capacity\":\"spot\",\"billedGpus\":1,\"pricePerGpuHour\":0.01,\"startedMs\":$((NOWMS - 7000)),\"finishedMs\":$((NOWMS - 6000))}")
done
rcli ZADD spillway:spend "${FLOOD[@]}" "$((NOWMS - 5500))" "not json" \
    "$((NOWMS - 5000))" "$(cat "$HUB_TMP/seed-spend.json")" >/dev/null
hub_start "$HUB_TMP/hub.yaml"
for _ in $(seq 1 80); do [ "$(leader_of "$PORT")" = 1 ] && break; sleep 0.25; done
[ "$(leader_of "$PORT")" = 1 ] || hub_fail "the restarted hub did not take the lease"
submit ns-taken delegated
r=$(blocked ns-taken BurstRefused "namespace $ANS exists in cluster" "made for other/$ANS")
kc "$TC" annotate namespace "$ANS" spillway.io/made-for="onprem/$ANS" --overwrite >/dev/null
if [ -n "$MADE_OC" ]; then
    kc "$OC" delete namespace "$ANS" --timeout=60s >/dev/null
else
    kc "$OC" annotate namespace "$ANS" spillway.io/made-for="onprem/$ANS" --overwrite >/dev/null
fi
pass "4. cloud namespace $ANS made by the hub in $TC (enforce=restricted, made-for onprem/$ANS); re-marked for other/$ANS, after a restart: blocked, \"$r\"; restored"

# ---- 10. team budgets --------------------------------------------------------
# A burstable Job of team BTEAM (created by the platform): home is
# saturated, its team's budget spent.
job bud-held annotation | kc onprem create -n "$BNS" -f - >/dev/null
vann() { kc onprem get job "$1" -n "$BNS" -o jsonpath="{.metadata.annotations.spillway\.io/$2}"; }
vmirrors() {
    local uid c n=0
    uid=$(kc onprem get job "$1" -n "$BNS" -o jsonpath='{.metadata.uid}')
    for c in "${CLUSTERS[@]}"; do
        n=$((n + $(kc "$c" get jobs -A -l "spillway.io/origin-uid=$uid" -o name | wc -l)))
    done
    echo "$n"
}
for _ in $(seq 1 240); do [ "$(vann bud-held state)" = blocked ] && break; sleep 0.25; done
r=$(vann bud-held reason)
[ "$(vann bud-held state)" = blocked ] && grep -qF "the cloud budget of team $BTEAM (a month's) cannot cover a burst" <<<"$r" ||
    hub_fail "bud-held (team $BTEAM, budget spent) is \"$(vann bud-held state)\", reason \"$r\""
for i in $(seq 1 40); do
    [ "$(kc onprem get events -n "$BNS" --field-selector "involvedObject.name=bud-held,reason=BudgetExhausted,type=Warning" -o name | wc -l)" -ge 1 ] && break
    sleep 0.25
done
[ "$i" -lt 40 ] || hub_fail "bud-held: no Warning Event BudgetExhausted"
[ "$(vmirrors bud-held)" = 0 ] || hub_fail "bud-held: held by its budget, yet it has a mirror"
"$SPILLCTL" explain "onprem/$BNS/bud-held" >"$HUB_TMP/explain-bud" 2>&1 || true
grep -qF "the cloud budget of team $BTEAM" "$HUB_TMP/explain-bud" && grep -q "budget" "$HUB_TMP/explain-bud" ||
    hub_fail "spillctl explain does not say bud-held's budget: $(cat "$HUB_TMP/explain-bud")"
pass "10. team $BTEAM's budget spent: bud-held stays at home, \"$r\" (BudgetExhausted)"

# ---- the same Jobs with what the grant allows ------------------------------
kc onprem create secret generic pull -n "$ANS" --from-literal=token=mine >/dev/null
submit ok-in annotation "    spillway.io/inputs: s3://datasets/$ANS/in/"
submit ok-out delegated "    spillway.io/outputs: s3://checkpoints/$ANS/out/"
submit ok-pod delegated "" "      imagePullSecrets: [{name: pull}]"
submit ok-team delegated "    spillway.io/team: $ANS
    spillway.io/priority: training"
OK_JOBS=(ok-first ok-in ok-out ok-pod ok-team ns-taken up-out)
for n in "${OK_JOBS[@]}"; do
    for _ in $(seq 1 360); do
        st=$(origin_ann "$n" state)
        [ "$st" = succeeded ] && break
        [ "$st" = failed ] && hub_fail "$n failed: $(origin_ann "$n" reason)"
        sleep 0.25
    done
    [ "$st" = succeeded ] || hub_fail "$n is \"$st\" after 90 s, not succeeded (reason \"$(origin_ann "$n" reason)\")"
    m=$(mirrors "$n")
    [ "$m" = 1 ] || hub_fail "$n has $m mirrors"
done
s3get "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 datasets "$ANS/in/part-0.bin" >/dev/null ||
    hub_fail "ok-in's own input is not in us-east-1"
pass "own prefixes, a restricted pod, an own Secret, its own team, the namespace restored: ${OK_JOBS[*]} succeeded, one mirror each"
# 10. Team ANS burst under its budget meanwhile; the report and /metrics
# say what each team has.
"$SPILLCTL" report budget -o json >"$HUB_TMP/budget.json" || hub_fail "spillctl report budget failed"
jq -e --arg v "$BTEAM" '.teams[] | select(.team == $v) | .period == "month" and .budget == 5 and .committed == 10
    and .inFlight == 0 and .left == 0 and .usedFraction == 2' "$HUB_TMP/budget.json" >/dev/null ||
    hub_fail "report budget: team $BTEAM is not budget 5, committed 10, left 0: $(cat "$HUB_TMP/budget.json")"
jq -e --arg a "$ANS" '.teams[] | select(.team == $a) | .budget == 100000 and .left > 99000' "$HUB_TMP/budget.json" >/dev/null ||
    hub_fail "report budget: team $ANS is not budget 100000 with most of it left: $(cat "$HUB_TMP/budget.json")"
"$SPILLCTL" report budget >"$HUB_TMP/budget.txt"
grep -E "^$BTEAM +month .* 5\.00 +10\.00 +0\.00 +0\.00 +200\.0%" "$HUB_TMP/budget.txt" >/dev/null ||
    hub_fail "report budget's table does not show $BTEAM spent: $(cat "$HUB_TMP/budget.txt")"
ac=$(metric "$PORT" "spillway_team_spend_usd{team=\"$ANS\",kind=\"committed\"}")
vc=$(metric "$PORT" "spillway_team_spend_usd{team=\"$BTEAM\",kind=\"committed\"}")
awk -v a="${ac:-0}" -v v="${vc:-0}" 'BEGIN { exit !(a > 0 && v == 10) }' ||
    hub_fail "/metrics: committed spend of $ANS \"$ac\" (expected > 0, its bursts ran) and of $BTEAM \"$vc\" (expected 10)"
[ "$(vann bud-held state)" = blocked ] && [ "$(vmirrors bud-held)" = 0 ] ||
    hub_fail "bud-held is no longer blocked, or has a mirror: \"$(vann bud-held state)\""
pass "10. team $ANS (budget \$100,000) burst meanwhile, committed \$$ac; report budget: $BTEAM 5 / committed 10 / left 0, $ANS most left; bud-held still at home, no mirror"
s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem checkpoints "$ANS/up/model.pt" >"$HUB_TMP/up-back" ||
    hub_fail "up-out's output was not copied home"
# shellcheck disable=SC2086
cmp -s "$HUB_TMP/up-back" <(s3get $UPEP checkpoints "$ANS/up/attempt-1/model.pt") ||
    hub_fail "up-out's output at home differs from what its mirror wrote"
[ "$(record_field "$UPK" attempt)" = 1 ] || hub_fail "up-out ran as attempt $(record_field "$UPK" attempt)"
pass "8. a record without outputs and a mirror without a proof (as an older hub leaves them) across a restart: up-out followed on $UPM in $UPC, its outputs held to the grant and copied home, attempt 1"

# ---- 9. a namespace with no grant yet ----------------------------------------
uann() { kc onprem get job "$1" -n "$UNS" -o jsonpath="{.metadata.annotations.spillway\.io/$2}"; }
for _ in $(seq 1 240); do
    [ "$(uann ng-in state)" = blocked ] && [ "$(uann ng-plain state)" = succeeded ] && break
    sleep 0.25
done
[ "$(uann ng-plain state)" = succeeded ] ||
    hub_fail "ng-plain (no data, namespace without a grant) is \"$(uann ng-plain state)\", not succeeded: $(uann ng-plain reason)"
r=$(uann ng-in reason)
[ "$(uann ng-in state)" = blocked ] && grep -qF "namespace $UNS of cluster onprem has no grant" <<<"$r" ||
    hub_fail "ng-in (inputs, namespace without a grant) is \"$(uann ng-in state)\", reason \"$r\""
n=0
for nm in ng-plain ng-in; do
    uid=$(kc onprem get job "$nm" -n "$UNS" -o jsonpath='{.metadata.uid}')
    for c in cloud-spot cloud-ondemand; do
        n=$((n + $(kc "$c" get jobs -A -l "spillway.io/origin-uid=$uid" -o name | wc -l)))
    done
done
[ "$n" = 1 ] || hub_fail "ng-plain and ng-in have $n mirrors between them, not 1 (ng-plain's)"
pass "9. a namespace with no grant: ng-plain (no data) succeeded, one mirror; ng-in blocked, \"$r\""

# ---- afterwards, from outside ----------------------------------------------
ATTACKS=(in-a in-d in-none out-a out-d priv pull team prod unmapped)
[ -n "$TRAVERSAL" ] && ATTACKS+=(walk)
for n in "${ATTACKS[@]}"; do
    [ "$(origin_ann "$n" state)" = blocked ] || hub_fail "$n is no longer blocked: \"$(origin_ann "$n" state)\""
    [ "$(mirrors "$n")" = 0 ] || hub_fail "$n has a mirror"
done
for ep in "$SW_LAB_S3_ENDPOINT_US_EAST_1 us-east-1" "$SW_LAB_S3_ENDPOINT_US_WEST_2 us-west-2"; do
    # shellcheck disable=SC2086
    k=$(s3keys $ep datasets "$VNS/")
    [ -z "$k" ] || hub_fail "the victim's data in ${ep#* }'s store: $k"
    # shellcheck disable=SC2086
    k=$(s3keys $ep checkpoints "$VNS/")
    [ -z "$k" ] || hub_fail "the victim's checkpoints prefix in ${ep#* }'s store: $k"
    # shellcheck disable=SC2086
    k=$(s3keys $ep "$SCRATCH" "")
    [ -z "$k" ] || hub_fail "objects written to bucket $SCRATCH in ${ep#* }'s store: $k"
done
pass "1/7. nothing under $VNS/ in the us-east-1 and us-west-2 stores, nothing in their buckets $SCRATCH"
[ "$("$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem uploads checkpoints "$VNS/")" = 1 ] ||
    hub_fail "the victim's multipart upload under s3://checkpoints/$VNS/ is gone"
s3req GET "$SW_LAB_S3_ENDPOINT_ONPREM" onprem "checkpoints?prefix=$VNS%2F&uploads=" | grep -qF "<UploadId>$UPLOAD</UploadId>" ||
    hub_fail "the victim's upload $UPLOAD is no longer open"
pass "2. the victim's multipart upload $UPLOAD is still open"
for c in cloud-spot cloud-ondemand; do
    bad=$(kc "$c" get pods -A -o json | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    s = p["spec"]
    why = []
    if s.get("hostNetwork"): why.append("hostNetwork")
    if any("hostPath" in v for v in s.get("volumes") or []): why.append("hostPath")
    if any((c.get("securityContext") or {}).get("privileged") for c in s.get("containers", []) + s.get("initContainers", [])):
        why.append("privileged")
    if why: print("%s/%s: %s" % (p["metadata"]["namespace"], p["metadata"]["name"], ",".join(why)))')
    [ -z "$bad" ] || hub_fail "privileged pods on $c: $bad"
done
pass "3. no privileged, hostNetwork or hostPath pod on cloud-spot or cloud-ondemand"
watcher_check

# ---- the audit logs ---------------------------------------------------------
sleep 1 # the last responses written
"$PY" - "$SINCE" "$HUB_USER" "$ATK_USER" "$ANS" "$VNS" "${#ATTACKS[@]}" "$UNS" "$BNS" \
    onprem="$SW_LAB_DIR/onprem" cloud-spot="$SW_LAB_DIR/cloud-spot" cloud-ondemand="$SW_LAB_DIR/cloud-ondemand" \
    >"$HUB_TMP/audit" <<'EOF' || { cat "$HUB_TMP/audit" >&2; hub_fail "audit logs"; }
import collections, glob, json, sys
since, hub, atk, ans, vns, nattacks, uns, bns = sys.argv[1:9]
problems, seen = [], set()
hub_in = collections.Counter()
atk_creates = 0
for arg in sys.argv[9:]:
    cluster, _, d = arg.partition("=")
    for log in sorted(glob.glob(d + "/audit*.log")):
        for line in open(log):
            e = json.loads(line)
            user = e["user"].get("username")
            if user not in (hub, atk) or e["requestReceivedTimestamp"] < since:
                continue
            if e["auditID"] in seen:
                continue
            seen.add(e["auditID"])
            o = e.get("objectRef")
            verb, uri = e["verb"], e["requestURI"]
            if o is None:
                continue  # /version, /readyz, discovery
            ns = o.get("namespace") or (o.get("name", "") if o["resource"] == "namespaces" else "")
            res = o["resource"] + ("/" + o["subresource"] if o.get("subresource") else "")
            if user == atk:
                # (kubectl auth can-i: SelfSubjectAccessReviews, cluster-scoped)
                if ns != ans and res != "selfsubjectaccessreviews":
                    problems.append("%s: the attacker's %s %s outside %s" % (cluster, verb, uri, ans))
                if verb == "create" and res == "jobs" and e.get("responseStatus", {}).get("code") == 201:
                    atk_creates += 1
                continue
            if ns == "":
                if verb in ("list", "watch") or (res, verb) == ("selfsubjectaccessreviews", "create"):
                    continue
                problems.append("%s: the hub's cluster-scoped %s %s" % (cluster, verb, uri))
                continue
            if ns in (uns, bns):
                continue  # cases 9's and 10's own Jobs, in namespaces of their own
            if ns != ans:
                what = "the victim's namespace" if ns == vns else ("kube-system" if ns == "kube-system" else "namespace " + ns)
                problems.append("%s: the hub's %s %s in %s (HTTP %s)" % (
                    cluster, verb, uri, what, e.get("responseStatus", {}).get("code")))
                continue
            hub_in["%s %s %s" % (cluster, verb, res)] += 1
for k in sorted(hub_in):
    print("hub in %s: %s x%d" % (ans, k, hub_in[k]))
need = ["onprem create pods", "onprem get namespaces", "onprem create events"]
for n in need:
    if hub_in[n] == 0:
        problems.append("no audit event of the hub: %s in %s (is the audit log complete?)" % (n, ans))
if not any(k.endswith("create namespaces") and not k.startswith("onprem") for k in hub_in):
    problems.append("no audit event of the hub creating namespace %s in a cloud cluster" % ans)
print("attacker Job creates: %d" % atk_creates)
if atk_creates < int(nattacks):
    problems.append("only %d Job creates by %s in the audit log, %s attempts made" % (atk_creates, atk, nattacks))
for p in problems:
    print("PROBLEM: " + p)
sys.exit(1 if problems else 0)
EOF
cat "$HUB_TMP/audit"
pass "audit: the hub's identity made no request in $VNS, kube-system or any namespace but $ANS, $UNS and $BNS (cases 9's and 10's; cluster-wide list/watch aside); the attacker's Jobs all created as $ATK_USER"
[ ${#LATER[@]} = 0 ] || hub_fail "${#LATER[@]} check(s) failed above: $(printf '%s; ' "${LATER[@]}")"
pass "tenancy shown in $(($(date +%s) - T0)) s"
