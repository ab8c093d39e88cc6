#!/usr/bin/env bash
# mig.sh - MIG slices end to end on the lab. The test adds two kwok nodes
# to cloud-ondemand that advertise MIG slices as NVIDIA's device plugin
# does with the mixed strategy (allocatable nvidia.com/mig-1g.10gb: 7, no
# whole GPU), and deletes them at the end; the lab's own nodes are left as
# they are. With onprem saturated:
#   - `spillctl cluster show` lists the slices under the on-demand pool
#   - a delegated Job asking nvidia.com/mig-1g.10gb goes to cloud-ondemand,
#     the only pool offering the profile, though spot is cheaper: explain
#     gives cloud-spot and onprem the reason mig-profile; its mirror keeps
#     the resource, runs on a MIG node, and the Job completes once
#   - an annotation-only Job asking the same, Unschedulable at home for
#     lack of slices, bursts there too
#   - a Job asking a profile that is no MIG profile gets a BadGpuRequest
#     Event naming the Job and the field, and no record
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup mig
MIG_NODES=("mig-$NS-0" "mig-$NS-1")
mig_cleanup() {
    local n
    for n in "${MIG_NODES[@]}"; do
        kc cloud-ondemand delete node "$n" --wait=false >/dev/null 2>&1 || true
    done
    hub_cleanup
}
trap mig_cleanup EXIT
watcher_start
saturate

# ---- the MIG nodes ------------------------------------------------------------
res='{"cpu":"96","memory":"1000Gi","pods":"110","nvidia.com/mig-1g.10gb":"7"}'
kwok_gpu_nodes cloud-ondemand kwok-mig "$res" '    karpenter.sh/capacity-type: on-demand
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    nvidia.com/gpu.memory: "81920"
    nvidia.com/gpu.count: "1"
    nvidia.com/mig.strategy: mixed
    nvidia.com/mig-1g.10gb.count: "7"
    topology.kubernetes.io/region: us-west-2
    topology.kubernetes.io/zone: us-west-2a' 'nvidia\.com/mig-1g\.10gb' 7 "${MIG_NODES[@]}"

"$SPILLCTL" cluster show cloud-ondemand >"$HUB_TMP/show"
grep -E "^    MIG 1g\.10gb: free 14/14 slices \(7 per GPU\)$" "$HUB_TMP/show" >/dev/null ||
    hub_fail "cluster show lacks the MIG slices: $(cat "$HUB_TMP/show")"
"$SPILLCTL" cluster show cloud-spot >"$HUB_TMP/show-spot"
! grep -q "MIG" "$HUB_TMP/show-spot" || hub_fail "cloud-spot shows MIG slices: $(cat "$HUB_TMP/show-spot")"
pass "cluster show: $(grep -m1 "MIG 1g" "$HUB_TMP/show" | sed 's/^ *//') on cloud-ondemand, none on cloud-spot"

# mig_job NAME SLICES PROFILE [delegated]
mig_job() {
    local managed=""
    [ "${4:-}" = delegated ] && managed="  managedBy: spillway.io/hub"
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  annotations: {spillway.io/burst: auto, spillway.io/expected-runtime: 1h}
spec:
$managed
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "5s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: infer
        image: registry.example/infer:1
        resources: {limits: {nvidia.com/mig-$3: "$2"}}
YAML
}

hub_start
mig_job mig-d 2 1g.10gb delegated | kc onprem apply -n "$NS" -f - >/dev/null
mig_job mig-a 3 1g.10gb | kc onprem apply -n "$NS" -f - >/dev/null
mig_job mig-bad 1 big | kc onprem apply -n "$NS" -f - >/dev/null

# ---- delegated: only the pool offering the profile ------------------------------
D="onprem/$NS/mig-d"
kc onprem wait --for=condition=complete job/mig-d -n "$NS" --timeout=120s >/dev/null ||
    hub_fail "the delegated MIG Job did not complete on onprem"
