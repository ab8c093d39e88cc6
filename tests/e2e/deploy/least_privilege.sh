#!/usr/bin/env bash
# least_privilege.sh - the hub runs the burst lifecycle with nothing but the
# member ClusterRole (deploy/rbac/member-clusterrole.yaml) on every member,
# and uses every permission in it.
#
#   - each member gets the role as shipped, bound to a ServiceAccount; the
#     cloud members are registered with kubeconfigs holding only that
#     ServiceAccount's token; onprem also plays the management cluster: its
#     ServiceAccount is the hub's, and `spillctl cluster add onprem` runs with
#     the in-cluster environment (KUBERNETES_SERVICE_HOST/PORT and a
#     ServiceAccount folder, SPILLWAY_SERVICEACCOUNT_DIR), without a
#     kubeconfig, so the registry holds the token file's path, not a token;
#   - spillwayd runs with that environment and no kubeconfig; the bursts
#     (annotation-only, delegated, ConfigMap and Secret copied then updated,
#     origin deleted) succeed, watched by the independent watcher;
#   - a Job queued in Kueue on onprem (Kueue started if it is not on) is
#     taken from it and its mirror queued in cloud-spot's LocalQueue, so the
#     role's Kueue permissions are in use too;
#   - the hub's onprem token rotates twice while it runs: replaced by rename
#     (read again because the file changed) and rewritten in place with its
#     old modification time (read again after the API server's 401); each
#     old token is revoked, and the audit log shows the new one in use;
#   - the API servers' audit logs (tests/testbed/audit-policy.yaml) show that
#     no request was refused, every resource request was allowed by
#     spillway-member, and the permissions used equal the role's, every pod
#     create among them a dry run (audit_check.py): the bursts from onprem
#     have home's admission judge their pods (controller/hub/admission.c),
#     and read their namespaces' Pod Security labels (namespaces get);
#   - for every permission of the role, a ServiceAccount bound to the role
#     without it is refused exactly that (kubectl auth can-i): nothing else
#     on the cluster grants it;
#   - two permissions taken away while the hub runs: jobs/status patch on the
#     origin (a delegated Job's status is not written: the audit log shows
#     the 403) and namespaces create on the target (no mirror; the hub logs
#     the refusal); given back, both Jobs complete;
#   - the narrow member role (deploy/rbac/narrow) on the cloud members, the
#     namespace part bound in one namespace only: `cluster add --namespaces`
#     names each permission missing in the other, with it; registered with
#     the granted one, a Job there bursts, a Job of the other namespace is
#     refused with the reason on the origin, and the audit logs show no
#     namespace created and no request about the refused namespace.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../hub/lib.sh"
PY=python3
"$PY" -c "import yaml" 2>/dev/null || PY=/usr/bin/python3
ROLE="$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml"
CLUSTERS=(onprem cloud-spot cloud-ondemand)
SA_NS=spillway-lp
HUB_USER="system:serviceaccount:$SA_NS:spillway-hub"
MEMBER_USER="system:serviceaccount:$SA_NS:spillway"

STARTED_KUEUE=""
lp_cleanup() {
    local c
    [ -n "$STARTED_KUEUE" ] && "$SW_SOURCE_DIR/tests/testbed/testbed" kueue down >/dev/null 2>&1
    hub_cleanup
    for c in "${CLUSTERS[@]}"; do
        kc "$c" delete clusterrolebinding spillway-lp spillway-lp-hub spillway-lp-minus spillway-lp-probe \
            spillway-lp-cluster --ignore-not-found >/dev/null 2>&1 || true
        kc "$c" delete clusterrole spillway-lp-minus spillway-lp-probe spillway-member-cluster \
            spillway-member-namespace --ignore-not-found >/dev/null 2>&1 || true
        kc "$c" delete namespace "$SA_NS" --wait=false --ignore-not-found >/dev/null 2>&1 || true
    done
}

server_of() { kc "$1" config view --minify -o jsonpath='{.clusters[0].cluster.server}'; }
audit_log() { echo "$SW_LAB_DIR/$1/audit.log"; }

