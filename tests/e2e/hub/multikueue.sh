#!/usr/bin/env bash
# multikueue.sh - the hub as MultiKueue's external dispatcher (testbed kueue
# and multikueue modes; turned on here when off, and off again at the end).
# onprem's Kueue is the MultiKueue manager, cloud-spot and cloud-ondemand its
# workers; the test's namespace gets LocalQueue "multikueue" on onprem
# (ClusterQueue multikueue, with the MultiKueue check) and on the workers
# (their ClusterQueue gpu). Every Job is created unsuspended in that queue:
#   1. no hub running: the manager reserves quota and then waits; no worker
#      is nominated and no worker gets a copy (Kueue waits for its dispatcher);
#   2. a hub with kueue.multiKueueDispatcher: true, onprem registered with a
#      ServiceAccount holding only the member role and the MultiKueue one
#      (deploy/rbac): the Workload is
#      nominated to cloud-spot alone (the engine's cheapest), handed over
#      (clusterName cloud-spot), runs and completes there once, its status
#      comes back to the manager, the hub's fields are released and the
#      check is Ready; cloud-ondemand never gets a copy;
#   3. cloud-spot full (a filler holding its 64 GPUs): the next Job goes to
#      cloud-ondemand, the hub's Event on its Workload saying cloud-spot was
#      excluded for capacity; it runs there once and never on cloud-spot.
# "Never" and "once" are read from watches on the workers, kept for the
# whole test (Kueue deletes a worker's Job once the manager's has finished).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TESTBED="$SW_SOURCE_DIR/tests/testbed/testbed"
STARTED_KUEUE="" STARTED_MK=""
hub_setup mk
MK_WATCH=()
MK_BINDINGS=""
mk_cleanup() {
    local p
    # shellcheck disable=SC2086
    [ -n "$MK_BINDINGS" ] && kc onprem delete clusterrolebinding $MK_BINDINGS --ignore-not-found >/dev/null 2>&1
    for p in "${MK_WATCH[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$STARTED_MK" ] && "$TESTBED" multikueue down >/dev/null 2>&1
    [ -n "$STARTED_KUEUE" ] && "$TESTBED" kueue down >/dev/null 2>&1
    hub_cleanup
}
trap mk_cleanup EXIT
# The lab's modes print their steps on stderr; a failing step says what.
t_lab=$SECONDS
if ! [ -f "$SW_LAB_DIR/kueue/on" ]; then
    STARTED_KUEUE=1
    "$TESTBED" kueue up >/dev/null || hub_fail "testbed kueue up failed (its messages above)"
fi
if ! [ -f "$SW_LAB_DIR/kueue/multikueue" ]; then
    STARTED_MK=1
    "$TESTBED" multikueue up >/dev/null || hub_fail "testbed multikueue up failed (its messages above)"
fi
echo "0. the lab's Kueue and MultiKueue modes on in $((SECONDS - t_lab)) s"
lq() { printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: %s, namespace: %s}\nspec: {clusterQueue: %s}\n' "$1" "$NS" "$2"; }
lq multikueue multikueue | kc onprem apply -f - >/dev/null
for c in cloud-spot cloud-ondemand; do
    lq multikueue gpu | kc "$c" apply -f - >/dev/null
    lq gpu gpu | kc "$c" apply -f - >/dev/null
done

# mk_job NAME GPUS DELAY [QUEUE]: a Job of one pod in the queue (default
# multikueue), created unsuspended.
mk_job() {
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  labels: {kueue.x-k8s.io/queue-name: ${4:-multikueue}}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "$3"}
    spec:
      restartPolicy: Never
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      - {key: spillway.io/spot, operator: Exists, effect: NoSchedule}
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "$2"}}
YAML
}

# workload_of CLUSTER JOB: the name of the Job's Workload, "" while there is
# none yet. Never fails: under set -e a failing `WA=$(...)` would end the
# test without a word (kubectl's jsonpath refuses items[0] of an empty list;
# that is how the first run of this test stopped).
workload_of() {
    local uid
    uid=$(kc "$1" get job "$2" -n "$NS" -o jsonpath='{.metadata.uid}' 2>/dev/null) || return 0
    [ -n "$uid" ] || return 0
    kc "$1" get workloads -n "$NS" -l "kueue.x-k8s.io/job-uid=$uid" -o jsonpath='{.items[*].metadata.name}' 2>/dev/null || true
}
wl_field() { kc onprem get workload "$1" -n "$NS" -o jsonpath="$2" 2>/dev/null || true; }
copies() { kc "$1" get workloads -n "$NS" -o name 2>/dev/null | wc -l; }

