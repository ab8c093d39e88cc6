#!/usr/bin/env bash
# multikueue.sh - the hub as MultiKueue's external dispatcher (testbed kueue
# and multikueue modes; turned on here when off, and off again at the end).
# onprem's Kueue is the MultiKueue manager, cloud-spot and cloud-ondemand its
# workers; the test's namespace gets LocalQueue "multikueue" on onprem
# (ClusterQueue multikueue, with the MultiKueue check) and on the workers
# (their ClusterQueue gpu). Every Job is created unsuspended in that queue:
#   1. no hub running: the manager reserves quota and then waits; no worker
#      is nominated and no worker gets a copy (Kueue waits for its dispatcher);
#   2. a hub with kueue.multiKueueDispatcher: true: the Workload is
#      nominated to cloud-spot alone (the engine's cheapest) and runs and
#      completes there once; cloud-ondemand never gets a copy;
#   3. cloud-spot full (a filler holding its 64 GPUs): the next Job goes to
#      cloud-ondemand, as the hub's Event on its Workload explains.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TESTBED="$SW_SOURCE_DIR/tests/testbed/testbed"
STARTED_KUEUE="" STARTED_MK=""
hub_setup mk
mk_cleanup() {
    [ -n "$STARTED_MK" ] && "$TESTBED" multikueue down >/dev/null 2>&1
    [ -n "$STARTED_KUEUE" ] && "$TESTBED" kueue down >/dev/null 2>&1
    hub_cleanup
}
trap mk_cleanup EXIT
if ! [ -f "$SW_LAB_DIR/kueue/on" ]; then
    "$TESTBED" kueue up >/dev/null
    STARTED_KUEUE=1
fi
if ! [ -f "$SW_LAB_DIR/kueue/multikueue" ]; then
    "$TESTBED" multikueue up >/dev/null
    STARTED_MK=1
fi
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

workload_of() { # workload_of CLUSTER JOB
    local uid
    uid=$(kc "$1" get job "$2" -n "$NS" -o jsonpath='{.metadata.uid}')
    kc "$1" get workloads -n "$NS" -l "kueue.x-k8s.io/job-uid=$uid" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null
}
wl_field() { kc onprem get workload "$1" -n "$NS" -o jsonpath="$2" 2>/dev/null; }
copies() { kc "$1" get workloads -n "$NS" -o name 2>/dev/null | wc -l; }

# wait_until SECONDS WHAT CMD...
wait_until() {
    local s=$1 what=$2 i
    shift 2
    for i in $(seq 1 $((s * 2))); do
        "$@" && return 0
        sleep 0.5
    done
    hub_fail "after $s s: $what"
}

# 1. no hub: quota reserved at the manager, then nothing.
mk_job mk-a 4 5s | kc onprem apply -n "$NS" -f - >/dev/null
WA=""
for _ in $(seq 1 120); do WA=$(workload_of onprem mk-a); [ -n "$WA" ] && break; sleep 0.5; done
[ -n "$WA" ] || hub_fail "mk-a got no Workload on onprem"
reserved_pending() {
    [ "$(wl_field "$WA" '{.status.conditions[?(@.type=="QuotaReserved")].status}')" = True ] &&
        [ "$(wl_field "$WA" '{.status.admissionChecks[?(@.name=="multikueue")].state}')" = Pending ]
}
wait_until 60 "mk-a's Workload $WA reserved at the manager with check multikueue Pending" reserved_pending
sleep 10
[ -z "$(wl_field "$WA" '{.status.nominatedClusterNames}')" ] ||
    hub_fail "with no hub, $WA was nominated: $(wl_field "$WA" '{.status.nominatedClusterNames}')"
[ "$(copies cloud-spot)" = 0 ] && [ "$(copies cloud-ondemand)" = 0 ] ||
    hub_fail "with no hub, a worker got a copy of $WA"
reserved_pending || hub_fail "with no hub, $WA left the dispatch wait"
echo "1. no hub: $WA reserved at the manager, check Pending, not nominated, no copy after 10 s"

# 2. the hub dispatches to the cheapest worker.
cat >>"$HUB_TMP/hub.yaml" <<YAML
kueue:
  multiKueueDispatcher: true
YAML
hub_start
t0=$SECONDS
on_spot() { [ "$(wl_field "$WA" '{.status.clusterName}')" = cloud-spot ]; }
wait_until 90 "$WA assigned to cloud-spot (clusterName '$(wl_field "$WA" '{.status.clusterName}')')" on_spot
echo "2. $WA assigned to cloud-spot $((SECONDS - t0)) s after the hub started"
complete() { [ "$(kc "$1" get job "$2" -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}' 2>/dev/null)" = True ]; }
wait_until 120 "mk-a complete on cloud-spot" complete cloud-spot mk-a
wait_until 60 "mk-a complete on the manager (status copied back)" complete onprem mk-a
[ "$(copies cloud-ondemand)" = 0 ] || hub_fail "cloud-ondemand got a copy of $WA"
[ "$(kc cloud-spot get job mk-a -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] ||
    hub_fail "mk-a did not succeed exactly once on cloud-spot"
kc onprem get events -n "$NS" --field-selector "involvedObject.name=$WA,reason=Nominated" \
    -o jsonpath='{.items[*].message}' | grep -q "nominated cloud-spot (spot)" ||
    hub_fail "no Nominated Event naming cloud-spot on $WA"
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
[ -n "$WB" ] || hub_fail "mk-b got no Workload on onprem"
on_od() { [ "$(wl_field "$WB" '{.status.clusterName}')" = cloud-ondemand ]; }
wait_until 90 "$WB assigned to cloud-ondemand (clusterName '$(wl_field "$WB" '{.status.clusterName}')')" on_od
wait_until 120 "mk-b complete on cloud-ondemand" complete cloud-ondemand mk-b
why=$(kc onprem get events -n "$NS" --field-selector "involvedObject.name=$WB,reason=Nominated" -o jsonpath='{.items[0].message}')
echo "$why" | grep -q "nominated cloud-ondemand (on-demand)" || hub_fail "the Nominated Event on $WB does not name cloud-ondemand first: $why"
kc cloud-spot get workload "$WB" -n "$NS" >/dev/null 2>&1 && hub_fail "cloud-spot got a copy of $WB"
echo "3. spot full: $WB went to cloud-ondemand; the hub said: $why"
echo "PASS"
