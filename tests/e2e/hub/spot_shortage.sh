#!/usr/bin/env bash
# spot_shortage.sh - a spot capacity shortage on a pool bound to a Karpenter
# NodePool, on the lab in Karpenter mode (testbed karpenter up), caused on
# purpose (testbed karpenter outage on cloud-spot: its Karpenter restarted
# with no spot offering, so gpu-spot gets no NodeClaim), under the outside
# watcher (watch_invariants.py) throughout:
#   - a burst to spot during a shortage the hub does not know of yet: the
#     mirror's pod waits with no NodeClaim made for it; the hub sees the
#     shortage (/metrics), withdraws the mirror after
#     karpenter.shortageWithdrawSeconds (a MirrorWithdrawn Event on the
#     origin naming gpu-spot, the withdrawal counted in the record and on
#     /metrics, the mirror gone) and decides again: the Job goes elsewhere or
#     waits, never to cloud-spot while it is short, and the decision says the
#     engine was given the prior's wait for cloud-spot (spillctl explain)
#   - the outage ends (outage off) and a pod asks gpu-spot for a node: the
#     NodeClaim launches, the shortage ends, its duration is learned
#     (/metrics, spillway:learned), matching what the test reads from the
#     claim and the record
#   - a new shortage: a decision during it is given the learned wait (the
#     first shortage's duration less how long this one has lasted), shown by
#     spillctl explain, and the Job is not sent to cloud-spot
#   - (the outage over) cloud-spot's Karpenter killed just before a Job is sent there: not a
#     shortage; the mirror withdrawn, the origin no longer naming it, the
#     Job on on-demand within 90 s, nothing learned; started again, gpu-spot
#     takes the next Job
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
hub_setup short
trap 'hub_cleanup; karpenter_off' EXIT
# Withdrawn 20 s after the pods began to wait on a short NodePool.
printf 'karpenter:\n  shortageWithdrawSeconds: 20\n' >>"$HUB_TMP/hub.yaml"
watcher_start

NPL='cluster="cloud-spot",nodepool="gpu-spot"'
metric() { # metric NAME LABELS: a value on the hub's /metrics
    curl -sf http://127.0.0.1:19464/metrics | awk -v k="$1{$2}" '$1 == k {print $2}'
}
# basis KEY POOL FIELD: what the stored decision for KEY says POOL's figures rest on.
basis() {
    "$SPILLCTL" explain "$1" -o json | python3 -c "
import json, sys
d = json.load(sys.stdin)['decision']
print([o for o in d['options'] if o['pool'] == '$2'][0]['basis']['$3'])"
}
outage() {
    "$TB" karpenter outage "$1" cloud-spot >"$KLOG" 2>&1 || hub_fail "testbed karpenter outage $1: $(tail -5 "$KLOG")"
}
# probe NAME: a plain pod (no hub) asking gpu-spot for a node, 1 GPU (the
# lab's kwok completes Jobs' pods only: it runs until deleted).
probe() {
    cat <<YAML | kc cloud-spot apply -n "$NS" -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: $1
spec:
  restartPolicy: Never
  nodeSelector: {karpenter.sh/nodepool: gpu-spot}
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - {key: spillway.io/spot, operator: Exists, effect: NoSchedule}
  containers:
  - name: probe
    image: registry.example/probe:1
    resources: {limits: {nvidia.com/gpu: "1"}}
YAML
}
spot_claims() { kc cloud-spot get nodeclaims -l karpenter.sh/nodepool=gpu-spot -o name 2>/dev/null | wc -l; }
# wait_metric NAME TEST SECONDS: until the metric's value passes the awk test (on v).
wait_metric() {
    local i v
    for i in $(seq 1 $(($3 * 2))); do
        v=$(metric "$1" "$NPL")
        [ -n "$v" ] && awk -v v="$v" "BEGIN { exit !($2) }" && return 0
        sleep 0.5
    done
    hub_fail "$1 is \"$(metric "$1" "$NPL")\", not $2, after $3 s; gpu-spot: $(curl -sf http://127.0.0.1:19464/metrics | grep -F "$NPL" | tr '\n' ' '); cloud-spot: $(kc cloud-spot get nodes,nodeclaims -o name | tr '\n' ' '); $(kc cloud-spot get pods -A -o wide --no-headers | tr '\n' ';')"
}

