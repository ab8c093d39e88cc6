#!/usr/bin/env bash
# bench_gate_memory.sh - peak memory and threads of the data gate with ten
# gated Jobs naming a prefix of a million objects, before and after the
# gate's shared pool and page-by-page listing merge, side by side in one run
# (`make bench BENCH=gate-memory`, on the lab).
#
# The prefix is filled fast and honestly: the lab's S3 server (versitygw's
# posix backend) keeps an object as a file under its bucket's directory, so
# the objects are created as files there: 1,000 directories of 1,000, keys
# bench-gate-PID/DDD/FFFF, one byte each: the first of each directory
# written, the other 999 hard links to it (a million files written took the
# lab's disk half an hour; links take a couple of minutes). A listing through the server first checks
# that it answers them (a 1,000-object sub-prefix, counted). The ten Jobs
# share that one prefix.
#
# The same driver (bench_gate_memory.c: one sw_gate_estimate per Job, as
# the hub's data step makes them, and its own /proc/self/status) is built
# against the tree before (BENCH_GATE_BASE_COMMIT, default cc367a1, cloned
# and built in a temporary directory unless BENCH_GATE_BASE names a built
# tree) and against this one. Each side runs for at most BENCH_GATE_SECONDS
# (default 150): a listing of a million objects through the lab's server
# takes minutes, so a side stopped there reports what it held by then
# (done=N of 10). Everything it creates is removed at the end.
#
# The copy path is measured the same way (bench_copy_memory.c: one
# sw_repl_run_once, as a Job's copy, an outputs round or a rule's run makes
# it): its driver is built against BENCH_COPY_BASE_COMMIT (default
# c9eed11, main before the copy path was planned batch by batch; or
# BENCH_COPY_BASE, a built tree) and this tree. The rule copies the prefix
# to a second prefix on the same server, filled the same way with every
# directory but the first (DDD 000): the journal (the lab's Redis) holds
# the record of a verified copy of every object, as an earlier run would
# have left it, so a run skips what the target lists from the journal and
# copies, verifies and records the missing 1,000 objects; those are
# removed after each side. Each side runs for at most BENCH_COPY_SECONDS
# (default 900).
#
#   BENCH_GATE_OBJECTS   objects in the prefix (default 1000000)
#   BENCH_GATE_JOBS      Jobs (default 10)
#   BENCH_GATE_PARTS     what is measured: "estimate copy" (default), or either
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OBJECTS=${BENCH_GATE_OBJECTS:-1000000}
JOBS=${BENCH_GATE_JOBS:-10}
SECONDS_MAX=${BENCH_GATE_SECONDS:-150}
BASE_COMMIT=${BENCH_GATE_BASE_COMMIT:-cc367a1}
COPY_BASE_COMMIT=${BENCH_COPY_BASE_COMMIT:-c9eed11}
COPY_SECONDS=${BENCH_COPY_SECONDS:-900}
PARTS=${BENCH_GATE_PARTS:-estimate copy}
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
eval "$(tests/testbed/testbed env)"
LAB_DIR=${SW_LAB_DIR:?the lab is not up}
DATA="$LAB_DIR/s3/onprem/data/datasets"
[ -d "$DATA" ] || { echo "bench_gate_memory: no $DATA (is the lab up?)" >&2; exit 1; }
PREFIX="bench-gate-$$"
TMP=$(mktemp -d)
DST="$PREFIX-dst"
copy=$BUILD/bench/bench_copy_memory
cleanup() {
    rm -rf "${DATA:?}/$PREFIX" "${DATA:?}/$DST" "$TMP"
    if has_part copy && [ -x "$copy" ]; then
        "$copy" clean "$PREFIX-before" || true
        "$copy" clean "$PREFIX-after" || true
    fi
}
trap cleanup EXIT

after="$BUILD/bench/bench_gate_memory"
[ -x "$after" ] || { echo "bench_gate_memory: $after is not built" >&2; exit 1; }

# A tree before: cloned at its commit and built (only what the drivers
# link), unless given; then a driver built against it.
build_base() { # COMMIT GIVEN DIR
    local base=$2
    if [ -z "$base" ]; then
        base="$TMP/$3"
        echo "building $1 in a temporary clone (a few minutes)" >&2
        git clone -q . "$base"
        git -C "$base" checkout -q "$1"
        cmake -S "$base" -B "$base/build" -G Ninja >/dev/null
        cmake --build "$base/build" -j 2 --target sw_replication sw_store >/dev/null
    fi
    echo "$base"
}
driver() { # BASE SOURCE OUT
    local b="$1/build"
    cc -std=c11 -D_GNU_SOURCE -O2 -I"$1" -isystem /usr/include/hiredis "$2" -o "$3" \
        "$b/replication/libsw_replication.a" "$b/store/libsw_store.a" "$b/net/libsw_net.a" \
        "$b/common/libsw_common.a" -lhiredis -lyaml -luv -lcurl -lxml2 -lssl -lcrypto -lcjson \
        -lm -lpthread
}
if has_part estimate; then
    base=$(build_base "$BASE_COMMIT" "${BENCH_GATE_BASE:-}" base)
    driver "$base" bench/replication/bench_gate_memory.c "$TMP/before"
