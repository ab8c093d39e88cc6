#!/usr/bin/env bash
# test_derive_workloads.sh - bench/placement/derive-workloads.py on a small
# pod list written here: the shared workload asks for a share of one GPU in
# every GPU pod, keeps the shares the list had and draws the others from
# them; the long burst adds 120 copies of the long multi-GPU pods, 6 minutes
# apart from day 75; both are read by the simulator as pod lists; bad input
# names the file, the line and the field.
set -euo pipefail
src=${SW_SOURCE_DIR:?}
build=${SW_BUILD_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
cat >"$tmp/pods.csv" <<'CSV'
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p-a,1000,1024,1,1000,,LS,Running,0,3600,0
p-b,1000,1024,1,460,,LS,Running,10,1000,20
p-c,1000,1024,1,810,,BE,Running,30,2000,40
p-d,8000,8192,8,1000,,LS,Running,50,20050,50
p-e,4000,4096,2,1000,,LS,Running,60,60,60
p-f,1000,1024,0,0,,LS,Running,70,100,70
p-g,1000,1024,1,1000,,LS,Pending,80,,
CSV
python3 "$src/bench/placement/derive-workloads.py" "$tmp/pods.csv" "$tmp/out" >/dev/null
python3 - "$tmp/out" <<'PY'
import csv, sys
d = sys.argv[1]
sh = {r["name"]: r for r in csv.DictReader(open(f"{d}/shared.csv"))}
assert len(sh) == 7, len(sh)
for n in ("p-a", "p-b", "p-c", "p-d"):
    r = sh[n]
    assert r["num_gpu"] == "1" and r["gpu_milli"] in ("460", "810"), (n, r)
assert sh["p-b"]["gpu_milli"] == "460" and sh["p-c"]["gpu_milli"] == "810"
assert sh["p-d"]["deletion_time"] == "20050" and sh["p-d"]["qos"] == "LS"
# Pods the simulator skips (no run, no GPU, never scheduled) are kept as they were.
assert sh["p-e"]["num_gpu"] == "2" and sh["p-f"]["num_gpu"] == "0" and sh["p-g"]["gpu_milli"] == "1000"
lb = list(csv.DictReader(open(f"{d}/long-burst.csv")))
assert len(lb) == 7 + 120, len(lb)
burst = [r for r in lb if r["name"].startswith("burst-pod-")]
assert len(burst) == 120
for k, r in enumerate(burst):
    t = 75 * 86400 + 360 * k
    assert r["name"] == f"burst-pod-{k:04d}"
    # p-d is the only multi-GPU pod that ran 4 hours (p-e ran none).
    assert r["num_gpu"] == "8" and int(r["creation_time"]) == t, r
    assert int(r["scheduled_time"]) == t and int(r["deletion_time"]) == t + 20000, r
PY
# The simulator reads both as pod lists: 4 and 4 + 120 GPU pods.
cat >"$tmp/clusters.json" <<'JSON'
{"origin": "onprem", "pools": [
  {"name": "onprem", "region": "onprem", "capacity": "owned", "gpus": 8, "price_per_gpu_hour": 1},
  {"name": "od", "region": "r", "capacity": "on-demand", "gpus": 64, "price_per_gpu_hour": 4}]}
JSON
for w in shared:4 long-burst:124; do
    out=$("$build/controller/spillctl" simulate --trace "$tmp/out/${w%%:*}.csv" \
        --clusters "$tmp/clusters.json" --policy burst-now 2>&1 >/dev/null) || fail "$out"
    [[ $out == *"${w##*:} jobs from"* ]] || fail "${w%%:*}: $out"
done
# Bad input names the file, the line and the field.
sed 's/^p-c,1000,1024,1,810/p-c,1000,1024,x,810/' "$tmp/pods.csv" >"$tmp/bad.csv"
if err=$(python3 "$src/bench/placement/derive-workloads.py" "$tmp/bad.csv" "$tmp/bad" 2>&1); then
    fail "a bad num_gpu was accepted"
fi
[[ $err == *'bad.csv:4: field "num_gpu": expected an integer, got "x"'* ]] || fail "error: $err"
echo "ok"
