#!/usr/bin/env bash
# redis_failover.sh - the hub on Redis Sentinel (a primary, a replica, three
# Sentinels: testbed sentinel up), two hubs, Jobs spilling to the cloud.
#
#   1. SENTINEL failover mid-flight: the leader follows the new master
#      without a restart, re-takes its lease under a higher epoch, and every
#      Job completes exactly once (one mirror each; the independent watcher
#      sees no Job active in two clusters). The standby stays a standby.
#   2. The loss window: two running Jobs' records, and the epoch's last
#      increment, are removed from the replica alone (made writable for the
#      moment), so they are exactly the writes an asynchronous replica had
#      not received when it was promoted. After a second failover the hub
#      re-derives both records from their mirrors' labels (no second
#      mirror, attempt 1), and its new epoch is above every epoch it acted
#      under, although the new master's epoch went back to 1.
#
# Over TLS by default (rediss+sentinel://, the lab's TLS-only Sentinel set:
# to the Sentinels and the data nodes, replication and the Sentinels' own
# links TLS too); SW_HUB_REDIS_TLS=0 runs it on the plain set instead.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if [ "${SW_HUB_REDIS_TLS:-1}" = 0 ]; then hub_use_sentinel; else hub_use_sentinel tls; fi

one_mirror() { # JOB: exactly one mirror of it across the clusters, attempt 1
    local uid n=0 c att
    uid=$(kc onprem get job "$1" -n "$NS" -o jsonpath='{.metadata.uid}')
    for c in cloud-spot cloud-ondemand onprem; do
        n=$((n + $(kc "$c" get jobs -n "$NS" -l "spillway.io/origin-uid=$uid" -o name | wc -l)))
        att=$(kc "$c" get jobs -n "$NS" -l "spillway.io/origin-uid=$uid" \
            -o jsonpath='{.items[*].metadata.labels.spillway\.io/attempt}')
        [ -z "$att" ] || [ "$att" = 1 ] || hub_fail "$1: a mirror of attempt $att in $c"
    done
    [ "$n" = 1 ] || hub_fail "$1 has $n mirrors"
}

hub_setup redis-failover
TTL=8
hub_config "$HUB_TMP/a.yaml" 19464 $TTL
hub_config "$HUB_TMP/b.yaml" 19465 $TTL
grep -Eq "url: rediss?\+sentinel://" "$HUB_TMP/a.yaml" || hub_fail "the hub config does not name the Sentinels"
# spillctl (async in cluster add, blocking in store add) wrote the registry
# through the Sentinels: it is on the master.
[ -n "$(rcli KEYS 'spillway:cluster:*')" ] || hub_fail "spillctl did not write the registry to the Sentinel master"
watcher_start
saturate
hub_start "$HUB_TMP/a.yaml"
A=$HUB_PID
for _ in $(seq 1 60); do [ "$(metric 19464 spillway_leader)" = 1 ] && break; sleep 0.25; done
[ "$(metric 19464 spillway_leader)" = 1 ] || hub_fail "hub a did not take the lease through the Sentinels"
hub_start "$HUB_TMP/b.yaml"
B=$HUB_PID
for _ in $(seq 1 40); do [ -n "$(metric 19465 spillway_leader)" ] && break; sleep 0.25; done
[ "$(metric 19465 spillway_leader)" = 0 ] || hub_fail "hub b leads while a holds the lease"
pass "two hubs on Redis Sentinel: a leads (master 127.0.0.1:$(master_port)), b stands by"

# ---- 1. a failover mid-flight ----------------------------------------------
jobs=()
for i in 1 2 3; do
    burst_job "a-$i" 2 20s | kc onprem apply -n "$NS" -f - >/dev/null
    burst_job "d-$i" 2 20s delegated | kc onprem apply -n "$NS" -f - >/dev/null
    jobs+=("a-$i" "d-$i")
