#!/usr/bin/env bash
# spot_loss.sh - a mirror's spot node is deleted while it runs (a spot
# reclaim in the lab): the hub deletes the lost mirror, counts the
# preemption, decides the Job again and runs attempt 2 to completion, with
# no Job active in two clusters at once (a pod on a deleted node runs
# nowhere). The node is created again at the end.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup spot
reseed() { "$SW_SOURCE_DIR/tests/testbed/testbed" reseed cloud-spot >/dev/null 2>&1 || true; }
trap 'reseed; hub_cleanup' EXIT
watcher_start
saturate
hub_start
burst_job lost 4 20s | kc onprem apply -n "$NS" -f - >/dev/null
L="onprem/$NS/lost"
wait_record "$L" state running 60
mirror=$(record_field "$L" mirror)
[ "$(record_field "$L" targetCluster)" = cloud-spot ] || hub_fail "ran in $(record_field "$L" targetCluster)"
node=""
for _ in $(seq 1 40); do
    node=$(kc cloud-spot get pods -n "$NS" -l "job-name=$mirror" -o jsonpath='{.items[0].spec.nodeName}')
    [ -n "$node" ] && break
    sleep 0.25
done
[ -n "$node" ] || hub_fail "the mirror's pod has no node"
kc cloud-spot delete node "$node" --wait=false >/dev/null
wait_record "$L" preemptions 1 60
wait_record "$L" state succeeded 120
[ "$(record_field "$L" attempt)" = 2 ] || hub_fail "attempt is $(record_field "$L" attempt)"
# Deleted (foreground: the Job object may stay until the garbage collector
# removes the pod stranded on the deleted node, but it is being deleted).
if kc cloud-spot get job "$mirror" -n "$NS" >/dev/null 2>&1; then
    [ -n "$(kc cloud-spot get job "$mirror" -n "$NS" -o jsonpath='{.metadata.deletionTimestamp}')" ] ||
        hub_fail "the lost mirror $mirror is not being deleted"
fi
[ "$(record_field "$L" mirror)" != "$mirror" ] || hub_fail "attempt 2 reused the lost mirror's name"
ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=lost,reason=Requeued -o jsonpath='{.items[0].message}')
grep -q "node $node was lost" <<<"$ev" || hub_fail "no Requeued event naming the node: $ev"
pass "spot node $node deleted: mirror $mirror deleted, Job requeued (\"$ev\") and succeeded in $(record_field "$L" targetCluster), attempt 2"
watcher_check
