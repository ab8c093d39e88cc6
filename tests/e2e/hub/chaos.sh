#!/usr/bin/env bash
# chaos.sh - the chaos suite (issue 9): faults injected into a running
# federation while burst Jobs flow, and the promises checked from outside.
#
#   chaos.sh fast   the fast cases (make test, ctest label e2e): latency,
#                   dropped connections and a short partition between the
#                   hub and its members; an S3 503 storm during a burst's
#                   data copy; the hub leader SIGKILLed at a random point
#   chaos.sh full   all of fast, and (make chaos): finished mirrors deleted
#                   by a janitor while the leader is paused (never run
#                   again); a partition longer than
#                   the toleration (requeue, a zombie, fenced outputs); a
#                   member's API server and etcd SIGKILLed and restarted;
#                   more replication rules than worker threads under a 503
#                   storm; a spot node lost under a Job writing outputs
#                   (the lost attempt's late writes never home); the Redis
#                   master SIGKILLed (Sentinel) with an input copy stalled
#                   in flight; the leader killed
#                   at more random points; the cluster-loss and region-loss
#                   drills (RPO against objective) under a 503 storm
#
# The hub reaches every member and store through tests/e2e/hub/faultproxy.py
# (registered with spillctl as the hub's addresses), and runs on the lab's
# Redis Sentinel, three replicas. The oracle is independent of the hub:
#   - watch_invariants.py on the three clusters for the whole run: no Job
#     with active pods in two clusters at once (a cluster cut off by the
#     suite is exempt from when it is cut until the hub has deleted its
#     stale mirrors: requeue's documented cost), no Job completed twice, no
#     outcome committed twice;
#   - after each case, read from the clusters and the stores (not Redis):
#     every Job's origin says succeeded, exactly one mirror completed and it
#     is the attempt the origin names (no Job lost); inputs and outputs are
#     byte-identical where they were copied, and a cut-off attempt's late
#     writes never reach home (no artifact lost, corrupted, or committed
#     twice); every drill's RPO is within its objective.
# Every breach is counted; the table at the end has faults injected, Jobs
# affected, violations (the test fails unless 0) and RTO p50/p99.
# Every wait is bounded; fast takes about 65 s, full about 7 minutes.
set -euo pipefail
MODE=${1:-fast}
case "$MODE" in fast | full) ;; *) echo "usage: chaos.sh fast|full" >&2 && exit 2 ;; esac
source "$(dirname "$0")/lib.sh"
TB="$SW_SOURCE_DIR/tests/testbed/testbed"

hub_use_sentinel
T_LOCK=$SECONDS
hub_lock
T_START=$SECONDS
trap hub_cleanup EXIT
faultproxy_start
hub_setup chaos
KILLED_APISERVER=""
KILLED_REDIS=""
DELETED_NODE=""
chaos_restore() {
    [ -z "$KILLED_APISERVER" ] || "$TB" start-apiserver "$KILLED_APISERVER" >/dev/null 2>&1 || true
    [ -z "$KILLED_REDIS" ] || "$TB" sentinel up >/dev/null 2>&1 || true
    [ -z "$DELETED_NODE" ] || "$TB" reseed cloud-spot >/dev/null 2>&1 || true
}
trap 'chaos_restore; hub_cleanup' EXIT

TTL=6
PORTS=(19464 19465 19466)
for p in "${PORTS[@]}"; do
    hub_config "$HUB_TMP/hub-$p.yaml" "$p" $TTL
    cat >>"$HUB_TMP/hub-$p.yaml" <<YAML
members:
  probeIntervalSeconds: 1
  lostAfterSeconds: 6
  rtoTargetSeconds: 120
replication:
  modelRegistrySeconds: 2
  intervalSeconds: 2
YAML
done
declare -A HUB_ON=() # port -> pid
start_hub_on() {
    hub_start "$HUB_TMP/hub-$1.yaml"
    HUB_ON[$1]=$HUB_PID
}
leader_port() {
    local p
    for p in "${PORTS[@]}"; do
        [ "$(leader_of "$p")" = 1 ] && echo "$p" && return 0
    done
    return 0
}
wait_leader() { # SECONDS: prints the leader's port
    local i l
    for i in $(seq 1 $(($1 * 10))); do
        l=$(leader_port)
        [ -n "$l" ] && echo "$l" && return 0
        sleep 0.1
    done
    hub_fail "no hub took the lease in $1 s"
}

# ---- the accounts -------------------------------------------------------------
ROWS="$HUB_TMP/chaos.rows"     # case, fault, count, jobs, violations, RTOs
VIOL="$HUB_TMP/violations"     # one line per breach found by the suite's checks
LOSSY="$HUB_TMP/lossy"         # clusters cut off now (watch_invariants.py)
: >"$ROWS"
: >"$VIOL"
: >"$LOSSY"
violation() {
    echo "VIOLATION [$CASE] $*" | tee -a "$VIOL" >&2
}
watch_violations() { grep -c VIOLATION "$HUB_TMP/watch.log" 2>/dev/null || true; }
CASE=""
case_begin() {
    CASE=$1
    CASE_V0=$(($(watch_violations) + $(wc -l <"$VIOL")))
    CASE_T0=$SECONDS
    echo "---- case $CASE"
}
# case_end FAULT COUNT JOBS [RTO...]: one row of the table.
case_end() {
    local fault=$1 count=$2 jobs=$3 v rtos
    shift 3
    v=$(($(watch_violations) + $(wc -l <"$VIOL") - CASE_V0))
    rtos=$(
        IFS=,
        echo "$*"
    )
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$CASE" "$fault" "$count" "$jobs" "$v" "${rtos:--}" >>"$ROWS"
    echo "     $CASE: $count x $fault, $jobs Jobs, $v violations, RTO ${rtos:--} s ($((SECONDS - CASE_T0)) s)"
}
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.2f}')"; }

