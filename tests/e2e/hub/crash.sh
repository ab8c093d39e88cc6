#!/usr/bin/env bash
# crash.sh - the hub SIGKILLed at every named step of the burst lifecycle
# (SPILLWAY_CRASH_AT), then started again: every burstable Job still ends
# exactly once, with exactly one mirror, and the independent watcher sees
# no Job with active pods in two clusters at once.
#
# For each crash point, two fresh Jobs (annotation-only and delegated) are
# submitted and a hub armed with that point is started; it must die there
# (its log says which point), and the next hub carries on. A last, unarmed
# hub finishes every Job.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_needs_failpoints
hub_setup crash
watcher_start
saturate
POINTS=(after-decide after-data after-intent after-suspend after-mirror-create after-dispatched
    after-running after-finish)
jobs=()
for p in "${POINTS[@]}"; do
    burst_job "a-$p" 2 4s | kc onprem apply -n "$NS" -f - >/dev/null
    burst_job "d-$p" 2 4s delegated | kc onprem apply -n "$NS" -f - >/dev/null
    jobs+=("a-$p" "d-$p")
    hub_start "$HUB_TMP/hub.yaml" SPILLWAY_CRASH_AT="$p"
    died=0
    for _ in $(seq 1 240); do
        if ! kill -0 "$HUB_PID" 2>/dev/null; then
            died=1
            break
        fi
        sleep 0.25
    done
    [ $died = 1 ] || hub_fail "the hub armed with $p did not reach it in 60 s"
    wait "$HUB_PID" 2>/dev/null || true
    grep -q "crash point reached: killing the hub\" point=$p" "$HUB_TMP/hub.log" ||
        hub_fail "the hub armed with $p died elsewhere"
    echo "killed at $p"
done
hub_start
for j in "${jobs[@]}"; do
    wait_record "onprem/$NS/$j" state succeeded 120
done
# Exactly one mirror per origin, attempt 1, across both cloud clusters.
for j in "${jobs[@]}"; do
    n=$(mirrors_of "$j")
    [ "$n" = 1 ] || hub_fail "$j has $n mirrors"
    [ "$(record_field "onprem/$NS/$j" attempt)" = 1 ] || hub_fail "$j took $(record_field "onprem/$NS/$j" attempt) attempts"
done
kc onprem wait --for=condition=complete job/d-after-mirror-create -n "$NS" --timeout=30s >/dev/null ||
    hub_fail "delegated origin not complete"
pass "SIGKILL at ${#POINTS[@]} crash points: ${#jobs[@]} Jobs each succeeded once, one mirror each, attempt 1"
watcher_check
