#!/usr/bin/env bash
# test-all.sh - what `make test` runs: every suite, in order, with a count
# of passed and failed tests per suite and a closing total.
#
#   unit        cmocka unit tests (no servers), warnings as errors
#   unit-asan   the same tests built with AddressSanitizer + UBSan
#
# Both builds are test builds (-DSW_FAILPOINTS=ON: the crash and hold
# points the end-to-end tests arm, common/failpoint.h).
#   e2e         end-to-end tests against the lab (tests/testbed)
#
# The lab is brought up if it is not running, cleared of what earlier runs
# left (testbed clean), and taken down again at the end if this script
# started it (SW_KEEP_LAB=1 keeps it).
#
# The end-to-end suite spends most of its time waiting on the lab, so the
# sanitizer build and its tests and the fuzz targets run beside it, at the
# lowest CPU priority (nice 19: the lab's servers come first), their output
# kept and printed after the end-to-end suite's (SW_TEST_SERIAL=1 runs every
# suite one after the other instead). Within the end-to-end suite, tests
# run two at a time, each holding the CTest resource locks it names
# (LOCKS: lab, servers, s3; tests/CMakeLists.txt), so that two tests that
# disturb each other never run at once.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
BUILD=${BUILD:-build}
BUILD_ASAN=${BUILD_ASAN:-build-asan}

declare -a SUITES=()
declare -A PASSED FAILED
total_pass=0
total_fail=0

# run_ctest SUITE BUILD_DIR LABEL: runs ctest and records its counts.
run_ctest() {
    local suite=$1 dir=$2 label=$3 out
    shift 3
    out=$(mktemp)
    ctest --test-dir "$dir" -L "$label" --output-on-failure "$@" 2>&1 | tee "$out"
    local line total failed
    line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$out" | tail -1)
    if [ -z "$line" ]; then
        total=0 failed=1
        echo "test-all: suite $suite ran no test" >&2
    else
        failed=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
        total=$(echo "$line" | sed -E 's/.* failed out of ([0-9]+).*/\1/')
    fi
    rm -f "$out"
    record "$suite" $((total - failed)) "$failed"
}

record() {
    SUITES+=("$1")
    PASSED[$1]=$2
    FAILED[$1]=$3
    total_pass=$((total_pass + $2))
    total_fail=$((total_fail + $3))
}

step() { printf '\n==== %s ====\n' "$*"; }

t0=$SECONDS
step "build (warnings are errors)"
if cmake -S . -B "$BUILD" -G Ninja -DSW_WERROR=ON -DSW_FAILPOINTS=ON >/dev/null && cmake --build "$BUILD" -j "$JOBS"; then
    step "unit tests"
    run_ctest unit "$BUILD" unit -j "$JOBS"
else
    record build 0 1
fi

# The sanitizer and fuzz suites (a subshell: its counts come back as
# "record SUITE PASSED FAILED" lines in $side_counts).
side_suites() {
    step "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
    if cmake -S . -B "$BUILD_ASAN" -G Ninja -DSW_WERROR=ON -DSW_SANITIZE=ON -DSW_FAILPOINTS=ON >/dev/null &&
        cmake --build "$BUILD_ASAN" -j "$JOBS"; then
        run_ctest unit-asan "$BUILD_ASAN" unit -j "$JOBS"
    else
        record build-asan 0 1
    fi
    if [ -x tests/fuzz/run.sh ]; then
        step "fuzz targets (bounded)"
        fuzz_out=$(mktemp)
        tests/fuzz/run.sh "${SW_FUZZ_SECONDS:-120}" 2>&1 | tee "$fuzz_out"
        fuzz_rc=${PIPESTATUS[0]}
        fuzz_ok=$(grep -cE '^fuzz_[A-Za-z0-9_]+ +ok ' "$fuzz_out")
        fuzz_bad=$(grep -cE '^fuzz_[A-Za-z0-9_]+ +FAILED ' "$fuzz_out")
        # A failure before any target ran (the build) counts as one.
        [ "$fuzz_rc" -ne 0 ] && [ "$fuzz_bad" -eq 0 ] && fuzz_bad=1
        rm -f "$fuzz_out"
        record fuzz "$fuzz_ok" "$fuzz_bad"
    fi
    for s in "${SUITES[@]}"; do
        echo "record $s ${PASSED[$s]} ${FAILED[$s]}" >>"$side_counts"
    done
}
side_log=$(mktemp)
side_counts=$(mktemp)
if [ "${SW_TEST_SERIAL:-0}" = 1 ]; then
    (SUITES=() && side_suites)
else
    step "sanitizer and fuzz suites started beside the lab's (nice 19; their output follows the end-to-end suite's)"
    (
        renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || true
        SUITES=() && side_suites
    ) >"$side_log" 2>&1 &
    side_pid=$!
fi

step "lab"
lab_started=0
# (Read the whole status first: grep -q closing the pipe early would make
# the pipeline fail under pipefail.)
lab_status=$(tests/testbed/testbed status 2>/dev/null || true)
if ! echo "$lab_status" | grep -q '^onprem .*Ready'; then
    lab_started=1
fi
if tests/testbed/testbed up; then
    eval "$(tests/testbed/testbed env)"
    # The suite runs in the lab's default mode: Kueue on (`testbed up`
    # brings it), Karpenter off; the Karpenter tests turn it on themselves
    # (a demo run with SW_DEMO_KEEP_MODES=1 leaves it on).
    if [ -f "$SW_LAB_DIR/karpenter/on" ]; then
        echo "test-all: turning the lab's karpenter mode off first"
        tests/testbed/testbed karpenter down >/dev/null || record "lab-karpenter-down" 0 1
    fi
    # The lab's etcd and Redis outlive every run: a test or benchmark
    # stopped midway (or the demo) leaves Jobs and namespaces behind, and
    # the suite is sized for an empty lab.
    # (SW_LAB_CLEANED: the hub tests skip their own look for what the
    # demo left, tests/e2e/hub/lib.sh.)
    if tests/testbed/testbed clean; then
        export SW_LAB_CLEANED=1
    else
        record lab-clean 0 1
    fi
    step "end-to-end tests on the lab"
    run_ctest e2e "$BUILD" e2e -j "$JOBS"
    unset SW_LAB_CLEANED
else
    echo "test-all: the lab did not come up; see its logs" >&2
    record lab 0 1
fi
if [ $lab_started = 1 ] && [ "${SW_KEEP_LAB:-0}" != 1 ]; then
    tests/testbed/testbed down || record lab-down 0 1
fi

if [ -n "${side_pid:-}" ]; then
    wait "$side_pid"
    cat "$side_log"
fi
while read -r _ s p f; do record "$s" "$p" "$f"; done <"$side_counts"
# A side run that ended before recording anything counts as one failure.
[ -s "$side_counts" ] || record side-suites 0 1
rm -f "$side_log" "$side_counts"

step "summary ($((SECONDS - t0))s)"
for s in "${SUITES[@]}"; do
    printf '%-10s %4d passed, %d failed\n' "$s:" "${PASSED[$s]}" "${FAILED[$s]}"
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
