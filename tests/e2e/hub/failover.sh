#!/usr/bin/env bash
# failover.sh - two hubs at once, with Jobs in flight: exactly one acts (the
# lease in Redis); the leader is SIGKILLed and the standby takes over within
# the lease's TTL plus a recheck; then Redis and a member's API server are
# restarted mid-flight. Every Job ends once, the watcher sees no Job with
# active pods in two clusters.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup failover
# A Redis restart under load takes a few seconds; the lease outlives it.
TTL=8
hub_config "$HUB_TMP/a.yaml" 19464 $TTL
hub_config "$HUB_TMP/b.yaml" 19465 $TTL
watcher_start
saturate
hub_start_leading "$HUB_TMP/a.yaml" 19464
A=$HUB_PID
hub_start_standby "$HUB_TMP/b.yaml" 19465
B=$HUB_PID
curl -sf http://127.0.0.1:19465/healthz >/dev/null || hub_fail "the standby does not answer /healthz"
pass "two hubs: a leads, b stands by and serves /healthz"

jobs=()
for i in 1 2 3; do
    burst_job "a-$i" 2 15s | kc onprem apply -n "$NS" -f - >/dev/null
    burst_job "d-$i" 2 15s delegated | kc onprem apply -n "$NS" -f - >/dev/null
    jobs+=("a-$i" "d-$i")
done
wait_record "onprem/$NS/a-1" state running 60
kill -9 "$A"
t0=$(date +%s%N)
for _ in $(seq 1 200); do [ "$(leader_of 19465)" = 1 ] && break; sleep 0.05; done
t1=$(date +%s%N)
[ "$(leader_of 19465)" = 1 ] || hub_fail "hub b did not take over"
ms=$(((t1 - t0) / 1000000))
# The lease is TTL long and renewed every TTL/3: b takes it at most TTL +
# TTL/3 after a's last renewal; 2 x TTL leaves room for a loaded machine.
[ "$ms" -le $((TTL * 2000)) ] || hub_fail "takeover took $ms ms, lease TTL ${TTL} s"
pass "leader SIGKILLed: the standby took over in $ms ms (lease TTL ${TTL} s)"

# Redis restarted mid-flight (its AOF keeps the lease, epoch and records).
"$SW_SOURCE_DIR/tests/testbed/testbed" restart-redis >/dev/null
# A member's API server restarted mid-flight.
"$SW_SOURCE_DIR/tests/testbed/testbed" restart-apiserver cloud-spot >/dev/null
for j in "${jobs[@]}"; do wait_record "onprem/$NS/$j" state succeeded 150; done
kill -0 "$B" 2>/dev/null || hub_fail "hub b exited after the Redis restart"
one_mirror_each "${jobs[@]}"
epoch=$(rcli GET spillway:hub:epoch)
[ "$epoch" = 2 ] || hub_fail "epoch is $epoch after one takeover"
pass "Redis and cloud-spot's API server restarted mid-flight: ${#jobs[@]} Jobs succeeded once each, epoch $epoch"
watcher_check
