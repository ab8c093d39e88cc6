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
#   BENCH_GATE_OBJECTS   objects in the prefix (default 1000000)
#   BENCH_GATE_JOBS      Jobs (default 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OBJECTS=${BENCH_GATE_OBJECTS:-1000000}
JOBS=${BENCH_GATE_JOBS:-10}
SECONDS_MAX=${BENCH_GATE_SECONDS:-150}
BASE_COMMIT=${BENCH_GATE_BASE_COMMIT:-cc367a1}
eval "$(tests/testbed/testbed env)"
LAB_DIR=${SW_LAB_DIR:?the lab is not up}
DATA="$LAB_DIR/s3/onprem/data/datasets"
[ -d "$DATA" ] || { echo "bench_gate_memory: no $DATA (is the lab up?)" >&2; exit 1; }
PREFIX="bench-gate-$$"
TMP=$(mktemp -d)
cleanup() { rm -rf "${DATA:?}/$PREFIX" "$TMP"; }
trap cleanup EXIT

after="$BUILD/bench/bench_gate_memory"
[ -x "$after" ] || { echo "bench_gate_memory: $after is not built" >&2; exit 1; }

# The tree before: cloned at its commit and built (only what the driver
# links), unless given.
base=${BENCH_GATE_BASE:-}
if [ -z "$base" ]; then
    base="$TMP/base"
    echo "building $BASE_COMMIT in a temporary clone (a few minutes)"
    git clone -q . "$base"
    git -C "$base" checkout -q "$BASE_COMMIT"
    cmake -S "$base" -B "$base/build" -G Ninja >/dev/null
    cmake --build "$base/build" -j 2 --target sw_replication sw_store >/dev/null
fi
b="$base/build"
cc -std=c11 -D_GNU_SOURCE -O2 -I"$base" -isystem /usr/include/hiredis \
    bench/replication/bench_gate_memory.c -o "$TMP/before" \
    "$b/replication/libsw_replication.a" "$b/store/libsw_store.a" "$b/net/libsw_net.a" \
    "$b/common/libsw_common.a" -lhiredis -lyaml -luv -lcurl -lxml2 -lssl -lcrypto -lcjson -lm -lpthread

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

run() {
    "$1" datasets "$PREFIX/" "$JOBS" "$SECONDS_MAX" || true
}
echo "before ($BASE_COMMIT):"
before_line=$(run "$TMP/before")
echo "  $before_line"
echo "after ($(git rev-parse --short HEAD)):"
after_line=$(run "$after")
echo "  $after_line"
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
printf '\n%-8s %10s %12s %14s %10s\n' side "jobs done" "max threads" "peak RSS MiB" seconds
for side in before after; do
    line=${side}_line
    l=${!line}
    printf '%-8s %7s/%-2s %12s %14.1f %10s\n' "$side" "$(field "$l" done)" "$JOBS" \
        "$(field "$l" max_threads)" "$(echo "$(field "$l" peak_rss_kib) / 1024" | bc -l)" \
        "$(field "$l" seconds)"
done
