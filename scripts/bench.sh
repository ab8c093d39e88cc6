#!/usr/bin/env bash
# bench.sh [NAME...] - what `make bench` runs (`make bench BENCH="NAME..."`
# for some): the benchmarks by name, all of them when none is named.
#
#   placement    build/bench/bench_placement, BENCH_REPEAT times (default 3)
#                so that the spread shows; needs no lab
#   clusters     build/bench/clusters/bench_clusters_list, BENCH_REPEAT
#                times, on the lab
#   replication  build/bench/bench_replication, once: it alternates its own
#                rounds (BENCH_REPLICATION_ROUNDS, default 3) and reports
#                medians; on the lab
#   informer     bench/clusters/bench_informer.sh: spillway's cache against
#                client-go's shared informers on 10,000 Jobs and 10,000 Pods,
#                BENCH_INFORMER_ROUNDS alternating rounds (default 3); on the lab
#   hub          bench/hub/bench_hub.sh: 1,000 Jobs, BENCH_HUB_ROUNDS
#                alternating rounds (default 5), each side started once the
#                lab is idle, against its ceiling; on the lab
#   provision    bench/hub/bench_provision.sh: 100 Jobs burst at once to an
#                empty cloud in Karpenter mode (turned on and off inside the
#                hub lock); decided-to-running split into data, provisioning
#                and scheduling, predicted against observed node waits; on
#                the lab; not run when no name is given (BENCH=provision)
#   kueue        bench/kueue/bench_kueue.sh: 1,000 Jobs queued in Kueue on
#                onprem moved to the cloud by spillway and by Kueue's own
#                MultiKueue (AllAtOnce), alternating rounds at client QPS 50
#                and 300 (BENCH_KUEUE_JOBS, BENCH_KUEUE_ROUNDS, BENCH_KUEUE_QPS);
#                it restarts the lab's Kueue in its modes inside the hub lock
#                and puts them back; on the lab; not run when no name is
#                given (BENCH=kueue)
#   gate-memory  bench/replication/bench_gate_memory.sh: peak RSS and threads of
#                the data gate with ten Jobs naming a prefix of a million
#                objects, the tree before its pool and page-by-page merge
#                (cc367a1, cloned and built) against this one, and the peak
#                RSS of a replication run (the copy path) on that prefix, main
#                before its batch-by-batch planning (c9eed11) against this
#                one; on the lab; minutes; not run when no name is given
#                (BENCH=gate-memory)
#   alibaba      bench/placement/alibaba-eval.sh on the Alibaba GPU 2023 pod
#                list at ALIBABA_TRACE; needs no lab
#
# The lab (tests/testbed/testbed up; it stays up) is brought up only when a
# benchmark that needs it is to run and some part of it is down, after the
# benchmarks that need no lab: placement runs, and reports, whatever becomes
# of the lab.
#
# Inputs from outside the repository: the Alibaba pod list at ALIBABA_TRACE
# (default ../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv,
# beside the repository). When it was asked for, by naming `alibaba` or by
# setting ALIBABA_TRACE, a missing trace fails the run. Only when neither
# was done does a missing default trace mean a note and a skip.
#
# Exit status: 0 when every benchmark that ran succeeded, 1 otherwise (a
# benchmark's own failure, a missing program or input, the lab not coming
# up), 2 for an unknown name.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${BENCH_REPEAT:-3}
DEFAULT_TRACE=../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv
TRACE_ASKED=${ALIBABA_TRACE:+ALIBABA_TRACE}
ALIBABA_TRACE=${ALIBABA_TRACE:-$DEFAULT_TRACE}

ALL=(placement alibaba clusters replication informer hub)
# Named only: run when asked for (they switch the lab's modes: Karpenter,
# Kueue and MultiKueue; gate-memory builds the tree before and takes minutes).
EXTRA=(provision kueue gate-memory)
declare -A want=()
if [ $# -eq 0 ]; then
    for n in "${ALL[@]}"; do want[$n]=1; done
else
    for n in "$@"; do
        case " ${ALL[*]} ${EXTRA[*]} " in
        *" $n "*) want[$n]=1 ;;
        *)
            echo "bench: unknown benchmark \"$n\"; expected some of: ${ALL[*]} ${EXTRA[*]}" >&2
            exit 2
            ;;
        esac
    done
    [ -n "${want[alibaba]:-}" ] && TRACE_ASKED="${TRACE_ASKED:+$TRACE_ASKED and }the name alibaba"
fi

failed=0
fail() {
    echo "bench: $*" >&2
    failed=1
}

# A benchmark program this script does not know would never run: say so.
if [ $# -eq 0 ] && [ -d "$BUILD/bench" ]; then
    while read -r prog; do
        case "$(basename "$prog")" in
        bench_placement | bench_clusters_list | bench_replication | bench_gate_memory) ;;
        *) fail "$prog is not run by scripts/bench.sh: add it there" ;;
        esac
    done < <(find "$BUILD/bench" -type f -name 'bench_*' -perm -u+x)
