#!/usr/bin/env bash
# bench.sh - what `make bench` runs: every benchmark program, then the
# evaluations that need data from outside the repository when it is there.
#
# The lab is brought up first (tests/testbed/testbed up; it stays up), as
# the clusters and replication benchmarks measure against its servers.
#
# Benchmark programs are the bench_* executables under BUILD/bench (one per
# module: add_executable(bench_MODULE ...) in bench/CMakeLists.txt is all it
# takes to be run here). Each is run BENCH_REPEAT times (default 3) so that
# the spread shows: the machine may be shared, and one run is one sample.
#
# Then, on the lab, the informer benchmark (bench/clusters/bench_informer.sh:
# spillway's cache against client-go's shared informers on 10,000 Jobs and
# 10,000 Pods, three alternating rounds) and the hub's dispatch benchmark
# (bench/hub/bench_hub.sh: 1,000 Jobs, three alternating rounds against its
# ceiling).
#
# Evaluations: bench/placement/alibaba-eval.sh on the Alibaba GPU 2023 pod
# list at ALIBABA_TRACE (default: ../shared/traces/alibaba-gpu-v2023/
# openb_pod_list_default.csv, beside the repository). Without the trace it
# prints a note naming the path and carries on; the evaluation script itself
# fails on a missing trace.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${BENCH_REPEAT:-3}
ALIBABA_TRACE=${ALIBABA_TRACE:-../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv}

# The clusters and replication benchmarks run against the lab.
if ! tests/testbed/testbed up >/dev/null; then
    echo "bench: the lab did not come up (tests/testbed/testbed up)" >&2
    exit 1
fi
eval "$(tests/testbed/testbed env)"

failed=0
mapfile -t benches < <(find "$BUILD/bench" -type f -name 'bench_*' -perm -u+x | sort)
if [ ${#benches[@]} -eq 0 ]; then
    echo "bench: no bench_* program in $BUILD/bench (run make build)" >&2
    exit 1
fi
for b in "${benches[@]}"; do
    for i in $(seq 1 "$REPEAT"); do
        printf '\n==== %s (run %d of %d) ====\n' "$(basename "$b")" "$i" "$REPEAT"
        "$b" || failed=1
    done
done

printf '\n==== informers against client-go (bench/clusters/bench_informer.sh) ====\n'
SW_BUILD_DIR="$PWD/$BUILD" SW_SOURCE_DIR="$PWD" BENCH_INFORMER_ROUNDS=${BENCH_INFORMER_ROUNDS:-3} \
    bench/clusters/bench_informer.sh || failed=1

printf '\n==== hub dispatch (bench/hub/bench_hub.sh) ====\n'
SW_BUILD_DIR="$PWD/$BUILD" SW_SOURCE_DIR="$PWD" BENCH_HUB_ROUNDS=${BENCH_HUB_ROUNDS:-3} \
    bench/hub/bench_hub.sh || failed=1

printf '\n==== Alibaba GPU 2023 evaluation ====\n'
if [ -r "$ALIBABA_TRACE" ]; then
    bench/placement/alibaba-eval.sh "$BUILD" "$ALIBABA_TRACE" || failed=1
else
    echo "bench: note: no Alibaba trace at $ALIBABA_TRACE; the evaluation is skipped."
    echo "bench: download the pod list there (or set ALIBABA_TRACE=PATH) to run it."
fi
exit $failed