wait_record "$D" state succeeded 30
[ "$(record_field "$D" targetCluster)" = cloud-ondemand ] ||
    hub_fail "mig-d ran in $(record_field "$D" targetCluster), not cloud-ondemand"
"$SPILLCTL" explain "$D" >"$HUB_TMP/explain"
grep -E "^cloud-ondemand +on-demand +us-west-2 .*<- chosen$" "$HUB_TMP/explain" >/dev/null ||
    hub_fail "explain does not choose cloud-ondemand: $(cat "$HUB_TMP/explain")"
grep -E "^cloud-spot +spot +us-east-1 .* mig-profile$" "$HUB_TMP/explain" >/dev/null ||
    hub_fail "explain does not exclude cloud-spot for the profile: $(cat "$HUB_TMP/explain")"
grep -E "^onprem +owned +onprem .* mig-profile$" "$HUB_TMP/explain" >/dev/null ||
    hub_fail "explain does not exclude onprem for the profile: $(cat "$HUB_TMP/explain")"
mirror=$(record_field "$D" mirror)
[ "$(kc cloud-ondemand get job "$mirror" -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] ||
    hub_fail "the mirror $mirror did not succeed"
[ "$(kc cloud-ondemand get job "$mirror" -n "$NS" -o jsonpath='{.spec.template.spec.containers[0].resources.limits.nvidia\.com/mig-1g\.10gb}')" = 2 ] ||
    hub_fail "the mirror lost its MIG request"
node=$(kc cloud-ondemand get pods -n "$NS" -l "spillway.io/origin-uid=$(kc onprem get job mig-d -n "$NS" -o jsonpath='{.metadata.uid}')" \
    -o jsonpath='{.items[0].spec.nodeName}')
case "$node" in mig-"$NS"-*) ;; *) hub_fail "the mirror's pod ran on \"$node\", not a MIG node" ;; esac
[ "$(mirrors_of mig-d)" = 1 ] || hub_fail "mig-d has $(mirrors_of mig-d) mirrors"
pass "delegated MIG Job: ran once on cloud-ondemand (node $node); explain: $(grep -m1 '^cloud-spot' "$HUB_TMP/explain" | awk '{print $1, $NF}'), $(grep -m1 '^onprem' "$HUB_TMP/explain" | awk '{print $1, $NF}')"

# ---- annotation-only: Unschedulable at home for lack of slices ---------------------
A="onprem/$NS/mig-a"
wait_record "$A" state succeeded 120
[ "$(record_field "$A" targetCluster)" = cloud-ondemand ] ||
    hub_fail "mig-a ran in $(record_field "$A" targetCluster), not cloud-ondemand"
[ "$(kc onprem get job mig-a -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] || hub_fail "mig-a's origin is not suspended"
[ "$(mirrors_of mig-a)" = 1 ] || hub_fail "mig-a has $(mirrors_of mig-a) mirrors"
pass "annotation-only MIG Job: suspended at home, ran once on cloud-ondemand"

# ---- a profile that is none ---------------------------------------------------------
ev=""
for i in $(seq 1 40); do
    ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=mig-bad,reason=BadGpuRequest -o jsonpath='{.items[0].message}')
    [ -n "$ev" ] && break
    sleep 0.5
done
[ "$ev" = "Job $NS/mig-bad: field \"spec.template.spec.containers[0].resources.limits\": resource \"nvidia.com/mig-big\": expected a MIG profile as NVIDIA's device plugin names it, e.g. \"nvidia.com/mig-1g.10gb\"" ] ||
    hub_fail "BadGpuRequest event: \"$ev\""
[ -z "$(rcli GET "spillway:job:onprem/$NS/mig-bad")" ] || hub_fail "a Job with a bad MIG request got a record"
pass "bad MIG profile: Warning Event \"$ev\"; the Job is left alone"

watcher_check
