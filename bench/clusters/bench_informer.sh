#!/usr/bin/env bash
# bench_informer.sh - spillway's informer cache against client-go's shared
# informers, on the same lab API server in the same run (make bench).
#
# Load: BENCH_INFORMER_JOBS suspended Jobs (default 10,000, in namespace
# spillway-bench-informer, spec.managedBy another controller) and
# BENCH_INFORMER_PODS one-GPU Pods (default 10,000, held Pending by a
# scheduling gate, in spillway-bench-informer-pods) on
# BENCH_INFORMER_CLUSTER (default cloud-ondemand), plus that cluster's
# nodes. So loaded, the cluster's controllers stay idle during the rounds
# (informer_side.c says why). The lab's hub-test lock is held from before
# the load is created until its namespaces are gone, so no hub end-to-end
# test runs against the loaded lab.
#
# Sides, each a fresh process per round, on the same kubeconfig:
#   spillway         build/bench/clusters/informer_side measure: the hub's
#                    cache (clusters/cache.h), QPS 50, burst 100
#   client-go        tests/testbed/kube/cmd/informer-peer: a
#                    SharedInformerFactory (client-go v0.34.4, resync 0) on
#                    Jobs, Pods (non-terminal) and Nodes, managedFields
#                    stripped, QPS 50, burst 100, JSON
#   client-go/proto  the same asking for protobuf, as kube-controller-manager
#                    does
# Each side measures itself: time from loading the kubeconfig to synced,
# heap in use after sync per cached object (spillway: glibc mallinfo2 after
# malloc_trim; client-go: runtime.ReadMemStats HeapAlloc and HeapInuse after
# runtime.GC(), baseline subtracted), RSS after sync. One warm-up round is
# not counted; then BENCH_INFORMER_ROUNDS rounds (default 3), the sides'
# order rotating each round. Prints every round, then the median and the
# spread (min-max) of each figure and the ratios of the medians.
#
# Then the hub's shape: one process with a cache per lab cluster, after
# Node objects are added to the loaded cluster so that the clusters hold
# BENCH_INFORMER_HUB_NODES (default 1,000) in all; the added Nodes are
# cordoned, tainted and not run by kwok (NotReady, counted by no pool) and
# deleted before the script ends.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${SW_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
BUILD=${SW_BUILD_DIR:-$SRC/build}
CLUSTER=${BENCH_INFORMER_CLUSTER:-cloud-ondemand}
JOBS=${BENCH_INFORMER_JOBS:-10000}
PODS=${BENCH_INFORMER_PODS:-10000}
ROUNDS=${BENCH_INFORMER_ROUNDS:-3}
# Nodes added for the hub's shape only, so that the three clusters hold
# 1,000 Nodes in all with the lab's own (see load-nodes in informer_side.c).
HUB_NODES=${BENCH_INFORMER_HUB_NODES:-1000}
NS=spillway-bench-informer
SIDE=$BUILD/bench/clusters/informer_side
PEER=$BUILD/bench/clusters/informer-peer

die() {
    echo "bench_informer: $*" >&2
    exit 1
}
[ -x "$SIDE" ] || die "no $SIDE (run make build)"
if [ -z "${SW_LAB_DIR:-}" ] || [ -z "${SW_LAB_KUBECONFIG_DIR:-}" ]; then
    eval "$("$SRC/tests/testbed/testbed" env)"
fi
KC=$SW_LAB_KUBECONFIG_DIR/$CLUSTER-cert.kubeconfig
[ -r "$KC" ] || die "no kubeconfig $KC (is the lab up? tests/testbed/testbed up)"

# The peer, built from the lab's Go module (client-go pinned with the lab's
# Kubernetes); one package at a time on the shared machine.
command -v go >/dev/null || die "go is not installed (scripts/install-deps.sh)"
(cd "$SRC/tests/testbed/kube" && CGO_ENABLED=0 go build -p 1 -trimpath -o "$PEER" ./cmd/informer-peer) ||
    die "building the client-go peer failed"

# No hub test on the lab while the load exists (tests/e2e/hub/lib.sh).
exec 8>"$SW_LAB_DIR/hub-e2e.lock"
if ! flock -n 8; then
    echo "bench_informer: waiting for the lab's hub-test lock ($SW_LAB_DIR/hub-e2e.lock)" >&2
    flock -w 1800 8 || die "the hub-test lock was held for 30 minutes"
fi
trap '"$SIDE" unload "$KC" "$NS" || true' EXIT
"$SIDE" load "$KC" "$NS" "$JOBS" "$PODS" || die "creating the load failed"

