#!/usr/bin/env bash
# bench_kueue.sh - spillway against Kueue's MultiKueue, moving Jobs queued in
# Kueue on onprem to the cloud clusters (make bench BENCH=kueue; issue 19's
# benchmark). Run only when named: it switches the lab's Kueue modes, inside
# the lab-wide hub lock, and puts them back as it found them when it ends,
# whatever the outcome (Kueue off, on, or on with MultiKueue).
#
# For each QPS level (BENCH_KUEUE_QPS, default "50 300"), every Kueue of the
# lab is restarted with clientConnection qps QPS and burst 2 x QPS, onprem's
# as a MultiKueue manager with Kueue's default dispatcher (AllAtOnce: no
# dispatcherName), cloud-spot and cloud-ondemand its workers. Then
# BENCH_KUEUE_ROUNDS rounds (default 3) alternate, each in a namespace of its
# own, N one-GPU Jobs (BENCH_KUEUE_JOBS, default 1,000) created at once on
# onprem by hub_load (no client-side limit: the users), unsuspended with the
# queue-name label (Kueue's webhook suspends them):
#   spillway    burstable Jobs (spillway.io/burst: auto) in LocalQueue gpu,
#               onprem's ClusterQueue gpu (8 GPUs) held full by a filler;
#               one hub, members.qps QPS and members.burst 2 x QPS; each
#               mirror goes into cloud-spot's (or cloud-ondemand's)
#               LocalQueue gpu, admitted there by that cluster's Kueue
#   MultiKueue  plain Jobs in LocalQueue multikueue, ClusterQueue multikueue
#               with the MultiKueue AdmissionCheck; no hub; the manager copies
#               each Workload to both workers, the first to admit it wins
# For the run, cloud-spot's 8 kwok nodes have 128 GPUs each and its
# ClusterQueue gpu as many (1,024), onprem's ClusterQueue multikueue N + 24
# nominal GPUs, so that every Job can be admitted; cloud-ondemand keeps its
# 32. Reported per round, from an outside watch of the workers' Workloads
# (kueue_watch.py, the time an event arrives):
#   - origin created (the create call's answer) to its Workload Admitted in
#     a cloud cluster (MultiKueue: the first worker's), p50 / p99 / max;
#     split at the origin's Workload (a watch of onprem's too): at home,
#     created to the Workload pending for quota (spillway's signal) or
#     reserved at the manager (MultiKueue's), Kueue's own time; onward,
#     from there to admitted in the cloud
#   - Jobs/s: N / (last admitted - first created)
#   - API requests per Job per cluster, counted from the start of the load
#     to the last admission: the hub's own (spillway_api_requests_total;
#     the manager's Kueue counts none of its own) and every client's (the API server's apiserver_request_total: the users'
#     creates, both clusters' Kueue, Job controller, scheduler and kwok too)
#   - the hub's peak RSS
# and the medians per side and QPS. A round that does not admit every Job
# within BENCH_KUEUE_SECONDS (900) reports how many it did. After the rounds
# of Jobs created at once, at client QPS BENCH_KUEUE_OFFERED_QPS (300) the
# latency goal's load: the N Jobs offered at BENCH_KUEUE_OFFERED a second
# (100; 0 for none), BENCH_KUEUE_OFFERED_ROUNDS rounds (as many as the
# others), spillway's only unless BENCH_KUEUE_OFFERED_PEER=1.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export SW_SOURCE_DIR=${SW_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
export SW_BUILD_DIR=${SW_BUILD_DIR:-$SW_SOURCE_DIR/build}
N=${BENCH_KUEUE_JOBS:-1000}
ROUNDS=${BENCH_KUEUE_ROUNDS:-3}
QPSES=${BENCH_KUEUE_QPS:-50 300}
BOUND=${BENCH_KUEUE_SECONDS:-900}
# The latency goal's load: Jobs offered at OFFERED a second (not at once),
# at client QPS OFFERED_QPS, OFFERED_ROUNDS rounds per side; 0: none.
OFFERED=${BENCH_KUEUE_OFFERED:-100}
OFFERED_QPS=${BENCH_KUEUE_OFFERED_QPS:-300}
OFFERED_ROUNDS=${BENCH_KUEUE_OFFERED_ROUNDS:-$ROUNDS}
# MultiKueue's rounds at that load too (BENCH_KUEUE_OFFERED_PEER=1; the goal
# is spillway's, and the peer's rounds are long).
OFFERED_PEER=${BENCH_KUEUE_OFFERED_PEER:-}
export HUB_DB=9
source "$SW_SOURCE_DIR/tests/e2e/hub/lib.sh"
TB="$SW_SOURCE_DIR/tests/testbed/testbed"
LOAD="$SW_BUILD_DIR/bench/hub_load"
KCD=$SW_LAB_KUBECONFIG_DIR
MLOG=$(mktemp)
OBS_PID=""
CLOUDS=(cloud-spot cloud-ondemand)
CLUSTERS3=(onprem cloud-spot cloud-ondemand)
[ -x "$LOAD" ] || fail "no $LOAD (make build)"

