#!/usr/bin/env bash
# bench_provision.sh - the hub against an empty cloud that scales from zero
# (make bench BENCH=provision; issue 20's benchmark), on the lab in Karpenter
# mode (testbed karpenter up: gpu-spot 64 GPUs, gpu-on-demand 32, no GPU
# node at rest), taken inside the lab-wide hub lock and put back (karpenter
# down) when it ends, whatever the outcome.
#
# One hub, the three clusters registered as hub_setup does (each cloud pool
# bound to its NodePool by capacity type and product), onprem saturated; N
# (default 100) burstable Jobs of 1-4 GPUs (25 of each at N=100, 250 GPUs
# against the cloud's 96: the cloud turns over), each with its own input of
# a few hundred KiB in onprem's store (so that the data step copies
# something), spillway.io/burst: cloud-first, created at once. Once every
# Job's mirror has run (or the bound, default 600 s, passes: then how many
# did), from the records in Redis, per Job and as p50/p90/max:
#   queued       decidedMs - observedMs (waiting for room in the cloud)
#   data         dataReadyMs - decidedMs
#   provisioning nodeWaitSeconds (the node wait: mirror created to running
#                when the mirror waited for a NodeClaim; 0 when it found a node)
#   scheduling   (startedMs - dispatchedMs) - provisioning
#   total        startedMs - decidedMs
# and, over the Jobs that waited for a node, the engine's predicted delay
# (nodeWaitExpectedSeconds) against the observed one (nodeWaitSeconds):
# median absolute error; the same against the NodeClaim's own delay
# (created to Initialized, read from the claim: what the hub learns from);
# the learned delay on /metrics at the end; NodeClaims and nodes made.
#
# BENCH_PROVISION_JOBS (100), BENCH_PROVISION_FORM (burstable|delegated),
# BENCH_PROVISION_RUN (each mirror's pod runs this long, default 60s),
# BENCH_PROVISION_SECONDS (the bound, 600).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export SW_SOURCE_DIR=${SW_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
export SW_BUILD_DIR=${SW_BUILD_DIR:-$SW_SOURCE_DIR/build}
N=${BENCH_PROVISION_JOBS:-100}
# burstable: annotation only, so that a Job the cloud has no room for yet
# stays at home undecided and is decided again (every 2 s) until it has;
# a delegated Job would be given a mirror at home, where it waits behind
# the saturating Jobs.
FORM=${BENCH_PROVISION_FORM:-burstable}
RUN=${BENCH_PROVISION_RUN:-60s}
BOUND=${BENCH_PROVISION_SECONDS:-600}
case "$FORM" in delegated | burstable) ;; *) echo "BENCH_PROVISION_FORM: delegated or burstable" >&2; exit 2 ;; esac
export HUB_DB=9
source "$SW_SOURCE_DIR/tests/e2e/hub/lib.sh"
TB="$SW_SOURCE_DIR/tests/testbed/testbed"
KLOG=$(mktemp)
CLAIMS_PID=""
s3() { "$S3TOOL" "$@" >/dev/null; }
karpenter_off() {
    "$TB" karpenter down >"$KLOG" 2>&1 || { echo "testbed karpenter down failed:" >&2; tail -20 "$KLOG" >&2; }
    rm -f "$KLOG"
}
cleanup() {
    [ -n "$CLAIMS_PID" ] && kill "$CLAIMS_PID" 2>/dev/null
    if [ -n "${NS:-}" ]; then
        s3 "$SW_LAB_S3_ENDPOINT_ONPREM" onprem rm datasets "$NS/" || true
        s3 "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 rm datasets "$NS/" || true
        s3 "$SW_LAB_S3_ENDPOINT_US_WEST_2" us-west-2 rm datasets "$NS/" || true
    fi
    hub_cleanup
    karpenter_off
}
hub_lock
trap karpenter_off EXIT
"$TB" karpenter up >"$KLOG" 2>&1 || fail "testbed karpenter up: $(tail -20 "$KLOG")"
hub_setup prov
trap cleanup EXIT

# An empty cloud: no NodeClaim, no GPU node (karpenter up removed them;
# claims of an earlier run may still be going).
for _ in $(seq 1 90); do
    n=0
    for c in cloud-spot cloud-ondemand; do
        n=$((n + $(kc "$c" get nodeclaims -o name 2>/dev/null | wc -l) + $(kc "$c" get nodes -l nvidia.com/gpu.present=true -o name | wc -l)))
    done
    [ "$n" = 0 ] && break
    sleep 2
done
[ "$n" = 0 ] || hub_fail "the cloud is not empty: $n NodeClaims and GPU nodes"
for c in cloud-spot cloud-ondemand; do
    "$SPILLCTL" cluster show "$c" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)["poolSpecs"][0]
assert p.get("nodePool"), "pool %s is bound to no NodePool" % p["name"]' || hub_fail "$c's pool is not bound to a NodePool"
done

# The inputs: one object per Job, 128-512 KiB.
for i in $(seq 1 "$N"); do
    s3 "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put datasets "$NS/in-$i/part-0.bin" $(((128 + (i * 37) % 385) * 1024)) "$i"
