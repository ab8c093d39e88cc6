#!/usr/bin/env bash
# failover_transfer.sh - a Redis Sentinel failover while a long input copy
# is in flight (the target region's store cut off by the fault proxy, so
# the copy cannot end until it is back):
#   - the leader re-takes its lease on the new master and acts again
#     within 10 s of SENTINEL FAILOVER, while the copy is still in flight
#     (once it waited for every step in flight, long copies included);
#   - a Job submitted after the failover, with no inputs, is dispatched
#     and runs while the copy is still stalled: the hub acts again;
#   - once the store is reachable again, the copy lands, its result is
#     re-validated against the record as read again under the new epoch,
#     and the Job runs in us-east-1 exactly once (one mirror, attempt 1),
#     its inputs verified there; the watcher sees no Job in two places.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_use_sentinel
hub_lock
trap hub_cleanup EXIT
faultproxy_start
hub_setup fotransfer

TTL=8
hub_config "$HUB_TMP/hub.yaml" 19464 $TTL
wait_sentinel_ready
watcher_start
saturate
for i in 0 1 2 3; do
    "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put datasets "$NS/in/part-$i.bin" $((2 << 20)) "$((i + 1))" >/dev/null
done
# Every request to us-east-1's store answered 0.3 s late each way, so that
# the copy is still in its first requests when the store is cut off.
fault s3-us-east-1 latency=300
hub_start
for _ in $(seq 1 60); do [ "$(metric 19464 spillway_leader)" = 1 ] && break; sleep 0.25; done
[ "$(metric 19464 spillway_leader)" = 1 ] || hub_fail "the hub did not take the lease through the Sentinels"

# The copy to us-east-1 starts as the Job is decided; the store is cut off
# then, so the copy stalls in flight.
BURST_MODE=cloud-first burst_job long 4 5s "" "    spillway.io/inputs: s3://datasets/$NS/in/" |
    kc onprem apply -n "$NS" -f - >/dev/null
L="onprem/$NS/long"
for _ in $(seq 1 600); do
    [ "$(record_field "$L" state)" = decided ] && break
    sleep 0.05
done
[ "$(record_field "$L" state)" = decided ] || hub_fail "the Job was not decided in 30 s"
fault s3-us-east-1 partition=1
[ "$(record_field "$L" targetCluster)" = cloud-spot ] || hub_fail "the Job goes to $(record_field "$L" targetCluster)"
sleep 2
[ "$(record_field "$L" state)" = decided ] ||
    hub_fail "the input copy ended before the store was cut off (state $(record_field "$L" state)); the test needs it in flight"
pass "input copy to us-east-1 in flight, its store cut off"

e1=$(metric 19464 spillway_epoch)
t0=$(date +%s%N)
m1=$(failover)
ok=""
for _ in $(seq 1 200); do
    e=$(metric 19464 spillway_epoch)
    if [ -n "$e" ] && [ "$e" -gt "$e1" ] && grep -q "msg=\"acting as leader\".*epoch=$e " "$HUB_TMP/hub.log"; then
        ok=1
        break
    fi
    sleep 0.05
done
t1=$(date +%s%N)
e2=$(metric 19464 spillway_epoch)
[ -n "$ok" ] || hub_fail "the hub did not act again within 10 s of the failover while the copy was in flight (epoch $e2, was $e1)"
act_ms=$(($(log_ms "msg=\"acting as leader\".*epoch=$e2 ") - t0 / 1000000))
[ "$(record_field "$L" state)" = decided ] || hub_fail "the copy landed before the hub acted again: the test proves nothing"
grep -q "inputs ready in the target region.*job=\"\{0,1\}$L" "$HUB_TMP/hub.log" && hub_fail "the copy landed already"
pass "SENTINEL failover to 127.0.0.1:$m1: the hub acting again under epoch $e2 (was $e1) at +$act_ms ms, the input copy still in flight"

# Acting means acting: a new Job with no inputs is dispatched meanwhile.
BURST_MODE=cloud-first burst_job quick 4 3s | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/quick" state succeeded 90
[ "$(record_field "$L" state)" = decided ] || hub_fail "the stalled copy landed while the store was cut off"
pass "a Job submitted after the failover ran to success while the copy stayed in flight"

fault s3-us-east-1 partition=0
wait_record "$L" state succeeded 240
[ "$(record_field "$L" attempt)" = 1 ] || hub_fail "the Job ran as attempt $(record_field "$L" attempt)"
uid=$(kc onprem get job long -n "$NS" -o jsonpath='{.metadata.uid}')
n=0
for c in cloud-spot cloud-ondemand onprem; do
    n=$((n + $(kc "$c" get jobs -n "$NS" -l "spillway.io/origin-uid=$uid" -o name | wc -l)))
done
[ "$n" = 1 ] || hub_fail "the Job has $n mirrors"
for i in 0 1 2 3; do
    s3get "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 datasets "$NS/in/part-$i.bin" |
        cmp -s - <(s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem datasets "$NS/in/part-$i.bin") ||
        hub_fail "input part-$i.bin is not the same in us-east-1"
done
pass "store back: the copy landed under epoch $e2, the Job ran once in $(record_field "$L" targetCluster) (one mirror, attempt 1), inputs identical in us-east-1"
watcher_check