fi
if has_part copy; then
    [ -x "$copy" ] || { echo "bench_gate_memory: $copy is not built" >&2; exit 1; }
    cbase=$(build_base "$COPY_BASE_COMMIT" "${BENCH_COPY_BASE:-}" copy-base)
    driver "$cbase" bench/replication/bench_copy_memory.c "$TMP/copy-before"
fi

echo "filling s3://datasets/$PREFIX/ on onprem with $OBJECTS objects (files under the server's bucket directory)"
t0=$(date +%s)
python3 - "$DATA/$PREFIX" "$OBJECTS" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = f"{root}/{i // 1000:03d}"
    if i % 1000 == 0:
        os.makedirs(d)
        first = f"{d}/0000"
        with open(first, "wb") as f:
            f.write(b"x")
    else:
        os.link(first, f"{d}/{i % 1000:04d}")
EOF
echo "filled in $(( $(date +%s) - t0 )) s"
# The server lists what was created so: one 1,000-object directory, counted.
check=$("$after" datasets "$PREFIX/000/" 1 60) || { echo "listing check failed: $check" >&2; exit 1; }
echo "$check" | grep -q "objects_per_job=1000 " ||
    { echo "bench_gate_memory: the server did not list the files created: $check" >&2; exit 1; }
echo "the server lists them: $check"

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
mib() { echo "$(field "$1" peak_rss_kib) / 1024" | bc -l; }
run() {
    "$1" datasets "$PREFIX/" "$JOBS" "$SECONDS_MAX" || true
}
if has_part estimate; then
echo "before ($BASE_COMMIT):"
before_line=$(run "$TMP/before")
echo "  $before_line"
echo "after ($(git rev-parse --short HEAD)):"
after_line=$(run "$after")
echo "  $after_line"
printf '\n%-8s %10s %12s %14s %10s\n' side "jobs done" "max threads" "peak RSS MiB" seconds
for side in before after; do
    line=${side}_line
    l=${!line}
    printf '%-8s %7s/%-2s %12s %14.1f %10s\n' "$side" "$(field "$l" done)" "$JOBS" \
        "$(field "$l" max_threads)" "$(mib "$l")" "$(field "$l" seconds)"
done
fi

if has_part copy; then
    # The target: every directory of the source but the first, hard-linked.
    echo "filling s3://datasets/$DST/ with $((OBJECTS - 1000)) of them (all but $PREFIX/000/)"
    t0=$(date +%s)
    python3 - "$DATA/$PREFIX" "$DATA/$DST" <<'EOF'
import os, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
for d in sorted(os.listdir(src))[1:]:
    os.makedirs(f"{dst}/{d}")
    for f in os.listdir(f"{src}/{d}"):
        os.link(f"{src}/{d}/{f}", f"{dst}/{d}/{f}")
EOF
    echo "filled in $(($(date +%s) - t0)) s"
    for side in before after; do
        echo "journal of $PREFIX-$side: $("$copy" seed datasets "$PREFIX/" "$DST/" "$PREFIX-$side")"
    done
    echo "copy, before ($COPY_BASE_COMMIT):"
    copy_before=$("$TMP/copy-before" run datasets "$PREFIX/" "$DST/" "$PREFIX-before" \
        "$COPY_SECONDS" || true)
    echo "  $copy_before"
    rm -rf "${DATA:?}/$DST/000"
    echo "copy, after ($(git rev-parse --short HEAD)):"
    copy_after=$("$copy" run datasets "$PREFIX/" "$DST/" "$PREFIX-after" "$COPY_SECONDS" || true)
    echo "  $copy_after"
    rm -rf "${DATA:?}/$DST/000"
    printf '\n%-13s %8s %9s %8s %8s %14s %10s\n' side finished listed skipped copied \
        "peak RSS MiB" seconds
    for side in before after; do
        line=copy_${side}
        l=${!line}
        printf '%-13s %8s %9s %8s %8s %14.1f %10s\n' "copy $side" "$(field "$l" done)" \
            "$(field "$l" listed)" "$(field "$l" skipped)" "$(field "$l" copied)" "$(mib "$l")" \
            "$(field "$l" seconds)"
    done
fi