# ---- the lab's modes, as found and as put back -------------------------------

hub_lock
WAS_KUEUE="" WAS_MK="" TOUCHED="" CQ_SPOT0=""
[ -f "$SW_LAB_DIR/kueue/on" ] && WAS_KUEUE=1
[ -f "$SW_LAB_DIR/kueue/multikueue" ] && WAS_MK=1
for c in "${CLUSTERS3[@]}"; do
    kc "$c" get --raw /readyz >/dev/null 2>&1 || fail "cluster $c is not up (tests/testbed/testbed up)"
done
[ "$(kc cloud-spot get nodes -l type=kwok -o name | wc -l)" -gt 0 ] ||
    fail "cloud-spot has no static GPU nodes (is the lab in Karpenter mode? testbed karpenter down)"

# tb ARGS...: testbed with the benchmark's mode variables, or none (the
# lab's own configuration) when BENCH_MODE_QPS is empty.
tb() {
    if [ -n "${BENCH_MODE_QPS:-}" ]; then
        SW_LAB_KUEUE_QPS=$BENCH_MODE_QPS SW_LAB_KUEUE_BURST=$((2 * BENCH_MODE_QPS)) \
            SW_LAB_MULTIKUEUE_DISPATCHER="" "$TB" "$@" >>"$MLOG" 2>&1
    else
        env -u SW_LAB_KUEUE_QPS -u SW_LAB_KUEUE_BURST -u SW_LAB_MULTIKUEUE_DISPATCHER \
            "$TB" "$@" >>"$MLOG" 2>&1
    fi
}
modes_fail() {
    echo "---- testbed's messages" >&2
    tail -30 "$MLOG" >&2
    fail "$*"
}

restore_lab() {
    set +e
    [ -n "$OBS_PID" ] && kill "$OBS_PID" 2>/dev/null
    [ -n "$TOUCHED" ] || { rm -f "$MLOG"; return 0; }
    BENCH_MODE_QPS=""
    "$TB" reseed cloud-spot >/dev/null 2>&1
    # cloud-spot's nominal GPUs as the lab made them, while Kueue's webhooks
    # still answer; then the modes as found.
    [ -n "$CQ_SPOT0" ] && cq_gpus cloud-spot gpu "$CQ_SPOT0"
    tb kueue down
    if [ -n "$WAS_KUEUE" ]; then
        tb kueue up || echo "bench_kueue: restoring the lab: testbed kueue up failed: $(tail -5 "$MLOG")" >&2
        if [ -n "$WAS_MK" ]; then
            tb multikueue up || echo "bench_kueue: restoring the lab: testbed multikueue up failed: $(tail -5 "$MLOG")" >&2
        fi
    fi
    echo "bench_kueue: the lab's modes put back: Kueue $([ -n "$WAS_KUEUE" ] && echo on || echo off), MultiKueue $([ -n "$WAS_MK" ] && echo on || echo off)" >&2
    rm -f "$MLOG"
}
trap restore_lab EXIT

