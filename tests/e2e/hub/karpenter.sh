#!/usr/bin/env bash
# karpenter.sh - cloud pools that are Karpenter NodePools, on the lab in
# Karpenter mode (testbed karpenter up: the cloud clusters have no GPU node
# at rest), under the outside watcher (watch_invariants.py) throughout:
#   - registration: each cloud pool is bound to the one NodePool serving it;
#     a NodePool that does not exist, or has no GPU limit, is refused with
#     its name; cluster show/list give the ceiling and room at zero nodes
#   - a burst to a pool at zero nodes: Karpenter provisions a node, the
#     mirror runs there and completes, the node is consolidated away; the
#     hub learned the provisioning delay (/metrics); the origin shows the
#     wait (a WaitingForNode Event naming the cluster, NodePool and
#     NodeClaim, the wait in the record and in spillctl explain), and the
#     decision says it was made on the prior
#   - the spot NodePool's limit reached: the next Job is not sent there (it
#     goes on-demand or waits, with the decision recorded)
#   - a NodeClaim deleted under a running mirror (a spot interruption as
#     Karpenter's AWS provider handles one): the hub requeues the Job, which
#     runs once more to success, never in two places at once; the
#     interruption is counted and the learned rate rises above the prior
#   - learned figures move: a decision after three or more provisionings
#     was given the mean delay of the claims it counted (each read here
#     from the NodeClaim), as spillctl explain shows; two mirrors waiting
#     at once are each told their own NodeClaim
#   - learned figures survive a leader change: the hub killed, another
#     started, /metrics shows the same learned delay, counts and rate
#   - what the cloud bill shows: spillctl report chargeback --from-hub
#     bills gpu-spot's nodes (one per NodeClaim the test saw, at 8 GPUs and
#     the pool's $2.10), the Jobs' share by their GPUs (as their records
#     say) and the idle rest
# The lab is put back as it was (testbed karpenter down) when it ends.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TB="$SW_SOURCE_DIR/tests/testbed/testbed"
KLOG=$(mktemp)
karpenter_off() {
    "$TB" karpenter down >"$KLOG" 2>&1 || { echo "testbed karpenter down failed:" >&2; tail -20 "$KLOG" >&2; }
    rm -f "$KLOG"
}
hub_lock
trap karpenter_off EXIT
"$TB" karpenter up >"$KLOG" 2>&1 || fail "testbed karpenter up: $(tail -20 "$KLOG")"
hub_setup karp
trap 'hub_cleanup; karpenter_off' EXIT
watcher_start
# claim_delay CLUSTER CLAIM: seconds from a NodeClaim's creation to its
# Initialized condition, read from the claim itself (the test's own account).
claim_delay() {
    kc "$1" get nodeclaim "$2" -o json | python3 -c '
import json, sys, datetime
c = json.load(sys.stdin)
t = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()
i = [x for x in c["status"]["conditions"] if x["type"] == "Initialized" and x["status"] == "True"]
print(int(t(i[0]["lastTransitionTime"]) - t(c["metadata"]["creationTimestamp"])) if i else "")'
}
# basis KEY POOL FIELD: what the stored decision for KEY says POOL's figures rest on.
basis() {
    "$SPILLCTL" explain "$1" -o json | python3 -c "
import json, sys
d = json.load(sys.stdin)['decision']
print([o for o in d['options'] if o['pool'] == '$2'][0]['basis']['$3'])"
}
# claims_watch: every second, each Initialized NodeClaim of gpu-spot once,
# "NAME INITIALIZED_EPOCH DELAY" in $HUB_TMP/claims (the claims live at
# least as long as a mirror runs, 20 s here).
claims_watch() {
    set +e # a failed look is tried again; the loop ends when the test does
    while :; do
        kc cloud-spot get nodeclaims -l karpenter.sh/nodepool=gpu-spot -o json 2>/dev/null | python3 -c '
import json, sys, datetime
t = lambda s: int(datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp())
for c in json.load(sys.stdin)["items"]:
    for x in c.get("status", {}).get("conditions", []):
        if x["type"] == "Initialized" and x["status"] == "True":
            i = t(x["lastTransitionTime"])
            print(c["metadata"]["name"], i, i - t(c["metadata"]["creationTimestamp"]))' >>"$HUB_TMP/claims" 2>/dev/null
        sleep 1
    done
}

