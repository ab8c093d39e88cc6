#!/usr/bin/env bash
# A 4-GPU Job on onprem is scheduled by the real scheduler onto a kwok GPU
# node, runs, and completes.
source "$(dirname "$0")/common.sh"
test_namespace onprem smoke-complete
ns=$NS
gpu_job train-4gpu 1 4 3s | kc onprem apply -n "$ns" -f - >/dev/null
kc onprem wait -n "$ns" --for=condition=Complete job/train-4gpu --timeout=120s >/dev/null ||
    fail "job train-4gpu did not complete: $(kc onprem get -n "$ns" job,pods -o wide 2>&1)"
succeeded=$(kc onprem get -n "$ns" job/train-4gpu -o jsonpath='{.status.succeeded}')
[ "$succeeded" = 1 ] || fail "expected status.succeeded=1, got '$succeeded'"
node=$(kc onprem get -n "$ns" pods -l job-name=train-4gpu -o jsonpath='{.items[0].spec.nodeName}')
[[ "$node" == onprem-gpu-* ]] || fail "expected the pod on an onprem GPU node, got '$node'"
gpus=$(kc onprem get node "$node" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
[ "$gpus" = 4 ] || fail "expected node $node to have 4 allocatable GPUs, got '$gpus'"
pass "4-GPU job completed on $node"
