#!/usr/bin/env bash
# bench_hub_vs.sh BASELINE_TREE - the hub benchmark of this tree side by side
# with another tree's, in one run on the same lab: rounds alternate (this
# tree, then the baseline) BENCH_VS_ROUNDS times (default 3), each round
# being one run of that tree's own bench/hub/bench_hub.sh (its own hub, its
# own ceiling round, each side started once the lab is idle as bench_hub.sh
# waits for it). BASELINE_TREE is a checkout with its build in
# BASELINE_TREE/build (for example: git worktree add --detach ../base COMMIT,
# then cmake -S ../base -B ../base/build -G Ninja && cmake --build
# ../base/build --target spillwayd spillctl hub_load).
#
# Printed: each round's rate, ratio to its own ceiling and requests per Job,
# then the medians of both sides and the ratio of this tree's median rate to
# the baseline's. The 1-minute load average at each round's start is shown,
# so a busy machine is visible in the figures.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
if [ $# -ne 1 ] || [ ! -x "$1/bench/hub/bench_hub.sh" ] || [ ! -x "$1/build/controller/spillwayd" ]; then
    echo "usage: $0 BASELINE_TREE (a checkout holding bench/hub/bench_hub.sh and build/controller/spillwayd)" >&2
    exit 2
fi
BASE=$(cd "$1" && pwd)
ROUNDS=${BENCH_VS_ROUNDS:-3}
[ -x "$SRC/build/controller/spillwayd" ] || { echo "$0: build this tree first (make build)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# run SIDE TREE ROUND: one run of TREE's benchmark; its summary kept.
run() {
    local side=$1 tree=$2 round=$3 log="$OUT/$1.$3"
    echo "round $round, $side ($(git -C "$tree" rev-parse --short HEAD)), load $(cut -d' ' -f1 /proc/loadavg):"
    if ! SW_SOURCE_DIR=$tree SW_BUILD_DIR=$tree/build BENCH_HUB_ROUNDS=1 \
        "$tree/bench/hub/bench_hub.sh" >"$log" 2>&1; then
        tail -20 "$log" >&2
        echo "$0: the $side benchmark failed (round $round)" >&2
        exit 1
    fi
    grep -E '^hub round|^ceiling round' "$log" | sed 's/^/  /'
}
field() { # field LOG LABEL: the value printed after LABEL in LOG's summary
    awk -v l="$2" 'index($0, l) { print $NF }' "$1" | tail -1 | tr -d x
}
for r in $(seq 1 "$ROUNDS"); do
    run this "$SRC" "$r"
    run baseline "$BASE" "$r"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
summary() { # summary SIDE LABEL: the median over rounds of LABEL's value
    local v=() r
    for r in $(seq 1 "$ROUNDS"); do v+=("$(field "$OUT/$1.$r" "$2")"); done
    median "${v[@]}"
}
echo
echo "hub dispatch, this tree ($(git -C "$SRC" rev-parse --short HEAD)) against the baseline ($(git -C "$BASE" rev-parse --short HEAD)), median of $ROUNDS alternating rounds:"
printf '  %-40s %12s %12s\n' "" this baseline
for label in "dispatch rate (Jobs/s)" "ratio to the ceiling" "ceiling: our REST client creating directly (Jobs/s)" \
    "origin created -> mirror created p50 (s)" "origin created -> mirror created p99 (s)" \
    "API requests per Job, onprem" "API requests per Job, cloud-spot" "hub peak RSS (MiB)"; do
    printf '  %-40s %12s %12s\n' "${label:0:40}" "$(summary this "$label")" "$(summary baseline "$label")"
done
a=$(summary this "dispatch rate (Jobs/s)") b=$(summary baseline "dispatch rate (Jobs/s)")
echo "  this tree's rate / the baseline's: $(python3 -c "print(f'{$a / $b:.2f}x')")"