# role_without NAME PERM: the member role renamed NAME, without PERM
# ("group resource subresource verb", "-" for empty), as YAML.
role_without() {
    "$PY" - "$ROLE" "$1" "$2" <<'EOF'
import sys, yaml
role = yaml.safe_load(open(sys.argv[1]))
g, r, s, v = [x if x != "-" else "" for x in sys.argv[3].split()]
res = r + ("/" + s if s else "")
role["metadata"]["name"] = sys.argv[2]
rules = []
for rule in role["rules"]:
    if g in rule["apiGroups"] and res in rule["resources"] and v in rule["verbs"]:
        # Split the rule so that only this (resource, verb) goes.
        others = [x for x in rule["resources"] if x != res]
        if others:
            rules.append(dict(rule, resources=others))
        verbs = [x for x in rule["verbs"] if x != v]
        if verbs:
            rules.append(dict(rule, resources=[res], verbs=verbs))
    else:
        rules.append(rule)
role["rules"] = rules
print(yaml.safe_dump(role))
EOF
}

# audit_has CLUSTER USER PYTHON_CONDITION_ON_e: whether an audit event since
# $SINCE of USER matches.
audit_has() {
    "$PY" - "$(audit_log "$1")" "$2" "$SINCE" "$3" <<'EOF'
import json, sys
log, user, since, cond = sys.argv[1:]
for line in open(log):
    e = json.loads(line)
    if e["user"].get("username") != user or e["requestReceivedTimestamp"] < since:
        continue
    o = e.get("objectRef") or {}
    jti = (e["user"].get("extra", {}).get("authentication.kubernetes.io/credential-id") or [""])[0]
    dec = e.get("annotations", {}).get("authorization.k8s.io/decision")
    if eval(cond):
        sys.exit(0)
sys.exit(1)
EOF
}

# wait_audit SECONDS WHAT CLUSTER USER CONDITION
wait_audit() {
    local i
    for i in $(seq 1 $(($1 * 2))); do
        audit_has "$3" "$4" "$5" && return 0
        sleep 0.5
    done
    hub_fail "no audit event on $3 after $1 s: $2"
}

jti_of() {
    "$PY" -c "
import base64, json, sys
p = sys.argv[1].split('.')[1]
print(json.loads(base64.urlsafe_b64decode(p + '=' * (-len(p) % 4)))['jti'])" "$1"
}

hub_setup lp
trap lp_cleanup EXIT
T0=$(date +%s) # after the lab's hub lock: the test's own time

# ---- the lab's audit logs ---------------------------------------------------
for c in "${CLUSTERS[@]}"; do
    host=$(server_of "$c")
    host=${host#https://}
    if ! pgrep -af kube-apiserver | grep -F -- "--bind-address ${host%:*} " | grep -q -- --audit-log-path; then
        echo "the API server of $c writes no audit log; restarting it with the lab's flags" >&2
        "$SW_SOURCE_DIR/tests/testbed/testbed" restart-apiserver "$c" >/dev/null
    fi
    [ -f "$(audit_log "$c")" ] || fail "no audit log $(audit_log "$c")"
done
SINCE=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)

# ---- the member role, ServiceAccounts and their tokens ---------------------
for c in "${CLUSTERS[@]}"; do
    kc "$c" delete clusterrolebinding spillway-lp spillway-lp-hub spillway-lp-minus spillway-lp-probe spillway-lp-cluster --ignore-not-found >/dev/null
    kc "$c" delete namespace "$SA_NS" --ignore-not-found --timeout=60s >/dev/null
    kc "$c" apply -f "$ROLE" >/dev/null
    kc "$c" create namespace "$SA_NS" >/dev/null
done
# onprem: the management cluster, and a member reached in-cluster.
kc onprem create serviceaccount spillway-hub -n "$SA_NS" >/dev/null
kc onprem create clusterrolebinding spillway-lp-hub --clusterrole=spillway-member \
    --serviceaccount="$SA_NS:spillway-hub" >/dev/null
