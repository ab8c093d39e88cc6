#!/usr/bin/env bash
# alibaba-eval.sh - the issue's "must show" check on the Alibaba GPU 2023
# pod list: burst-now sends at least 30% of GPU-hours to the cloud, and the
# cost-aware policy's cloud cost is at least 50% below burst-now's, at no
# more than 6% higher mean JCT, missing no deadline burst-now meets.
#
# usage: bench/placement/alibaba-eval.sh [BUILD_DIR] [TRACE]
# TRACE defaults to ../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv
# relative to the repository root. A missing trace is a failure, not a skip.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
trace=${2:-$root/../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv}
if [[ ! -r $trace ]]; then
    echo "alibaba-eval: trace not found: $trace (pass its path as the second argument)" >&2
    exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/controller/spillctl" simulate --trace "$trace" \
    --clusters "$root/docs/examples/alibaba-clusters.json" \
    --policy burst-now,cost-aware --seed 1 --json "$out"
python3 - "$out" <<'PY'
import json, sys
r = {x["policy"]: x for x in json.load(open(sys.argv[1]))}
b, c = r["burst-now"], r["cost-aware"]
checks = [
    ("burst-now cloud share of GPU-hours >= 30%", b["cloud_gpu_fraction"] >= 0.30,
     f'{100 * b["cloud_gpu_fraction"]:.1f}%'),
    ("cost-aware cloud cost <= 50% of burst-now's", c["cost"]["cloud"] <= 0.5 * b["cost"]["cloud"],
     f'{100 * (c["cost"]["cloud"] / b["cost"]["cloud"] - 1):+.1f}%'),
    ("cost-aware mean JCT <= burst-now's + 6%",
     c["jct_seconds"]["mean"] <= 1.06 * b["jct_seconds"]["mean"],
     f'{100 * (c["jct_seconds"]["mean"] / b["jct_seconds"]["mean"] - 1):+.2f}%'),
    ("no deadline missed that burst-now met", c["misses_met_by_burst_now"] == 0,
     f'{c["misses_met_by_burst_now"]} of {c["deadlines"]} deadlines'),
]
ok = True
for name, passed, value in checks:
    print(f'{"PASS" if passed else "FAIL"}  {name}: {value}')
    ok &= passed
sys.exit(0 if ok else 1)
PY