# count CLUSTER KIND [SELECTOR]: how many objects.
count() {
    kc "$1" get "$2" ${3:+-l "$3"} -o name 2>/dev/null | wc -l
}
# show_json CLUSTER EXPR: a field of `spillctl cluster show CLUSTER -o json`'s first pool.
show_json() {
    "$SPILLCTL" cluster show "$1" -o json | python3 -c "import json,sys; p=json.load(sys.stdin)['poolSpecs'][0]; print($2)"
}
metric() { # metric NAME LABELS: a value on the hub's /metrics
    curl -sf http://127.0.0.1:19464/metrics | awk -v k="$1{$2}" '$1 == k {print $2}'
}

claims_watch &
CLAIMS_PID=$!
trap 'kill $CLAIMS_PID 2>/dev/null || true; hub_cleanup; karpenter_off' EXIT

# ---- registration -----------------------------------------------------------
[ "$(count cloud-spot nodes type=kwok)" = 0 ] || hub_fail "cloud-spot still has static GPU nodes in karpenter mode"
[ "$(show_json cloud-spot "p['nodePool']")" = gpu-spot ] || hub_fail "spot-h100 is not bound to gpu-spot: $("$SPILLCTL" cluster show cloud-spot -o json)"
[ "$(show_json cloud-ondemand "p['nodePool']")" = gpu-on-demand ] || hub_fail "od-h100 is not bound to gpu-on-demand"
fig=$(show_json cloud-spot "'%d %d %d' % (p['nodePoolStatus']['ceiling'], p['nodePoolStatus']['room'], p['nodePoolStatus']['nodes'])")
[ "$fig" = "64 64 0" ] || hub_fail "gpu-spot at rest: ceiling room nodes = $fig, not 64 64 0"
"$SPILLCTL" cluster list >"$HUB_TMP/list"
grep -E "^cloud-spot .*spot-h100=nodepool/gpu-spot +64/64 .* 0 +64 +64" "$HUB_TMP/list" >/dev/null ||
    hub_fail "cluster list does not show gpu-spot's 64/64, 0 nodes, ceiling 64, room 64: $(cat "$HUB_TMP/list")"
kcd="$SW_LAB_KUBECONFIG_DIR"
rc=0
"$SPILLCTL" cluster add karp-bad --kubeconfig "$kcd/cloud-spot-cert.kubeconfig" --role cloud --region us-east-1 \
    --pool name=x,capacity=spot,product=NVIDIA-H100-80GB-HBM3,price=2.1,nodepool=gpu-spto >/dev/null 2>"$HUB_TMP/err" || rc=$?
[ $rc != 0 ] && grep -q 'pool "x": NodePool "gpu-spto" does not exist' "$HUB_TMP/err" ||
    hub_fail "a missing NodePool: exit $rc, \"$(cat "$HUB_TMP/err")\""
# A NodePool without a GPU limit (tainted so nothing lands on it).
cat <<YAML | kc cloud-spot apply -f - >/dev/null
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: karp-test-no-gpu-limit}
spec:
  limits: {cpu: "8"}
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: lab}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: ["spot"]}]
      taints: [{key: lab.spillway.io/never, value: "true", effect: NoSchedule}]
YAML
rc=0
"$SPILLCTL" cluster add karp-bad --kubeconfig "$kcd/cloud-spot-cert.kubeconfig" --role cloud --region us-east-1 \
    --pool name=x,capacity=spot,product=NVIDIA-H100-80GB-HBM3,price=2.1,nodepool=karp-test-no-gpu-limit >/dev/null 2>"$HUB_TMP/err" || rc=$?
kc cloud-spot delete nodepool karp-test-no-gpu-limit --wait=false >/dev/null
[ $rc != 0 ] && grep -q 'NodePool "karp-test-no-gpu-limit" has no GPU limit' "$HUB_TMP/err" ||
    hub_fail "a NodePool without a GPU limit: exit $rc, \"$(cat "$HUB_TMP/err")\""
[ -z "$(rcli GET spillway:cluster:karp-bad)" ] || hub_fail "a refused cluster was stored"
pass "registration: pools bound to gpu-spot and gpu-on-demand (ceiling 64, room 64, 0 nodes at rest); refused: $(head -1 "$HUB_TMP/err")"