# job_outcome JOB ATTEMPT SECONDS: the Job ended once, seen from the clusters:
# its origin says succeeded (within SECONDS), names attempt ATTEMPT's
# mirror (ATTEMPT "any": one of its own), and exactly one mirror of it
# completed, that one. A breach is a
# violation (a Job lost or run to two outcomes), not an abort.
job_outcome() {
    local j=$1 want=$2 secs=$3 i st mirror uid c n=0 done_in=""
    for i in $(seq 1 $((secs * 2))); do
        st=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state}' 2>/dev/null || true)
        [ "$st" = succeeded ] || [ "$st" = failed ] && break
        sleep 0.5
    done
    if [ "$st" != succeeded ]; then
        violation "Job $j lost: its origin says \"$st\" after $secs s (record: $(record_field "onprem/$NS/$j" state) $(record_field "onprem/$NS/$j" reason))"
        return 0
    fi
    mirror=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/mirror}')
    uid=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.uid}')
    if [ "$want" = any ]; then
        case "$mirror" in sw-"$uid"-[0-9]*) ;; *) violation "Job $j: the origin names mirror \"$mirror\", not one of its own" ;; esac
    elif [ "$mirror" != "sw-$uid-$want" ]; then
        violation "Job $j: the origin names mirror $mirror, expected attempt $want (sw-$uid-$want)"
    fi
    for c in cloud-spot cloud-ondemand onprem; do
        for m in $(kc "$c" get jobs -n "$NS" -l "spillway.io/origin-uid=$uid" \
            -o jsonpath='{range .items[?(@.status.succeeded>0)]}{.metadata.name}{"\n"}{end}'); do
            n=$((n + 1))
            done_in="$done_in $c/$m"
        done
    done
    [ "$n" = 1 ] || violation "Job $j: $n mirrors completed:$done_in"
    [ "$n" != 1 ] || [ "${done_in##*/}" = "$mirror" ] || violation "Job $j: completed as$done_in, origin names $mirror"
}

# same_object BUCKET KEY EP1 REGION1 EP2 REGION2: the two copies are
# byte-identical (read apart from the hub), else a violation.
same_object() {
    local a b
    a=$(s3get "$3" "$4" "$1" "$2" | sha256sum | cut -c1-64) || true
    b=$(s3get "$5" "$6" "$1" "$2" | sha256sum | cut -c1-64) || true
    if ! s3get "$5" "$6" "$1" "$2" >/dev/null 2>&1; then
        violation "artifact lost: s3://$1/$2 is not in $6"
    elif [ "$a" != "$b" ]; then
        violation "artifact corrupted: s3://$1/$2 differs between $4 and $6"
    fi
}
s3has() { # ENDPOINT REGION BUCKET KEY: the object exists (a HEAD)
    curl -sf -I -o /dev/null --aws-sigv4 "aws:amz:$2:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$1/$3/$4"
}
s3put() { # ENDPOINT REGION BUCKET KEY SIZE SEED
    "$S3TOOL" "$1" "$2" put "$3" "$4" "$5" "$6" >/dev/null
}
# no_pods_left CLUSTER JOB: the stale mirror's pods gone from a cluster the
# suite cut off (the pods of a mirror the record still names there are
# not stale); then the watcher's exemption for it ends.
no_pods_left() {
    no_pods_left_keep "$@"
    : >"$LOSSY"
}
no_pods_left_keep() {
    local uid key left
    uid=$(kc onprem get job "$2" -n "$NS" -o jsonpath='{.metadata.uid}')
    key="onprem/$NS/$2"
    for _ in $(seq 1 120); do
        [ "$(record_field "$key" targetCluster)" = "$1" ] && return 0
        left=$(kc "$1" get pods -n "$NS" -l "spillway.io/origin-uid=$uid" -o name)
        [ -z "$left" ] && return 0
        sleep 0.25
    done
    violation "$2: the stale mirror's pods are still on $1 30 s after it came back: $left"
}
EP_HOME=$SW_LAB_S3_ENDPOINT_ONPREM
EP_EAST=$SW_LAB_S3_ENDPOINT_US_EAST_1
EP_WEST=$SW_LAB_S3_ENDPOINT_US_WEST_2

watcher_start --lossy-file "$LOSSY"
saturate
for p in "${PORTS[@]}"; do start_hub_on "$p"; done
LEADER=$(wait_leader 20)
for _ in $(seq 1 60); do rcli EXISTS spillway:hub:members | grep -q 1 && break; sleep 0.25; done
pass "three hubs on Redis Sentinel (leader on :$LEADER), every member and store behind the fault proxy"

# ==== fast 1: latency, dropped connections, a short partition ===================
case_begin net-faults
jobs=()
for i in 1 2; do
    burst_job "n-a$i" 2 12s | kc onprem apply -n "$NS" -f - >/dev/null
    burst_job "n-d$i" 2 12s delegated | kc onprem apply -n "$NS" -f - >/dev/null
    jobs+=("n-a$i" "n-d$i")