fi

# Runs a benchmark program `times` times, after checking that it was built.
run_program() {
    local prog=$1 times=$2
    shift 2
    if [ ! -x "$prog" ]; then
        fail "no $prog (run make build)"
        return
    fi
    for i in $(seq 1 "$times"); do
        printf '\n==== %s (run %d of %d) ====\n' "$(basename "$prog")" "$i" "$times"
        "$prog" "$@" || fail "$(basename "$prog") failed (run $i)"
    done
}

# ---- what needs no lab ----------------------------------------------------

if [ -n "${want[placement]:-}" ]; then
    run_program "$BUILD/bench/bench_placement" "$REPEAT"
    # The same queue with time-sliced pools, shares of a GPU, MIG slices and
    # binding quotas.
    run_program "$BUILD/bench/bench_placement" 1 --whole-only --shares --mig
fi

if [ -n "${want[alibaba]:-}" ]; then
    printf '\n==== Alibaba GPU 2023 evaluation ====\n'
    if [ -r "$ALIBABA_TRACE" ]; then
        bench/placement/alibaba-eval.sh "$BUILD" "$ALIBABA_TRACE" || fail "the Alibaba evaluation failed"
    elif [ -n "$TRACE_ASKED" ]; then
        fail "no Alibaba trace at $ALIBABA_TRACE, asked for by $TRACE_ASKED"
    else
        echo "bench: note: no Alibaba trace at $ALIBABA_TRACE; the evaluation is skipped"
        echo "bench: (set ALIBABA_TRACE=PATH, or name alibaba, to make a missing trace a failure)"
    fi
fi

# ---- what runs on the lab -------------------------------------------------

if [ -n "${want[clusters]:-}${want[replication]:-}${want[informer]:-}${want[hub]:-}${want[provision]:-}${want[kueue]:-}${want[gate-memory]:-}" ]; then
    # A lab that is up is used as it is (up would seed its clusters again
    # under whoever else is using them).
    # The status read whole first: piped into grep under pipefail, a status
    # that ends non-zero (or is cut off by grep -q) failed the test, and a
    # lab that was down was never brought up (seen 2026-11-28).
    lab_status=$(tests/testbed/testbed status 2>/dev/null || true)
    if grep -qE ' (Down|NotReady) ' <<<"$lab_status" &&
        ! tests/testbed/testbed up >/dev/null; then
        fail "the lab did not come up (tests/testbed/testbed up)"
        exit 1
    fi
    eval "$(tests/testbed/testbed env)"

    if [ -n "${want[clusters]:-}" ]; then
        run_program "$BUILD/bench/clusters/bench_clusters_list" "$REPEAT"
    fi
    if [ -n "${want[replication]:-}" ]; then
        run_program "$BUILD/bench/bench_replication" 1 --rounds "${BENCH_REPLICATION_ROUNDS:-3}"
    fi
    if [ -n "${want[informer]:-}" ]; then
        printf '\n==== informers against client-go (bench/clusters/bench_informer.sh) ====\n'
        SW_BUILD_DIR="$PWD/$BUILD" SW_SOURCE_DIR="$PWD" BENCH_INFORMER_ROUNDS=${BENCH_INFORMER_ROUNDS:-3} \
            bench/clusters/bench_informer.sh || fail "the informer benchmark failed"
    fi
    if [ -n "${want[hub]:-}" ]; then
        printf '\n==== hub dispatch (bench/hub/bench_hub.sh) ====\n'
        SW_BUILD_DIR="$PWD/$BUILD" SW_SOURCE_DIR="$PWD" BENCH_HUB_ROUNDS=${BENCH_HUB_ROUNDS:-5} \
            bench/hub/bench_hub.sh || fail "the hub benchmark failed"
    fi
    if [ -n "${want[provision]:-}" ]; then
        printf '\n==== provisioning from zero (bench/hub/bench_provision.sh) ====\n'
        SW_BUILD_DIR="$PWD/$BUILD" SW_SOURCE_DIR="$PWD" \
            bench/hub/bench_provision.sh || fail "the provisioning benchmark failed"
    fi
    if [ -n "${want[gate-memory]:-}" ]; then
        printf '\n==== the data gate and a run on a million objects (bench/replication/bench_gate_memory.sh) ====\n'
        BUILD=$BUILD bench/replication/bench_gate_memory.sh || fail "the gate memory benchmark failed"
    fi
    if [ -n "${want[kueue]:-}" ]; then
        printf '\n==== spillway against MultiKueue (bench/kueue/bench_kueue.sh) ====\n'
        SW_BUILD_DIR="$PWD/$BUILD" SW_SOURCE_DIR="$PWD" \
            bench/kueue/bench_kueue.sh || fail "the Kueue benchmark failed"
    fi
fi
exit $failed