done
wait_record "onprem/$NS/a-1" state running 60
wait_record "onprem/$NS/d-1" state running 60
e1=$(metric 19464 spillway_epoch)
[ "$e1" = "$(rcli GET spillway:hub:epoch)" ] || hub_fail "hub a's epoch $e1 is not the master's"
t0=$(date +%s%N)
m1=$(failover)
t1=$(date +%s%N)
for _ in $(seq 1 300); do
    e=$(metric 19464 spillway_epoch)
    [ -n "$e" ] && [ "$e" -gt "$e1" ] && [ "$(metric 19464 spillway_leader)" = 1 ] && break
    sleep 0.05
done
e2=$(metric 19464 spillway_epoch)
[ -n "$e2" ] && [ "$e2" -gt "$e1" ] || hub_fail "hub a's epoch is $e2 after the failover (was $e1)"
[ "$(rcli GET spillway:hub:epoch)" = "$e2" ] || hub_fail "the new master's epoch is not hub a's $e2"
kill -0 "$A" 2>/dev/null || hub_fail "hub a exited: it must follow the failover without a restart"
[ "$(metric 19465 spillway_leader)" = 0 ] || hub_fail "hub b took over across the failover"
[ "$(metric 19464 spillway_redis_failovers_total)" = 1 ] || hub_fail "hub a counted $(metric 19464 spillway_redis_failovers_total) failovers"
grep -q "re-took the lease after a Redis failover" "$HUB_TMP/hub.log" || hub_fail "no re-take in the log"
for _ in $(seq 1 120); do
    grep -q "msg=\"acting as leader\".*epoch=$e2 " "$HUB_TMP/hub.log" && break
    sleep 0.25
done
t0_ms=$((t0 / 1000000))
fo_ms=$(((t1 - t0) / 1000000))
follow_ms=$(($(log_ms "re-took the lease after a Redis failover") - t0_ms))
act_ms=$(($(log_ms "msg=\"acting as leader\".*epoch=$e2 ") - t0_ms))
pass "SENTINEL failover to 127.0.0.1:$m1 in $fo_ms ms; hub a followed it without a restart: re-took the lease under epoch $e2 (was $e1) at +$follow_ms ms, acting again (epoch safe, records read again) at +$act_ms ms"
for j in "${jobs[@]}"; do wait_record "onprem/$NS/$j" state succeeded 150; done
for j in "${jobs[@]}"; do one_mirror "$j"; done
pass "${#jobs[@]} Jobs in flight across the failover: each succeeded, one mirror each"

# ---- 2. the loss window ----------------------------------------------------
wait_sentinel_ready
burst_job lost-a 2 60s | kc onprem apply -n "$NS" -f - >/dev/null
burst_job lost-d 2 60s delegated | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/lost-a" state running 60
wait_record "onprem/$NS/lost-d" state running 60
# Let the replica have everything written so far, then take away from it
# alone what an asynchronous replica may not have received.
rp=$(replica_port)
in_sync() {
    local info
    info=$(dcli "$(master_port)" INFO replication | tr -d '\r')
    [ "$(echo "$info" | sed -n 's/^master_repl_offset://p')" = \
        "$(echo "$info" | sed -n 's/^slave0:.*offset=\([0-9]*\).*/\1/p')" ]
}
# (The replica acknowledges its offset once a second while the hub keeps
# writing: on a busy machine a moment of equal offsets may take a while.)
synced=""
for _ in $(seq 1 300); do in_sync && synced=1 && break; sleep 0.1; done
[ -n "$synced" ] || hub_fail "the replica is not in sync with the master after 30 s"
e3=$(metric 19464 spillway_epoch)
dcli "$rp" CONFIG SET replica-read-only no >/dev/null
for j in lost-a lost-d; do
    dcli "$rp" DEL "spillway:job:onprem/$NS/$j" "spillway:explain:onprem/$NS/$j" >/dev/null
    dcli "$rp" SREM spillway:jobs "onprem/$NS/$j" >/dev/null