# mk_state: what the manager and the workers hold of the test's Workloads,
# and the hub's Events on them (shown with a failure).
mk_state() {
    local c
    echo "---- Workloads (QuotaReserved Admitted Finished, check, nominated, clusterName)" >&2
    for c in onprem cloud-spot cloud-ondemand; do
        kc "$c" get workloads -n "$NS" -o jsonpath='{range .items[*]}'"$c"' {.metadata.name} {.status.conditions[?(@.type=="QuotaReserved")].status} {.status.conditions[?(@.type=="Admitted")].status} {.status.conditions[?(@.type=="Finished")].status} check={.status.admissionChecks[*].state} nominated={.status.nominatedClusterNames} clusterName={.status.clusterName}{"\n"}{end}' >&2 2>/dev/null || true
    done
    echo "---- Events on the manager" >&2
    kc onprem get events -n "$NS" -o jsonpath='{range .items[*]}{.involvedObject.name} {.reason}: {.message}{"\n"}{end}' >&2 2>/dev/null || true
}
mk_fail() {
    mk_state
    hub_fail "$@"
}

# wait_until SECONDS WHAT CMD...
wait_until() {
    local s=$1 what=$2 i
    shift 2
    for i in $(seq 1 $((s * 2))); do
        "$@" && return 0
        sleep 0.5
    done
    mk_fail "after $s s: $what"
}

# 1. no hub: quota reserved at the manager, then nothing.
mk_job mk-a 4 5s | kc onprem apply -n "$NS" -f - >/dev/null
WA=""
for _ in $(seq 1 120); do WA=$(workload_of onprem mk-a); [ -n "$WA" ] && break; sleep 0.5; done
[ -n "$WA" ] || mk_fail "mk-a got no Workload on onprem"
reserved_pending() {
    [ "$(wl_field "$WA" '{.status.conditions[?(@.type=="QuotaReserved")].status}')" = True ] &&
        [ "$(wl_field "$WA" '{.status.admissionChecks[?(@.name=="multikueue")].state}')" = Pending ]
}
wait_until 60 "mk-a's Workload $WA reserved at the manager with check multikueue Pending" reserved_pending
sleep 10
[ -z "$(wl_field "$WA" '{.status.nominatedClusterNames}')" ] ||
    mk_fail "with no hub, $WA was nominated: $(wl_field "$WA" '{.status.nominatedClusterNames}')"
[ "$(copies cloud-spot)" = 0 ] && [ "$(copies cloud-ondemand)" = 0 ] ||
    mk_fail "with no hub, a worker got a copy of $WA"
reserved_pending || mk_fail "with no hub, $WA left the dispatch wait"
echo "1. no hub: $WA reserved at the manager, check Pending, not nominated, no copy after 10 s"

# mk_watch CLUSTER KIND: every change of KIND in the test's namespace on
# CLUSTER, as "TYPE NAME UID s=SUCCEEDED f=FAILED" lines in
# $HUB_TMP/watch-CLUSTER-KIND: the oracle for "never copied there" and "ran
# once", apart from the hub and from the last state alone (a copy made and
# deleted again is seen; so is a worker's Job that Kueue deletes once the
# manager's Workload has finished).
mk_watch() {
    "$SW_LAB_KUBECTL" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/$1-cert.kubeconfig" get "$2" -n "$NS" \
        --watch --output-watch-events \
        -o jsonpath='{.type} {.object.metadata.name} {.object.metadata.uid} s={.object.status.succeeded} f={.object.status.failed}{"\n"}' \
        >>"$HUB_TMP/watch-$1-$2" 2>&1 &
    MK_WATCH+=($!)
}
# succeeded_on CLUSTER JOB: the worker's Job was seen with one pod succeeded.
succeeded_on() { awk -v n="$2" '$2 == n && $4 == "s=1" { ok = 1 } END { exit !ok }' "$HUB_TMP/watch-$1-jobs"; }
# failed_on CLUSTER JOB: seen with a failed pod.
failed_on() { awk -v n="$2" '$2 == n && $5 != "f=" && $5 != "f=0" { ok = 1 } END { exit !ok }' "$HUB_TMP/watch-$1-jobs"; }
seen() { grep -c " $3 " "$HUB_TMP/watch-$1-$2" 2>/dev/null || true; }     # seen CLUSTER KIND NAME: events
uids() { awk -v n="$3" '$2 == n { print $3 }' "$HUB_TMP/watch-$1-$2" 2>/dev/null | sort -u | wc -l; }
for c in cloud-spot cloud-ondemand; do
    mk_watch "$c" workloads
    mk_watch "$c" jobs