# cq_gpus CLUSTER CQ [VALUE]: a ClusterQueue's nominal GPUs (the lab's
# queues list cpu, memory, nvidia.com/gpu in that order), or sets them.
cq_gpus() {
    if [ $# -eq 2 ]; then
        kc "$1" get clusterqueue "$2" -o jsonpath='{.spec.resourceGroups[0].flavors[0].resources[2].nominalQuota}'
    else
        kc "$1" patch clusterqueue "$2" --type=json \
            -p "[{\"op\":\"replace\",\"path\":\"/spec/resourceGroups/0/flavors/0/resources/2/nominalQuota\",\"value\":\"$3\"}]" >/dev/null
    fi
}

# kueue_mode QPS: every Kueue restarted with that client limit, onprem's as a
# MultiKueue manager with the AllAtOnce dispatcher; the quotas of the run.
kueue_mode() {
    BENCH_MODE_QPS=$1
    TOUCHED=1
    tb kueue down || modes_fail "testbed kueue down"
    tb kueue up || modes_fail "testbed kueue up (client QPS $1)"
    tb multikueue up || modes_fail "testbed multikueue up (AllAtOnce, client QPS $1)"
    local c
    for c in "${CLUSTERS3[@]}"; do
        grep -q "^  qps: $1\$" "$SW_LAB_DIR/kueue/$c/config.yaml" ||
            modes_fail "Kueue of $c was not configured with client QPS $1"
    done
    ! grep -q dispatcherName "$SW_LAB_DIR/kueue/onprem/config.yaml" ||
        modes_fail "onprem's Kueue names a dispatcher: not AllAtOnce"
    [ "$(cq_gpus onprem gpu)" = 8 ] || modes_fail "onprem's ClusterQueue gpu has $(cq_gpus onprem gpu) GPUs, not 8"
    [ -n "$CQ_SPOT0" ] || CQ_SPOT0=$(cq_gpus cloud-spot gpu)
    cq_gpus cloud-spot gpu 1024
    cq_gpus onprem multikueue $((N + 24))
}

# Room for every Job on cloud-spot: 8 nodes x 128 GPUs.
widen_cloud_spot() {
    node_resources cloud-spot '{"cpu":"96","memory":"1000Gi","pods":"256","nvidia.com/gpu":"128"}' >/dev/null
}

# ---- counters ------------------------------------------------------------------

# apiserver_total CLUSTER: every request the API server has answered.
apiserver_total() {
    kc "$1" get --raw /metrics | awk '/^apiserver_request_total\{/{s+=$NF} END{printf "%d\n", s}'
}
hub_requests() {
    curl -sf http://127.0.0.1:19464/metrics | awk -v c="$1" '$1=="spillway_api_requests_total{cluster=\""c"\"}"{print $2}'
}
# The manager's Kueue has no counter of its own requests to read: v0.17's
# metrics endpoint has no rest_client_requests_total (client-go's metrics go
# to another registry, and no series is served). Its share is in the API
# servers' totals only.
host_of() { awk '$1=="server:"{sub("https://", "", $2); print $2; exit}' "$KCD/$1-cert.kubeconfig"; }

# ---- one round -----------------------------------------------------------------

# queues NS KIND: the namespace on the three clusters with its LocalQueues:
# spillway's rounds LocalQueue gpu everywhere (each cluster's ClusterQueue
# gpu); MultiKueue's LocalQueue multikueue, on ClusterQueue multikueue at the
# manager and gpu at the workers.
queues() {
    local ns=$1 c cq lq
    for c in "${CLUSTERS3[@]}"; do
        kc "$c" create namespace "$ns" >/dev/null
        if [ "$2" = spillway ]; then
            lq="gpu" cq="gpu"
        else
            lq="multikueue" cq="gpu"
            [ "$c" = onprem ] && cq="multikueue"
        fi
        printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: %s, namespace: %s}\nspec: {clusterQueue: %s}\n' \
            "$lq" "$ns" "$cq" | kc "$c" apply -f - >/dev/null
    done
    # Kueue must know the queue before the first Job comes: its webhook
    # gives a Job in a MultiKueue queue spec.managedBy only then.
    for c in "${CLUSTERS3[@]}"; do
        for _ in $(seq 1 120); do
            [ "$(kc "$c" get localqueue "$lq" -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}' 2>/dev/null)" = True ] && break
            sleep 0.25
        done
        [ "$(kc "$c" get localqueue "$lq" -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}' 2>/dev/null)" = True ] ||
            hub_fail "LocalQueue $lq in $ns on $c is not Active after 30 s"
    done
}