# ---- a burst to spot during a shortage the hub does not know of yet -----------
saturate
outage on
t_on=$(date +%s)
hub_start
burst_job a 8 60s | kc onprem apply -n "$NS" -f - >/dev/null
A="onprem/$NS/a"
wait_record "$A" state dispatched 120
[ "$(record_field "$A" targetCluster)" = cloud-spot ] ||
    hub_fail "a was sent to \"$(record_field "$A" targetCluster)\", not cloud-spot (the shortage was not known yet): $(record_field "$A" summary)"
amirror=$(record_field "$A" mirror)
adispatched=$(record_field "$A" dispatchedMs)
# The hub sees the shortage: no NodeClaim comes for the mirror's pod.
wait_metric spillway_nodepool_short_seconds "v > 0" 90
[ "$(spot_claims)" = 0 ] || hub_fail "gpu-spot got a NodeClaim during the outage: $(kc cloud-spot get nodeclaims)"
cw=$(metric spillway_nodepool_capacity_wait_seconds "$NPL")
[ "$cw" = 1800 ] || hub_fail "the capacity wait for gpu-spot is \"$cw\", not the 1800 s prior"
# Withdrawn after the bound, and decided again.
wait_record "$A" withdrawals 1 60
t_wd=$(date +%s)
ev=""
for _ in $(seq 1 60); do
    ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=a,reason=MirrorWithdrawn -o jsonpath='{.items[0].message}' 2>/dev/null || true)
    [ -n "$ev" ] && break
    sleep 0.5
done
grep -qE "^withdrawn from cloud-spot: mirror $amirror's pods waited [0-9]+ s for NodePool gpu-spot, short of capacity for [0-9]+ s .*karpenter.shortageWithdrawSeconds \(20 s\)" <<<"$ev" ||
    hub_fail "no MirrorWithdrawn Event on a naming gpu-spot and the bound: \"$ev\""
for _ in $(seq 1 60); do
    [ -z "$(kc cloud-spot get job "$amirror" -n "$NS" -o name 2>/dev/null)" ] && break
    sleep 0.5
done
[ -z "$(kc cloud-spot get job "$amirror" -n "$NS" -o name 2>/dev/null)" ] || hub_fail "the withdrawn mirror $amirror is still on cloud-spot"
wait_metric spillway_nodepool_shortage_withdrawals_total "v == 1" 10
# Decided again: elsewhere, or waiting, never to cloud-spot while short.
adecided=""
for _ in $(seq 1 120); do
    d=$(record_field "$A" decidedMs)
    if [ "$(record_field "$A" withdrawals)" = 1 ] && [ -n "$d" ] && [ "$d" -gt $((t_wd * 1000 - 2000)) ] &&
        [ "$(record_field "$A" state)" != requeued ]; then
        adecided=$d
        break
    fi
    sleep 0.5
done
asum=$(record_field "$A" summary)
[ -n "$adecided" ] || hub_fail "a was not decided again after its withdrawal (state $(record_field "$A" state)): $asum"
sleep 3
atarget=$(record_field "$A" targetCluster)
astate=$(record_field "$A" state)
if [ "$atarget" = cloud-spot ] && [ "$(record_field "$A" attempt)" -gt 1 ] && [ "$astate" != observed ]; then
    hub_fail "a was sent to cloud-spot again while it was short: $asum"
fi
[ "$(kc cloud-spot get jobs -n "$NS" -l "spillway.io/origin-uid=$(kc onprem get job a -n "$NS" -o jsonpath='{.metadata.uid}')" -o name | wc -l)" = 0 ] ||
    hub_fail "a has a mirror on cloud-spot after its withdrawal"
