#!/usr/bin/env bash
# bench_hub.sh - the hub's dispatch benchmark on the lab (make bench).
#
# N burstable one-GPU Jobs (default 1,000) are created at once on the
# saturated onprem cluster; spillwayd (one hub, default rate limits: QPS 50,
# burst 100 per cluster) dispatches them to cloud-spot, whose 8 kwok nodes
# are given 128 GPUs each for the run. Reported:
#   - origin created (the create call's answer) to mirror created (the
#     record's dispatchedMs), p50, p99 and max
#   - the sustained dispatch rate: N / (last mirror created - the first
#     origin's create sent), as the ceiling's rate is N / (its last create
#     answered - its first sent)
#   - Kubernetes API requests per Job per cluster (the hub's own counters)
#   - the hub's peak RSS
#   - the bound given when the origins appeared: the fastest any dispatcher
#     with the same budget could finish, from the origins' creationTimestamps
# and, in the same run on the same API server, the ceiling: one client of
# spillway's REST layer with the hub's rate limits creating the same N Jobs
# (suspended, so no pods) directly on cloud-spot. Rounds alternate (ceiling,
# hub) BENCH_HUB_ROUNDS times (default 1; each hub round is N Jobs). Each
# side of a round starts once the lab is idle: no namespace of an earlier
# round or run still being deleted on onprem or cloud-spot, and the 1-minute
# load average under BENCH_IDLE_LOAD (default 1.5), waited for up to
# BENCH_IDLE_WAIT seconds (default 300; then the round runs and says so).
# The cloud-spot nodes are put back at the end.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export SW_SOURCE_DIR=${SW_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
export SW_BUILD_DIR=${SW_BUILD_DIR:-$SW_SOURCE_DIR/build}
N=${BENCH_HUB_JOBS:-1000}
# delegated (spec.managedBy: the hub's own pipeline) or burstable (annotation
# only: each Job's pods must first be created and found Unschedulable by the
# member's own controller manager and scheduler, then removed on suspend).
FORM=${BENCH_HUB_FORM:-delegated}
ROUNDS=${BENCH_HUB_ROUNDS:-1}
export HUB_DB=9
source "$SW_SOURCE_DIR/tests/e2e/hub/lib.sh"
LOAD="$SW_BUILD_DIR/bench/hub_load"
KCD=$SW_LAB_KUBECONFIG_DIR
restore() {
    "$SW_SOURCE_DIR/tests/testbed/testbed" reseed cloud-spot >/dev/null 2>&1 || true
}
hub_setup bench
# (After hub_setup, which sets its own EXIT trap; INT and TERM exit through
# it too, so a benchmark stopped by hand leaves the lab as it found it.)
trap 'hub_cleanup; restore' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
saturate

# Room for N one-GPU pods on cloud-spot.
node_resources cloud-spot '{"cpu":"96","memory":"1000Gi","pods":"256","nvidia.com/gpu":"128"}' >/dev/null

IDLE_LOAD=${BENCH_IDLE_LOAD:-1.5}
IDLE_WAIT=${BENCH_IDLE_WAIT:-300}
# Waits for the lab to be idle (above); prints what it found.
quiesce() {
    local what=$1 t0=$SECONDS term load
    while :; do
        term=0
        for c in onprem cloud-spot; do
            term=$((term + $(kc "$c" get namespaces --no-headers 2>/dev/null | awk '$2=="Terminating"' | wc -l)))
        done
        load=$(cut -d' ' -f1 /proc/loadavg)
        if [ "$term" = 0 ] && awk -v l="$load" -v m="$IDLE_LOAD" 'BEGIN { exit !(l < m) }'; then
            echo "$what: lab idle after $((SECONDS - t0)) s (load $load)"
            return
        fi
        if [ $((SECONDS - t0)) -ge "$IDLE_WAIT" ]; then
            echo "$what: lab still busy after $IDLE_WAIT s (load $load, $term namespaces being deleted); running anyway"
            return
        fi
        sleep 5
    done
}

# CPU time in clock ticks: of a process (utime + stime), or "all" the
# machine's busy time (every CPU's, idle and iowait left out).
cpu_ticks() {
    if [ "$1" = all ]; then
        awk '$1=="cpu"{print $2+$3+$4+$7+$8+$9}' /proc/stat
    else
        awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0
    fi
}
# onprem's API server's own count of requests by verb, resource and code
# (every client's: the load's creates, the hub's patches and Events, ...).
apiserver_requests() {
    kc onprem get --raw /metrics 2>/dev/null | awk '/^apiserver_request_total\{/'
}
# What onprem's API server answered between two counts, largest first.
apiserver_breakdown() {
    python3 - "$1" "$2" "$3" <<'PY'
import re, sys
def load(f):
    d = {}
    for line in open(f):
        k, v = line.rsplit(" ", 1)
        m = dict(re.findall(r'(\w+)="([^"]*)"', k))
        key = (m.get("verb"), (m.get("resource") + "/" + m.get("subresource")).strip("/"), m.get("code"))
        d[key] = d.get(key, 0) + float(v)
    return d
a, b, n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
rows = sorted(((v - a.get(k, 0), k) for k, v in b.items()), reverse=True)
print("  ".join(f"{verb} {res} {code}: {d / n:.2f}" for d, (verb, res, code) in rows if d / n >= 0.01))
PY
}