observe() {
    python3 "$HERE/kueue_watch.py" "$SW_LAB_KUBECTL" "$KCD" "$1" origin:onprem "${CLOUDS[@]}" >"$HUB_TMP/admitted" 2>&1 &
    OBS_PID=$!
    local i
    for i in $(seq 1 100); do
        [ "$(grep -c '^watching ' "$HUB_TMP/admitted")" = 3 ] && return 0
        sleep 0.1
    done
    hub_fail "the watch of the workers' Workloads did not start: $(cat "$HUB_TMP/admitted")"
}
admitted_count() { grep -c '^admitted ' "$HUB_TMP/admitted" || true; }

# drop NS: the round's namespace gone from the three clusters (spillway's
# finalizers removed: its hub is stopped), waited for up to 300 s so that
# the next round starts on a quiet lab.
unfinalize() { # unfinalize CLUSTER NS: the Jobs there that hold a finalizer, released
    local jobs
    jobs=$(kc "$1" get jobs -n "$2" -o jsonpath='{range .items[?(@.metadata.finalizers)]}{"job/"}{.metadata.name}{" "}{end}' 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$jobs" ] || kc "$1" patch $jobs -n "$2" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
}
drop() {
    local c i left
    for c in "${CLUSTERS3[@]}"; do
        unfinalize "$c" "$1"
        kc "$c" delete namespace "$1" --wait=false >/dev/null 2>&1 || true
    done
    for i in $(seq 1 300); do
        left=0
        for c in "${CLUSTERS3[@]}"; do
            kc "$c" get namespace "$1" >/dev/null 2>&1 && left=1
        done
        [ "$left" = 0 ] && return 0
        # Jobs the finalizer patch missed (created while it ran).
        if [ $((i % 30)) = 0 ]; then for c in "${CLUSTERS3[@]}"; do unfinalize "$c" "$1"; done; fi
        sleep 1
    done
    echo "note: namespace $1 still terminating after 300 s" >&2
}

register() {
    "$SPILLCTL" cluster add onprem --kubeconfig "$KCD/onprem-cert.kubeconfig" --role onprem --region onprem \
        --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >/dev/null
    "$SPILLCTL" cluster add cloud-spot --kubeconfig "$KCD/cloud-spot-cert.kubeconfig" --role cloud --region us-east-1 \
        --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
    "$SPILLCTL" cluster add cloud-ondemand --kubeconfig "$KCD/cloud-ondemand-cert.kubeconfig" --role cloud --region us-west-2 \
        --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null
}

# round SIDE QPS ROUND [OFFERED]: one round, the Jobs created at once or,
# with OFFERED, at that many a second; appends a result line to
# $HUB_TMP/results: SIDE QPS OFFERED ROUND ADMITTED P50 P99 MAX RATE
# REQ_ONPREM REQ_SPOT REQ_OD ALL_ONPREM ALL_SPOT ALL_OD RSS_MIB
round() {
    local side=$1 qps=$2 r=$3 offered=${4:-0} ns peak=0 t0 lpid c rss
    ns="kb-${side:0:2}-$$-$qps-$offered-$r"
    HUB_EXTRA_NS+=("$ns")
    queues "$ns" "$side"
    if [ "$side" = spillway ]; then
        hub_config "$HUB_TMP/hub.yaml" 19464
        printf 'members:\n  qps: %s\n  burst: %s\n' "$qps" $((2 * qps)) >>"$HUB_TMP/hub.yaml"
        : >"$HUB_TMP/hub.log"
        hub_start
        for _ in $(seq 1 120); do
            [ "$(leader_of 19464)" = 1 ] && break
            sleep 0.25
        done
        [ "$(leader_of 19464)" = 1 ] || hub_fail "the hub did not take the lease"
    fi
    observe "$ns"
    declare -A ctl0=() all0=()
    for c in "${CLUSTERS3[@]}"; do
        all0[$c]=$(apiserver_total "$c")
        ctl0[$c]=""
        if [ "$side" = spillway ]; then ctl0[$c]=$(hub_requests "$c"); fi
    done
    local queue=gpu form=burstable
    [ "$side" = multikueue ] && queue=multikueue form=plain
    t0=$SECONDS
    # Offered at a rate: hub_load's own token bucket, burst 1.
    local lq=0 lb=0
    [ "$offered" != 0 ] && lq=$offered lb=1
    "$LOAD" "$KCD/onprem-cert.kubeconfig" "$ns" "$N" "$form" "$lq" "$lb" "$queue" >"$HUB_TMP/created" 2>"$HUB_TMP/load.err" &
    lpid=$!
    while [ $((SECONDS - t0)) -lt "$BOUND" ]; do
        if [ "$side" = spillway ]; then
            rss=$(awk '/VmRSS/{print $2}' "/proc/$HUB_PID/status" 2>/dev/null || echo 0)
            [ "$rss" -gt "$peak" ] && peak=$rss
        fi
        # Kueue may admit a Workload in both workers before it deletes the
        # loser's copy: count Jobs, not lines.
        [ "$(awk '$1=="admitted"{print $3}' "$HUB_TMP/admitted" | sed -E 's/^job-(job-[0-9]+)-[a-z0-9]{5}$/\1/' | sort -u | wc -l)" -ge "$N" ] && break
        sleep 0.5
    done
    wait "$lpid" || hub_fail "the load did not create every Job: $(cat "$HUB_TMP/load.err")"
    declare -A ctl1=() all1=()
    for c in "${CLUSTERS3[@]}"; do
        all1[$c]=$(apiserver_total "$c")
        ctl1[$c]=""
        if [ "$side" = spillway ]; then ctl1[$c]=$(hub_requests "$c"); fi
    done
    kill "$OBS_PID" 2>/dev/null || true
    wait "$OBS_PID" 2>/dev/null || true
    OBS_PID=""
    # Which origin each spillway mirror stands for (its label).
    : >"$HUB_TMP/mirrors"
    if [ "$side" = spillway ]; then
        for c in "${CLOUDS[@]}"; do
            kc "$c" get jobs -n "$ns" -l spillway.io/origin-name \
                -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.spillway\.io/origin-name}{"\n"}{end}' >>"$HUB_TMP/mirrors"
        done
    fi
    local stats
    stats=$(python3 - "$HUB_TMP/created" "$HUB_TMP/admitted" "$HUB_TMP/mirrors" "$N" <<'PY'
import re, sys
created = {}
for line in open(sys.argv[1]):
    name, ms = line.split()
    created[name] = int(ms)
origin_of = {}
for line in open(sys.argv[3]):
    f = line.split()
    if len(f) == 2:
        origin_of[f[0]] = f[1]
first = {}
home = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) != 5:
        continue
    state, cluster, wl, owner, ms = f
    m = re.match(r"^job-(job-\d+)-[a-z0-9]{5}$", wl)
    if state in ("pending", "reserved") and m:
        # The origin's Workload pending for quota (what spillway waits
        # for) or reserved at the manager (what MultiKueue waits for).
        home.setdefault(m.group(1), int(ms))
    if state != "admitted":
        continue
    # A MultiKueue worker's copy has the manager's Workload's name (job-NAME-
    # hash); a spillway mirror's Workload is owned by the mirror.
    job = origin_of.get(owner) or (m.group(1) if m else None)
    if job in created:
        first[job] = min(first.get(job, int(ms)), int(ms))
n = int(sys.argv[4])
lat = sorted((first[j] - created[j]) / 1000.0 for j in first)
if not lat:
    print("0 - - - - - - - -")
    sys.exit(0)
def q(v, p):
    return f"{v[min(len(v) - 1, int(p * len(v)))]:.3f}" if v else "-"
rate = len(lat) / ((max(first.values()) - min(created.values())) / 1000.0)
# Split at the origin's Workload: Kueue's own time at home (created to
# pending / reserved), then the controller's (to admitted in the cloud).
athome = sorted((home[j] - created[j]) / 1000.0 for j in first if j in home)
onward = sorted((first[j] - home[j]) / 1000.0 for j in first if j in home)
print(f"{len(lat)} {q(lat, 0.5)} {q(lat, 0.99)} {lat[-1]:.3f} {rate:.1f} "
      f"{q(athome, 0.5)} {q(athome, 0.99)} {q(onward, 0.5)} {q(onward, 0.99)}")
PY
)
    local per=() allp=()
    for c in "${CLUSTERS3[@]}"; do
        if [ -n "${ctl0[$c]}" ] && [ -n "${ctl1[$c]}" ]; then
            per+=("$(python3 -c "print(f'{(${ctl1[$c]} - ${ctl0[$c]}) / $N:.2f}')")")
        else
            per+=("-")
        fi
        allp+=("$(python3 -c "print(f'{(${all1[$c]} - ${all0[$c]}) / $N:.2f}')")")
    done
    local rmib="-"
    [ "$side" = spillway ] && rmib=$((peak / 1024))
    read -r adm p50 p99 pmax rate h50 h99 o50 o99 <<<"$stats"
    echo "$side $qps $offered $r $adm $p50 $p99 $pmax $rate ${per[*]} ${allp[*]} $rmib $h50 $h99 $o50 $o99" >>"$HUB_TMP/results"
    echo "$side, QPS $qps, $([ "$offered" = 0 ] && echo "at once" || echo "offered at $offered/s"), round $r: $adm of $N admitted in the cloud in $((SECONDS - t0)) s; $rate Jobs/s;" \
        "created->admitted p50 ${p50}s p99 ${p99}s max ${pmax}s (created->origin Workload $([ "$side" = spillway ] && echo pending || echo reserved) p50 ${h50}s p99 ${h99}s, then ->admitted p50 ${o50}s p99 ${o99}s); requests per Job by the" \
        "$([ "$side" = spillway ] && echo hub || echo "manager's Kueue") onprem/cloud-spot/cloud-ondemand ${per[*]};" \
        "by all clients ${allp[*]}; hub peak RSS $rmib MiB"
    if [ "$side" = spillway ]; then
        kill -9 "$HUB_PID" 2>/dev/null || true
        wait "$HUB_PID" 2>/dev/null || true
    fi
    drop "$ns"
    if [ "$side" = spillway ]; then
        rcli FLUSHDB >/dev/null
        register
    fi
}

