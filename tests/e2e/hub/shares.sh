#!/usr/bin/env bash
# shares.sh - a time-sliced home pool and the home queue's congestion, on
# the lab. The test adds two kwok nodes to onprem that advertise one GPU
# each time-sliced in 4 replicas, as NVIDIA's device plugin and GPU feature
# discovery do (nvidia.com/gpu.sharing-strategy=time-slicing,
# nvidia.com/gpu.replicas=4, allocatable nvidia.com/gpu: 4), registers
# them as onprem's pool `ts`, and deletes them at the end. With onprem's
# whole GPUs saturated and `ts` full with 8 pods of one replica (a quarter
# of a GPU each):
#   - `spillctl cluster show` gives the 2 time-sliced GPUs full
#   - a Job asking a quarter of a GPU (spillway.io/gpu-share: "0.25") is
#     decided with `ts` waiting, charged the queue's congestion from the
#     shares running there: 8 pods of 250 milli-GPUs would rent 8 whole GPUs
#     in the cloud for their 2 GPUs at home (r = 4), so (4 x $2.10 - $1.00)
#     x 0.25 x R = $2.10, R = 1.133 h the expected runtime (the belief's
#     mean: its 1 h annotation with sigma 0.5, x exp(0.5^2 / 2), before
#     any annotated Job finished); the whole-GPU pool a100 (r = 1) is
#     charged ($2.10 - $1.00) x 1 GPU (a share there takes a whole one) x R
#     = $1.25. Read as one lump of 2000 milli-GPUs, as before, `ts` gave r =
#     1 and $0.31.
#   - it bursts and completes once.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup shares
TS_NODES=("ts-$NS-0" "ts-$NS-1")
ts_cleanup() {
    local n
    for n in "${TS_NODES[@]}"; do
        kc onprem delete node "$n" --wait=false >/dev/null 2>&1 || true
    done
    hub_cleanup
}
trap ts_cleanup EXIT
watcher_start
saturate

# ---- the time-sliced nodes ----------------------------------------------------
res='{"cpu":"96","memory":"1000Gi","pods":"110","nvidia.com/gpu":"4"}'
kwok_gpu_nodes onprem kwok-ts "$res" '    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.product: NVIDIA-A10G
    nvidia.com/gpu.memory: "24576"
    nvidia.com/gpu.count: "1"
    nvidia.com/gpu.sharing-strategy: time-slicing
    nvidia.com/gpu.replicas: "4"
    topology.kubernetes.io/region: onprem' 'nvidia\.com/gpu' 4 "${TS_NODES[@]}"
"$SPILLCTL" cluster add onprem --kubeconfig "$SW_LAB_KUBECONFIG_DIR/onprem-cert.kubeconfig" --role onprem \
    --region onprem --replace \
    --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 \
    --pool name=ts,capacity=owned,product=NVIDIA-A10G,memory=24576,price=1.00 >/dev/null

# ---- ts full: 8 pods of one replica ---------------------------------------------
cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: tsfill}
spec:
  parallelism: 8
  completions: 8
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3600s"}
    spec:
      restartPolicy: Never
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A10G}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: infer
        image: registry.example/infer:1
        resources: {limits: {nvidia.com/gpu: "1"}}
YAML
n=0
for i in $(seq 1 60); do
    n=$(kc onprem get pods -n "$NS" -l job-name=tsfill --field-selector=status.phase=Running -o name | wc -l)
    [ "$n" = 8 ] && break
    sleep 0.5
done
[ "$n" = 8 ] || hub_fail "ts did not fill: $n of 8 pods running"
"$SPILLCTL" cluster show onprem >"$HUB_TMP/show"
line=$(grep -m1 "time-slicing: 4 replicas per GPU" "$HUB_TMP/show" || true)
[[ "$line" == *"0.000 of 2.000 GPUs free"* ]] ||
    hub_fail "cluster show does not give the time-sliced GPUs full: $(cat "$HUB_TMP/show")"
pass "ts: 2 GPUs time-sliced in 4 replicas each, full with 8 pods of a quarter GPU (cluster show:${line#*:})"

# ---- a quarter of a GPU, decided ------------------------------------------------
hub_start
burst_job share 1 5s "" "    spillway.io/gpu-share: \"0.25\"" | kc onprem apply -n "$NS" -f - >/dev/null
S="onprem/$NS/share"
wait_record "$S" state succeeded 120
"$SPILLCTL" explain "$S" >"$HUB_TMP/explain"
ts_row=$(grep -E "^onprem/ts +owned " "$HUB_TMP/explain" || true)
a100_row=$(grep -E "^onprem/a100 +owned " "$HUB_TMP/explain" || true)
[ -n "$ts_row" ] || hub_fail "explain has no row for ts: $(cat "$HUB_TMP/explain")"
[[ "$ts_row" == *"congestion 2.10;"* ]] ||
    hub_fail "ts's row does not carry the congestion of 8 quarter-GPU pods (2.10): $ts_row"
[[ "$a100_row" == *"congestion 1.25;"* ]] ||
    hub_fail "a100's row does not carry a whole GPU's congestion (1.25): $a100_row"
[ "$(record_field "$S" targetCluster)" != onprem ] || hub_fail "the share stayed at home"
[ "$(mirrors_of share)" = 1 ] || hub_fail "share has $(mirrors_of share) mirrors"
pass "a quarter-GPU Job: ts waiting is charged 2.10 (r = 4), a100 1.25; burst to $(record_field "$S" targetCluster), ran once"

watcher_check