SA_DIR="$HUB_TMP/serviceaccount"
mkdir -p "$SA_DIR"
cp "$SW_LAB_DIR/onprem/pki/ca.crt" "$SA_DIR/ca.crt"
printf '%s' "$SA_NS" >"$SA_DIR/namespace"
# hub_token N: a token of the hub's ServiceAccount bound to the Secret
# hub-token-N (deleting the Secret revokes it, as deleting a pod revokes its
# projected token).
hub_token() {
    kc onprem create secret generic "hub-token-$1" -n "$SA_NS" >/dev/null
    kc onprem create token spillway-hub -n "$SA_NS" --bound-object-kind Secret \
        --bound-object-name "hub-token-$1" --duration=1h
}
TOK1=$(hub_token 1)
printf '%s' "$TOK1" >"$SA_DIR/token"
onprem_hp=$(server_of onprem)
onprem_hp=${onprem_hp#https://}
INCLUSTER=(KUBERNETES_SERVICE_HOST="${onprem_hp%:*}" KUBERNETES_SERVICE_PORT="${onprem_hp##*:}"
    SPILLWAY_SERVICEACCOUNT_DIR="$SA_DIR")
# The cloud members: the ServiceAccount's token in a kubeconfig, nothing else.
for c in cloud-spot cloud-ondemand; do
    kc "$c" create serviceaccount spillway -n "$SA_NS" >/dev/null
    kc "$c" create clusterrolebinding spillway-lp --clusterrole=spillway-member \
        --serviceaccount="$SA_NS:spillway" >/dev/null
    cat >"$HUB_TMP/$c-sa.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: $c
  cluster:
    server: $(server_of "$c")
    certificate-authority-data: $(base64 -w0 "$SW_LAB_DIR/$c/pki/ca.crt")
users:
- name: spillway
  user:
    token: $(kc "$c" create token spillway -n "$SA_NS" --duration=1h)
contexts:
- name: $c
  context: {cluster: $c, user: spillway}
current-context: $c
YAML
done

# ---- registration ----------------------------------------------------------
# Outside a cluster, without --kubeconfig or KUBECONFIG: refused, naming what is missing.
rc=0
env -u KUBERNETES_SERVICE_HOST -u KUBECONFIG "$SPILLCTL" cluster add onprem --replace --role onprem --region onprem \
    --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 2>"$HUB_TMP/err" || rc=$?
[ $rc = 2 ] && grep -q "is required outside a cluster (in-cluster configuration needs KUBERNETES_SERVICE_HOST" "$HUB_TMP/err" ||
    hub_fail "cluster add without a kubeconfig outside a cluster: exit $rc, $(cat "$HUB_TMP/err")"
env -u KUBECONFIG "${INCLUSTER[@]}" "$SPILLCTL" cluster add onprem --replace --role onprem --region onprem \
    --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >"$HUB_TMP/add" ||
    hub_fail "cluster add onprem in-cluster: $(cat "$HUB_TMP/add")"
grep -q "^cluster onprem added: https://$onprem_hp (Kubernetes v1.34.4), auth token" "$HUB_TMP/add" ||
    hub_fail "cluster add onprem in-cluster said: $(cat "$HUB_TMP/add")"
"$SPILLCTL" cluster add cloud-spot --replace --kubeconfig "$HUB_TMP/cloud-spot-sa.kubeconfig" --role cloud \
    --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
"$SPILLCTL" cluster add cloud-ondemand --replace --kubeconfig "$HUB_TMP/cloud-ondemand-sa.kubeconfig" --role cloud \
    --region us-west-2 --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null
pass "members registered with ServiceAccount tokens bound to spillway-member only; onprem in-cluster (token file, no kubeconfig)"

# ---- the burst lifecycle under the role ------------------------------------
watcher_start
saturate
hub_start "$HUB_TMP/hub.yaml" "${INCLUSTER[@]}"
burst_job train-a 4 5s | kc onprem apply -n "$NS" -f - >/dev/null
burst_job train-d 4 5s delegated | kc onprem apply -n "$NS" -f - >/dev/null
A="onprem/$NS/train-a"
wait_record "$A" state succeeded 120
[ "$(record_field "$A" targetCluster)" = cloud-spot ] || hub_fail "train-a ran in $(record_field "$A" targetCluster)"
kc onprem wait --for=condition=complete job/train-d -n "$NS" --timeout=120s >/dev/null ||
    hub_fail "the delegated origin did not complete"
kc onprem get events -n "$NS" --field-selector involvedObject.name=train-a,reason=Burst -o name | grep -q . ||
    hub_fail "no Burst Event on train-a"
J1=$(jti_of "$TOK1")
audit_has onprem "$HUB_USER" "jti == 'JTI=$J1'" || hub_fail "the hub's onprem requests do not carry the in-cluster token"
pass "annotation-only and delegated Jobs burst to cloud-spot and completed, the hub holding only ServiceAccount tokens"

# ---- the in-cluster token rotates ------------------------------------------
TOK2=$(hub_token 2)
printf '%s' "$TOK2" >"$SA_DIR/.token.new"
mv -f "$SA_DIR/.token.new" "$SA_DIR/token"
J2=$(jti_of "$TOK2")
wait_audit 30 "the hub using the token that replaced the file" onprem "$HUB_USER" "jti == 'JTI=$J2'"
kc onprem delete secret hub-token-1 -n "$SA_NS" >/dev/null
pass "token replaced by rename: the hub read the new one (audit: credential JTI=$J2) and the old one was revoked"
TOK3=$(hub_token 3)
[ ${#TOK3} = ${#TOK2} ] || hub_fail "tokens of different lengths (${#TOK2}, ${#TOK3}): cannot rewrite in place unseen"
# In place, same inode, same size, the old modification time: only the
# API server's 401 can tell the hub.
"$PY" -c "
import os, sys
p, tok = sys.argv[1], sys.argv[2].encode()
st = os.stat(p)
fd = os.open(p, os.O_WRONLY)
os.write(fd, tok)
os.close(fd)
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))" "$SA_DIR/token" "$TOK3"
kc onprem delete secret hub-token-2 -n "$SA_NS" >/dev/null
J3=$(jti_of "$TOK3")
wait_audit 30 "the hub using the token rewritten in place" onprem "$HUB_USER" "jti == 'JTI=$J3'"
grep -q 'msg="credential refused, refreshing" cluster=onprem' "$HUB_TMP/hub.log" ||
    hub_fail "the hub did not log the 401 that made it read the token again"
pass "token rewritten in place with its old mtime, the old one revoked: 401, read again, the hub goes on with JTI=$J3"

# ---- ConfigMaps and Secrets copied, then updated; a new namespace ---------
NS2="lp2-$$-$RANDOM"
HUB_EXTRA_NS+=("$NS2")
kc onprem create namespace "$NS2" >/dev/null
kc onprem create configmap train-config -n "$NS2" --from-literal=lr=0.001 >/dev/null
kc onprem create secret generic train-secret -n "$NS2" --from-literal=token=one >/dev/null
refs_job() {
    cat <<YAML | kc onprem apply -n "$NS2" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  annotations: {spillway.io/burst: auto, spillway.io/expected-runtime: 1h}
spec:
  managedBy: spillway.io/hub
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      volumes: [{name: cfg, configMap: {name: train-config}}]
      containers:
      - name: train
        image: registry.example/train:1
        envFrom: [{secretRef: {name: train-secret}}]
        volumeMounts: [{name: cfg, mountPath: /etc/train}]
        resources: {limits: {nvidia.com/gpu: "2"}}
YAML
}
refs_job refs1
wait_record "onprem/$NS2/refs1" state succeeded 90
[ "$(kc cloud-spot get configmap train-config -n "$NS2" -o jsonpath='{.data.lr}')" = 0.001 ] || hub_fail "ConfigMap not copied"
[ "$(kc cloud-spot get secret train-secret -n "$NS2" -o jsonpath='{.data.token}' | base64 -d)" = one ] || hub_fail "Secret not copied"
kc onprem create configmap train-config -n "$NS2" --from-literal=lr=0.01 --dry-run=client -o yaml | kc onprem replace -f - >/dev/null
kc onprem create secret generic train-secret -n "$NS2" --from-literal=token=two --dry-run=client -o yaml | kc onprem replace -f - >/dev/null
refs_job refs2
wait_record "onprem/$NS2/refs2" state succeeded 90
[ "$(kc cloud-spot get configmap train-config -n "$NS2" -o jsonpath='{.data.lr}')" = 0.01 ] || hub_fail "ConfigMap copy not updated"
[ "$(kc cloud-spot get secret train-secret -n "$NS2" -o jsonpath='{.data.token}' | base64 -d)" = two ] || hub_fail "Secret copy not updated"
pass "namespace $NS2 created on cloud-spot; ConfigMap and Secret copied there, then updated"
# Both origins deleted: the copy of train-secret goes with the last of them
# (secrets delete, controller/hub/copies.c); the origin's stays.
kc onprem delete job refs1 refs2 -n "$NS2" --wait=false >/dev/null
for _ in $(seq 1 60); do
    kc cloud-spot get secret train-secret -n "$NS2" >/dev/null 2>&1 || break
    sleep 0.5
done
kc cloud-spot get secret train-secret -n "$NS2" >/dev/null 2>&1 && hub_fail "the copy of train-secret outlived its Jobs"
kc onprem get secret train-secret -n "$NS2" >/dev/null || hub_fail "the origin's train-secret is gone"
pass "origins deleted: spillway's copy of train-secret deleted from cloud-spot, the origin's kept"

# ---- origin deleted: mirror deleted -----------------------------------------
mirror=$(record_field "$A" mirror)
kc onprem delete job train-a -n "$NS" --wait=false >/dev/null
for _ in $(seq 1 60); do
    kc cloud-spot get job "$mirror" -n "$NS" >/dev/null 2>&1 || break
    sleep 0.5
done
kc cloud-spot get job "$mirror" -n "$NS" >/dev/null 2>&1 && hub_fail "mirror $mirror still exists"
pass "origin deleted: mirror $mirror deleted"

# ---- a Job queued in Kueue, taken and queued in cloud-spot's Kueue ----------
# The role's Kueue permissions in use: Workloads, ClusterQueues and ResourceFlavors listed
# and watched on onprem and cloud-spot, the origin's Workload patched, the
# target's LocalQueue read. Kueue is started for this if it is not on.
if ! [ -f "$SW_LAB_DIR/kueue/on" ]; then
    "$SW_SOURCE_DIR/tests/testbed/testbed" kueue up >/dev/null
    STARTED_KUEUE=1
fi
for c in onprem cloud-spot; do
    printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: gpu, namespace: %s}\nspec: {clusterQueue: gpu}\n' "$NS" |
        kc "$c" apply -f - >/dev/null