# ---- the run --------------------------------------------------------------------

echo "bench_kueue: $N Jobs, $ROUNDS round(s) per side at client QPS ${QPSES// /, } (burst 2 x QPS)"
# At the end the namespaces are waited for while Kueue still runs: their
# Workloads' finalizers are Kueue's to remove, and a Kueue turned off before
# would leave them terminating.
finish() {
    set +e
    [ -n "$OBS_PID" ] && kill "$OBS_PID" 2>/dev/null
    for p in "${HUB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    local ns
    for ns in ${NS:-} "${HUB_EXTRA_NS[@]}"; do drop "$ns"; done
    hub_cleanup
    restore_lab
}
hub_setup kb
trap finish EXIT
: >"$HUB_TMP/results"
for qps in $QPSES; do
    kueue_mode "$qps"
    widen_cloud_spot
    # onprem's ClusterQueue gpu held full (8 of 8 GPUs) by a Job of two
    # 4-GPU pods in its queue, running at home for the whole level.
    kc onprem get localqueue gpu -n "$NS" >/dev/null 2>&1 ||
        printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: gpu, namespace: %s}\nspec: {clusterQueue: gpu}\n' "$NS" |
        kc onprem apply -f - >/dev/null
    cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: filler
  labels: {kueue.x-k8s.io/queue-name: gpu}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "7200s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: hold
        image: registry.example/hold:1
        resources: {limits: {nvidia.com/gpu: "4"}}
