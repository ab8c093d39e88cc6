#!/usr/bin/env bash
# logs.sh - `spillctl logs CLUSTER/NS/JOB` on the lab, with the hub running:
#   - an annotation-only Job that bursts is resolved through the hub's
#     record to its mirror on cloud-spot: spillctl names that cluster and
#     the mirror's pod, found by its batch.kubernetes.io/job-name label;
#   - the pod's log subresource is called on that member: kwok's pods have
#     no kubelet behind them, so the API server answers 500 naming the
#     node's containerLogs URL for exactly that pod, which is what kubectl
#     logs says for the same pod on the same cluster; spillctl reports it
#     with exit 1, with and without -f (follow=true);
#   - a Job running at home resolves to its own pod on onprem;
#   - an attempt the Job never had, a Job the hub does not manage, a
#     malformed key and a missing secret key are refused, each named.
# kwok serves no container logs on the lab (nothing listens on the nodes'
# kubelet port), so the text of a log is not checked here: the resolution
# and the call are.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup logs
saturate
hub_start
burst_job train 4 3600s | kc onprem apply -n "$NS" -f - >/dev/null
K="onprem/$NS/train"
wait_record "$K" state running 120
[ "$(record_field "$K" targetCluster)" = cloud-spot ] || hub_fail "train runs on $(record_field "$K" targetCluster), not cloud-spot"
mirror=$(record_field "$K" mirror)
pod=""
for i in $(seq 1 40); do
    pod=$(kc cloud-spot get pods -n "$NS" -l "batch.kubernetes.io/job-name=$mirror" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
    [ -n "$pod" ] && break
    sleep 0.25
done
[ -n "$pod" ] || hub_fail "no pod of mirror $mirror on cloud-spot"

# ---- the burst Job: resolved to its mirror's pod on cloud-spot ---------------
rc=0
"$SPILLCTL" logs "$K" >"$HUB_TMP/out" 2>"$HUB_TMP/err" || rc=$?
[ $rc = 1 ] || hub_fail "logs $K: exit $rc, expected 1 (kwok serves no logs): $(cat "$HUB_TMP/err")"
grep -qx "spillctl logs: $K attempt 1: pod $NS/$pod on cluster cloud-spot" "$HUB_TMP/err" ||
    hub_fail "logs did not name the mirror's pod on cloud-spot: $(cat "$HUB_TMP/err")"
grep -q "containerLogs/$NS/$pod/train" "$HUB_TMP/err" ||
    hub_fail "the log call did not reach $pod's node: $(cat "$HUB_TMP/err")"
[ ! -s "$HUB_TMP/out" ] || hub_fail "logs printed to stdout on failure: $(cat "$HUB_TMP/out")"
# kubectl logs says the same for that pod on that cluster.
kerr=$(kc cloud-spot logs -n "$NS" "$pod" 2>&1 || true)
url=$(echo "$kerr" | grep -o 'https://[^"]*containerLogs[^"]*' | head -1)
[ -n "$url" ] && grep -qF "$url" "$HUB_TMP/err" || hub_fail "kubectl logs says \"$kerr\", spillctl: $(cat "$HUB_TMP/err")"
pass "logs $K: mirror $mirror's pod $pod on cloud-spot, its log subresource called (as kubectl logs: $url)"

rc=0
timeout 30 "$SPILLCTL" logs "$K" -f --tail 10 >"$HUB_TMP/out" 2>"$HUB_TMP/err" || rc=$?
[ $rc = 1 ] && grep -q "containerLogs/$NS/$pod/train" "$HUB_TMP/err" ||
    hub_fail "logs -f: exit $rc: $(cat "$HUB_TMP/err")"
pass "logs -f reports the member's answer and exits 1 rather than streaming an error"

# ---- a Job at home: its own pod on onprem ----------------------------------
home_pod=$(kc onprem get pods -n "$NS" -l batch.kubernetes.io/job-name=home -o jsonpath='{.items[0].metadata.name}')
if [ -n "$(rcli GET "spillway:job:onprem/$NS/home")" ]; then
    rc=0
    "$SPILLCTL" logs "onprem/$NS/home" >/dev/null 2>"$HUB_TMP/err" || rc=$?
    grep -q "pod $NS/$home_pod on cluster onprem" "$HUB_TMP/err" && grep -q "containerLogs/$NS/$home_pod/" "$HUB_TMP/err" ||
        hub_fail "logs of the Job at home: exit $rc: $(cat "$HUB_TMP/err")"
    pass "logs of a Job running at home: its pod $home_pod on onprem"
else
    rc=0
    "$SPILLCTL" logs "onprem/$NS/home" >/dev/null 2>"$HUB_TMP/err" || rc=$?
    [ $rc = 1 ] && grep -q "no Job onprem/$NS/home is managed by the hub" "$HUB_TMP/err" ||
        hub_fail "logs of an unmanaged Job: exit $rc: $(cat "$HUB_TMP/err")"
    pass "logs of a Job the hub keeps no record of (running at home): refused, named"
fi

# ---- refusals ---------------------------------------------------------------
rc=0
"$SPILLCTL" logs "$K" --attempt 2 >/dev/null 2>"$HUB_TMP/err" || rc=$?
[ $rc = 1 ] && grep -q -- "--attempt 2: the Job has had 1 attempt" "$HUB_TMP/err" || hub_fail "--attempt 2: exit $rc: $(cat "$HUB_TMP/err")"
rc=0
"$SPILLCTL" logs "onprem/$NS/nothing" >/dev/null 2>"$HUB_TMP/err" || rc=$?
[ $rc = 1 ] && grep -q "no Job onprem/$NS/nothing is managed by the hub" "$HUB_TMP/err" || hub_fail "unknown Job: exit $rc: $(cat "$HUB_TMP/err")"
rc=0
"$SPILLCTL" logs "onprem/train" >/dev/null 2>"$HUB_TMP/err" || rc=$?
[ $rc = 2 ] && grep -q "expected CLUSTER/NAMESPACE/JOB" "$HUB_TMP/err" || hub_fail "malformed key: exit $rc: $(cat "$HUB_TMP/err")"
rc=0
env -u SPILLWAY_SECRET_KEY_FILE "$SPILLCTL" logs "$K" >/dev/null 2>"$HUB_TMP/err" || rc=$?
[ $rc = 1 ] && grep -q "no secret key" "$HUB_TMP/err" || hub_fail "no key: exit $rc: $(cat "$HUB_TMP/err")"
pass "logs refuses an attempt the Job never had, an unmanaged Job, a malformed key and a missing key, each named"

# ---- status -n / -l / -o name / -w on the same records -----------------------
got=$("$SPILLCTL" status -n "$NS" -l where=cloud-spot -o name)
[ "$got" = "$K" ] || hub_fail "status -n $NS -l where=cloud-spot -o name: \"$got\", expected $K"
got=$("$SPILLCTL" status -n "$NS" -o name | sort | tr '\n' ' ')
[ "$got" = "onprem/$NS/home $K " ] || hub_fail "status -n $NS -o name: \"$got\""
[ -z "$("$SPILLCTL" status -n "no-such-$NS" --no-headers)" ] || hub_fail "status of an empty namespace printed rows"
got=$("$SPILLCTL" status -n "$NS" -l 'state!=running' -o jsonpath='{range .items[*]}{.name}{"\n"}{end}')
[ "$got" = home ] || hub_fail "status -l state!=running -o jsonpath: \"$got\""
rc=0
timeout 4 "$SPILLCTL" status -n "$NS" -w --interval 1s >"$HUB_TMP/watch" 2>&1 || rc=$?
[ $rc = 124 ] || hub_fail "status -w ended by itself (exit $rc): $(cat "$HUB_TMP/watch")"
[ "$(grep -c '^JOB ' "$HUB_TMP/watch")" -ge 1 ] && grep -q "^$K " "$HUB_TMP/watch" ||
    hub_fail "status -w printed: $(cat "$HUB_TMP/watch")"
pass "status -n/-l/-o name/-o jsonpath select the test's records; -w prints $(grep -c '^JOB ' "$HUB_TMP/watch") listing(s) in 4 s and runs until stopped"
