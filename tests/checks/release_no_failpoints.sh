#!/usr/bin/env bash
# release_no_failpoints.sh - a release build carries no failpoint; a test
# build carries every one (issue 35, item 5; common/failpoint.h).
#
# The names are read from the code, not listed here: every point of
# SW_FAILPOINT_MAP in common/failpoint.h and every SPILLWAY_* variable
# common/failpoint.c reads. Then:
#
#   * the build under test (SW_BUILD_DIR), when it is a test build
#     (SW_FAILPOINTS=ON), has every name, every variable and the module's
#     symbols in its spillwayd: so this check can fail, and a point the
#     module knows but the binary lost is noticed;
#   * a release tree (SW_RELEASE_BUILD_DIR, default SW_BUILD_DIR/release-check,
#     configured with default options, so the default must be OFF) has
#     none of them, as a whole string or a symbol, in spillwayd or spillctl
#     (strings(1) and nm(1)). Only those two targets are built, and the tree
#     is kept: a second run recompiles what changed. When the build under
#     test is itself a release build, its own binaries are checked instead;
#   * deploy/Dockerfile's cmake does not turn the option on.
#
# Prints the time the release build took.
#
# With arguments, `release_no_failpoints.sh BINARY...` checks only those
# binaries (none of the names, variables or symbols above) and builds
# nothing: the image test (tests/e2e/deploy/image.sh) checks the image's
# own spillwayd and spillctl so.
set -euo pipefail
SRC=${SW_SOURCE_DIR:?SW_SOURCE_DIR is not set}
JOBS=${JOBS:-2}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

mapfile -t NAMES < <(sed -nE 's/^[[:space:]]*XX\([A-Z_]+, "([a-z0-9-]+)",.*/\1/p' "$SRC/common/failpoint.h")
mapfile -t VARS < <(grep -oE '"SPILLWAY_[A-Z0-9_]+"' "$SRC/common/failpoint.c" | tr -d '"' | sort -u)
# The map's lines and the variables the docs name: a change of format that
# made the extraction above find less would otherwise pass unnoticed.
[ "${#NAMES[@]}" -eq "$(grep -cE '^[[:space:]]*XX\(' "$SRC/common/failpoint.h")" ] ||
    fail "read ${#NAMES[@]} names from common/failpoint.h, which has $(grep -cE '^[[:space:]]*XX\(' "$SRC/common/failpoint.h") XX( lines"
[ "${#NAMES[@]}" -ge 10 ] || fail "only ${#NAMES[@]} failpoint names read from common/failpoint.h"
for v in SPILLWAY_CRASH_AT SPILLWAY_TEST_HOLD; do
    printf '%s\n' "${VARS[@]}" | grep -qx "$v" || fail "common/failpoint.c does not read $v"
done

# found BINARY: prints each name (a whole string), variable (within a
# string) and failpoint symbol the binary has, one a line.
found() {
    local strs n v
    strs=$(strings -a -n 3 "$1")
    for n in "${NAMES[@]}"; do
        grep -qxF -- "$n" <<<"$strs" && echo "name $n"
    done
    for v in "${VARS[@]}"; do
        grep -qF -- "$v" <<<"$strs" && echo "variable $v"
    done
    nm -a "$1" 2>/dev/null | grep -oE '\bsw__failpoint_[a-z_]+' | sort -u | sed 's/^/symbol /'
    return 0
}

if [ $# -gt 0 ]; then
    for b in "$@"; do
        [ -s "$b" ] || fail "$b is missing or empty"
        leak=$(found "$b")
        [ -z "$leak" ] || fail "$b carries failpoints: $(tr '\n' ' ' <<<"$leak")"
        echo "$b: none of ${#NAMES[@]} failpoint names, ${#VARS[@]} variables, no failpoint symbol"
    done
    exit 0
fi

BUILD=${SW_BUILD_DIR:?SW_BUILD_DIR is not set}
REL=${SW_RELEASE_BUILD_DIR:-$BUILD/release-check}
cached() { sed -nE "s/^$1:[A-Z]+=(.*)/\\1/p" "$2/CMakeCache.txt"; }

test_build=$(cached SW_FAILPOINTS "$BUILD")
if [ "$test_build" = ON ]; then
    have=$(found "$BUILD/controller/spillwayd")
    want=$((${#NAMES[@]} + ${#VARS[@]}))
    [ "$(grep -cE '^(name|variable) ' <<<"$have")" -eq "$want" ] ||
        fail "the test build's spillwayd lacks failpoints: has $(grep -cE '^(name|variable) ' <<<"$have") of $want names and variables: $(tr '\n' ' ' <<<"$have")"
    grep -q '^symbol sw__failpoint_crash$' <<<"$have" || fail "the test build's spillwayd has no sw__failpoint_crash"
    echo "test build $BUILD: spillwayd has all ${#NAMES[@]} failpoint names, ${#VARS[@]} variables and the module's symbols"

    t0=$(date +%s%N)
    # Default options, as a plain `cmake -S . -B x` (the Dockerfile adds
    # only the build type, the default, and warnings as errors).
    cmake -S "$SRC" -B "$REL" -G Ninja -DSW_WERROR=ON >/dev/null
    [ "$(cached SW_FAILPOINTS "$REL")" = OFF ] ||
        fail "SW_FAILPOINTS defaults to '$(cached SW_FAILPOINTS "$REL")' in $REL, not OFF"
    cmake --build "$REL" -j "$JOBS" --target spillwayd spillctl >"$REL/release-check.log" 2>&1 ||
        { tail -30 "$REL/release-check.log" >&2; fail "the release build failed"; }
    ms=$((($(date +%s%N) - t0) / 1000000))
    printf 'release build %s (spillwayd, spillctl): %d.%03d s\n' "$REL" $((ms / 1000)) $((ms % 1000))
    bins=("$REL/controller/spillwayd" "$REL/controller/spillctl")
else
    echo "$BUILD is a release build (SW_FAILPOINTS=${test_build:-unset}): checking its own binaries"
    bins=("$BUILD/controller/spillwayd" "$BUILD/controller/spillctl")
fi
for b in "${bins[@]}"; do
    [ -s "$b" ] || fail "$b is missing"
    leak=$(found "$b")
    [ -z "$leak" ] || fail "the release build's $(basename "$b") carries failpoints: $(tr '\n' ' ' <<<"$leak")"
    echo "release $(basename "$b"): none of ${#NAMES[@]} names, ${#VARS[@]} variables, no failpoint symbol"
done

# The image's build: no failpoints turned on.
! grep -Eq 'SW_FAILPOINTS(=|:BOOL=)(ON|1|TRUE|YES)' "$SRC/deploy/Dockerfile" ||
    fail "deploy/Dockerfile turns SW_FAILPOINTS on"
grep -Eq 'cmake -S \. -B build' "$SRC/deploy/Dockerfile" || fail "deploy/Dockerfile has no cmake configure line to check"
echo "deploy/Dockerfile: configures without failpoints"