done
"$SPILLCTL" cluster add cloud-spot --replace --kubeconfig "$HUB_TMP/cloud-spot-sa.kubeconfig" --role cloud --local-queue gpu \
    --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
# kueue_job NAME GPUS BURSTABLE: 2 pods in LocalQueue gpu, created unsuspended.
kueue_job() {
    local ann="{}"
    [ "$3" = yes ] && ann="{spillway.io/burst: auto, spillway.io/expected-runtime: 1h}"
    cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: $1, labels: {kueue.x-k8s.io/queue-name: gpu}, annotations: $ann}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "$2"}}
YAML
}
sleep 11 # the hub reads the registry every 10 s
kueue_job kfill 4 no # the whole quota (its pods wait for the saturated nodes)
kueue_job kq 2 yes
Q="onprem/$NS/kq"
wait_record "$Q" state succeeded 120
[ "$(record_field "$Q" targetCluster)" = cloud-spot ] || hub_fail "kq ran in $(record_field "$Q" targetCluster)"
kqm=$(record_field "$Q" mirror)
[ "$(kc cloud-spot get job "$kqm" -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
    hub_fail "kq's mirror is not in cloud-spot's LocalQueue gpu"
kc onprem delete job kfill -n "$NS" --wait=false >/dev/null
# Back to no queue on cloud-spot for the sections below (their namespaces
# have no LocalQueue there).
"$SPILLCTL" cluster add cloud-spot --replace --kubeconfig "$HUB_TMP/cloud-spot-sa.kubeconfig" --role cloud \
    --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
sleep 11
pass "a Kueue Job taken from onprem's queue and run in cloud-spot's LocalQueue gpu, with the role's Kueue permissions only"
watcher_check

# ---- what the audit logs say ------------------------------------------------
"$PY" "$HERE/audit_check.py" "$ROLE" "$SINCE" "$HUB_USER,$MEMBER_USER" \
    onprem="$(audit_log onprem)" cloud-spot="$(audit_log cloud-spot)" cloud-ondemand="$(audit_log cloud-ondemand)" \
    >"$HUB_TMP/audit" || { cat "$HUB_TMP/audit" >&2; hub_fail "audit check"; }
cat "$HUB_TMP/audit"
# The check can fail both ways: the same logs against the role with one
# verb more (granted, never used) and one less (used, not granted).
"$PY" - "$ROLE" "$HUB_TMP/role-more.yaml" "$HUB_TMP/role-less.yaml" <<'EOF'
import sys, yaml
more, less = yaml.safe_load(open(sys.argv[1])), yaml.safe_load(open(sys.argv[1]))
for r in more["rules"]:
    if r["resources"] == ["pods"]:
        r["verbs"].append("get")
less["rules"] = [r for r in less["rules"] if r["resources"] != ["events"]]
yaml.safe_dump(more, open(sys.argv[2], "w"))
yaml.safe_dump(less, open(sys.argv[3], "w"))
EOF
for v in "more:granted but never used: get pods" "less:used but not granted: create events"; do
    "$PY" "$HERE/audit_check.py" "$HUB_TMP/role-${v%%:*}.yaml" "$SINCE" "$HUB_USER,$MEMBER_USER" \
        onprem="$(audit_log onprem)" cloud-spot="$(audit_log cloud-spot)" cloud-ondemand="$(audit_log cloud-ondemand)" \
        >"$HUB_TMP/audit-${v%%:*}" && hub_fail "audit_check accepted a role with a verb ${v%%:*}"
    grep -qx "PROBLEM: ${v#*:}" "$HUB_TMP/audit-${v%%:*}" || hub_fail "audit_check on role-${v%%:*}: $(cat "$HUB_TMP/audit-${v%%:*}")"
done
pass "audit: no request refused, each allowed by spillway-member, the permissions used equal the role's $(grep -c . <(grep -v '^audit\|^PROBLEM' "$HUB_TMP/audit")); the check refuses the role with a verb more or one less"

# ---- nothing else grants any of them ----------------------------------------
PERMS=$("$PY" -c "
import sys, yaml
for rule in yaml.safe_load(open(sys.argv[1]))['rules']:
    for g in rule['apiGroups']:
        for r in rule['resources']:
            res, _, sub = r.partition('/')
            for v in rule['verbs']:
                print(g or '-', res, sub or '-', v)" "$ROLE")
kc onprem create serviceaccount probe -n "$SA_NS" >/dev/null
PROBE="system:serviceaccount:$SA_NS:probe"
can_i() { # GROUP RESOURCE SUB VERB -> yes/no for the probe
    local res=$2
    [ "$1" != - ] && res="$2.$1"
    local sub=()
    [ "$3" != - ] && sub=(--subresource="$3")
    kc onprem auth can-i "$4" "$res" "${sub[@]}" -A --as="$PROBE" 2>/dev/null || true
}
role_without spillway-lp-probe "- nothing - none" | kc onprem apply -f - >/dev/null
kc onprem create clusterrolebinding spillway-lp-probe --clusterrole=spillway-lp-probe --serviceaccount="$SA_NS:probe" >/dev/null
n=0
while read -r g r s v; do
    for _ in $(seq 1 20); do [ "$(can_i "$g" "$r" "$s" "$v")" = yes ] && break; sleep 0.25; done
    [ "$(can_i "$g" "$r" "$s" "$v")" = yes ] || hub_fail "the probe with the whole role cannot $v $r/$s"
    role_without spillway-lp-probe "$g $r $s $v" | kc onprem apply -f - >/dev/null
    for _ in $(seq 1 20); do [ "$(can_i "$g" "$r" "$s" "$v")" = no ] && break; sleep 0.25; done
    [ "$(can_i "$g" "$r" "$s" "$v")" = no ] || hub_fail "without ($v $r/$s) in the role, something else still grants it"
    role_without spillway-lp-probe "- nothing - none" | kc onprem apply -f - >/dev/null
    n=$((n + 1))
done <<<"$PERMS"
pass "each of the role's $n permissions, taken out of it, is refused: nothing else on the cluster grants it"

# ---- two permissions taken away while the hub runs --------------------------
# minus_on CLUSTER SA BINDING PERM: SA bound to the role without PERM instead
# of the whole role (the new binding first, so that the SA is never without
# the rest). minus_off CLUSTER SA BINDING: back to the whole role.
minus_on() {
    role_without spillway-lp-minus "$4" | kc "$1" apply -f - >/dev/null
    kc "$1" create clusterrolebinding spillway-lp-minus --clusterrole=spillway-lp-minus --serviceaccount="$SA_NS:$2" >/dev/null
    kc "$1" delete clusterrolebinding "$3" >/dev/null
    sleep 1
}
minus_off() {
    kc "$1" create clusterrolebinding "$3" --clusterrole=spillway-member --serviceaccount="$SA_NS:$2" >/dev/null
    kc "$1" delete clusterrolebinding spillway-lp-minus >/dev/null
    kc "$1" delete clusterrole spillway-lp-minus >/dev/null
}
minus_on onprem spillway-hub spillway-lp-hub "batch jobs status patch"
burst_job neg-status 2 3s delegated | kc onprem apply -n "$NS" -f - >/dev/null
wait_audit 60 "a refused jobs/status patch" onprem "$HUB_USER" \
    "dec == 'forbid' and o.get('resource') == 'jobs' and o.get('subresource') == 'status' and e['verb'] == 'patch'"
[ -z "$(kc onprem get job neg-status -n "$NS" -o jsonpath='{.status.succeeded}')" ] || hub_fail "status written without the permission"
refused_status="msg=\"cannot write the origin's status\" job=onprem/$NS/neg-status .*cannot patch resource .*jobs/status"
for _ in $(seq 1 20); do grep -q "$refused_status" "$HUB_TMP/hub.log" && break; sleep 0.5; done
grep -q "$refused_status" "$HUB_TMP/hub.log" || hub_fail "the hub did not log the refused status write"
minus_off onprem spillway-hub spillway-lp-hub
kc onprem wait --for=condition=complete job/neg-status -n "$NS" --timeout=90s >/dev/null ||
    hub_fail "neg-status did not complete once jobs/status patch was given back"
pass "without jobs/status patch on onprem, the delegated origin's status is refused (403 in the audit log, the hub logs it); given back, it completes"

NS3="lp3-$$-$RANDOM"
HUB_EXTRA_NS+=("$NS3")
kc onprem create namespace "$NS3" >/dev/null
minus_on cloud-spot spillway spillway-lp "- namespaces - create"
burst_job neg-ns 2 3s delegated | kc onprem apply -n "$NS3" -f - >/dev/null
wait_audit 60 "a refused namespace create" cloud-spot "$MEMBER_USER" \
    "dec == 'forbid' and o.get('resource') == 'namespaces' and e['verb'] == 'create'"
for _ in $(seq 1 20); do grep -q 'msg="cannot create the target namespace".*forbidden' "$HUB_TMP/hub.log" && break; sleep 0.5; done
grep -q 'msg="cannot create the target namespace".*forbidden' "$HUB_TMP/hub.log" || hub_fail "the hub did not log the refused namespace"
[ "$(kc cloud-spot get jobs -n "$NS3" -o name 2>/dev/null | wc -l)" = 0 ] || hub_fail "a mirror exists without the namespace permission"
minus_off cloud-spot spillway spillway-lp
kc onprem wait --for=condition=complete job/neg-ns -n "$NS3" --timeout=120s >/dev/null ||
    hub_fail "neg-ns did not complete once namespaces create was given back"
pass "without namespaces create on cloud-spot, no mirror (403 in the audit log, the hub logs it); given back, it completes"

# ---- the narrow member role -------------------------------------------------
# The cloud members' ServiceAccount bound to deploy/rbac/narrow instead: the
# cluster part cluster-wide, the namespace part in NS4 only (a namespace the
# platform made, not spillway). cluster add checks it per namespace; a Job
# of NS4 bursts into it, one of NS5 (no RoleBinding, not listed) is refused
# on the origin, and the hub creates no namespace and sends nothing to NS5.
NS4="lpn-$$-$RANDOM"
NS5="lpx-$$-$RANDOM"
HUB_EXTRA_NS+=("$NS4" "$NS5")
kc onprem create namespace "$NS4" >/dev/null
kc onprem create namespace "$NS5" >/dev/null
NARROW_SINCE=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
for c in cloud-spot cloud-ondemand; do
    kc "$c" apply -f "$SW_SOURCE_DIR/deploy/rbac/narrow/member-cluster-clusterrole.yaml" \
        -f "$SW_SOURCE_DIR/deploy/rbac/narrow/member-namespace-clusterrole.yaml" >/dev/null
    kc "$c" create namespace "$NS4" >/dev/null
    kc "$c" create rolebinding spillway-lp -n "$NS4" --clusterrole=spillway-member-namespace \
        --serviceaccount="$SA_NS:spillway" >/dev/null
    kc "$c" create clusterrolebinding spillway-lp-cluster --clusterrole=spillway-member-cluster \
        --serviceaccount="$SA_NS:spillway" >/dev/null
    kc "$c" delete clusterrolebinding spillway-lp >/dev/null
done
add_narrow() { # CLUSTER REGION POOL NAMESPACES
    "$SPILLCTL" cluster add "$1" --replace --kubeconfig "$HUB_TMP/$1-sa.kubeconfig" --role cloud \
        --region "$2" --pool "$3" --namespaces "$4"
}
SPOT_POOL=name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10
rc=0
for _ in $(seq 1 20); do # the bindings reach the authorizer's cache
    rc=0
    add_narrow cloud-spot us-east-1 "$SPOT_POOL" "$NS4,$NS5" >"$HUB_TMP/out" 2>"$HUB_TMP/err" || rc=$?
    grep -q "in namespace $NS4\|in all namespaces" "$HUB_TMP/err" || break
    sleep 0.25
done
[ $rc != 0 ] && grep -qx "  - create jobs.batch in namespace $NS5" "$HUB_TMP/err" &&
    grep -qx "  - get secrets in namespace $NS5" "$HUB_TMP/err" &&
    [ "$(grep -c '^  - ' "$HUB_TMP/err")" = "$(grep -c '^  - .* in namespace '"$NS5"'$' "$HUB_TMP/err")" ] ||
    hub_fail "cluster add --namespaces $NS4,$NS5 without a grant in $NS5: exit $rc, $(cat "$HUB_TMP/err")"
nmiss=$(grep -c '^  - ' "$HUB_TMP/err")
reconnects() { grep -c 'msg="member changed; reconnecting"' "$HUB_TMP/hub.log" || true; }
R0=$(reconnects)
add_narrow cloud-spot us-east-1 "$SPOT_POOL" "$NS4" >/dev/null || hub_fail "cluster add cloud-spot --namespaces $NS4"
add_narrow cloud-ondemand us-west-2 name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 \
    "$NS4" >/dev/null || hub_fail "cluster add cloud-ondemand --namespaces $NS4"
"$SPILLCTL" cluster show cloud-spot --no-probe | grep -q "^Namespaces: *$NS4 (the narrow member role" ||
    hub_fail "cluster show does not list the namespaces"
for _ in $(seq 1 60); do [ "$(reconnects)" -ge $((R0 + 2)) ] && break; sleep 0.25; done
[ "$(reconnects)" -ge $((R0 + 2)) ] || hub_fail "the hub did not read the new registrations"
pass "cluster add --namespaces checks the narrow role per namespace: the $nmiss permissions missing in $NS5 named with it, none elsewhere; with $NS4 alone it registers"

# Listed is not made for: the platform's NS4 carries no made-for annotation
# yet, so a Job of onprem's NS4 is refused there as from any other origin.
burst_job nr-early 2 3s | kc onprem apply -n "$NS4" -f - >/dev/null
wait_record "onprem/$NS4/nr-early" state blocked 60
case "$(record_field "onprem/$NS4/nr-early" reason)" in
"namespace $NS4 exists in cluster cloud-"*" and spillway did not create it for namespace $NS4 of cluster onprem"*) ;;
*) hub_fail "nr-early blocked for: $(record_field "onprem/$NS4/nr-early" reason)" ;;
esac
for c in cloud-spot cloud-ondemand; do
    kc "$c" annotate namespace "$NS4" "spillway.io/made-for=onprem/$NS4" >/dev/null