[ "$(basis "$A" cloud-spot capacityWaitFrom)" = prior ] ||
    hub_fail "a's second decision: cloud-spot's capacity wait from \"$(basis "$A" cloud-spot capacityWaitFrom)\", not the prior"
"$SPILLCTL" explain "$A" >"$HUB_TMP/explain"
grep -qE "^  cloud-spot +provisioning .*; capacity short for [0-9]+ s, back in 1800 s expected, the prior \(no shortage of its NodePool seen end yet\)" "$HUB_TMP/explain" ||
    hub_fail "explain does not show a's capacity wait for cloud-spot: $(cat "$HUB_TMP/explain")"
pass "burst during a shortage: a's mirror $amirror waited on gpu-spot with no NodeClaim; the hub saw the shortage (wait given: the ${cw} s prior); withdrawn $((t_wd - adispatched / 1000)) s after dispatch: \"$ev\"; decided again: \"$asum\" (state $astate, target \"$atarget\"); explain: $(grep -E '^  cloud-spot ' "$HUB_TMP/explain" | sed 's/  */ /g')"
# a is not needed any more.
kc onprem delete job a -n "$NS" --wait=false >/dev/null

# ---- the outage ends: the shortage's duration learned -------------------------
# Long enough to tell the learned wait from the prior's (1,800 s) and from
# the second shortage's elapsed time (a few seconds when b is decided).
wait_metric spillway_nodepool_short_seconds "v >= 45" 120
outage off
t_off=$(date +%s)
probe p1
wait_metric spillway_nodepool_shortages_observed_total "v == 1" 120
[ "$(metric spillway_nodepool_short_seconds "$NPL")" = 0 ] || hub_fail "gpu-spot still short after a NodeClaim launched"
[ "$(metric spillway_nodepool_capacity_wait_seconds "$NPL")" = 0 ] || hub_fail "a capacity wait given for gpu-spot after the shortage ended"
learned=""
for _ in $(seq 1 40); do
    learned=$(rcli HGET spillway:learned cloud-spot/gpu-spot)
    grep -q '"shortages":1,' <<<"$learned" && break
    sleep 0.25
done
d1=$(echo "$learned" | python3 -c 'import json,sys; l=json.load(sys.stdin); assert l["shortages"] == 1 and l["shortSinceMs"] == 0, l; print(l["shortageSeconds"][0])') ||
    hub_fail "spillway:learned does not hold gpu-spot's shortage: \"$learned\""
