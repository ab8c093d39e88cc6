#!/usr/bin/env bash
# A Job that needs more GPUs than onprem has (3 pods x 4 GPUs on 2 nodes x 4
# GPUs): two pods run, the third stays Pending with PodScheduled=False,
# reason Unschedulable, as the real scheduler reports it.
source "$(dirname "$0")/common.sh"
test_namespace onprem smoke-unsched
ns=$NS
gpu_job too-big 3 4 300s | kc onprem apply -n "$ns" -f - >/dev/null
pending=""
for _ in $(seq 1 120); do
    pending=$(kc onprem get pods -n "$ns" -l job-name=too-big -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="PodScheduled")].status} {.status.conditions[?(@.type=="PodScheduled")].reason}{"\n"}{end}' |
        awk '$2 == "False" && $3 == "Unschedulable" {print $1}')
    running=$(kc onprem get pods -n "$ns" -l job-name=too-big --field-selector=status.phase=Running -o name | wc -l)
    [ -n "$pending" ] && [ "$running" = 2 ] && break
    sleep 1
done
[ -n "$pending" ] || fail "no pod became Unschedulable: $(kc onprem get pods -n "$ns" -o wide 2>&1)"
[ "$running" = 2 ] || fail "expected 2 running pods, got $running"
[ "$(echo "$pending" | wc -l)" = 1 ] || fail "expected exactly one unschedulable pod, got: $pending"
msg=$(kc onprem get pod -n "$ns" "$pending" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
grep -q "Insufficient nvidia.com/gpu" <<<"$msg" || fail "unexpected scheduler message: $msg"
phase=$(kc onprem get pod -n "$ns" "$pending" -o jsonpath='{.status.phase}')
[ "$phase" = Pending ] || fail "expected phase Pending, got $phase"
kc onprem delete job -n "$ns" too-big --cascade=foreground --wait=false >/dev/null
pass "pod $pending is Pending/Unschedulable ($msg)"
