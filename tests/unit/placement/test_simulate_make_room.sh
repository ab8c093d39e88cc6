#!/usr/bin/env bash
# test_simulate_make_room.sh - `spillctl simulate --make-room` end to end
# through the CLI: A (8 GPUs, 10 h, no deadline) holds the 8 on-prem GPUs
# when B (8 GPUs, 10 min, due 700 s after it arrives) comes; no cloud option
# is on time (180 s provisioning). Without the flag B misses on on-demand;
# with it cost-aware stops A, the line under the table says so, the JSON
# counts the stop, and both Jobs complete once.
set -euo pipefail
build=${SW_BUILD_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
cat >"$tmp/clusters.json" <<'JSON'
{"pools":[
 {"name":"onprem","region":"onprem","capacity":"owned","gpus":8,"price_per_gpu_hour":1.0},
 {"name":"cloud-spot","region":"us-east-1","capacity":"spot","gpus":64,
  "provision_seconds":180,"price_per_gpu_hour":1.5625,"interruptions_per_hour":0.5},
 {"name":"cloud-ondemand","region":"us-west-2","capacity":"on-demand","gpus":32,
  "provision_seconds":180,"price_per_gpu_hour":4.10}]}
JSON
cat >"$tmp/trace.csv" <<'CSV'
submit,gpus,duration,team,deadline
0,8,36000,ml,
4000,8,600,ml,4700
CSV
sim() {
    "$build/controller/spillctl" simulate --trace "$tmp/trace.csv" --clusters "$tmp/clusters.json" \
        --policy cost-aware --runtime oracle --seed 7 "$@"
}
sim --json "$tmp/without.json" --jobs-csv "$tmp/without.csv" >"$tmp/without.out" 2>&1 ||
    fail "simulate without --make-room: $(cat "$tmp/without.out")"
sim --make-room --json "$tmp/with.json" --jobs-csv "$tmp/with.csv" >"$tmp/with.out" 2>&1 ||
    fail "simulate --make-room: $(cat "$tmp/with.out")"
grep -q "stopped to make room" "$tmp/without.out" && fail "a stop reported without --make-room"
grep -q "^cost-aware: 1 running home Jobs stopped to make room for deadlines$" "$tmp/with.out" ||
    fail "no stop reported with --make-room: $(cat "$tmp/with.out")"
python3 - "$tmp" <<'PY'
import csv, json, sys
d = sys.argv[1]
def run(name):
    r = json.load(open(f"{d}/{name}.json"))
    r = r["runs"][0] if isinstance(r, dict) and "runs" in r else r[0]
    jobs = {j["job"]: j for j in csv.DictReader(open(f"{d}/{name}.csv"))}
    return r, jobs
def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
wo, jwo = run("without")
wi, jwi = run("with")
check(wo["home_stops"] == 0 and wi["home_stops"] == 1, f'home_stops {wo["home_stops"]} / {wi["home_stops"]}')
check(wo["deadline_misses_all"] == 1 and wi["deadline_misses_all"] == 0,
      f'misses {wo["deadline_misses_all"]} / {wi["deadline_misses_all"]}')
check(wi["completed"] == 2, f'completed {wi["completed"]}')
names = sorted(jwi)
b = jwi[names[1]]
check(b["capacity"] == "owned" and b["deadline_outcome"] == "met", f"B: {b}")
check(jwo[names[1]]["capacity"] == "on-demand", f'B without: {jwo[names[1]]}')
PY
echo "ok: --make-room stops one Job, the deadline is met, both complete"