# ---- a burst to a pool at zero nodes ---------------------------------------
saturate
hub_start
t0=$(date +%s)
burst_job zero 8 20s | kc onprem apply -n "$NS" -f - >/dev/null
Z="onprem/$NS/zero"
wait_record "$Z" state running 180
t_run=$(($(date +%s) - t0))
[ "$(record_field "$Z" targetCluster)" = cloud-spot ] || hub_fail "zero ran in $(record_field "$Z" targetCluster)"
mirror=$(record_field "$Z" mirror)
node=$(kc cloud-spot get pods -n "$NS" -l "job-name=$mirror" -o jsonpath='{.items[0].spec.nodeName}')
[ -n "$node" ] || hub_fail "the mirror's pod has no node"
[ "$(kc cloud-spot get node "$node" -o jsonpath='{.metadata.labels.karpenter\.sh/nodepool}')" = gpu-spot ] ||
    hub_fail "the mirror runs on $node, not a node of gpu-spot"
claim=$(kc cloud-spot get nodeclaims -o jsonpath="{range .items[?(@.status.nodeName==\"$node\")]}{.metadata.name}{end}")
[ -n "$claim" ] || hub_fail "no NodeClaim for node $node"
zdelay=$(claim_delay cloud-spot "$claim")
# The origin shows the wait: an Event while it lasts, the record and
# explain once the mirror runs.
# (Events are best effort and wait behind the dispatch path: a few seconds.)
wev=""
for _ in $(seq 1 60); do
    wev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=zero,reason=WaitingForNode -o jsonpath='{range .items[*]}{.message}{end}' 2>/dev/null || true)
    [ -n "$wev" ] && break
    sleep 0.5
done
grep -q "NodeClaim $claim of NodePool gpu-spot is being provisioned in cloud-spot (expected 60 s)" <<<"$wev" ||
    hub_fail "no WaitingForNode Event on zero naming NodeClaim $claim, gpu-spot, cloud-spot and the 60 s prior: \"$wev\""
[ "$(record_field "$Z" nodeClaim)" = "$claim" ] && [ "$(record_field "$Z" nodePool)" = gpu-spot ] ||
    hub_fail "zero's record names NodeClaim \"$(record_field "$Z" nodeClaim)\" of \"$(record_field "$Z" nodePool)\", not $claim of gpu-spot"
zwait=$(record_field "$Z" nodeWaitSeconds)
awk -v w="$zwait" -v d="$zdelay" 'BEGIN { exit !(w > 0 && w + 2 >= d) }' ||
    hub_fail "zero's recorded node wait \"$zwait\" s is not at least the claim's $zdelay s to Initialized"
"$SPILLCTL" explain "$Z" >"$HUB_TMP/explain"
grep -qE "^Node: +waited [0-9]+ s for NodeClaim $claim of NodePool gpu-spot \(expected 60 s\)" "$HUB_TMP/explain" ||
    hub_fail "explain does not show zero's node wait: $(cat "$HUB_TMP/explain")"
grep -qE "^  cloud-spot +provisioning 60 s, the prior \(no NodeClaim of its NodePool seen yet\); interruptions 0.100/h, the prior" "$HUB_TMP/explain" ||
    hub_fail "explain does not say zero's decision had the priors for cloud-spot: $(cat "$HUB_TMP/explain")"
wait_record "$Z" state succeeded 120
gone=0
for _ in $(seq 1 90); do
    if [ "$(count cloud-spot nodeclaims)" = 0 ] && [ "$(count cloud-spot nodes karpenter.sh/nodepool=gpu-spot)" = 0 ]; then
        gone=1
        break
    fi
    sleep 2
done
[ $gone = 1 ] || hub_fail "gpu-spot's node was not consolidated within 180 s of the mirror's end: $(kc cloud-spot get nodeclaims)"
seen=$(metric spillway_nodepool_provisions_observed_total 'cluster="cloud-spot",nodepool="gpu-spot"')
delay=$(metric spillway_nodepool_provision_seconds 'cluster="cloud-spot",nodepool="gpu-spot"')
[ "${seen:-0}" -ge 1 ] || hub_fail "the hub saw no provisioning of gpu-spot (observed: \"$seen\")"
pass "burst at zero nodes: NodeClaim $claim made node $node, mirror $mirror ran there (decided to running in ${t_run}s) and succeeded; node consolidated away; learned provisioning delay ${delay}s from $seen claim(s)"

