#!/usr/bin/env bash
# node_lag.sh - a mirror's pod bound to a node the hub's node cache does not
# hold (issue 18 item 8): a cache that lags (a node just provisioned, bound
# to before its watch event arrives, or a node list that is behind) must not
# make a healthy mirror look lost.
#
# A delegated Job whose pod template names its node (spec.nodeName) is sent
# cloud-first to cloud-spot; that node does not exist yet, so the mirror's
# pod is bound to a node no cache has. For 15 s the hub must leave the
# mirror alone (no requeue, attempt 1, no Requeued Event; the pod garbage
# collector would end such a pod only after 40 s); then the node is
# created (a kwok node, as Karpenter or the cloud would add it), the pod
# runs there and the Job succeeds once, as attempt 1. A node the cache saw
# deleted is still a loss (spot_loss.sh).
#
# Before the fix, any node the cache did not hold counted as lost: the
# mirror was requeued within a second and its pods were not waited for.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
NODE="lag-node-$$"
drop_node() { kc cloud-spot delete node "$NODE" --ignore-not-found --wait=false >/dev/null 2>&1 || true; }
hub_setup nodelag
trap 'drop_node; hub_cleanup' EXIT
watcher_start
saturate
hub_start

cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: lag
  annotations:
    spillway.io/burst: cloud-first
    spillway.io/expected-runtime: 1h
spec:
  managedBy: spillway.io/hub
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "5s"}
    spec:
      nodeName: $NODE
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - {name: train, image: registry.example/train:1, resources: {limits: {nvidia.com/gpu: "1"}}}
YAML
L="onprem/$NS/lag"
# Dispatched: the mirror exists; it cannot run before its node does.
wait_record "$L" state dispatched 90
[ "$(record_field "$L" targetCluster)" = cloud-spot ] || hub_fail "lag goes to $(record_field "$L" targetCluster), not cloud-spot"
mirror=$(record_field "$L" mirror)
bound=""
for _ in $(seq 1 40); do
    bound=$(kc cloud-spot get pods -n "$NS" -l "job-name=$mirror" -o jsonpath='{.items[0].spec.nodeName}')
    [ -n "$bound" ] && break
    sleep 0.25
done
[ "$bound" = "$NODE" ] || hub_fail "the mirror's pod is bound to \"$bound\", not $NODE"
kc cloud-spot get node "$NODE" >/dev/null 2>&1 && hub_fail "node $NODE exists already"
# 15 s with the pod bound to a node the hub has never seen (well inside
# the 40 s after which the pod garbage collector deletes a pod bound to a
# node that does not exist, marking it disrupted: a real loss).
# (Fifteen seconds by the clock: each look spawns redis-cli and python, and
# on a loaded machine sixty of them would outlast the 40 s.)
until_s=$((SECONDS + 15))
while [ "$SECONDS" -lt "$until_s" ]; do
    [ "$(record_field "$L" attempt)" = 1 ] || hub_fail "requeued while its node was unknown to the cache: attempt $(record_field "$L" attempt), reason: $(record_field "$L" reason)"
    [ "$(record_field "$L" preemptions)" = 0 ] || hub_fail "a preemption counted while its node was unknown to the cache"
    sleep 0.25
done
[ "$(record_field "$L" mirror)" = "$mirror" ] || hub_fail "the mirror changed while its node was unknown"
kc cloud-spot get job "$mirror" -n "$NS" -o jsonpath='{.metadata.deletionTimestamp}' | grep -q . &&
    hub_fail "the mirror is being deleted"
ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=lag,reason=Requeued -o name)
[ -z "$ev" ] || hub_fail "a Requeued Event was written: $ev"
pass "15 s with the mirror's pod bound to $NODE, a node no cache holds: not taken for lost (attempt 1, same mirror)"

res='{"cpu":"96","memory":"1000Gi","pods":"110","nvidia.com/gpu":"8"}'
cat <<YAML | kc cloud-spot apply -f - >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: $NODE
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    type: kwok-lag
    kubernetes.io/hostname: $NODE
    karpenter.sh/capacity-type: spot
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  allocatable: $res
  capacity: $res
YAML
wait_record "$L" state succeeded 90
[ "$(record_field "$L" attempt)" = 1 ] || hub_fail "succeeded as attempt $(record_field "$L" attempt)"
n=$(kc cloud-spot get jobs -n "$NS" -l "spillway.io/origin-uid" -o name | wc -l)
[ "$n" = 1 ] || hub_fail "$n mirrors on cloud-spot"
[ "$(kc onprem get job lag -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] || hub_fail "the delegated origin does not say succeeded"
watcher_check
pass "node $NODE created: the pod ran there and the Job succeeded once, attempt 1"
