#!/usr/bin/env bash
# redis_partition.sh - the leading hub cut off from Redis by the network
# alone (tests/e2e/hub/faultproxy.py between it and Redis stops passing
# packets either way; the process runs on, its connection stays open), while
# a standby reaches Redis directly, with Jobs in flight:
#   - the leader stops: it exits once its last renewal is a lease TTL old,
#     with the reason in its log; the standby takes the lease within the TTL
#     plus one renewal period (TTL/3) of the cut;
#   - when the partition heals, what the old leader had sent is delivered
#     late to Redis: nothing of it takes the lease back or moves the epoch
#     (the writes are fenced by it);
#   - every Job completes once, with one mirror (the watcher, the clusters).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup rpart
TTL=6
hub_config "$HUB_TMP/a.yaml" 19464 $TTL
hub_config "$HUB_TMP/b.yaml" 19465 $TTL
# Hub a reaches Redis through the proxy, b directly.
FAULT_CTL=127.0.0.1:19481
faultproxy_run "redis=127.0.0.1:19491=$HUB_REDIS_HP"
sed -i "s|url: redis://$HUB_REDIS_HP/|url: redis://127.0.0.1:19491/|" "$HUB_TMP/a.yaml"
grep -q "url: redis://127.0.0.1:19491/" "$HUB_TMP/a.yaml" || hub_fail "hub a's config does not use the proxy"

watcher_start
saturate
hub_start_leading "$HUB_TMP/a.yaml" 19464
A=$HUB_PID
hub_start_standby "$HUB_TMP/b.yaml" 19465

jobs=()
for i in 1 2; do
    burst_job "a-$i" 2 20s | kc onprem apply -n "$NS" -f - >/dev/null
    burst_job "d-$i" 2 20s delegated | kc onprem apply -n "$NS" -f - >/dev/null
    jobs+=("a-$i" "d-$i")
done
wait_record "onprem/$NS/a-1" state running 60
epoch0=$(rcli GET spillway:hub:epoch)

# ---- the cut --------------------------------------------------------------------
fault redis partition=1
t0=$(date +%s%N)
for _ in $(seq 1 $((TTL * 60))); do [ "$(leader_of 19465)" = 1 ] && break; sleep 0.05; done
t1=$(date +%s%N)
[ "$(leader_of 19465)" = 1 ] || hub_fail "hub b did not take over while a was cut off from Redis"
ms=$(((t1 - t0) / 1000000))
# a's last renewal was at most TTL/3 before the cut; the lease then lives a
# TTL, and b campaigns every TTL/3: TTL + TTL/3 at most, plus polling.
[ "$ms" -le $((TTL * 4000 / 3 + 1500)) ] || hub_fail "takeover took $ms ms, objective lease TTL ${TTL} s + TTL/3"
for _ in $(seq 1 $((TTL * 8))); do kill -0 "$A" 2>/dev/null || break; sleep 0.25; done
if kill -0 "$A" 2>/dev/null; then hub_fail "hub a still runs $((TTL * 2)) s after it was cut off from Redis"; fi
wait "$A" 2>/dev/null && hub_fail "hub a exited 0" || true
grep -q "leadership lost; exiting so that only one hub acts.*lease expired without a renewal" "$HUB_TMP/hub.log" ||
    hub_fail "hub a did not say why it stopped"
pass "leader cut off from Redis (its connection open, nothing passing): it exited on its own lease clock; the standby took over in $ms ms (TTL ${TTL} s)"

# ---- the heal ---------------------------------------------------------------------
fault redis partition=0
sleep 2
epoch1=$(rcli GET spillway:hub:epoch)
[ "$epoch1" = $((epoch0 + 1)) ] || hub_fail "epoch $epoch1 after one takeover from $epoch0"
[ "$(leader_of 19465)" = 1 ] || hub_fail "hub b lost the lease when the partition healed"
for j in "${jobs[@]}"; do wait_record "onprem/$NS/$j" state succeeded 150; done
one_mirror_each "${jobs[@]}"
pass "partition healed: b still leads under epoch $epoch1; ${#jobs[@]} Jobs succeeded once each, one mirror each"
watcher_check