done

# Every NodeClaim of both clusters, each look: CLUSTER NAME NODEPOOL
# CREATED INITIALIZED NODE (epoch seconds; - when not yet).
claims_watch() {
    set +e
    while :; do
        for c in cloud-spot cloud-ondemand; do
            kc "$c" get nodeclaims -o json 2>/dev/null | C=$c python3 -c '
import json, os, sys, datetime
t = lambda s: int(datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp())
for x in json.load(sys.stdin)["items"]:
    init = [k for k in x.get("status", {}).get("conditions", []) if k["type"] == "Initialized" and k["status"] == "True"]
    print(os.environ["C"], x["metadata"]["name"], x["metadata"].get("labels", {}).get("karpenter.sh/nodepool", "-"),
          t(x["metadata"]["creationTimestamp"]), t(init[0]["lastTransitionTime"]) if init else "-",
          x.get("status", {}).get("nodeName") or "-")' >>"$HUB_TMP/claims"
        done
        sleep 2
    done
}
claims_watch &
CLAIMS_PID=$!

saturate
hub_start
for _ in $(seq 1 80); do
    [ "$(leader_of 19464)" = 1 ] && break
    sleep 0.25
done
[ "$(leader_of 19464)" = 1 ] || hub_fail "the hub did not take the lease"

managed=""
[ "$FORM" = delegated ] && managed="  managedBy: spillway.io/hub"
for i in $(seq 1 "$N"); do
    cat <<YAML
---
apiVersion: batch/v1
kind: Job
metadata:
  name: p$i
  annotations:
    spillway.io/burst: cloud-first
    spillway.io/expected-runtime: 10m
    spillway.io/inputs: s3://datasets/$NS/in-$i/
spec:
$managed
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "$RUN"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "$((1 + (i - 1) % 4))"}}
YAML
done >"$HUB_TMP/jobs.yaml"
t0=$(date +%s%3N)
kc onprem apply -n "$NS" -f "$HUB_TMP/jobs.yaml" >/dev/null
t1=$(date +%s%3N)
echo "submitted $N Jobs in $(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100)) s"

