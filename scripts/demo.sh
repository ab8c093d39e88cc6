#!/usr/bin/env bash
# demo.sh - what `make demo` runs: build spillway, bring the lab up, and show
# what is running. (The hub issue completes this into the full burst demo.)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> building spillway"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "${JOBS:-2}" >/dev/null
echo "==> bringing the lab up (the first run builds Kubernetes, kwok and versitygw from source: ~12 min)"
tests/testbed/testbed up
eval "$(tests/testbed/testbed env)"
for c in $SW_LAB_CLUSTERS; do
    echo
    echo "==> $c: GPU nodes"
    tests/testbed/testbed kubectl "$c" get nodes -o custom-columns='NODE:.metadata.name,GPUS:.status.allocatable.nvidia\.com/gpu,PRODUCT:.metadata.labels.nvidia\.com/gpu\.product,CAPACITY:.metadata.labels.karpenter\.sh/capacity-type,REGION:.metadata.labels.topology\.kubernetes\.io/region'
done
echo
echo "==> saturating onprem: three 4-GPU pods on 2 nodes x 4 GPUs"
ns=demo-saturation
k() { tests/testbed/testbed kubectl onprem "$@"; }
k delete namespace "$ns" --wait=true >/dev/null 2>&1 || true
k create namespace "$ns" >/dev/null
cat <<'YAML' | k apply -n "$ns" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations: {spillway.io/burst: auto}
spec:
  parallelism: 3
  completions: 3
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "120s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "4"}}
YAML
for _ in $(seq 1 30); do
    k get pods -n "$ns" -o jsonpath='{.items[*].status.conditions[?(@.type=="PodScheduled")].reason}' | grep -q Unschedulable && break
    sleep 1
done
k get pods -n "$ns" -o custom-columns='POD:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName,SCHEDULED:.status.conditions[?(@.type=="PodScheduled")].reason'
k delete namespace "$ns" --wait=false >/dev/null

echo
echo "==> what bursting would cost: spillctl simulate on a generated trace over the lab's pools"
trace=$(mktemp)
python3 - "$trace" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    f.write("submit,gpus,duration,team\n")
    t = 0
    for i in range(400):
        t += random.expovariate(1 / 300.0)
        f.write("%d,%d,%d,%s\n" % (t, random.choice([1, 2, 4, 4, 8]), random.randint(600, 14400),
                                   random.choice(["vision", "nlp", "speech"])))
PY
build/controller/spillctl simulate --trace "$trace" --clusters docs/examples/lab-clusters.json \
    --policy local-only,burst-now,cost-aware,starburst
rm -f "$trace"

echo
echo "==> spillctl"
build/controller/spillctl --help
echo
echo "The lab stays up. Use it by hand: eval \"\$(tests/testbed/testbed env)\"; see docs/testbed.md."
echo "Stop it with: tests/testbed/testbed down"