# The test's own account: from the mirror's dispatch (its pod waited from
# then) to the Launched time of the claim that ended it.
claim=$(kc cloud-spot get nodeclaims -l karpenter.sh/nodepool=gpu-spot -o jsonpath='{.items[0].metadata.name}')
launched=$(kc cloud-spot get nodeclaim "$claim" -o json | python3 -c '
import json, sys, datetime
c = json.load(sys.stdin)
t = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
print([int(t(x["lastTransitionTime"])) for x in c["status"]["conditions"] if x["type"] == "Launched" and x["status"] == "True"][0])')
seen=$(awk -v l="$launched" -v d="$adispatched" 'BEGIN { printf "%.1f", l - d / 1000 }')
# The hub dates it from when it first saw the pod waiting (after the
# dispatch, within its 1 s look), to the launch (whole seconds on the API).
awk -v h="$d1" -v s="$seen" 'BEGIN { exit !(h <= s + 1.5 && h >= s - 5) }' ||
    hub_fail "the learned shortage is ${d1} s; from a's dispatch to NodeClaim $claim's launch is ${seen} s"
kc cloud-spot delete pod p1 -n "$NS" --wait=false >/dev/null
pass "outage over (on $((t_off - t_on)) s): NodeClaim $claim launched for a pod, the shortage ended; learned ${d1} s (the test: ${seen} s from the mirror's dispatch to the claim's launch), in spillway:learned: $learned"

# ---- a new shortage: the decision is given the learned wait ---------------------
# gpu-spot back at zero nodes first, so that no idle GPU there serves the
# next pods: its claim deleted (Karpenter drains and removes the node; its
# own consolidation would take 30 s after the node emptied).
# A claim deleted before its node registered leaves that node behind
# (Karpenter's kwok provider makes it after the claim is gone), counted as
# idle GPUs of gpu-spot: it is deleted too.
spot_nodes() { kc cloud-spot get nodes -l karpenter.sh/nodepool=gpu-spot -o name 2>/dev/null | wc -l; }
spot_to_zero() {
    kc cloud-spot delete nodeclaims -l karpenter.sh/nodepool=gpu-spot --wait=false >/dev/null
    for _ in $(seq 1 120); do
        [ "$(spot_claims)" = 0 ] && break
        sleep 1
    done
    [ "$(spot_claims)" = 0 ] || hub_fail "gpu-spot's node was not consolidated: $(kc cloud-spot get nodeclaims)"
    kc cloud-spot delete nodes -l karpenter.sh/nodepool=gpu-spot --wait=false >/dev/null 2>&1 || true
    for _ in $(seq 1 60); do
        [ "$(spot_nodes)" = 0 ] && break
        sleep 0.5
    done
    [ "$(spot_nodes)" = 0 ] || hub_fail "gpu-spot's nodes are still there: $(kc cloud-spot get nodes -l karpenter.sh/nodepool=gpu-spot -o name)"
}
spot_to_zero

outage on
probe p2
wait_metric spillway_nodepool_short_seconds "v > 0" 90
burst_job b 8 60s | kc onprem apply -n "$NS" -f - >/dev/null
B="onprem/$NS/b"
for _ in $(seq 1 120); do
    [ -n "$(record_field "$B" summary)" ] && break
    sleep 0.5
done
bsum=$(record_field "$B" summary)
[ -n "$bsum" ] || hub_fail "no decision for b within 60 s"
bwait=$(basis "$B" cloud-spot capacityWaitSeconds)
bfor=$(basis "$B" cloud-spot shortForSeconds)
[ "$(basis "$B" cloud-spot capacityWaitFrom)" = learned ] && [ "$(basis "$B" cloud-spot shortagesSeen)" = 1 ] ||
    hub_fail "b's decision: cloud-spot's capacity wait from \"$(basis "$B" cloud-spot capacityWaitFrom)\" ($(basis "$B" cloud-spot shortagesSeen) seen), not learned from 1"
# The first shortage's length less how long this one had lasted (5 s at least).
# (The two figures are taken a few milliseconds apart in the round.)
awk -v w="$bwait" -v d="$d1" -v e="$bfor" 'BEGIN { x = d - e; if (x < 5) x = 5; exit !(w - x <= 0.5 && x - w <= 0.5) }' ||
    hub_fail "b was given ${bwait} s for cloud-spot; learned ${d1} s less ${bfor} s elapsed is not that"
"$SPILLCTL" explain "$B" >"$HUB_TMP/explain"
grep -qE "^  cloud-spot +provisioning .*; capacity short for [0-9]+ s, back in [0-9]+ s expected, learned from 1 shortage seen end" "$HUB_TMP/explain" ||
    hub_fail "explain does not show b's learned capacity wait: $(cat "$HUB_TMP/explain")"
sleep 5
[ "$(kc cloud-spot get jobs -n "$NS" -l "spillway.io/origin-uid=$(kc onprem get job b -n "$NS" -o jsonpath='{.metadata.uid}')" -o name | wc -l)" = 0 ] ||
    hub_fail "b was sent to cloud-spot while it was short: $bsum"
pass "a new shortage ($bfor s in when decided): b was given ${bwait} s for cloud-spot (learned ${d1} s less ${bfor} s); \"$bsum\"; explain: $(grep -E '^  cloud-spot ' "$HUB_TMP/explain" | sed 's/  */ /g')"
# b (waiting at home) and p2 no longer needed; the outage over, p2 gets
# its NodeClaim first, which ends the second shortage.
kc onprem delete job b -n "$NS" --wait=false >/dev/null
outage off
wait_metric spillway_nodepool_shortages_observed_total "v == 2" 120
kc cloud-spot delete pod p2 -n "$NS" --wait=false >/dev/null
spot_to_zero

# ---- a crashed Karpenter is not a shortage ----------------------------------------
# cloud-spot's controller killed (SIGKILL: its Lease is left held, no longer
# renewed) just before a Job is sent there: the mirror's pod waits with no
# NodeClaim, as in a shortage, but Karpenter says nothing. 30 s after its
# last renewal (the Lease's 15 s and 15 s more) the hub takes the
# controller as down, not the
# NodePool as short: the mirror is withdrawn (its pods waited the test's
# 20 s bound), the origin stops naming it in the same step, and the Job is
# decided again at once: to on-demand, within 90 s of the kill (a shortage
# would have been given ~100 s learned or the 30 min prior). Nothing is
# learned from it. Started again, the controller renews its Lease and
# gpu-spot takes the next Job at once.
lease_holder() { kc cloud-spot get lease karpenter-leader-election -n kube-system -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true; }
holder0=$(lease_holder)
[ -n "$holder0" ] || hub_fail "cloud-spot's Karpenter holds no Lease kube-system/karpenter-leader-election"
"$TB" karpenter stop cloud-spot >"$KLOG" 2>&1 || hub_fail "testbed karpenter stop: $(tail -5 "$KLOG")"
t_kill=$(date +%s)
# A deadline home cannot keep (its 67 min queue and the runtime's 90th
# percentile, 114 min) but spot (checkpoints every 10 min) and on-demand can:
# without cloud-spot the Job goes on-demand rather than wait at home.
burst_job c 8 60s "" "    spillway.io/deadline: 165m
    spillway.io/checkpoint-interval: 10m" | kc onprem apply -n "$NS" -f - >/dev/null
C="onprem/$NS/c"
wait_record "$C" state dispatched 60
[ "$(record_field "$C" targetCluster)" = cloud-spot ] ||
    hub_fail "c was sent to \"$(record_field "$C" targetCluster)\", not cloud-spot (its Karpenter had just been killed): $(record_field "$C" summary)"
cmirror=$(record_field "$C" mirror)
wait_record "$C" withdrawals 1 60
t_cwd=$(date +%s)
kdown=$(metric spillway_karpenter_down_seconds 'cluster="cloud-spot"')
awk -v v="${kdown:-0}" 'BEGIN { exit !(v > 30) }' ||
    hub_fail "spillway_karpenter_down_seconds{cluster=\"cloud-spot\"} is \"$kdown\" once c's mirror was withdrawn (its Karpenter down)"
# The origin names no withdrawn mirror from then on.
oann() { kc onprem get job c -n "$NS" -o jsonpath="{.metadata.annotations.spillway\.io/$1}"; }
[ "$(oann mirror)" != "$cmirror" ] && [[ "$(oann placed-in)" != *"$cmirror"* ]] ||
    hub_fail "c's origin still names its withdrawn mirror $cmirror: state \"$(oann state)\", placed-in \"$(oann placed-in)\""
cev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=c,reason=MirrorWithdrawn -o jsonpath='{.items[0].message}' 2>/dev/null || true)
echo "$cev" | grep -qE "^withdrawn from cloud-spot: mirror $cmirror's pods waited [0-9]+ s for NodePool gpu-spot, whose Karpenter does not answer \(its Lease kube-system/karpenter-leader-election not renewed for [0-9]+ s\)" ||
    hub_fail "no MirrorWithdrawn Event on c naming its Karpenter down: \"$cev\""