done

# 2. the hub dispatches to the cheapest worker, holding on the manager
# nothing but the member role and the MultiKueue one (deploy/rbac): onprem
# is registered again with a ServiceAccount token bound to both; a refused
# request would leave the Workload un-nominated.
kc onprem apply -f "$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml" \
    -f "$SW_SOURCE_DIR/deploy/rbac/member-multikueue-clusterrole.yaml" >/dev/null
kc onprem create serviceaccount spillway -n "$NS" >/dev/null
for r in spillway-member spillway-member-multikueue; do
    kc onprem create clusterrolebinding "$r-$NS" --clusterrole="$r" --serviceaccount="$NS:spillway" >/dev/null
done
MK_BINDINGS="spillway-member-$NS spillway-member-multikueue-$NS"
cat >"$HUB_TMP/onprem-sa.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: onprem
  cluster:
    server: $(kc onprem config view --minify -o jsonpath='{.clusters[0].cluster.server}')
    certificate-authority-data: $(base64 -w0 "$SW_LAB_DIR/onprem/pki/ca.crt")
users:
- name: spillway
  user:
    token: $(kc onprem create token spillway -n "$NS" --duration=1h)
contexts:
- name: onprem
  context: {cluster: onprem, user: spillway}
current-context: onprem
YAML
"$SPILLCTL" cluster add onprem --replace --kubeconfig "$HUB_TMP/onprem-sa.kubeconfig" --role onprem \
    --region onprem --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >/dev/null ||
    mk_fail "onprem not registered with the member and MultiKueue roles"
cat >>"$HUB_TMP/hub.yaml" <<YAML
kueue:
  multiKueueDispatcher: true
YAML
hub_start
t0=$SECONDS
on_spot() { [ "$(wl_field "$WA" '{.status.clusterName}')" = cloud-spot ]; }
wait_until 90 "$WA assigned to cloud-spot" on_spot
echo "2. $WA assigned to cloud-spot $((SECONDS - t0)) s after the hub started"
complete() { [ "$(kc "$1" get job "$2" -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}' 2>/dev/null)" = True ]; }
# Kueue deletes the worker's Job and Workload once the manager's Workload
# has finished (reconcileGroup, step 2): the watch, not a last look, says
# that it ran there.
wait_until 120 "mk-a succeeded on cloud-spot" succeeded_on cloud-spot mk-a
wait_until 60 "mk-a complete on the manager (status copied back)" complete onprem mk-a
echo "   mk-a complete on cloud-spot and on the manager $((SECONDS - t0)) s after the hub started"
# The hand-over left nothing of the hub's: the list gone (released), the
# check Ready and clusterName as Kueue wrote them.
released() {
    [ -z "$(wl_field "$1" '{.status.nominatedClusterNames}')" ] &&
        [ "$(wl_field "$1" '{.status.admissionChecks[?(@.name=="multikueue")].state}')" = Ready ]
}
wait_until 30 "$WA released by the hub (no nominatedClusterNames) with check multikueue Ready" released "$WA"
[ "$(copies cloud-ondemand)" = 0 ] && [ "$(seen cloud-ondemand workloads "$WA")" = 0 ] ||
    mk_fail "cloud-ondemand got a copy of $WA: $(cat "$HUB_TMP/watch-cloud-ondemand-workloads")"
[ "$(uids cloud-spot workloads "$WA")" = 1 ] && [ "$(uids cloud-spot jobs mk-a)" = 1 ] ||
    mk_fail "cloud-spot held more than one copy of $WA or mk-a: $(cat "$HUB_TMP/watch-cloud-spot-workloads" "$HUB_TMP/watch-cloud-spot-jobs")"