YAML
    for _ in $(seq 1 120); do
        [ "$(kc onprem get pods -n "$NS" --field-selector=status.phase=Running -o name | wc -l)" = 2 ] && break
        sleep 0.5
    done
    [ "$(kc onprem get pods -n "$NS" --field-selector=status.phase=Running -o name | wc -l)" = 2 ] ||
        hub_fail "the filler did not take onprem's quota and GPUs"
    echo "QPS $qps: every Kueue at clientConnection qps $qps burst $((2 * qps)), onprem's ClusterQueue gpu full (8/8)"
    for r in $(seq 1 "$ROUNDS"); do
        round spillway "$qps" "$r"
        round multikueue "$qps" "$r"
    done
    if [ "$qps" = "$OFFERED_QPS" ] && [ "$OFFERED" != 0 ]; then
        for r in $(seq 1 "$OFFERED_ROUNDS"); do
            round spillway "$qps" "$r" "$OFFERED"
            [ -z "$OFFERED_PEER" ] || round multikueue "$qps" "$r" "$OFFERED"
        done
    fi
done

python3 - "$HUB_TMP/results" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
n = int(sys.argv[2])
def med(vals):
    v = [float(x) for x in vals if x not in ("-", "")]
    return f"{statistics.median(v):.2f}" if v else "-"