cst=""
for _ in $(seq 1 $(((t_kill + 90 - $(date +%s)) * 2))); do
    cst=$(record_field "$C" state)
    [ "$(record_field "$C" targetCluster)" = cloud-ondemand ] && [ "$cst" = running ] && break
    sleep 0.5
done
[ "$(record_field "$C" targetCluster)" = cloud-ondemand ] && [ "$cst" = running ] ||
    hub_fail "c is not running on cloud-ondemand 90 s after cloud-spot's Karpenter was killed (state $cst, target $(record_field "$C" targetCluster)): $(record_field "$C" summary)"
t_crun=$(date +%s)
[ "$(oann mirror)" = "$(record_field "$C" mirror)" ] || hub_fail "c's origin names mirror \"$(oann mirror)\", not $(record_field "$C" mirror)"
[ -z "$(oann reason)" ] || hub_fail "c's origin still shows a reason once its next mirror runs: \"$(oann reason)\""
"$SPILLCTL" explain "$C" >"$HUB_TMP/explain"
grep -qE "^  cloud-spot +provisioning .*; its Karpenter does not answer \(Lease kube-system/karpenter-leader-election not renewed for [0-9]+ s\): no node added" "$HUB_TMP/explain" ||
    hub_fail "explain does not say cloud-spot's Karpenter was down: $(cat "$HUB_TMP/explain")"