done
faults=0
for c in onprem cloud-spot cloud-ondemand; do fault "$c" latency=150 && faults=$((faults + 1)); done
sleep 4
for c in cloud-spot cloud-ondemand; do fault "$c" drop=0.3 cut=1 && faults=$((faults + 1)); done
sleep 3
fault cloud-spot cut=1
fault cloud-ondemand cut=1
sleep 3
# A partition shorter than the toleration (lostAfterSeconds 6) moves nothing.
fault cloud-spot drop=0 partition=1
faults=$((faults + 1))
sleep 3
fault cloud-spot partition=0
fault_clear
dropped=$(($(fault_stat cloud-spot dropped) + $(fault_stat cloud-ondemand dropped) + $(fault_stat cloud-spot cut) + $(fault_stat cloud-ondemand cut)))
[ "$dropped" -gt 0 ] || hub_fail "the proxy dropped no connection: the faults were not on the hub's path"
for j in "${jobs[@]}"; do job_outcome "$j" 1 90; done
case_end "latency 150 ms, 30% connections dropped + open ones reset, 3 s partition" "$faults" "${#jobs[@]}"
pass "network faults ($dropped connections dropped or reset): ${#jobs[@]} Jobs succeeded once, attempt 1"

# ==== fast 2: an S3 503 storm during a burst's data copy =========================
case_begin s3-storm
s3put "$EP_HOME" onprem datasets "$NS/in/big.bin" $((12 << 20)) 11
s3put "$EP_HOME" onprem datasets "$NS/in/small-1.bin" 65536 12
s3put "$EP_HOME" onprem datasets "$NS/in/small-2.bin" 300000 13
fault s3-onprem err503=0.4 for=20
fault s3-us-east-1 err503=0.4 for=20
burst_job s-in 2 10s "" "    spillway.io/inputs: s3://datasets/$NS/in/
    spillway.io/outputs: s3://checkpoints/$NS/s-in/" | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/s-in" state running 90
att=$(record_field "onprem/$NS/s-in" attempt)
tgt=$(record_field "onprem/$NS/s-in" targetCluster)
[ "$tgt" = cloud-spot ] || hub_fail "s-in runs in $tgt, expected cloud-spot (us-east-1)"
for k in big.bin small-1.bin small-2.bin; do same_object datasets "$NS/in/$k" "$EP_HOME" onprem "$EP_EAST" us-east-1; done
# The workload writes its outputs; they come home through a second storm.
fault s3-onprem err503=0.4 for=15
fault s3-us-east-1 err503=0.4 for=15
s3put "$EP_EAST" us-east-1 checkpoints "$NS/s-in/attempt-$att/model.bin" $((7 << 20)) 21
s3put "$EP_EAST" us-east-1 checkpoints "$NS/s-in/attempt-$att/log.txt" 2000 22
job_outcome s-in 1 90
for k in model.bin log.txt; do
    for _ in $(seq 1 60); do s3get "$EP_HOME" onprem checkpoints "$NS/s-in/$k" >/dev/null 2>&1 && break; sleep 0.5; done
    # The copy home is the attempt's object, byte for byte.
    a=$(s3get "$EP_EAST" us-east-1 checkpoints "$NS/s-in/attempt-$att/$k" | sha256sum || true)
    b=$(s3get "$EP_HOME" onprem checkpoints "$NS/s-in/$k" 2>/dev/null | sha256sum || true)
    s3get "$EP_HOME" onprem checkpoints "$NS/s-in/$k" >/dev/null 2>&1 || violation "artifact lost: output $k never came home"
    [ "$a" = "$b" ] || violation "artifact corrupted: output $k at home differs from attempt $att's"
done
n503=$(($(fault_stat s3-onprem errors503) + $(fault_stat s3-us-east-1 errors503)))
nreq=$(($(fault_stat s3-onprem requests) + $(fault_stat s3-us-east-1 requests)))
[ "$n503" -gt 0 ] || hub_fail "the storm answered no 503: the copy did not go through the proxy"
fault_clear
case_end "S3 503 SlowDown storm (40% of requests, 2 x 15-20 s)" 2 1
pass "S3 storm: $n503 of $nreq requests answered 503 SlowDown; inputs (12 MiB multipart + 2) and outputs byte-identical"

# ==== fast 3 (and full 6): the leader SIGKILLed at random points =================
# kill_leader_randomly ROUNDS: each round submits two Jobs, waits a random
# 0-4 s (a random point of their lifecycle), SIGKILLs the leader, times the
# takeover and starts a new standby in its place.
HUB_RTOS=()
kill_leader_randomly() {
    local round l t0 nl d
    for round in $(seq 1 "$1"); do
        burst_job "h$round-a" 2 8s | kc onprem apply -n "$NS" -f - >/dev/null
        burst_job "h$round-d" 2 8s delegated | kc onprem apply -n "$NS" -f - >/dev/null
        hjobs+=("h$round-a" "h$round-d")
        d=$((RANDOM % 40))
        sleep "$((d / 10)).$((d % 10))"
        l=$(wait_leader 20)
        kill -9 "${HUB_ON[$l]}"
        t0=$(now)
        wait "${HUB_ON[$l]}" 2>/dev/null || true
        nl=""
        for _ in $(seq 1 300); do
            nl=$(leader_port)
            [ -n "$nl" ] && [ "$nl" != "$l" ] && break
            sleep 0.05
        done
        [ -n "$nl" ] && [ "$nl" != "$l" ] || hub_fail "no standby took over after the leader on :$l was killed"
        HUB_RTOS+=("$(since "$t0")")
        echo "     leader :$l killed ${d}00 ms after round $round's Jobs; :$nl took over in ${HUB_RTOS[-1]} s"
        start_hub_on "$l"
    done
}
case_begin hub-kill
hjobs=()
rounds=1
[ "$MODE" = full ] && rounds=3
kill_leader_randomly $rounds
for j in "${hjobs[@]}"; do job_outcome "$j" 1 90; done
for r in "${HUB_RTOS[@]}"; do
    python3 -c "import sys; sys.exit(0 if $r <= $TTL * 4 / 3 + 1.5 else 1)" ||
        violation "takeover took $r s, objective lease TTL $TTL s + TTL/3 (+1.5 s of polling)"