print()
print(f"Kueue benchmark: {n} one-GPU Jobs queued on onprem (at once, or offered at a rate), medians of the rounds")
print("| side | client QPS | offered | admitted (rounds) | Jobs/s (rounds) | p50 s | p99 s | max s | at home p50 / p99 s | onward p50 / p99 s | requests/Job by the controller, onprem / cloud-spot / cloud-ondemand | by all clients | hub RSS MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
keys = []
for r in rows:
    if (r[1], r[2]) not in keys:
        keys.append((r[1], r[2]))
for qps, off in keys:
    for side in ("spillway", "multikueue"):
        rs = [r for r in rows if r[0] == side and r[1] == qps and r[2] == off]
        if not rs:
            continue
        col = lambda i: [r[i] for r in rs]
        print("| " + " | ".join([side, qps, "at once" if off == "0" else off + "/s", ", ".join(col(4)),
                                 med(col(8)) + " (" + ", ".join(col(8)) + ")", med(col(5)), med(col(6)), med(col(7)),
                                 med(col(16)) + " / " + med(col(17)), med(col(18)) + " / " + med(col(19)),
                                 " / ".join(med(col(i)) for i in (9, 10, 11)),
                                 " / ".join(med(col(i)) for i in (12, 13, 14)), med(col(15))]) + " |")
PY
