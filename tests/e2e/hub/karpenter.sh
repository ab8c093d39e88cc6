#!/usr/bin/env bash
# karpenter.sh - cloud pools that are Karpenter NodePools, on the lab in
# Karpenter mode (testbed karpenter up: the cloud clusters have no GPU node
# at rest), under the outside watcher (watch_invariants.py) throughout:
#   - registration: each cloud pool is bound to the one NodePool serving it;
#     a NodePool that does not exist, or has no GPU limit, is refused with
#     its name; cluster show/list give the ceiling and room at zero nodes
#   - a burst to a pool at zero nodes: Karpenter provisions a node, the
#     mirror runs there and completes, the node is consolidated away; the
#     hub learned the provisioning delay (/metrics)
#   - the spot NodePool's limit reached: the next Job is not sent there (it
#     goes on-demand or waits, with the decision recorded)
#   - a NodeClaim deleted under a running mirror (a spot interruption as
#     Karpenter's AWS provider handles one): the hub requeues the Job, which
#     runs once more to success, never in two places at once; the
#     interruption is counted and the learned rate rises above the prior
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
echo "$ev" | grep -q "NodeClaim $iclaim deleted" || hub_fail "no Requeued event naming the NodeClaim: $ev"
irate=$(metric spillway_nodepool_interrupt_rate_per_hour "cluster=\"$icluster\",nodepool=\"gpu-spot\"")
after=$(metric spillway_nodepool_interruptions_total "cluster=\"$icluster\",nodepool=\"gpu-spot\"")
[ "${after:-0}" -ge $((${before:-0} + 1)) ] ||
    hub_fail "the interruption was not counted on gpu-spot: $(curl -sf http://127.0.0.1:19464/metrics | grep nodepool_interr)"
awk -v r="$irate" 'BEGIN { exit !(r > 0.1) }' || hub_fail "the learned interruption rate $irate did not rise above the 0.1/h prior"
pass "NodeClaim $iclaim deleted under mirror $imirror in $icluster: requeued (\"$ev\"), attempt 2 $(record_field "$I" mirror) succeeded in $(record_field "$I" targetCluster); interruptions counted ${before:-0} -> $after, learned rate ${irate}/h"
watcher_check
