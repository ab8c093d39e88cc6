#!/usr/bin/env bash
# cluster_loss.sh - a member cluster lost while burst Jobs run there (its
# API server stopped), then back:
#   - the default Job (on-cluster-loss: requeue) is placed again elsewhere
#     as attempt 2 once the cluster has not answered for lostAfterSeconds;
#     its attempt-1 mirror is remembered as stale in the record;
#   - outputs are fenced by attempt: what attempt 1 wrote before the loss
#     came home; what it writes after (a zombie on the partitioned cluster)
#     never does; attempt 2's outputs do;
#   - a Job with on-cluster-loss: wait stays with the cluster and completes
#     there, attempt 1, once it is back;
#   - the loss is in Redis (the health key), in `spillctl cluster list`, in
#     /metrics and in a ClusterLost Event;
#   - when the cluster returns, the stale mirror is deleted before any new
#     mirror is created there;
#   - the independent watcher sees no Job complete twice (and no Job active
#     in two clusters, the lost one aside: docs/dr.md).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup loss
TB="$SW_SOURCE_DIR/tests/testbed/testbed"
trap '"$TB" start-apiserver cloud-spot >/dev/null 2>&1 || true; hub_cleanup' EXIT
cat >>"$HUB_TMP/hub.yaml" <<YAML
members:
  probeIntervalSeconds: 1
  lostAfterSeconds: 6
YAML
s3put() { # ENDPOINT REGION KEY SIZE SEED
    "$S3TOOL" "$1" "$2" put checkpoints "$3" "$4" "$5" >/dev/null
}
stale_count() { rcli GET "spillway:job:$1" | python3 -c "import json,sys; print(len(json.load(sys.stdin).get('staleMirrors',[])))"; }

watcher_start --lossy cloud-spot
saturate
hub_start
# cloud-first: spot while it is there, then on-demand rather than the
# 30-minute wait at home (auto would wait: cheaper).
BURST_MODE=cloud-first burst_job req 4 80s "" "    spillway.io/outputs: s3://checkpoints/$NS/req/" | kc onprem apply -n "$NS" -f - >/dev/null
burst_job hold 4 40s "" "    spillway.io/on-cluster-loss: wait" | kc onprem apply -n "$NS" -f - >/dev/null
R="onprem/$NS/req"
W="onprem/$NS/hold"
wait_record "$R" state running 90
wait_record "$W" state running 90
for k in "$R" "$W"; do
    [ "$(record_field "$k" targetCluster)" = cloud-spot ] || hub_fail "$k runs in $(record_field "$k" targetCluster), not cloud-spot"
done
m1=$(record_field "$R" mirror)

# Attempt 1 writes a checkpoint (as the workload would) and it comes home.
s3put "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$NS/req/attempt-1/ckpt-1" 4096 1
for _ in $(seq 1 60); do
    s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem checkpoints "$NS/req/ckpt-1" >"$HUB_TMP/ckpt1.home" 2>/dev/null && break
    sleep 0.5
done
s3get "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 checkpoints "$NS/req/attempt-1/ckpt-1" >"$HUB_TMP/ckpt1.a1"
cmp -s "$HUB_TMP/ckpt1.home" "$HUB_TMP/ckpt1.a1" || hub_fail "attempt 1's checkpoint did not come home before the loss"

# ---- the loss ----------------------------------------------------------------
t0=$(date +%s.%N)
"$TB" stop-apiserver cloud-spot
wait_record "$R" targetCluster cloud-ondemand 60
wait_record "$R" state running 90
t1=$(date +%s.%N)
rto=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
[ "$(record_field "$R" attempt)" = 2 ] || hub_fail "the requeued Job is at attempt $(record_field "$R" attempt)"
rcli GET "spillway:job:$R" | grep -q "\"name\":\"$m1\"" || hub_fail "attempt 1's mirror $m1 is not remembered as stale"
pass "cloud-spot lost: requeue Job running again in cloud-ondemand (attempt 2) ${rto} s after its API server stopped (lostAfterSeconds 6, probe 1 s)"

# The Job that waits stays where it was, and says why.
[ "$(record_field "$W" targetCluster)" = cloud-spot ] || hub_fail "the wait Job moved to $(record_field "$W" targetCluster)"
[ "$(record_field "$W" attempt)" = 1 ] || hub_fail "the wait Job is at attempt $(record_field "$W" attempt)"
wait_record "$W" reason "waiting for cluster cloud-spot to return (spillway.io/on-cluster-loss: wait)" 10
pass "on-cluster-loss: wait: the Job stays with cloud-spot, \"$(record_field "$W" reason)\""