done
dcli "$rp" SET spillway:hub:epoch 1 >/dev/null
dcli "$rp" CONFIG SET replica-read-only yes >/dev/null
[ -z "$(dcli "$rp" GET "spillway:job:onprem/$NS/lost-d")" ] || hub_fail "the replica still holds lost-d's record"
[ -n "$(rcli GET "spillway:job:onprem/$NS/lost-d")" ] || hub_fail "the master lost lost-d's record too early"
before=$(metric 19464 spillway_records_rederived_total)
m2=$(failover)
[ "$m2" = "$rp" ] || hub_fail "Sentinel promoted $m2, not the replica $rp"
for _ in $(seq 1 300); do
    e=$(metric 19464 spillway_epoch)
    [ -n "$e" ] && [ "$e" -gt "$e3" ] && break
    sleep 0.05
done
e4=$(metric 19464 spillway_epoch)
# max(the master's 1, the hub's own) + 1: above every epoch acted under.
[ "$e4" = $((e3 + 1)) ] || hub_fail "epoch after the second failover is $e4; expected $((e3 + 1)) (the master had 1)"
[ "$(rcli GET spillway:hub:epoch)" = "$e4" ] || hub_fail "the master's epoch is $(rcli GET spillway:hub:epoch), not $e4"
for j in lost-a lost-d; do
    for _ in $(seq 1 120); do
        [ -n "$(rcli GET "spillway:job:onprem/$NS/$j")" ] && break
        sleep 0.25
    done
    st=$(record_field "onprem/$NS/$j" state)
    case "$st" in dispatched | running | succeeded) ;; *) hub_fail "$j's record is back as \"$st\"" ;; esac
    [ "$(record_field "onprem/$NS/$j" attempt)" = 1 ] || hub_fail "$j's record is at attempt $(record_field "onprem/$NS/$j" attempt)"
    grep -q "record re-derived from its mirror.*job=\"\{0,1\}onprem/$NS/$j" "$HUB_TMP/hub.log" ||
        hub_fail "$j: no re-derivation in the log"
done
after=$(metric 19464 spillway_records_rederived_total)
[ $((after - before)) = 2 ] || hub_fail "records re-derived: $((after - before)), expected 2"
kill -0 "$A" 2>/dev/null || hub_fail "hub a exited in the second failover"
[ "$(metric 19465 spillway_leader)" = 0 ] || hub_fail "hub b took over in the second failover"
pass "loss window: 2 records and the epoch's increment lost by the promoted replica; both records re-derived from their mirrors (attempt 1), epoch $e4 > $e3"
for j in lost-a lost-d; do wait_record "onprem/$NS/$j" state succeeded 150; done
for j in lost-a lost-d; do one_mirror "$j"; done
[ "$(kc onprem get job lost-d -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] ||
    hub_fail "lost-d's origin does not show it succeeded"
pass "the two re-derived Jobs succeeded, one mirror each, no second dispatch"
# ---- spillctl drill redis-failover -------------------------------------------------
"$SPILLCTL" drill redis-failover --dry-run >"$HUB_TMP/rf-dry.txt" 2>&1 || hub_fail "drill redis-failover --dry-run: $(cat "$HUB_TMP/rf-dry.txt")"
grep -q "would be failed over" "$HUB_TMP/rf-dry.txt" || hub_fail "dry run: $(cat "$HUB_TMP/rf-dry.txt")"
"$SPILLCTL" drill redis-failover --timeout 1m -o json >"$HUB_TMP/rf.json" 2>"$HUB_TMP/rf.err" ||
    { cat "$HUB_TMP/rf.err" "$HUB_TMP/rf.json" >&2; hub_fail "the redis-failover drill failed"; }
rto=$(python3 - "$HUB_TMP/rf.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pass"] and d["epochAfter"] > d["epochBefore"] and d["rtoSeconds"] <= d["rtoTargetSeconds"], d
events = " | ".join(e["event"] for e in d["timeline"])
assert "the Sentinels name" in events and "acting again" in events, events
print(d["rtoSeconds"])
PY
) || hub_fail "redis-failover report: $(cat "$HUB_TMP/rf.json")"
kill -0 "$A" 2>/dev/null || hub_fail "hub a exited in the drill's failover"
pass "drill redis-failover: the hub acting again on the new master ${rto} s after SENTINEL FAILOVER (objective: the lease TTL)"
[ -z "${HUB_TLS:-}" ] || hub_check_tls
watcher_check