# ---- the spot NodePool's limit reached --------------------------------------
kc cloud-spot patch nodepool gpu-spot --type=merge -p '{"spec":{"limits":{"nvidia.com/gpu":"8"}}}' >/dev/null
burst_job full1 8 120s | kc onprem apply -n "$NS" -f - >/dev/null
F1="onprem/$NS/full1"
wait_record "$F1" state running 180
[ "$(record_field "$F1" targetCluster)" = cloud-spot ] || hub_fail "full1 ran in $(record_field "$F1" targetCluster), not cloud-spot"
burst_job full2 8 20s | kc onprem apply -n "$NS" -f - >/dev/null
F2="onprem/$NS/full2"
for _ in $(seq 1 120); do
    [ -n "$(record_field "$F2" summary)" ] && break
    sleep 0.5
done
summary=$(record_field "$F2" summary)
[ -n "$summary" ] || hub_fail "no decision for full2 within 60 s"
sleep 5
[ "$(record_field "$F2" targetCluster)" != cloud-spot ] || hub_fail "full2 was sent to the full spot NodePool: $summary"
[ "$(mirrors_of full2)" -le 1 ] || hub_fail "full2 has $(mirrors_of full2) mirrors"
[ "$(kc cloud-spot get jobs -n "$NS" -l "spillway.io/origin-uid=$(kc onprem get job full2 -n "$NS" -o jsonpath='{.metadata.uid}')" -o name | wc -l)" = 0 ] ||
    hub_fail "full2 has a mirror on cloud-spot"
pass "spot NodePool at its limit (8 GPUs, held by full1): full2 not sent there: \"$summary\" (state $(record_field "$F2" state), target \"$(record_field "$F2" targetCluster)\")"
kc cloud-spot patch nodepool gpu-spot --type=merge -p '{"spec":{"limits":{"nvidia.com/gpu":"64"}}}' >/dev/null

# ---- a NodeClaim deleted under a running mirror -----------------------------
burst_job intr 4 40s | kc onprem apply -n "$NS" -f - >/dev/null
I="onprem/$NS/intr"
wait_record "$I" state running 180
imirror=$(record_field "$I" mirror)
icluster=$(record_field "$I" targetCluster)
[ "$icluster" = cloud-spot ] || hub_fail "intr ran in $icluster, not cloud-spot"
inode=$(kc "$icluster" get pods -n "$NS" -l "job-name=$imirror" -o jsonpath='{.items[0].spec.nodeName}')
iclaim=$(kc "$icluster" get nodeclaims -o jsonpath="{range .items[?(@.status.nodeName==\"$inode\")]}{.metadata.name}{end}")
[ -n "$iclaim" ] || hub_fail "no NodeClaim under intr's mirror (node \"$inode\" in $icluster)"
# (Counted from here: a leftover of an earlier test's namespace may have
# been lost too when the static nodes went.)
before=$(metric spillway_nodepool_interruptions_total "cluster=\"$icluster\",nodepool=\"gpu-spot\"")
# A spot interruption comes with notice (two minutes on AWS): the node is
# drained, its pods still there, while the hub reacts. On kwok an eviction
# takes milliseconds, so a PodDisruptionBudget holds the drain as the
# notice does (the hub's own deletion of the mirror is no eviction).
cat <<YAML | kc "$icluster" apply -n "$NS" -f - >/dev/null
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: intr-notice}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {job-name: "$imirror"}}
YAML
kc "$icluster" delete nodeclaim "$iclaim" --wait=false >/dev/null
wait_record "$I" preemptions 1 60
kc "$icluster" delete pdb intr-notice -n "$NS" >/dev/null
wait_record "$I" state succeeded 300
[ "$(record_field "$I" attempt)" = 2 ] || hub_fail "intr's attempt is $(record_field "$I" attempt), not 2"
[ "$(record_field "$I" mirror)" != "$imirror" ] || hub_fail "attempt 2 reused the interrupted mirror's name"
ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=intr,reason=Requeued -o jsonpath='{.items[0].message}')
grep -q "NodeClaim $iclaim deleted" <<<"$ev" || hub_fail "no Requeued event naming the NodeClaim: $ev"
irate=$(metric spillway_nodepool_interrupt_rate_per_hour "cluster=\"$icluster\",nodepool=\"gpu-spot\"")
after=$(metric spillway_nodepool_interruptions_total "cluster=\"$icluster\",nodepool=\"gpu-spot\"")
[ "${after:-0}" -ge $((${before:-0} + 1)) ] ||
    hub_fail "the interruption was not counted on gpu-spot: $(curl -sf http://127.0.0.1:19464/metrics | grep nodepool_interr)"