done
burst_job nr-ok 2 3s | kc onprem apply -n "$NS4" -f - >/dev/null
burst_job nr-no 2 3s | kc onprem apply -n "$NS5" -f - >/dev/null
wait_record "onprem/$NS4/nr-ok" state succeeded 90
[ "$(record_field "onprem/$NS4/nr-ok" targetCluster)" = cloud-spot ] ||
    hub_fail "nr-ok ran in $(record_field "onprem/$NS4/nr-ok" targetCluster)"
wait_record "onprem/$NS5/nr-no" state blocked 60
why=$(record_field "onprem/$NS5/nr-no" reason)
case "$why" in
"namespace $NS5 has no grant in cluster cloud-"*": its registration (the narrow member role) lets spillway into namespaces $NS4 only") ;;
*) hub_fail "nr-no blocked for: $why" ;;
esac
for _ in $(seq 1 20); do
    kc onprem get events -n "$NS5" --field-selector involvedObject.name=nr-no,reason=BurstRefused \
        -o jsonpath='{.items[*].message}' | grep -qF "namespace $NS5 has no grant in cluster" && break
    sleep 0.5
done
kc onprem get events -n "$NS5" --field-selector involvedObject.name=nr-no,reason=BurstRefused \
    -o jsonpath='{.items[*].message}' | grep -qF "namespace $NS5 has no grant in cluster" ||
    hub_fail "no BurstRefused Event with the reason on nr-no"