declare -a BOUND CEIL RATE P50 P99 REQ_O REQ_C RSS
for round in $(seq 1 "$ROUNDS"); do
    # ---- the ceiling: our REST client, the hub's limits, straight to cloud-spot
    cns="ceil-$$-$round"
    HUB_EXTRA_NS+=("$cns" "hub-$$-$round")
    quiesce "ceiling round $round"
    out=$("$LOAD" "$KCD/cloud-spot-cert.kubeconfig" "$cns" "$N" plain 50 100 2>&1 >/dev/null | tail -1)
    echo "ceiling round $round: $out"
    CEIL+=("$(echo "$out" | sed -E 's/.*: ([0-9.]+) Jobs\/s.*/\1/')")
    kc cloud-spot delete namespace "$cns" --wait=false >/dev/null

    # ---- the hub
    quiesce "hub round $round"
    : >"$HUB_TMP/hub.log"
    # The round's namespaces granted (tests/e2e/hub/lib.sh, hub_tenancy).
    hub_config "$HUB_TMP/hub.yaml" 19464
    hub_start
    for _ in $(seq 1 80); do
        curl -sf http://127.0.0.1:19464/readyz >/dev/null 2>&1 &&
            [ "$(curl -sf http://127.0.0.1:19464/metrics | awk '$1=="spillway_leader"{print $2}')" = 1 ] && break
        sleep 0.25
    done
    req() { curl -sf http://127.0.0.1:19464/metrics | awk -v c="$1" '$1=="spillway_api_requests_total{cluster=\""c"\"}"{print $2}'; }
    o0=$(req onprem) c0=$(req cloud-spot)
    apiserver_requests >"$HUB_TMP/api0"
    cpu0=$(cpu_ticks "$HUB_PID") load0=$(cpu_ticks all)
    hns="hub-$$-$round"
    kc cloud-spot create namespace "$hns" >/dev/null 2>&1 || true
    peak=0
    "$LOAD" "$KCD/onprem-cert.kubeconfig" "$hns" "$N" "$FORM" 0 0 >"$HUB_TMP/created" 2>"$HUB_TMP/load.err" &
    lpid=$!
    # The round measures the Jobs the load generator did create: a create
    # the API server refused or timed out (it has happened, with Kueue's
    # webhooks on onprem) is counted and reported, not waited for.
    made=""
    for _ in $(seq 1 1200); do
        r=$(awk '/VmRSS/{print $2}' "/proc/$HUB_PID/status" 2>/dev/null || echo 0)
        [ "$r" -gt "$peak" ] && peak=$r
        if [ -z "$made" ] && ! kill -0 "$lpid" 2>/dev/null; then
            wait "$lpid" || true
            made=$(wc -l <"$HUB_TMP/created")
            [ "$made" -gt 0 ] || hub_fail "the load created no Job: $(cat "$HUB_TMP/load.err")"
            [ "$made" = "$N" ] || echo "round $round: the load created $made of $N Jobs: $(tail -1 "$HUB_TMP/load.err")"
        fi
        if [ -n "$made" ]; then
            n=$(rcli --scan --pattern "spillway:job:onprem/$hns/*" | wc -l)
            d=$(curl -sf http://127.0.0.1:19464/metrics | awk '$1=="spillway_dispatches_total"{print $2}')
            [ "${d:-0}" -ge "$made" ] && [ "$n" -ge "$made" ] && break
        fi
        sleep 0.5
    done
    [ -n "$made" ] || hub_fail "the load generator did not finish in 600 s: $(cat "$HUB_TMP/load.err")"
    o1=$(req onprem) c1=$(req cloud-spot)
    apiserver_requests >"$HUB_TMP/api1"
    cpu1=$(cpu_ticks "$HUB_PID") load1=$(cpu_ticks all)
    for k in $(rcli --scan --pattern "spillway:job:onprem/$hns/*"); do rcli GET "$k"; done >"$HUB_TMP/records"
    sent=$(awk '$1=="sending" && $2=="from" {print $3; exit}' "$HUB_TMP/load.err")
    kc onprem get jobs -n "$hns" \
        -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.creationTimestamp}{"\n"}{end}' >"$HUB_TMP/appeared"
    stats=$(python3 - "$HUB_TMP/created" "$HUB_TMP/records" "$made" "$sent" "$HUB_TMP/appeared" <<'PY'
import calendar, json, sys, time
created = {}
for line in open(sys.argv[1]):
    name, ms = line.split()
    created[name] = int(ms)
lat, disp = [], []
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r["dispatchedMs"] > 0 and r["name"] in created:
        lat.append((r["dispatchedMs"] - created[r["name"]]) / 1000.0)
        disp.append(r["dispatchedMs"])
n = int(sys.argv[3])
lat.sort()
if len(lat) < n:
    print(f"ERROR only {len(lat)} of {n} dispatched")
    sys.exit(0)
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
# From when the first create was sent, as the ceiling's own rate is.
start = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else min(created.values())
rate = n / ((max(disp) - start) / 1000.0)
# When each origin came to exist (its creationTimestamp, whole seconds,
# taken at the second's start): the fastest any dispatcher with the same
# budget (a bucket of 100 filled at 50 a second, one request per Job on
# each cluster) could have finished, given when the Jobs appeared.
appeared = sorted(
    max(start, calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")) * 1000)
    for name, ts in (line.split() for line in open(sys.argv[5]) if line.strip())
    if name in created)
tokens, t = 100.0, start
for a in appeared:
    now = max(t, a)
    tokens = min(100.0, tokens + (now - t) * 50 / 1000.0)
    t = now
    if tokens < 1:
        t += (1 - tokens) * 1000.0 / 50
        tokens = 1.0
    tokens -= 1
bound = n / ((t - start) / 1000.0)
span = (appeared[-1] - start) / 1000.0
print(f"{q(0.5):.3f} {q(0.99):.3f} {lat[-1]:.3f} {rate:.1f} {span:.1f} {bound:.1f}")
PY
)
    case "$stats" in ERROR*) hub_fail "$stats" ;; esac
    read -r p50 p99 pmax rate span bound <<<"$stats"
    BOUND+=("$(python3 -c "print(f'{$rate / $bound:.2f}')")")
    RATE+=("$rate") P50+=("$p50") P99+=("$p99") RSS+=("$((peak / 1024))")
    REQ_O+=("$(python3 -c "print(f'{($o1 - $o0) / $made:.2f}')")")
    REQ_C+=("$(python3 -c "print(f'{($c1 - $c0) / $made:.2f}')")")
    echo "hub round $round: $made Jobs dispatched at $rate Jobs/s; latency p50 ${p50}s p99 ${p99}s max ${pmax}s;" \
        "API requests per Job: onprem ${REQ_O[-1]}, cloud-spot ${REQ_C[-1]}; peak RSS ${RSS[-1]} MiB;" \
        "the last origin existed ${span} s after the first create was sent, which bounds any dispatcher" \
        "with the same budget to $bound Jobs/s (the hub: ${BOUND[-1]}x that);" \
        "CPU meanwhile: the hub $(python3 -c "print(f'{($cpu1 - $cpu0) / $(getconf CLK_TCK):.1f}')") s," \
        "the machine $(python3 -c "print(f'{($load1 - $load0) / $(getconf CLK_TCK):.1f}')") s of $(nproc) cores"
    echo "hub round $round: onprem's API server meanwhile, per Job (every client): $(apiserver_breakdown "$HUB_TMP/api0" "$HUB_TMP/api1" "$made")"
    # Deleting the origins makes the hub delete the mirrors and let go.
    kc onprem delete namespace "$hns" --wait=false >/dev/null
    for _ in $(seq 1 600); do
        kc onprem get namespace "$hns" >/dev/null 2>&1 || break
        sleep 1
    done
    kill -9 "$HUB_PID" 2>/dev/null || true
    wait "$HUB_PID" 2>/dev/null || true
    kc cloud-spot delete namespace "$hns" --wait=false >/dev/null 2>&1 || true
    rcli FLUSHDB >/dev/null
    "$SPILLCTL" cluster add onprem --kubeconfig "$KCD/onprem-cert.kubeconfig" --role onprem --region onprem \
        --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >/dev/null
    "$SPILLCTL" cluster add cloud-spot --kubeconfig "$KCD/cloud-spot-cert.kubeconfig" --role cloud --region us-east-1 \
        --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
    "$SPILLCTL" cluster add cloud-ondemand --kubeconfig "$KCD/cloud-ondemand-cert.kubeconfig" --role cloud --region us-west-2 \
        --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
c=$(median "${CEIL[@]}") r=$(median "${RATE[@]}")
echo
echo "hub dispatch, $N one-GPU $FORM Jobs at once, onprem -> cloud-spot, QPS 50 / burst 100 per cluster, median of $ROUNDS round(s):"
printf '  %-44s %s\n' "dispatch rate (Jobs/s)" "$r" \
    "ceiling: our REST client creating directly (Jobs/s)" "$c" \
    "ratio to the ceiling" "$(python3 -c "print(f'{$r / $c:.2f}x')")" \
    "ratio to the bound given when the origins appeared" "$(median "${BOUND[@]}")x" \
    "origin created -> mirror created p50 (s)" "$(median "${P50[@]}")" \
    "origin created -> mirror created p99 (s)" "$(median "${P99[@]}")" \
    "API requests per Job, onprem" "$(median "${REQ_O[@]}")" \
    "API requests per Job, cloud-spot" "$(median "${REQ_C[@]}")" \
    "hub peak RSS (MiB)" "$(median "${RSS[@]}")"
