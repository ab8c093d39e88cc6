#!/usr/bin/env bash
# run.sh SECONDS - builds the libFuzzer targets with clang and runs each.
#
# Configures and builds BUILD_FUZZ (default build-fuzz) with -DSW_FUZZ=ON,
# finds every fuzz_* program under BUILD_FUZZ/tests/fuzz, and runs each for
# SECONDS divided among the targets (at least 5 s each) on a copy of its
# seed corpus (tests/fuzz/corpus/NAME), with its dictionary when there is
# one (tests/fuzz/NAME.dict), in a temporary directory: the inputs the
# fuzzer finds are never written into the repository. Prints
# the executions per target; exits non-zero if any target crashes, leaks,
# times out or fails to build. A crashing input is kept in
# BUILD_FUZZ/fuzz-artifacts/NAME/ and named in the output.
#
#   tests/fuzz/run.sh 60          # about a minute for all targets
#   FUZZ_ONLY=fuzz_clusters tests/fuzz/run.sh 60
set -uo pipefail
cd "$(dirname "$0")/../.."

total=${1:-30}
BUILD_FUZZ=${BUILD_FUZZ:-build-fuzz}
JOBS=${JOBS:-2}
if ! [[ $total =~ ^[0-9]+$ ]]; then
    echo "usage: tests/fuzz/run.sh SECONDS" >&2
    exit 2
fi
if ! command -v clang >/dev/null; then
    echo "fuzz: clang is not installed (libFuzzer comes with it)" >&2
    exit 1
fi

echo "fuzz: building $BUILD_FUZZ with clang, -fsanitize=fuzzer,address,undefined"
if ! CC=clang cmake -S . -B "$BUILD_FUZZ" -G Ninja -DSW_FUZZ=ON -DSW_WERROR=ON >/dev/null ||
    ! cmake --build "$BUILD_FUZZ" -j "$JOBS" --target sw_fuzz >"$BUILD_FUZZ/fuzz-build.log" 2>&1; then
    tail -40 "$BUILD_FUZZ/fuzz-build.log" 2>/dev/null
    echo "fuzz: build failed" >&2
    exit 1
fi

mapfile -t targets < <(find "$BUILD_FUZZ/tests/fuzz" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x |
    grep -E "/${FUZZ_ONLY:-fuzz_[A-Za-z0-9_]+}\$" | sort)
if [ ${#targets[@]} -eq 0 ]; then
    echo "fuzz: no fuzz_* program in $BUILD_FUZZ/tests/fuzz" >&2
    exit 1
fi
per=$((total / ${#targets[@]}))
[ "$per" -lt 5 ] && per=5

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for t in "${targets[@]}"; do
    name=$(basename "$t")
    work="$tmp/$name"
    mkdir -p "$work/corpus" "$work/artifacts"
    if [ -d "tests/fuzz/corpus/$name" ]; then
        cp -R "tests/fuzz/corpus/$name/." "$work/corpus/"
    else
        echo "fuzz: $name has no seed corpus in tests/fuzz/corpus/$name" >&2
    fi
    seeds=$(find "$work/corpus" -type f | wc -l)
    # tests/fuzz/NAME.dict (optional): the format's words, for libFuzzer.
    dict=()
    [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
    # -timeout: one input taking 10 s is a hang, reported like a crash.
    "$t" -max_total_time="$per" -timeout=10 -print_final_stats=1 "${dict[@]}" \
        -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1
    rc=$?
    execs=$(awk '/^stat::number_of_executed_units:/ {print $2}' "$work/log" | tail -1)
    found=$(find "$work/corpus" -type f | wc -l)
    if [ $rc -eq 0 ]; then
        printf '%-22s ok      %10s executions in %ss (corpus %d -> %d inputs)\n' \
            "$name" "${execs:-?}" "$per" "$seeds" "$found"
    else
        failed=1
        keep="$BUILD_FUZZ/fuzz-artifacts/$name"
        mkdir -p "$keep"
        cp "$work/artifacts/"* "$keep/" 2>/dev/null
        printf '%-22s FAILED  %10s executions (exit %d)\n' "$name" "${execs:-?}" "$rc"
        grep -E 'ERROR: |broken promise|SUMMARY|runtime error|Test unit written' "$work/log" | head -10
        echo "fuzz: $name: inputs kept in $keep; the log ends:"
        tail -25 "$work/log"
    fi
done
[ $failed -eq 0 ] && echo "fuzz: no target crashed" || echo "fuzz: a target failed" >&2
exit $failed