run_side() {
    case "$1" in
    spillway) "$SIDE" measure "$KC" ;;
    client-go) "$PEER" -kubeconfig "$KC" ;;
    client-go/proto) "$PEER" -kubeconfig "$KC" -protobuf ;;
    esac
}
SIDES=(spillway client-go client-go/proto)
OUT=$(mktemp)
EXTRA_NODES=0
trap '"$SIDE" unload "$KC" "$NS" || true; "$SIDE" unload-nodes "$KC" "$EXTRA_NODES" || true; rm -f "$OUT"' EXIT
for s in "${SIDES[@]}"; do run_side "$s" >/dev/null || die "warm-up of $s failed"; done
for r in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2; do
        s=${SIDES[$(((k + r - 1) % 3))]}
        line=$(run_side "$s") || die "round $r: $s failed"
        echo "round $r $s: $line"
        echo "$r $s $line" >>"$OUT"
    done
done

# The hub's shape: one cache per lab cluster in one process (the load is
# on one of them), for the hub's RSS; Node objects added to the loaded
# cluster so that the clusters hold HUB_NODES in all.
HUB_KCS=()
lab_nodes=0
for c in $SW_LAB_CLUSTERS; do
    HUB_KCS+=("$SW_LAB_KUBECONFIG_DIR/$c-cert.kubeconfig")
    n=$("$SW_LAB_KUBECTL" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/$c-cert.kubeconfig" get nodes \
        -l 'spillway.io/bench!=informer' -o name | wc -l) || die "counting $c's nodes failed"
    lab_nodes=$((lab_nodes + n))
done
EXTRA_NODES=$((HUB_NODES > lab_nodes ? HUB_NODES - lab_nodes : 0))
"$SIDE" load-nodes "$KC" "$EXTRA_NODES" || die "creating $EXTRA_NODES Nodes failed"
hub_line=$("$SIDE" measure-hub "${HUB_KCS[@]}") || die "measure-hub failed"
echo "hub: $hub_line (the lab's $lab_nodes Nodes and $EXTRA_NODES added)"
"$SIDE" unload-nodes "$KC" "$EXTRA_NODES" || die "deleting the added Nodes failed"
EXTRA_NODES=0

load=$(cut -d' ' -f1 /proc/loadavg)
version=$("$SW_LAB_KUBECTL" --kubeconfig "$KC" version -o json 2>/dev/null |
    sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' | tail -1)
echo
echo "cluster $CLUSTER (kube-apiserver $version on loopback), $JOBS Jobs + $PODS Pods + its nodes," \
    "same server, same run, $ROUNDS rounds alternating after a warm-up, load average $load"
awk -v rounds="$ROUNDS" '
function field(name,   i, kv) {
    for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
    return ""
}
function median(s, n,   a, i, j, t) {
    for (i = 1; i <= n; i++) a[i] = v[s, i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo = a[1]; hi = a[n]
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    s = $2; n[s]++
    synced[s, n[s]] = field("synced_s"); heap[s, n[s]] = field("heap_inuse_per_obj")
    alloc[s, n[s]] = field("heap_alloc_per_obj"); rss[s, n[s]] = field("rss_mib")
    objs[s] = field("jobs") + field("pods") + field("nodes")
    cached[s] = field("jobs") " Jobs, " field("pods") " Pods, " field("nodes") " Nodes"
}
function stat(arr, s, fmt,   i) {
    delete v
    for (i = 1; i <= n[s]; i++) v[s, i] = arr[s, i]
    m = median(s, n[s])
    return sprintf(fmt " (" fmt "-" fmt ")", m, lo, hi)
}
END {
    printf "%-16s %-22s %-26s %-26s %-22s\n", "side", "synced s", "heap B/object", "Go HeapInuse B/object", "RSS MiB"
    split("spillway client-go client-go/proto", order, " ")
    for (k = 1; k <= 3; k++) {
        s = order[k]
        hs = stat(heap, s, "%.0f"); hm[s] = m
        if (s == "spillway") { ins = "-" } else { hs = stat(alloc, s, "%.0f"); hm[s] = m; ins = stat(heap, s, "%.0f") }
        ss = stat(synced, s, "%.3f"); sm[s] = m
        rs = stat(rss, s, "%.1f"); rm[s] = m
        printf "%-16s %-22s %-26s %-26s %-22s\n", s, ss, hs, ins, rs
    }
    printf "median (min-max) of %d rounds; heap: spillway glibc in use, client-go HeapAlloc after GC\n", rounds
    for (k = 2; k <= 3; k++) {
        s = order[k]
        printf "spillway / %-15s time to synced %.2fx, heap per object %.2fx, RSS %.2fx (above 1: spillway worse)\n", s,
            sm["spillway"] / sm[s], hm["spillway"] / hm[s], rm["spillway"] / rm[s]
    }
    for (k = 1; k <= 3; k++) printf "cached by %s: %s\n", order[k], cached[order[k]]
}' "$OUT"