done
case_end "hub leader SIGKILLed at a random point" "$rounds" "${#hjobs[@]}" "${HUB_RTOS[@]}"
pass "leader killed $rounds time(s): ${#hjobs[@]} Jobs succeeded once; takeovers ${HUB_RTOS[*]} s (TTL $TTL s)"

if [ "$MODE" = full ]; then
    # ==== full 0: a janitor deletes mirrors as they finish, the leader paused ====
    # (a cleanup script or ttlSecondsAfterFinished: 0; the leader SIGSTOPped
    # for 2-3 s, within its lease, while they complete). Every Job succeeds
    # once, as attempt 1: a finished mirror is never a reason to run again.
    case_begin janitor
    jjobs=()
    for i in 1 2 3; do
        burst_job "jn-a$i" 2 5s | kc onprem apply -n "$NS" -f - >/dev/null
        burst_job "jn-d$i" 2 5s delegated | kc onprem apply -n "$NS" -f - >/dev/null
        jjobs+=("jn-a$i" "jn-d$i")
    done
    declare -A JANITOR_SEEN=()
    # janitor_pass: deletes every finished mirror of the case's Jobs.
    janitor_pass() {
        local c m
        for c in cloud-spot cloud-ondemand; do
            for m in $(kc "$c" get jobs -n "$NS" -l app.kubernetes.io/managed-by=spillway \
                -o jsonpath='{range .items[?(@.status.succeeded>0)]}{.metadata.name}{"\n"}{end}' 2>/dev/null); do
                kc "$c" delete job "$m" -n "$NS" --cascade=background --wait=false >/dev/null 2>&1 &&
                    JANITOR_SEEN[$c/$m]=1
            done
        done
    }
    pauses=0
    t_end=$((SECONDS + 120))
    while [ $SECONDS -lt $t_end ]; do
        # Up to three times the leader is paused 2-3 s (within its lease) while the janitor works.
        paused=""
        until_s=$SECONDS
        if [ $pauses -lt 3 ] && [ $((RANDOM % 3)) = 0 ]; then
            l=$(leader_port)
            if [ -n "$l" ]; then
                paused=${HUB_ON[$l]}
                kill -STOP "$paused"
                pauses=$((pauses + 1))
                until_s=$((SECONDS + 2 + RANDOM % 2))
            fi
        fi
        janitor_pass
        while [ $SECONDS -lt $until_s ]; do
            sleep 0.5
            janitor_pass
        done
        [ -z "$paused" ] || kill -CONT "$paused"
        left=0
        for j in "${jjobs[@]}"; do
            st=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state}' 2>/dev/null || true)
            [ "$st" = succeeded ] || [ "$st" = failed ] || left=$((left + 1))
        done
        [ $left = 0 ] && break
        sleep 0.5
    done
    janitor_deleted=${#JANITOR_SEEN[@]}
    for j in "${jjobs[@]}"; do
        st=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state}' 2>/dev/null || true)
        uid=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.uid}')
        mirror=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/mirror}')
        [ "$st" = succeeded ] || violation "Job $j lost: its origin says \"$st\" (record: $(record_field "onprem/$NS/$j" state) $(record_field "onprem/$NS/$j" reason))"
        [ "$mirror" = "sw-$uid-1" ] || violation "Job $j ran again: its origin names $mirror, not attempt 1"
    done
    for j in jn-d1 jn-d2 jn-d3; do
        [ -z "$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}')" ] ||
            violation "delegated $j marked Failed after its mirror completed and was deleted"
    done
    case_end "finished mirrors deleted by a janitor, the leader paused ${pauses}x" "$janitor_deleted" "${#jjobs[@]}"
    pass "janitor: $janitor_deleted finished mirrors deleted, the leader paused $pauses times: ${#jjobs[@]} Jobs succeeded once, as attempt 1"

    # ==== full 1: a partition longer than the toleration =========================
    case_begin partition
    BURST_MODE=cloud-first burst_job p-req 4 45s "" "    spillway.io/outputs: s3://checkpoints/$NS/p-req/" |
        kc onprem apply -n "$NS" -f - >/dev/null
    burst_job p-wait 4 30s "" "    spillway.io/on-cluster-loss: wait" | kc onprem apply -n "$NS" -f - >/dev/null
    R="onprem/$NS/p-req"
    wait_record "$R" state running 90
    wait_record "onprem/$NS/p-wait" state running 90
    [ "$(record_field "$R" targetCluster)" = cloud-spot ] || hub_fail "p-req runs in $(record_field "$R" targetCluster)"
    s3put "$EP_EAST" us-east-1 checkpoints "$NS/p-req/attempt-1/ckpt.bin" 200000 31
    for _ in $(seq 1 60); do s3get "$EP_HOME" onprem checkpoints "$NS/p-req/ckpt.bin" >/dev/null 2>&1 && break; sleep 0.5; done
    s3get "$EP_EAST" us-east-1 checkpoints "$NS/p-req/attempt-1/ckpt.bin" >"$HUB_TMP/ckpt.a1"
    echo cloud-spot >"$LOSSY"
    fault cloud-spot partition=1
    t0=$(now)
    wait_record "$R" targetCluster cloud-ondemand 60
    wait_record "$R" state running 90
    P_RTO=$(since "$t0")
    # The zombie, still running behind the partition, writes on.
    s3put "$EP_EAST" us-east-1 checkpoints "$NS/p-req/attempt-1/ckpt.bin" 200000 66
    s3put "$EP_EAST" us-east-1 checkpoints "$NS/p-req/attempt-1/zombie.bin" 1000 67
    s3put "$EP_WEST" us-west-2 checkpoints "$NS/p-req/attempt-2/final.bin" 100000 32
    [ "$(record_field "onprem/$NS/p-wait" attempt)" = 1 ] || violation "the wait Job was placed again"
    sleep 2
    fault cloud-spot partition=0
    for _ in $(seq 1 240); do
        [ "$(rcli GET "spillway:job:$R" | python3 -c "import json,sys; print(len(json.load(sys.stdin).get('staleMirrors',[])))")" = 0 ] && break
        sleep 0.25
    done
    no_pods_left cloud-spot p-req
    job_outcome p-wait 1 120
    job_outcome p-req 2 200
    s3get "$EP_HOME" onprem checkpoints "$NS/p-req/final.bin" >/dev/null 2>&1 || violation "attempt 2's output never came home"
    s3get "$EP_HOME" onprem checkpoints "$NS/p-req/zombie.bin" >/dev/null 2>&1 &&
        violation "double commit: the cut-off attempt's late write reached home"
    s3get "$EP_HOME" onprem checkpoints "$NS/p-req/ckpt.bin" | cmp -s - "$HUB_TMP/ckpt.a1" ||
        violation "double commit: the cut-off attempt's late overwrite of ckpt.bin reached home"
    case_end "partition of cloud-spot past the toleration (6 s)" 1 2 "$P_RTO"
    pass "partition: p-req running again in cloud-ondemand (attempt 2) $P_RTO s after the cut; p-wait waited; zombie's writes never home"

    # ==== full 2: a member's API server and etcd killed, then restarted ===========
    # The restart (etcd, then the API server to /readyz) takes longer than
    # the toleration, so the hub finds cloud-spot lost and requeues its
    # Jobs (cloud-first: to cloud-ondemand rather than waiting at home);
    # when it is back its stale mirrors are deleted. Each Job still ends
    # once, as one attempt.
    case_begin apiserver-kill
    kjobs=()
    for i in 1 2; do
        BURST_MODE=cloud-first burst_job "k-a$i" 2 30s | kc onprem apply -n "$NS" -f - >/dev/null
        BURST_MODE=cloud-first burst_job "k-d$i" 2 30s delegated | kc onprem apply -n "$NS" -f - >/dev/null
        kjobs+=("k-a$i" "k-d$i")
    done
    for j in "${kjobs[@]}"; do wait_record "onprem/$NS/$j" state running 90; done
    echo cloud-spot >"$LOSSY"
    KILLED_APISERVER=cloud-spot
    "$TB" kill-apiserver cloud-spot
    t0=$(now)
    sleep 3
    "$TB" start-apiserver cloud-spot >/dev/null
    KILLED_APISERVER=""
    # RTO: until the leader finds cloud-spot Ready again, its caches
    # synced, after having seen it not answer.
    K_RTO=""
    for _ in $(seq 1 600); do
        if rcli GET spillway:hub:members | python3 -c "