# The loss is visible: Redis, spillctl, /metrics, an Event.
rcli GET spillway:hub:members | python3 -c "
import json,sys
d=json.load(sys.stdin)
m=[x for x in d['members'] if x['name']=='cloud-spot'][0]
assert m['lost'] and m['lostSinceMs']>0, m
" || hub_fail "the health key does not say cloud-spot is lost"
"$SPILLCTL" cluster list | grep cloud-spot | grep -qi lost || hub_fail "spillctl cluster list does not show cloud-spot lost: $("$SPILLCTL" cluster list)"
# (Read whole first: grep -q closing the pipe early would fail curl, and the
# pipeline under pipefail, once /metrics is larger than a pipe's buffer.)
metrics=$(curl -sf http://127.0.0.1:19464/metrics)
grep -q 'spillway_member_lost{cluster="cloud-spot",fenced="false"} 1' <<<"$metrics" ||
    hub_fail "/metrics has no spillway_member_lost 1 for cloud-spot"
ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=req,reason=ClusterLost -o jsonpath='{.items[0].message}')
grep -q "cluster cloud-spot lost" <<<"$ev" || hub_fail "no ClusterLost Event on the origin: $ev"
pass "the loss is in Redis, spillctl cluster list, /metrics and an Event (\"$ev\")"

# Outputs fenced by attempt: the zombie writes after the loss, attempt 2 too.
s3put "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$NS/req/attempt-1/ckpt-1" 4096 66
s3put "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$NS/req/attempt-1/zombie" 1024 67
s3put "$SW_LAB_S3_ENDPOINT_US_WEST_2" us-west-2 "$NS/req/attempt-2/ckpt-2" 4096 2

# ---- the return --------------------------------------------------------------
"$TB" start-apiserver cloud-spot >/dev/null
# A Job that would rather go to spot, pending as the cluster comes back.
burst_job after 4 5s | kc onprem apply -n "$NS" -f - >/dev/null
A="onprem/$NS/after"
for _ in $(seq 1 240); do
    [ "$(stale_count "$R")" = 0 ] && break
    sleep 0.25
done
[ "$(stale_count "$R")" = 0 ] || hub_fail "the stale mirror was not deleted after cloud-spot returned"
if kc cloud-spot get job "$m1" -n "$NS" >/dev/null 2>&1; then
    [ -n "$(kc cloud-spot get job "$m1" -n "$NS" -o jsonpath='{.metadata.deletionTimestamp}')" ] ||
        hub_fail "the stale mirror $m1 is still there and not being deleted"
fi
del_ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=req,reason=StaleMirrorDeleted -o jsonpath='{.items[0].message}')
grep -q "$m1" <<<"$del_ev" || hub_fail "no StaleMirrorDeleted Event: $del_ev"
pass "cloud-spot back: stale mirror $m1 deleted (\"$del_ev\")"

# New work went there only after the stale mirror was gone (the hub's log
# is in the order things happened).
wait_record "$A" state succeeded 120
if [ "$(record_field "$A" targetCluster)" = cloud-spot ]; then
    del_line=$(grep -n "stale mirror deleted" "$HUB_TMP/hub.log" | head -1 | cut -d: -f1)
    new_line=$(grep -n "mirror created.*cloud-spot/$NS/" "$HUB_TMP/hub.log" | grep -v "$m1" | tail -1 | cut -d: -f1)
    [ -n "$del_line" ] && [ -n "$new_line" ] && [ "$new_line" -gt "$del_line" ] ||
        hub_fail "a mirror was created on cloud-spot (log line $new_line) before the stale one was deleted (line $del_line)"
    pass "the next Job went to cloud-spot after the stale mirror was deleted (log lines $del_line < $new_line)"
else
    pass "the next Job went to $(record_field "$A" targetCluster) (cloud-spot not yet usable when it was decided)"
fi

wait_record "$W" state succeeded 150
[ "$(record_field "$W" attempt)" = 1 ] || hub_fail "the wait Job ran again (attempt $(record_field "$W" attempt))"
[ "$(record_field "$W" reason)" = "" ] || [ "$(record_field "$W" state)" = succeeded ] || hub_fail "reason kept: $(record_field "$W" reason)"
pass "on-cluster-loss: wait: completed in cloud-spot, attempt 1, after the cluster returned"

wait_record "$R" state succeeded 200
s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem checkpoints "$NS/req/ckpt-2" >/dev/null || hub_fail "attempt 2's output did not come home"
if s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem checkpoints "$NS/req/zombie" >/dev/null 2>&1; then
    hub_fail "the lost attempt's late write reached the origin's store"
fi
s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem checkpoints "$NS/req/ckpt-1" >"$HUB_TMP/ckpt1.end"
cmp -s "$HUB_TMP/ckpt1.end" "$HUB_TMP/ckpt1.a1" || hub_fail "the lost attempt's late overwrite of ckpt-1 reached the origin's store"
pass "outputs fenced by attempt: attempt 2's ckpt-2 home; attempt 1's pre-loss ckpt-1 kept, its post-loss writes never copied"
watcher_check