awk -v r="$irate" 'BEGIN { exit !(r > 0.1) }' || hub_fail "the learned interruption rate $irate did not rise above the 0.1/h prior"
pass "NodeClaim $iclaim deleted under mirror $imirror in $icluster: requeued (\"$ev\"), attempt 2 $(record_field "$I" mirror) succeeded in $(record_field "$I" targetCluster); interruptions counted ${before:-0} -> $after, learned rate ${irate}/h"

# ---- learned figures move ----------------------------------------------------
# intr's second decision came after at least three provisionings of
# gpu-spot (zero, full1, intr's first attempt; full2's too when it went
# there once the limit was back): the engine was given the mean delay of
# the first N claims Initialized, N what the decision says it counted, each
# delay read here from the claim itself.
seenN=$(basis "$I" cloud-spot provisionsSeen)
given=$(basis "$I" cloud-spot provisionSeconds)
[ "$(basis "$I" cloud-spot provisionFrom)" = learned ] && [ "${seenN:-0}" -ge 3 ] ||
    hub_fail "intr's decision: cloud-spot's delay from \"$(basis "$I" cloud-spot provisionFrom)\", $seenN NodeClaims, not learned from 3 or more"
mean=$(sort -u "$HUB_TMP/claims" | sort -k2,2n -k1,1 | head -n "$seenN" | awk -v n="$seenN" '{ s += $3; k++ } END { if (k == n) printf "%.3f", s / n }')
[ -n "$mean" ] || hub_fail "the test saw fewer than $seenN claims of gpu-spot: $(sort -u "$HUB_TMP/claims")"
# Whole seconds here, the API's timestamps are too: the mean within 1 s.
awk -v g="$given" -v m="$mean" 'BEGIN { d = g - m; exit !(d <= 1 && d >= -1) }' ||
    hub_fail "the engine was given ${given}s for cloud-spot, the first $seenN claims' mean is ${mean}s: $(sort -u "$HUB_TMP/claims")"
awk -v g="$given" 'BEGIN { exit !(g < 50) }' || hub_fail "the engine was given ${given}s, not moved from the 60 s prior"
"$SPILLCTL" explain "$I" >"$HUB_TMP/explain"
grep -qE "^  cloud-spot +provisioning [0-9]+ s, learned from $seenN NodeClaims of NodePool gpu-spot" "$HUB_TMP/explain" ||
    hub_fail "explain does not show the learned delay: $(cat "$HUB_TMP/explain")"
# intr's first attempt waited for a claim of gpu-spot launching then, and
# once it ran the origin was told the claim under its pod (the scheduler
# may bind a pod to another new node than the one Karpenter made for it,
# when two mirrors wait at once).
kc onprem get events -n "$NS" --field-selector involvedObject.name=intr -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' >"$HUB_TMP/wev" || true
grep -qE "^WaitingForNode: .*-1 waits for a node: NodeClaim gpu-spot-[a-z0-9]+ of NodePool gpu-spot" "$HUB_TMP/wev" ||
    hub_fail "no WaitingForNode Event on intr's first attempt: $(cat "$HUB_TMP/wev")"
grep -qE "^NodeProvisioned: .*-1 runs after [0-9]+ s waiting for a node: NodeClaim $iclaim of NodePool gpu-spot" "$HUB_TMP/wev" ||
    hub_fail "no NodeProvisioned Event on intr names the claim under its first mirror, $iclaim: $(cat "$HUB_TMP/wev")"
pass "learned figures move: intr's second decision was given ${given}s for gpu-spot, the mean of the first $seenN NodeClaims (${mean}s as the test read them); explain: $(grep -E '^  cloud-spot ' "$HUB_TMP/explain" | sed 's/  */ /g')"

# ---- learned figures survive a leader change --------------------------------
NPL='cluster="cloud-spot",nodepool="gpu-spot"'
d1=$(metric spillway_nodepool_provision_seconds "$NPL")
n1=$(metric spillway_nodepool_provisions_observed_total "$NPL")
i1=$(metric spillway_nodepool_interruptions_total "$NPL")
r1=$(metric spillway_nodepool_interrupt_rate_per_hour "$NPL")
stored=""
for _ in $(seq 1 40); do
    stored=$(rcli HGET spillway:learned cloud-spot/gpu-spot)
    [ "$(echo "$stored" | python3 -c 'import json,sys; print(json.load(sys.stdin)["provisions"])' 2>/dev/null)" = "$n1" ] && break
    sleep 0.25