[ "$(metric spillway_nodepool_shortages_observed_total "$NPL")" = 2 ] && [ "$(metric spillway_nodepool_short_seconds "$NPL")" = 0 ] ||
    hub_fail "the crash was taken as a shortage: short $(metric spillway_nodepool_short_seconds "$NPL") s, $(metric spillway_nodepool_shortages_observed_total "$NPL") seen end"
pass "Karpenter of cloud-spot killed: c's mirror $cmirror withdrawn $((t_cwd - t_kill)) s after the kill (\"$cev\"), the origin no longer naming it; c running on cloud-ondemand $((t_crun - t_kill)) s after the kill; nothing learned; explain: $(grep -E '^  cloud-spot ' "$HUB_TMP/explain" | sed 's/  */ /g')"
"$TB" karpenter start cloud-spot >"$KLOG" 2>&1 || hub_fail "testbed karpenter start: $(tail -5 "$KLOG")"
# It leads once it has seen the dead one's Lease unrenewed for 15 s.
holder=""
for _ in $(seq 1 90); do
    holder=$(lease_holder)
    [ -n "$holder" ] && [ "$holder" != "$holder0" ] && break
    sleep 0.5
done
[ -n "$holder" ] && [ "$holder" != "$holder0" ] || hub_fail "cloud-spot's restarted Karpenter did not take its Lease within 45 s (holder \"$holder\")"
# The hub looks at the Lease once a second.
sleep 2
t_start=$(date +%s)
burst_job d 8 60s | kc onprem apply -n "$NS" -f - >/dev/null
D="onprem/$NS/d"
dst=""
for _ in $(seq 1 120); do
    dst=$(record_field "$D" state)
    [ "$(record_field "$D" targetCluster)" = cloud-spot ] && [ "$dst" = running ] && break
    sleep 0.5
done
[ "$(record_field "$D" targetCluster)" = cloud-spot ] && [ "$dst" = running ] ||
    hub_fail "d is not running on cloud-spot 60 s after its Karpenter took its Lease again (state $dst, target $(record_field "$D" targetCluster)): $(record_field "$D" summary)"
[ "$(metric spillway_karpenter_down_seconds 'cluster="cloud-spot"')" = 0 ] ||
    hub_fail "spillway_karpenter_down_seconds{cluster=\"cloud-spot\"} is not 0 once its Karpenter answers again"
pass "Karpenter of cloud-spot started again: d running there $(($(date +%s) - t_start)) s after it took its Lease: $(record_field "$D" summary)"
kc onprem delete job c d -n "$NS" --wait=false >/dev/null
watcher_check