failed_on cloud-spot mk-a && mk_fail "mk-a failed a pod on cloud-spot: $(cat "$HUB_TMP/watch-cloud-spot-jobs")"
[ "$(kc onprem get job mk-a -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] ||
    mk_fail "the manager's mk-a does not show one pod succeeded"
kc onprem get events -n "$NS" --field-selector "involvedObject.name=$WA,reason=Nominated" \
    -o jsonpath='{.items[*].message}' | grep -q "nominated cloud-spot (spot)" ||
    mk_fail "no Nominated Event naming cloud-spot on $WA"
echo "   mk-a completed once on cloud-spot, never copied to cloud-ondemand"

# 3. cloud-spot full: the engine takes cloud-ondemand.
SPOT_GPUS=$(kc cloud-spot get clusterqueue gpu -o jsonpath='{.spec.resourceGroups[0].flavors[0].resources[?(@.name=="nvidia.com/gpu")].nominalQuota}')
FILL=$((SPOT_GPUS / 8))
mk_job filler 8 600s gpu | sed "s/^spec:/spec:\n  parallelism: $FILL\n  completions: $FILL/" | kc cloud-spot apply -n "$NS" -f - >/dev/null
spot_full() { [ "$(kc cloud-spot get pods -n "$NS" -l job-name=filler --field-selector=status.phase=Running -o name | wc -l)" = "$FILL" ]; }
wait_until 120 "the filler's $FILL pods running on cloud-spot" spot_full
mk_job mk-b 4 5s | kc onprem apply -n "$NS" -f - >/dev/null
WB=""
for _ in $(seq 1 120); do WB=$(workload_of onprem mk-b); [ -n "$WB" ] && break; sleep 0.5; done
[ -n "$WB" ] || mk_fail "mk-b got no Workload on onprem"
on_od() { [ "$(wl_field "$WB" '{.status.clusterName}')" = cloud-ondemand ]; }
wait_until 90 "$WB assigned to cloud-ondemand" on_od
wait_until 120 "mk-b succeeded on cloud-ondemand" succeeded_on cloud-ondemand mk-b
why=$(kc onprem get events -n "$NS" --field-selector "involvedObject.name=$WB,reason=Nominated" -o jsonpath='{.items[0].message}')
# The engine's explanation: cloud-ondemand nominated, cloud-spot excluded
# for capacity (the filler holds its GPUs).
grep -q "nominated cloud-ondemand (on-demand) \$[0-9.]* expected; excluded: cloud-spot (spot): no free or autoscalable GPUs" <<<"$why" ||
    mk_fail "the Nominated Event on $WB does not nominate cloud-ondemand and exclude cloud-spot for capacity: $why"
[ "$(seen cloud-spot workloads "$WB")" = 0 ] ||
    mk_fail "cloud-spot got a copy of $WB: $(cat "$HUB_TMP/watch-cloud-spot-workloads")"
[ "$(uids cloud-ondemand jobs mk-b)" = 1 ] && ! failed_on cloud-ondemand mk-b ||
    mk_fail "mk-b did not run exactly once on cloud-ondemand: $(cat "$HUB_TMP/watch-cloud-ondemand-jobs")"
wait_until 60 "mk-b complete on the manager (status copied back)" complete onprem mk-b
wait_until 30 "$WB released by the hub (no nominatedClusterNames) with check multikueue Ready" released "$WB"
echo "3. spot full: $WB went to cloud-ondemand; the hub said: $why"
# The hub's identity on the manager was refused nothing, and it did write
# the nominations with it (the audit log, tests/testbed/audit-policy.yaml).
audit=$(python3 - "$SW_LAB_DIR/onprem/audit.log" "system:serviceaccount:$NS:spillway" <<'PY'
import json, sys
refused, nominated, lists = [], 0, set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("stage") != "ResponseComplete" or e["user"].get("username") != sys.argv[2]:
        continue
    o = e.get("objectRef") or {}
    code = (e.get("responseStatus") or {}).get("code", 0)
    if code == 403:
        refused.append(f'{e["verb"]} {o.get("resource")}/{o.get("subresource", "")}')
    if o.get("resource") == "workloads" and o.get("subresource") == "status" and e["verb"] == "patch" and code < 300:
        nominated += 1
    if e["verb"] == "list" and o.get("resource") in ("admissionchecks", "multikueueconfigs") and code < 300:
        lists.add(o["resource"])
print(len(refused), nominated, len(lists), " ".join(sorted(set(refused))))
PY
)
read -r n_refused n_status n_lists refused_what <<<"$audit"
[ "$n_refused" = 0 ] || mk_fail "the hub was refused on the manager with the member and MultiKueue roles: $refused_what"
[ "$n_status" -gt 0 ] && [ "$n_lists" = 2 ] ||
    mk_fail "the audit log does not show the hub's Workload status patches ($n_status) and both lists ($n_lists of 2) under its ServiceAccount"
echo "   the hub's ServiceAccount on the manager (member + MultiKueue roles): 0 refused, $n_status Workload status patches, AdmissionChecks and MultiKueueConfigs listed"
echo "PASS"