done
grep -q "\"provisions\":$n1," <<<"$stored" || hub_fail "Redis does not hold gpu-spot's $n1 provisions: \"$stored\""
kill -9 "$HUB_PID"
hub_start_leading "$HUB_TMP/hub.yaml" 19464
d2=""
for _ in $(seq 1 80); do
    d2=$(metric spillway_nodepool_provision_seconds "$NPL")
    [ -n "$d2" ] && break
    sleep 0.25
done
n2=$(metric spillway_nodepool_provisions_observed_total "$NPL")
i2=$(metric spillway_nodepool_interruptions_total "$NPL")
r2=$(metric spillway_nodepool_interrupt_rate_per_hour "$NPL")
[ "$d2 $n2 $i2 $r2" = "$d1 $n1 $i1 $r1" ] ||
    hub_fail "after a leader change gpu-spot's delay, provisions, interruptions, rate are \"$d2 $n2 $i2 $r2\", not \"$d1 $n1 $i1 $r1\""
pass "learned figures survive a leader change: the new leader's gpu-spot: ${d2}s from $n2 NodeClaims, $i2 interruption(s), ${r2}/h (the prior: 60s, 0, 0.1/h)"
# ---- what the cloud bill shows ------------------------------------------------
nclaims=$(awk '{print $1}' "$HUB_TMP/claims" | sort -u | wc -l)
day=$(date -u +%Y-%m-%d)
next=$(date -u -d tomorrow +%Y-%m-%d)
"$SPILLCTL" report chargeback --from-hub --from "$day" --to "$next" --ondemand-price 6.98 -o json >"$HUB_TMP/bill.json" ||
    hub_fail "report chargeback --from-hub failed"
# The Jobs' GPU-hours in spot-h100, from their records.
jobs_gh=$(for k in $(rcli SMEMBERS spillway:jobs); do rcli GET "spillway:job:$k"; echo; done | python3 -c '
import json, sys
t = 0
for line in sys.stdin:
    if not line.strip():
        continue
    r = json.loads(line)
    if r["targetCluster"] == "cloud-spot" and r["targetPool"] == "spot-h100" and r["startedMs"] and r["finishedMs"]:
        t += r["gpus"] * (r["finishedMs"] - r["startedMs"]) / 3.6e6
print("%.4f" % t)')
python3 - "$HUB_TMP/bill.json" "$nclaims" "$jobs_gh" <<'PY' || hub_fail "the bill of gpu-spot: $(cat "$HUB_TMP/bill.json"); spillway:node-hours: $(rcli HGETALL spillway:node-hours | paste -sd' ')"
import json, sys
b = [x for x in json.load(open(sys.argv[1]))["nodepools"] if x["pool"] == "cloud-spot/spot-h100"]
assert len(b) == 1, "no bill for cloud-spot/spot-h100"
b = b[0]
n, jobs = int(sys.argv[2]), float(sys.argv[3])
assert b["nodepool"] == "gpu-spot", b
assert b["nodes"] == n, "nodes %d, the test saw %d NodeClaims" % (b["nodes"], n)
assert abs(b["gpu_hours"] - 8 * b["node_hours"]) < 1e-6, "8 GPUs a node"
assert abs(b["cost"] - round(b["gpu_hours"] * 2.10, 2)) <= 0.01, "the pool's price"
# Running Jobs count until now in the bill, finished ones as recorded.
assert b["job_gpu_hours"] >= jobs - 1e-3, "Jobs' GPU-hours %f, records say %f" % (b["job_gpu_hours"], jobs)
assert b["job_gpu_hours"] <= b["gpu_hours"] + 1e-9
assert abs(b["idle_gpu_hours"] - (b["gpu_hours"] - b["job_gpu_hours"])) < 1e-6
assert b["idle_gpu_hours"] > 0, "kwok nodes live before and after their pods: some idle"
PY
pass "the cloud bill: $(python3 -c "import json; b=[x for x in json.load(open('$HUB_TMP/bill.json'))['nodepools'] if x['pool']=='cloud-spot/spot-h100'][0]; print('gpu-spot %d nodes, %.3f node-hours, %.3f GPU-h \$%.2f; Jobs %.3f GPU-h \$%.2f; idle %.3f GPU-h \$%.2f' % (b['nodes'], b['node_hours'], b['gpu_hours'], b['cost'], b['job_gpu_hours'], b['job_cost'], b['idle_gpu_hours'], b['idle_cost']))")"
watcher_check