[ "$(kc onprem get job nr-no -n "$NS5" -o jsonpath='{.metadata.annotations.spillway\.io/reason}')" = "$why" ] ||
    hub_fail "nr-no's spillway.io/reason is not the refusal"
SINCE=$NARROW_SINCE
for c in cloud-spot cloud-ondemand; do
    ! audit_has "$c" "$MEMBER_USER" "e['verb'] == 'create' and o.get('resource') == 'namespaces'" ||
        hub_fail "the hub created a namespace on $c under the narrow role"
    ! audit_has "$c" "$MEMBER_USER" "o.get('namespace') == '$NS5' or o.get('name') == '$NS5'" ||
        hub_fail "the hub sent a request about $NS5 to $c"
    ! audit_has "$c" "$MEMBER_USER" "dec == 'forbid' and o.get('namespace') == '$NS4'" ||
        hub_fail "a request in $NS4 on $c was refused under the narrow role"
done
kc cloud-spot get namespace "$NS5" >/dev/null 2>&1 && hub_fail "namespace $NS5 exists on cloud-spot"
pass "narrow role: a Job of $NS4 refused while the platform's $NS4 was not made for onprem/$NS4, then one burst into it on cloud-spot; one of $NS5 refused on the origin ($why); no namespace created, nothing sent about $NS5 (audit)"
pass "least privilege shown in $(($(date +%s) - T0)) s"