# Until every Job's mirror has run (startedMs set), or the bound.
keys=()
for i in $(seq 1 "$N"); do keys+=("spillway:job:onprem/$NS/p$i"); done
records() { rcli MGET "${keys[@]}"; }
started=0
deadline=$(($(date +%s) + BOUND))
while [ "$(date +%s)" -lt "$deadline" ]; do
    started=$(records | python3 -c '
import json, sys
print(sum(1 for l in sys.stdin if l.strip() and json.loads(l).get("startedMs", 0) > 0))')
    [ "$started" -ge "$N" ] && break
    sleep 3
done
t2=$(date +%s%3N)
sleep 3 # a last look at the claims
records >"$HUB_TMP/records"
curl -sf http://127.0.0.1:19464/metrics | grep -E '^spillway_nodepool_(provision_seconds|provisions_observed_total)' >"$HUB_TMP/metrics" || true
kill "$CLAIMS_PID" 2>/dev/null || true
wait "$CLAIMS_PID" 2>/dev/null || true
CLAIMS_PID=""

echo
echo "conditions: $N $FORM Jobs (1-4 GPUs, $(python3 -c "print(sum(1 + (i - 1) % 4 for i in range(1, $N + 1)))") GPUs in all; 128-512 KiB input each; cloud-first; pods run $RUN)" \
    "created at once on saturated onprem; one hub; Karpenter (kwok) NodePools gpu-spot 64 GPUs, gpu-on-demand 32, 8-GPU nodes, from 0 nodes;" \
    "$started of $N mirrors running within $(((t2 - t0) / 1000)) s (bound ${BOUND} s)"
python3 - "$HUB_TMP/records" "$HUB_TMP/claims" "$HUB_TMP/metrics" "$N" <<'PY'
import json, sys, statistics

recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
claims = {}  # (cluster, name) -> [nodepool, created, initialized, node]
for line in open(sys.argv[2]):
    c, name, pool, cr, init, node = line.split()
    k = (c, name)
    cur = claims.setdefault(k, [pool, int(cr), None, None])
    if init != "-":
        cur[2] = int(init)
    if node != "-":
        cur[3] = node
n = int(sys.argv[4])

def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")

rows = []
for r in recs:
    if r.get("startedMs", 0) <= 0:
        continue
    prov = r["nodeWaitSeconds"] if r.get("nodeWaitMs", 0) > 0 else 0.0
    row = {
        "name": r["name"], "gpus": r["gpus"], "where": r["targetCluster"],
        "queued": (r["decidedMs"] - r["observedMs"]) / 1e3 if r.get("observedMs") else float("nan"),
        "data": (r["dataReadyMs"] - r["decidedMs"]) / 1e3,
        "prov": prov,
        "sched": (r["startedMs"] - r["dispatchedMs"]) / 1e3 - prov,
        "total": (r["startedMs"] - r["decidedMs"]) / 1e3,
        "waited": r.get("nodeWaitMs", 0) > 0,
        "expected": r.get("nodeWaitExpectedSeconds", 0.0),
        "claim": r.get("nodeClaim") or "-",
        "claim_delay": None, "node_ready": None,
    }
    cl = claims.get((r["targetCluster"], r.get("nodeClaim", "")))
    if cl and cl[2] is not None:
        row["claim_delay"] = cl[2] - cl[1]
        row["node_ready"] = cl[2] - r["dispatchedMs"] / 1e3  # claim Initialized, after the mirror
    rows.append(row)
rows.sort(key=lambda x: int(x["name"][1:]))

print("\nper Job (seconds; queued = decided - observed; expected = the delay the engine was given;"
      " claim delay = the NodeClaim's created to Initialized):")
print("%-5s %4s %-15s %7s %6s %6s %6s %6s %8s %-22s %6s" %
      ("job", "gpus", "cluster", "queued", "data", "prov", "sched", "total", "expected", "nodeclaim", "claim"))
for x in rows:
    print("%-5s %4d %-15s %7.1f %6.2f %6.1f %6.1f %6.1f %8s %-22s %6s" % (
        x["name"], x["gpus"], x["where"], x["queued"], x["data"], x["prov"], x["sched"], x["total"],
        "%.0f" % x["expected"] if x["waited"] else "-", x["claim"] if x["waited"] else "-",
        "-" if x["claim_delay"] is None or not x["waited"] else x["claim_delay"]))

print("\nsummary over the %d of %d Jobs whose mirror ran (seconds):" % (len(rows), n))
print("  %-34s %7s %7s %7s" % ("", "p50", "p90", "max"))
for label, key in (("queued for room (decided-observed)", "queued"), ("data", "data"),
                   ("provisioning", "prov"), ("scheduling", "sched"), ("total (decided to running)", "total")):
    xs = [x[key] for x in rows]
    print("  %-34s %7.1f %7.1f %7.1f" % (label, q(xs, 0.5), q(xs, 0.9), max(xs) if xs else float("nan")))
w = [x for x in rows if x["waited"]]
print("  Jobs that waited for a node: %d (spot %d, on-demand %d); found one: %d" % (
    len(w), sum(1 for x in w if x["where"] == "cloud-spot"), sum(1 for x in w if x["where"] == "cloud-ondemand"),
    len(rows) - len(w)))
if w:
    ws = [x["prov"] for x in w]
    print("  provisioning of those that waited: p50 %.1f, p90 %.1f, max %.1f" % (q(ws, 0.5), q(ws, 0.9), max(ws)))
    e = [abs(x["expected"] - x["prov"]) for x in w]
    print("  predicted vs observed node wait (nodeWaitExpectedSeconds vs nodeWaitSeconds): median absolute error %.1f s"
          " (predicted p50 %.1f, observed p50 %.1f; n=%d)" % (statistics.median(e),
          statistics.median([x["expected"] for x in w]), statistics.median(ws), len(w)))
    for lab, sel in (("given the 60 s prior", lambda x: x["expected"] == 60), ("given a learned delay", lambda x: x["expected"] != 60)):
        s = [x for x in w if sel(x)]
        if s:
            print("    %-22s n=%3d: MAE %.1f s (predicted p50 %.1f, observed p50 %.1f)" % (
                lab, len(s), statistics.median([abs(x["expected"] - x["prov"]) for x in s]),
                statistics.median([x["expected"] for x in s]), statistics.median([x["prov"] for x in s])))
    c = [x for x in w if x["claim_delay"] is not None]
    if c:
        print("  predicted vs the NodeClaim's own delay (created to Initialized, whole seconds): median absolute error %.1f s"
              " (claim delay p50 %.1f; n=%d)" % (statistics.median([abs(x["expected"] - x["claim_delay"]) for x in c]),
              statistics.median([x["claim_delay"] for x in c]), len(c)))
        nr = [x["node_ready"] for x in c]
        print("  of the node wait: mirror created to its node Initialized p50 %.1f, then to running p50 %.1f (claim times in whole seconds)" % (
            statistics.median(nr), statistics.median([x["prov"] - x["node_ready"] for x in c])))
by = {}
for (cl, name), v in claims.items():
    b = by.setdefault(v[0], [0, 0, []])
    b[0] += 1
    if v[3]:
        b[1] += 1
    if v[2] is not None:
        b[2].append(v[2] - v[1])
for pool, (nc, nn, d) in sorted(by.items()):
    print("  NodePool %-14s NodeClaims made %3d, nodes %3d; claim delay p50 %s, max %s s" % (
        pool, nc, nn, statistics.median(d) if d else "-", max(d) if d else "-"))
if not by:
    print("  no NodeClaim seen")
print("  the hub's /metrics at the end:")
for line in open(sys.argv[3]):
    print("    " + line.rstrip())
PY
[ "$started" -ge "$N" ] || echo "NOTE: only $started of $N mirrors ran within ${BOUND} s"