import json, sys
m = [m for m in json.load(sys.stdin)['members'] if m['name'] == 'cloud-spot'][0]
sys.exit(0 if m['health'] == 'Ready' and m['sinceMs'] >= $t0 * 1000 and m['synced'] else 1)" 2>/dev/null; then
            K_RTO=$(since "$t0")
            break
        fi
        sleep 0.1
    done
    [ -n "$K_RTO" ] || hub_fail "the hub did not find cloud-spot Ready again within 60 s of its restart"
    moved=0
    for j in "${kjobs[@]}"; do
        [ "$(record_field "onprem/$NS/$j" attempt)" = 1 ] || moved=$((moved + 1))
    done
    for j in "${kjobs[@]}"; do no_pods_left_keep cloud-spot "$j"; done
    : >"$LOSSY"
    for j in "${kjobs[@]}"; do job_outcome "$j" any 120; done
    case_end "cloud-spot API server + etcd SIGKILLed, restarted after 3 s" 1 "${#kjobs[@]}" "$K_RTO"
    pass "API server and etcd of cloud-spot killed and restarted (back in the hub's view after $K_RTO s): ${#kjobs[@]} Jobs succeeded once ($moved requeued)"

    # ==== full 3a: more replication rules than the worker pool, S3 storming ======
    # Six rules, each over two 24 MiB objects (multipart copies whose parts
    # are hashed on libuv's pool of 4 threads), and a Job gated on 2 x 24 MiB
    # of inputs (over 16 MiB: hashed there too), while 20% of us-east-1's
    # requests are answered 503 for 20 s. Rule runs once took every thread
    # of the pool and waited there for their own copies' hashes: nothing was
    # ever copied. Every object must copy, byte for byte, and the Job run once.
    case_begin rules-pool
    RB="cr-$(echo "$NS" | tr -cd 'a-z0-9-' | cut -c1-40)"
    "$S3TOOL" "$EP_HOME" onprem mb "$RB" >/dev/null
    "$S3TOOL" "$EP_EAST" us-east-1 mb "$RB" >/dev/null
    for i in 1 2 3 4 5 6; do
        for o in a b; do s3put "$EP_HOME" onprem "$RB" "r$i/$o.bin" $((24 << 20)) "$i$(printf %d "'$o")"; done
    done
    for o in a b; do s3put "$EP_HOME" onprem datasets "$NS/rp-in/$o.bin" $((24 << 20)) "8$(printf %d "'$o")"; done
    fault s3-us-east-1 err503=0.2 for=20
    t0=$(now)
    for i in 1 2 3 4 5 6; do
        "$SPILLCTL" replicate add "cr$i-$$" --from "onprem-s3:$RB/r$i/" --to "us-east-1-s3:$RB/r$i/" >/dev/null
    done
    BURST_MODE=cloud-first burst_job rp-job 2 10s "" "    spillway.io/inputs: s3://datasets/$NS/rp-in/" |
        kc onprem apply -n "$NS" -f - >/dev/null
    copied=0
    for _ in $(seq 1 360); do
        copied=0
        for i in 1 2 3 4 5 6; do
            for o in a b; do s3has "$EP_EAST" us-east-1 "$RB" "r$i/$o.bin" && copied=$((copied + 1)); done
        done
        [ "$copied" = 12 ] && break
        sleep 0.5
    done
    RP_T=$(since "$t0")
    [ "$copied" = 12 ] || violation "rules-pool: $copied of 12 objects copied by 6 rules after $RP_T s"
    job_outcome rp-job 1 180
    for i in 1 2 3 4 5 6; do
        for o in a b; do same_object "$RB" "r$i/$o.bin" "$EP_HOME" onprem "$EP_EAST" us-east-1; done
        "$SPILLCTL" replicate remove "cr$i-$$" >/dev/null
    done
    for o in a b; do same_object datasets "$NS/rp-in/$o.bin" "$EP_HOME" onprem "$EP_EAST" us-east-1; done
    case_end "6 rules x 2 x 24 MiB and a 48 MiB data gate on 4 pool threads, 20% 503 for 20 s" 1 1
    pass "rules-pool: 12 objects copied by 6 rules in $RP_T s, byte-identical; the gated Job ran once"

    # ==== full 3b: a spot node lost under a Job that writes outputs ===========
    # The lost attempt is given up (requeued) and keeps writing in its
    # region afterwards: nothing it writes after the give-up may reach home
    # (its output rounds stopped, a round under way awaited, its journal its
    # own), while attempt 2's outputs do.
    case_begin stale-outputs
    BURST_MODE=cloud-first burst_job so-job 4 40s "" "    spillway.io/outputs: s3://checkpoints/$NS/so-job/" |
        kc onprem apply -n "$NS" -f - >/dev/null
    SO="onprem/$NS/so-job"
    wait_record "$SO" state running 90
    [ "$(record_field "$SO" targetCluster)" = cloud-spot ] || hub_fail "so-job runs in $(record_field "$SO" targetCluster)"
    s3put "$EP_EAST" us-east-1 checkpoints "$NS/so-job/attempt-1/ckpt.bin" 200000 51
    for _ in $(seq 1 60); do s3get "$EP_HOME" onprem checkpoints "$NS/so-job/ckpt.bin" >/dev/null 2>&1 && break; sleep 0.5; done
    s3get "$EP_HOME" onprem checkpoints "$NS/so-job/ckpt.bin" >"$HUB_TMP/so.a1" ||
        violation "so-job: attempt 1's checkpoint never came home while it ran"
    somirror=$(record_field "$SO" mirror)
    sonode=""
    for _ in $(seq 1 40); do
        sonode=$(kc cloud-spot get pods -n "$NS" -l "job-name=$somirror" -o jsonpath='{.items[0].spec.nodeName}')
        [ -n "$sonode" ] && break
        sleep 0.25
    done
    [ -n "$sonode" ] || hub_fail "so-job's mirror pod has no node"
    DELETED_NODE=$sonode
    kc cloud-spot delete node "$sonode" --wait=false >/dev/null
    t0=$(now)
    wait_record "$SO" attempt 2 60
    SO_RTO=$(since "$t0")
    # The given-up attempt writes on after the give-up.
    s3put "$EP_EAST" us-east-1 checkpoints "$NS/so-job/attempt-1/ckpt.bin" 200000 52
    s3put "$EP_EAST" us-east-1 checkpoints "$NS/so-job/attempt-1/late.bin" 1000 53
    wait_record "$SO" state running 90
    ep2=$EP_EAST
    [ "$(record_field "$SO" targetRegion)" = us-west-2 ] && ep2=$EP_WEST
    s3put "$ep2" "$(record_field "$SO" targetRegion)" checkpoints "$NS/so-job/attempt-2/final.bin" 100000 54
    job_outcome so-job 2 200
    s3get "$EP_HOME" onprem checkpoints "$NS/so-job/final.bin" >/dev/null 2>&1 || violation "so-job: attempt 2's output never came home"
    s3get "$EP_HOME" onprem checkpoints "$NS/so-job/late.bin" >/dev/null 2>&1 &&
        violation "double commit: the given-up attempt's late write reached home"
    s3get "$EP_HOME" onprem checkpoints "$NS/so-job/ckpt.bin" | cmp -s - "$HUB_TMP/so.a1" ||
        violation "double commit: the given-up attempt's late overwrite of ckpt.bin reached home"
    "$TB" reseed cloud-spot >/dev/null
    DELETED_NODE=""
    case_end "spot node deleted under a Job writing outputs; the lost attempt writes on" 1 1 "$SO_RTO"
    pass "stale-outputs: so-job requeued $SO_RTO s after its node went, ran once more as attempt 2; the lost attempt's late writes never home"

    # ==== full 3: the Redis master killed ========================================
    case_begin redis-kill
    rjobs=()
    for i in 1 2; do
        burst_job "r-a$i" 2 15s | kc onprem apply -n "$NS" -f - >/dev/null
        burst_job "r-d$i" 2 15s delegated | kc onprem apply -n "$NS" -f - >/dev/null
        rjobs+=("r-a$i" "r-d$i")
    done
    wait_record "onprem/$NS/r-a1" state running 90
    # And an input copy in flight at the kill, stalled (us-east-1's store
    # slowed, then cut off) so that it cannot end until after the failover:
    # the leader must act again without waiting for it.
    for i in 0 1 2 3; do s3put "$EP_HOME" onprem datasets "$NS/r-in/part-$i.bin" $((2 << 20)) "6$i"; done
    fault s3-us-east-1 latency=300
    BURST_MODE=cloud-first burst_job r-long 2 10s "" "    spillway.io/inputs: s3://datasets/$NS/r-in/" |
        kc onprem apply -n "$NS" -f - >/dev/null
    RL="onprem/$NS/r-long"
    for _ in $(seq 1 600); do
        [ "$(record_field "$RL" state)" = decided ] && break
        sleep 0.05
    done
    fault s3-us-east-1 partition=1
    sleep 2
    [ "$(record_field "$RL" state)" = decided ] && [ "$(record_field "$RL" targetCluster)" = cloud-spot ] ||
        hub_fail "r-long's input copy is not in flight to cloud-spot at the kill (state $(record_field "$RL" state), target $(record_field "$RL" targetCluster))"
    wait_sentinel_ready
    mp=$(master_port)
    e0=$(rcli GET spillway:hub:epoch)
    node=""
    for i in 0 1; do
        [ "$(sed -n 's/^port //p' "$SW_LAB_DIR/sentinel/data-$i.conf" | head -1)" = "$mp" ] && node=sentinel-data-$i
    done
    [ -n "$node" ] || hub_fail "no Sentinel data node listens on the master's port $mp"
    KILLED_REDIS=$node
    kill -9 "$(cat "$SW_LAB_DIR/run/$node.pid")"
    t0=$(now)
    # RTO: until the leader holds its lease on the promoted master under a
    # higher epoch (it acts again from there).
    e1=""
    for _ in $(seq 1 600); do
        np=$(master_port)
        if [ -n "$np" ] && [ "$np" != "$mp" ]; then
            e1=$(dcli "$np" GET spillway:hub:epoch 2>/dev/null || true)
            [ -n "$e1" ] && [ "$e1" -gt "$e0" ] && break
        fi
        sleep 0.05
    done
    [ -n "$e1" ] && [ "$e1" -gt "$e0" ] || hub_fail "no hub re-took the lease on a new master within 30 s (epoch $e0 -> ${e1:-none})"
    R_RTO=$(since "$t0")
    "$TB" sentinel up >/dev/null
    KILLED_REDIS=""
    # Acting again while the copy is still stalled: a Job submitted now runs.
    burst_job r-after 2 10s | kc onprem apply -n "$NS" -f - >/dev/null
    wait_record "onprem/$NS/r-after" state running 90
    [ "$(record_field "$RL" state)" = decided ] ||
        violation "r-long left its stalled copy (state $(record_field "$RL" state)) before the store came back"
    fault s3-us-east-1 partition=0 latency=0
    for j in "${rjobs[@]}" r-after; do job_outcome "$j" 1 120; done
    job_outcome r-long 1 180
    for i in 0 1 2 3; do same_object datasets "$NS/r-in/part-$i.bin" "$EP_HOME" onprem "$EP_EAST" us-east-1; done
    case_end "Redis master SIGKILLed (Sentinel promotes the replica) with an input copy stalled in flight" 1 $((${#rjobs[@]} + 2)) "$R_RTO"
    pass "Redis master :$mp killed: lease re-taken on :$(master_port) under epoch $e1 (was $e0) $R_RTO s later; a Job submitted then ran while a stalled copy waited; $((${#rjobs[@]} + 2)) Jobs succeeded once"

    # ==== full 4: the drills, RPO against objective, under an S3 storm ===========
    case_begin drills
    BURST_MODE=cloud-first burst_job x 4 45s "" "    spillway.io/outputs: s3://checkpoints/$NS/x/
    spillway.io/checkpoint-interval: 30s" |
        kc onprem apply -n "$NS" -f - >/dev/null
    X="onprem/$NS/x"
    wait_record "$X" state running 90
    [ "$(record_field "$X" targetCluster)" = cloud-spot ] || hub_fail "x runs in $(record_field "$X" targetCluster)"
    s3put "$EP_EAST" us-east-1 checkpoints "$NS/x/attempt-1/ckpt.bin" 100000 41
    for _ in $(seq 1 60); do s3get "$EP_HOME" onprem checkpoints "$NS/x/ckpt.bin" >/dev/null 2>&1 && break; sleep 0.5; done
    fault s3-onprem err503=0.3 for=30
    fault s3-us-east-1 err503=0.3 for=30
    echo cloud-spot >"$LOSSY"
    "$SPILLCTL" drill cluster-loss --cluster cloud-spot --timeout 4m -o json >"$HUB_TMP/cl.json" 2>"$HUB_TMP/cl.err" ||
        { cat "$HUB_TMP/cl.err" >&2; cat "$HUB_TMP/cl.json" >&2; hub_fail "the cluster-loss drill failed"; }
    no_pods_left cloud-spot x
    # The RPO objective: the Job's checkpoint interval (what a loss may
    # cost it, by its own declaration).
    D_RTO=$(python3 - "$HUB_TMP/cl.json" "$X" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
j = [j for j in d["jobs"] if j["job"] == sys.argv[2]][0]
bad = []
if not d["pass"]:
    bad.append(f"drill failed: RTO {d['rtoSeconds']} s, target {d['rtoTargetSeconds']} s")
if j["rpoSeconds"] > 30:
    bad.append(f"RPO {j['rpoSeconds']} s ({j['rpoFrom']}), objective 30 s (checkpoint-interval)")
print(d["rtoSeconds"])
for b in bad:
    print("BAD " + b)
PY
    ) || hub_fail "cluster-loss report: $(cat "$HUB_TMP/cl.json")"
    while read -r w rest; do [ "$w" = BAD ] && violation "cluster-loss drill: $rest"; done <<<"$D_RTO"
    D_RTO=$(head -1 <<<"$D_RTO")
    job_outcome x 2 200
    # region-loss: a model registry in us-east-1, replicated by the hub to
    # us-west-2 through a storm, complete there within its objective.
    MB="mr-$(echo "$NS" | tr -cd 'a-z0-9-' | cut -c1-40)"
    "$S3TOOL" "$EP_EAST" us-east-1 mb "$MB" >/dev/null
    "$S3TOOL" "$EP_WEST" us-west-2 mb "$MB" >/dev/null
    "$SPILLCTL" replicate add "chaos-models-$$" --from "us-east-1-s3:$MB/models/" --to "us-west-2-s3:$MB/models/" \
        --model-registry --rpo-objective-seconds 120 >/dev/null
    fault s3-us-east-1 err503=0.3 for=20
    fault s3-us-west-2 err503=0.3 for=20
    s3put "$EP_EAST" us-east-1 "$MB" models/llama/v1/weights.bin $((9 << 20)) 51
    s3put "$EP_EAST" us-east-1 "$MB" models/llama/v1/config.json 900 52
    for _ in $(seq 1 240); do
        s3get "$EP_WEST" us-west-2 "$MB" models/llama/v1/config.json >/dev/null 2>&1 &&
            s3get "$EP_WEST" us-west-2 "$MB" models/llama/v1/weights.bin >/dev/null 2>&1 && break
        sleep 0.25
    done
    for k in weights.bin config.json; do same_object "$MB" "models/llama/v1/$k" "$EP_EAST" us-east-1 "$EP_WEST" us-west-2; done
    echo cloud-spot >"$LOSSY"
    "$SPILLCTL" drill region-loss --region us-east-1 --timeout 3m -o json >"$HUB_TMP/region.json" 2>"$HUB_TMP/region.err" ||
        { cat "$HUB_TMP/region.err" >&2; cat "$HUB_TMP/region.json" >&2; hub_fail "the region-loss drill failed"; }
    : >"$LOSSY"
    while read -r line; do violation "region-loss drill: $line"; done < <(python3 - "$HUB_TMP/region.json" "chaos-models-$$" <<'PY'
import json, sys
d, rule = json.load(open(sys.argv[1])), sys.argv[2]
regs = {r["rule"]: r for r in d.get("modelRegistries", [])}
if rule not in regs:
    print(f"rule {rule} not checked")
else:
    r = regs[rule]
    if not r.get("pass") or r.get("missingObjects", 1) != 0:
        print(f"rule {rule}: {r.get('missingObjects')} objects missing, RPO {r.get('rpoSeconds')} s, objective {r['rpoObjectiveSeconds']} s")
if not d.get("pass"):
    print("drill failed")
PY
    )
    fault_clear
    case_end "drills cluster-loss + region-loss under a 30% 503 storm" 2 1 "$D_RTO"
    pass "drills: cluster-loss RTO $D_RTO s, RPO within objective; region-loss: the registry complete in us-west-2"
fi

# ==== the table ==================================================================
kill -TERM "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
WATCH_PID=""
wv=$(watch_violations)
[ "$wv" = 0 ] || grep VIOLATION "$HUB_TMP/watch.log" >&2
echo
echo "chaos suite ($MODE): $((SECONDS - T_START)) s (and $((T_START - T_LOCK)) s waiting for the lab's hub-test lock); watcher: $(tail -1 "$HUB_TMP/watch.log")"
echo "RTO p50/p99: nearest rank over the case's measurements"
python3 - "$ROWS" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, -(-p * len(xs) // 100) - 1))
    return xs[int(k)]
w = max(len(r[1]) for r in rows)
print(f"{'case':<15} {'fault':<{w}} {'injected':>8} {'Jobs':>5} {'violations':>10} {'RTO p50':>8} {'RTO p99':>8}")
allr, tf, tj, tv = [], 0, 0, 0
for case, fault, n, jobs, v, rtos in rows:
    r = [float(x) for x in rtos.split(",") if x and x != "-"]
    allr += r
    tf, tj, tv = tf + int(n), tj + int(jobs), tv + int(v)
    p50 = f"{pct(r, 50):.1f} s" if r else "-"
    p99 = f"{pct(r, 99):.1f} s" if r else "-"
    print(f"{case:<15} {fault:<{w}} {n:>8} {jobs:>5} {v:>10} {p50:>8} {p99:>8}")
p50 = f"{pct(allr, 50):.1f} s" if allr else "-"
p99 = f"{pct(allr, 99):.1f} s" if allr else "-"
print(f"{'total':<15} {'':<{w}} {tf:>8} {tj:>5} {tv:>10} {p50:>8} {p99:>8}")
PY
total_v=$(($(wc -l <"$VIOL") + wv))
[ "$total_v" = 0 ] || hub_fail "$total_v violations (above)"
grep -q "^samples " "$HUB_TMP/watch.log" || hub_fail "the watcher took no sample"
pass "chaos suite ($MODE): 0 violations"
