#!/usr/bin/env bash
# home_loss.sh - the on-prem home cluster lost (its API server stopped)
# while burstable Jobs run or queue there, then back:
#   - a requeue Job running at home is placed in the cloud (attempt 1),
#     its origin recorded as stale (attempt 0) since the hub cannot suspend
#     it while home does not answer;
#   - a requeue Job queued at home (policy const-wait:60, within its wait)
#     is placed in the cloud at once too, dispatched
#     without suspending it at home (recorded stale the same way);
#   - a Job with on-cluster-loss: wait, running at home, stays and says why;
#   - when home returns, both origins are suspended there (their pods at
#     home stop) before anything else, with a HomeRunStopped Event; the
#     wait Job runs on at home, its reason cleared;
#   - the independent watcher sees no Job active in two clusters (the lost
#     home aside, docs/dr.md) and none complete twice.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup homeloss
TB="$SW_SOURCE_DIR/tests/testbed/testbed"
trap '"$TB" start-apiserver onprem >/dev/null 2>&1 || true; hub_cleanup' EXIT
# const-wait: a Job queued at home waits there 60 s before it may burst;
# with home lost there is nothing to wait for.
sed -i 's/policy: cost-aware/policy: "const-wait:60"/' "$HUB_TMP/hub.yaml"
cat >>"$HUB_TMP/hub.yaml" <<YAML
members:
  probeIntervalSeconds: 1
  lostAfterSeconds: 6
YAML
stale_of() { # KEY -> "cluster/name/attempt ..." of its stale entries
    rcli GET "spillway:job:$1" | python3 -c "
import json,sys
print(' '.join(f\"{s['cluster']}/{s['name']}/{s['attempt']}\" for s in json.load(sys.stdin).get('staleMirrors',[])))"
}
home_running() { # NAME -> pods of the Job running at home
    kc onprem get pods -n "$NS" -l job-name="$1" --field-selector=status.phase=Running -o name | wc -l
}

watcher_start --lossy onprem
# Home (2 nodes x 4 GPUs) full with two burstable Jobs running there.
burst_job runreq 4 3600s | kc onprem apply -n "$NS" -f - >/dev/null
burst_job runwait 4 3600s "" "    spillway.io/on-cluster-loss: wait" | kc onprem apply -n "$NS" -f - >/dev/null
for _ in $(seq 1 60); do
    [ "$(home_running runreq)" = 1 ] && [ "$(home_running runwait)" = 1 ] && break
    sleep 0.5
done
[ "$(home_running runreq)" = 1 ] && [ "$(home_running runwait)" = 1 ] || hub_fail "the two Jobs do not run at home"
hub_start
RR="onprem/$NS/runreq"
RW="onprem/$NS/runwait"
Q="onprem/$NS/queued"
wait_record "$RR" state observed 60
wait_record "$RW" state observed 60
# A Job queued at home, within its 60 s of waiting.
burst_job queued 4 3600s | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "$Q" state observed 60
sleep 4 # two decision rounds: it stays queued at home
[ "$(record_field "$Q" state)" = observed ] || hub_fail "the queued Job was placed before the loss: $(record_field "$Q" summary)"
pass "home full: runreq and runwait run at home, queued waits there ($(record_field "$Q" summary))"

# ---- the loss ----------------------------------------------------------------
t0=$(date +%s.%N)
"$TB" stop-apiserver onprem
wait_record "$RR" state running 90
t1=$(date +%s.%N)
rto=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
case "$(record_field "$RR" targetCluster)" in cloud-*) ;; *) hub_fail "runreq runs in $(record_field "$RR" targetCluster)" ;; esac
[ "$(record_field "$RR" attempt)" = 1 ] || hub_fail "runreq is at attempt $(record_field "$RR" attempt)"
[ "$(stale_of "$RR")" = "onprem/runreq/0" ] || hub_fail "runreq's origin is not recorded stale: $(stale_of "$RR")"
record_field "$RR" summary | grep -q "home cluster onprem lost" || hub_fail "runreq's summary: $(record_field "$RR" summary)"
grep -q "home cluster lost; job running there placed again.*runreq" "$HUB_TMP/hub.log" || hub_fail "the hub did not log runreq's move"
pass "onprem lost: runreq, running at home, runs in $(record_field "$RR" targetCluster) ${rto} s after its API server stopped (lostAfterSeconds 6, probe 1 s); origin recorded stale"

wait_record "$Q" state running 90
case "$(record_field "$Q" targetCluster)" in cloud-*) ;; *) hub_fail "queued runs in $(record_field "$Q" targetCluster)" ;; esac
[ "$(stale_of "$Q")" = "onprem/queued/0" ] || hub_fail "queued's origin is not recorded stale: $(stale_of "$Q")"
record_field "$Q" summary | grep -q "home cluster onprem lost" || hub_fail "queued's summary: $(record_field "$Q" summary)"
pass "queued, waiting at home, placed in $(record_field "$Q" targetCluster): $(record_field "$Q" summary)"

wait_record "$RW" reason "waiting for cluster onprem to return (spillway.io/on-cluster-loss: wait)" 30
[ "$(record_field "$RW" state)" = observed ] || hub_fail "the wait Job is $(record_field "$RW" state)"
[ -z "$(record_field "$RW" targetCluster)" ] || hub_fail "the wait Job was placed in $(record_field "$RW" targetCluster)"
pass "runwait (on-cluster-loss: wait) stays: \"$(record_field "$RW" reason)\""

# ---- the return --------------------------------------------------------------
"$TB" start-apiserver onprem >/dev/null
for _ in $(seq 1 240); do
    [ -z "$(stale_of "$RR")" ] && [ -z "$(stale_of "$Q")" ] && break
    sleep 0.25
done
[ -z "$(stale_of "$RR")" ] && [ -z "$(stale_of "$Q")" ] || hub_fail "the origins were not fenced after onprem returned: $(stale_of "$RR") $(stale_of "$Q")"
for n in runreq queued; do
    [ "$(kc onprem get job "$n" -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] || hub_fail "$n is not suspended at home"
done
for _ in $(seq 1 60); do [ "$(home_running runreq)" = 0 ] && break; sleep 0.5; done
[ "$(home_running runreq)" = 0 ] || hub_fail "runreq's pod still runs at home"
ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=runreq,reason=HomeRunStopped -o jsonpath='{.items[0].message}')
grep -q "cluster onprem is back" <<<"$ev" || hub_fail "no HomeRunStopped Event on runreq: $ev"
for k in "$RR" "$Q"; do
    [ "$(record_field "$k" state)" = running ] || hub_fail "$k is $(record_field "$k" state) after the return"
done
pass "onprem back: runreq and queued suspended at home (\"$ev\"); both run on in the cloud"

wait_record "$RW" reason "" 30
[ "$(home_running runwait)" = 1 ] || hub_fail "runwait no longer runs at home"
pass "runwait runs on at home, its reason cleared"
watcher_check
