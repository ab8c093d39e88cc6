#!/usr/bin/env bash
# demo.sh - what `make demo` runs: build spillway, bring the lab up, and show
# what is running. (The hub issue completes this into the full burst demo.)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> building spillway"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "${JOBS:-2}" >/dev/null
echo "==> bringing the lab up (the first run builds Kubernetes from source: ~20 min)"
tests/testbed/testbed up
eval "$(tests/testbed/testbed env)"
for c in $SW_LAB_CLUSTERS; do
    echo
    echo "==> $c: GPU nodes"
    tests/testbed/testbed kubectl "$c" get nodes -L nvidia.com/gpu.product,karpenter.sh/capacity-type,topology.kubernetes.io/region \
        -o custom-columns='NODE:.metadata.name,GPUS:.status.allocatable.nvidia\.com/gpu,PRODUCT:.metadata.labels.nvidia\.com/gpu\.product,CAPACITY:.metadata.labels.karpenter\.sh/capacity-type,REGION:.metadata.labels.topology\.kubernetes\.io/region'
done
echo
echo "==> spillctl"
build/controller/spillctl --help
echo
echo "The lab stays up. Use it by hand: eval \"\$(tests/testbed/testbed env)\"; see docs/testbed.md."
echo "Stop it with: tests/testbed/testbed down"
