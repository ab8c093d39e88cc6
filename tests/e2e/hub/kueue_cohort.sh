#!/usr/bin/env bash
# kueue_cohort.sh - a member with two ClusterQueues in one cohort: their
# unused quota is counted once (docs/kueue.md, "The home option's wait").
# For the test onprem's GPU nodes get 8 GPUs each (16 in all; put back by
# testbed reseed after) and a second ClusterQueue, side-$NS, joins cohort
# onprem with 4 GPUs of nominal quota and nothing reserved. The filler
# holds the 8 of onprem's ClusterQueue gpu, so gpu may still borrow the 4
# side has unused, and no more, while 8 GPUs are idle on the nodes.
# Under the outside watcher:
#   1. a burstable Job of 2 x 3 GPUs in LocalQueue gpu can never be given
#      quota now (4 at most): home has no room for it, it bursts to
#      cloud-spot and completes once, never started at home. (Each queue's
#      headroom summed, gpu's 4 borrowed and side's own 4, counts the same 4
#      twice: 8 GPUs of room, the Job would stay waiting for quota at home.)
#   2. its decision names its ClusterQueue, gpu, with onprem having two: a
#      pending Workload does not name its queue, the LocalQueue does.
#   3. a third ClusterQueue, solo-$NS, in no cohort, with 8 GPUs of nominal
#      quota unused: a second Job of 2 x 3 GPUs in LocalQueue gpu still
#      bursts. Each ClusterQueue is a home of its own (docs/kueue.md, "The
#      home option's wait"): gpu may reserve 4, whatever solo has unused.
#      (All of onprem's ClusterQueues together may reserve 12, 8 of them
#      idle on the nodes: counted so, the Job would stay waiting for quota.)
#   4. the same on the cloud side: cloud-spot, re-registered to queue mirrors
#      in LocalQueue tight, gets a second ClusterQueue, tight-$NS, with 4
#      GPUs of nominal quota, behind that LocalQueue in the test's
#      namespace, while its ClusterQueue gpu has 64. A third Job of 2 x 3
#      GPUs, cloud-first, goes straight to cloud-ondemand: the mirror's own
#      queue in cloud-spot may reserve 4, whatever gpu has. (Summed,
#      cloud-spot had 68 and room: the mirror would wait unadmitted in
#      tight until withdrawn after kueue.mirrorAdmissionSeconds, then go
#      elsewhere.)
#   5. a mirror tight's Kueue admitted but whose pods are not made yet (a
#      ResourceQuota of no pods in the test's namespace on cloud-spot holds
#      them back) is counted once. With side gone (gpu may borrow nothing
#      now), a Job of 1 x 2 GPUs, cloud-first, goes to tight, whose 4 GPUs
#      hold its 2 reserved, and a second one after it goes there too, into
#      the 2 left. (Counted as promised to cloud-spot
#      as well as reserved in tight, tight had no room left: the second
#      went to cloud-ondemand.) With the quota gone, both succeed once.
#   6. a cloud member registered without a LocalQueue has its Kueue read
#      before the first mirror is sent there: cloud-ondemand gets
#      LocalQueue other on ClusterQueue small-$NS (2 GPUs), and a Job of
#      2 x 3 GPUs, cloud-first, in LocalQueue other at home has no cloud
#      option (tight 4, small 2): it stays at home, no mirror anywhere, and
#      runs at home once the filler is gone. (Read only once a mirror is
#      queued there, cloud-ondemand counted its nodes' room: the mirror
#      went into other and waited unadmitted.)
#   7. a Workload ahead counts for the time Kueue lets it run: a Job of 8
#      GPUs, not burstable, created after big in LocalQueue gpu with
#      kueue.x-k8s.io/max-exec-time-seconds 600, waits ahead of big; big's
#      home wait grows from 30 min (the filler's pods) by at most the 10 min
#      that Job may run, not by the 1 h a Workload without a runtime counts.
#   8. a cloud pool counts only the flavours its mirrors can be admitted to:
#      cloud-spot, re-registered to queue mirrors in LocalQueue mixed, gets
#      ClusterQueue mixed-$NS of two flavours, od-$NS first (a ResourceFlavor
#      of karpenter.sh/capacity-type on-demand, 60 GPUs), then the spot one
#      (2 GPUs). A cloud-first Job of 2 x 2 GPUs goes to cloud-ondemand: a
#      spot mirror (its node selector names spot) may be admitted only to
#      the spot flavour. (Counted over both flavours, mixed had 62 and room:
#      the mirror went to cloud-spot and waited unadmitted.) A Job of 1 x 2
#      then goes to cloud-spot, admitted to the spot flavour, od-$NS passed
#      over by Kueue itself.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TESTBED="$SW_SOURCE_DIR/tests/testbed/testbed"
hub_setup kueue-cohort
[ -f "$SW_LAB_DIR/kueue/on" ] || fail "the lab's Kueue is off (testbed kueue up)"
SIDE="side-$NS" SOLO="solo-$NS" TIGHT="tight-$NS" SMALL="small-$NS" MIXED="mixed-$NS" OD="od-$NS"
trap 'kc onprem delete clusterqueue "$SIDE" "$SOLO" --ignore-not-found --wait=false >/dev/null 2>&1
kc cloud-spot delete clusterqueue "$TIGHT" "$MIXED" --ignore-not-found --wait=true --timeout=20s >/dev/null 2>&1
kc cloud-spot delete resourceflavor "$OD" --ignore-not-found --wait=false >/dev/null 2>&1
kc cloud-ondemand delete clusterqueue "$SMALL" --ignore-not-found --wait=false >/dev/null 2>&1
"$TESTBED" reseed onprem >/dev/null 2>&1 || true; hub_cleanup' EXIT

# gpu_queue CLUSTER NAME FLAVOUR GPUS COHORT SELECTOR: a ClusterQueue of
# nvidia.com/gpu only (COHORT "" for none; SELECTOR its namespaceSelector).
gpu_queue() {
    cat <<YAML | kc "$1" apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $2}
spec:
  ${5:+cohortName: $5}
  namespaceSelector: $6
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $3
      resources:
      - {name: nvidia.com/gpu, nominalQuota: $4}
YAML
    kc "$1" wait --for=condition=Active "clusterqueue/$2" --timeout=30s >/dev/null ||
        hub_fail "ClusterQueue $2 on $1 is not active"
}

# ran_once JOB TARGET: JOB's record succeeded (within 240 s) in TARGET, the
# origin never started at home, one mirror.
ran_once() {
    local key="onprem/$NS/$1"
    wait_record "$key" state succeeded 240
    [ "$(record_field "$key" targetCluster)" = "$2" ] ||
        hub_fail "$1 ran in $(record_field "$key" targetCluster), not $2"
    [ "$(kc onprem get job "$1" -n "$NS" -o jsonpath='{.status.startTime}')" = "" ] || hub_fail "$1 started at home"
    one_mirror_each "$1"
}

# cloud_first NAME GPUS PODS: a burstable Job of PODS x GPUS in LocalQueue
# gpu that takes the cheapest cloud option rather than weigh the wait at home.
cloud_first() {
    kueue_job "$1" "$2" "$3" 10s yes | sed 's|spillway.io/burst: auto|spillway.io/burst: cloud-first|'
}

# listed KIND: how many times the hub has listed cloud-spot's KIND.
listed() {
    grep -c "msg=\"listed\" informer=\"$1 on cloud-spot\"" "$HUB_TMP/hub.log" || true
}

# spot_queues_into LQ: cloud-spot registered again to queue mirrors in its
# LocalQueue LQ, once the hub has read the registry (every 10 s), reconnected
# it and listed its Kueue again (until then it has no room: a member that
# queues mirrors in Kueue the hub does not read yet).
spot_queues_into() {
    local k i ok before=()
    local kinds=(Workloads ClusterQueues ResourceFlavors)
    for k in "${kinds[@]}"; do before+=("$(listed "$k")"); done
    "$SPILLCTL" cluster add cloud-spot --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-cert.kubeconfig" \
        --role cloud --region us-east-1 --local-queue "$1" --replace \
        --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
    for i in $(seq 1 120); do
        ok=1
        for k in 0 1 2; do
            [ "$(listed "${kinds[$k]}")" -gt "${before[$k]}" ] || ok=""
        done
        [ -n "$ok" ] && break
        sleep 0.25
    done
    [ -n "$ok" ] || hub_fail "the hub did not list cloud-spot's Kueue again within 30 s of its registration with LocalQueue $1"
}

cohort=$(kc onprem get clusterqueue gpu -o jsonpath='{.spec.cohortName}')
[ -n "$cohort" ] || hub_fail "onprem's ClusterQueue gpu is in no cohort"
flavor=$(kc onprem get clusterqueue gpu -o jsonpath='{.spec.resourceGroups[0].flavors[0].name}')
nodes=$(node_resources onprem '{"cpu":"96","memory":"1000Gi","pods":"110","nvidia.com/gpu":"8"}')
[ "$nodes" = 2 ] || hub_fail "onprem has $nodes kwok GPU nodes, not 2"
gpu_queue onprem "$SIDE" "$flavor" 4 "$cohort" "{matchLabels: {kubernetes.io/metadata.name: none-$NS}}"
local_queue onprem

watcher_start
kueue_filler
hub_start

# ---- 1. 6 GPUs asked, 4 of quota left in the cohort, 8 idle on the nodes --
kueue_job wide 3 2 10s yes | kc onprem apply -n "$NS" -f - >/dev/null
W="onprem/$NS/wide"
ran_once wide cloud-spot
pass "6 GPUs asked in ClusterQueue gpu (8/8 reserved, 4 to borrow in cohort $cohort, 8 idle on the nodes): burst to cloud-spot, succeeded once"

# ---- 2. its decision names its ClusterQueue ---------------------------------
dec=$(kc onprem get job wide -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/decision}')
[[ "$dec" =~ ^queued\ in\ ClusterQueue\ gpu:\ 8/8\ GPUs\ reserved,\ [0-9]+\ Workloads?\ ahead\;\ burst\ to\ cloud-spot\ \(spot\):\  ]] ||
    hub_fail "wide's decision does not name ClusterQueue gpu: \"$dec\""
kq=$(rcli GET "spillway:job:$W" | python3 -c 'import json,sys; k=json.load(sys.stdin)["kueue"]; print(k["clusterQueue"], k["localQueue"], k["reservedGpus"], k["nominalGpus"])')
[ "$kq" = "gpu gpu 8 8" ] || hub_fail "the record's kueue is \"$kq\", not \"gpu gpu 8 8\""
pass "onprem has two ClusterQueues; the decision names wide's own: \"$dec\""

# ---- 3. a ClusterQueue outside the cohort with room: not wide's home ------
gpu_queue onprem "$SOLO" "$flavor" 8 "" "{matchLabels: {kubernetes.io/metadata.name: none-$NS}}"
kueue_job wider 3 2 10s yes | kc onprem apply -n "$NS" -f - >/dev/null
W2="onprem/$NS/wider"
ran_once wider cloud-spot
dec=$(kc onprem get job wider -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/decision}')
[[ "$dec" =~ ^queued\ in\ ClusterQueue\ gpu:\ 8/8\ GPUs\ reserved,\ [0-9]+\ Workloads?\ ahead\;\ burst\ to\ cloud-spot\ \(spot\):\  ]] ||
    hub_fail "wider's decision does not name ClusterQueue gpu: \"$dec\""
# The explanation: the member's view summed over its queues is not wider's
# home; its own queue's is, with no GPU it may reserve now.
expl=$("$SPILLCTL" explain "$W2" -o json) || hub_fail "spillctl explain $W2 failed"
echo "$expl" | python3 -c '
import json, sys
opts = {o["pool"]: o for o in json.load(sys.stdin)["decision"]["options"]}
own = opts["onprem/gpu"]
assert own["excluded"] == "none" and own["stay"], own
others = [o for p, o in opts.items() if o["stay"] and p != "onprem/gpu"]
assert len(others) == 3 and "onprem" in opts, others  # the summed view, side, solo
assert all(o["excluded"] == "other-queue" for o in others), others
' || hub_fail "wider's explanation does not show its own ClusterQueue as its only home: $expl"
pass "ClusterQueue $SOLO (no cohort) with 8 unused: 6 GPUs asked in gpu (4 it may reserve) burst to cloud-spot, succeeded once; its home was ClusterQueue gpu's own view"

# ---- 4. cloud-spot's mirror queue has no room for it, its other queue has --
spot_flavor=$(kc cloud-spot get clusterqueue gpu -o jsonpath='{.spec.resourceGroups[0].flavors[0].name}')
[ -n "$spot_flavor" ] || hub_fail "cloud-spot's ClusterQueue gpu names no flavour"
gpu_queue cloud-spot "$TIGHT" "$spot_flavor" 4 "" "{}"
cat <<YAML | kc cloud-spot apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: tight, namespace: $NS}
spec: {clusterQueue: $TIGHT}
YAML
spot_queues_into tight
cloud_first narrow 3 2 | kc onprem apply -n "$NS" -f - >/dev/null
W3="onprem/$NS/narrow"
ran_once narrow cloud-ondemand
[ "$(record_field "$W3" withdrawals)" = 0 ] ||
    hub_fail "narrow's mirror was withdrawn $(record_field "$W3" withdrawals) times: it was sent to a queue without room"
expl=$("$SPILLCTL" explain "$W3" -o json) || hub_fail "spillctl explain $W3 failed"
echo "$expl" | python3 -c '
import json, sys
opts = {o["pool"]: o for o in json.load(sys.stdin)["decision"]["options"]}
assert opts["cloud-spot"]["excluded"] == "other-queue", opts["cloud-spot"]
assert opts["cloud-spot/gpu"]["excluded"] == "other-queue", opts["cloud-spot/gpu"]
tight = [o for p, o in opts.items() if p.startswith("cloud-spot/tight")]
assert len(tight) == 1 and tight[0]["excluded"] in ("never-fits", "capacity"), tight
' || hub_fail "narrow's explanation does not show cloud-spot's queue tight as its only option there: $expl"
pass "cloud-spot's LocalQueue tight on ClusterQueue $TIGHT (4 GPUs) beside gpu (64): 6 GPUs asked went straight to cloud-ondemand, no mirror withdrawn, succeeded once"

# ---- 5. a mirror Kueue admitted, its pods not made yet: counted once -----
kc onprem delete clusterqueue "$SIDE" --wait=true --timeout=30s >/dev/null
cat <<YAML | kc cloud-spot apply -f - >/dev/null
apiVersion: v1
kind: ResourceQuota
metadata: {name: no-pods, namespace: $NS}
spec: {hard: {pods: "0"}}
YAML
cloud_first first 1 2 | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/first" state dispatched 60
[ "$(record_field "onprem/$NS/first" targetCluster)" = cloud-spot ] ||
    hub_fail "first went to $(record_field "onprem/$NS/first" targetCluster), not cloud-spot"
reserved=""
for _ in $(seq 1 120); do
    reserved=$(kc cloud-spot get clusterqueue "$TIGHT" -o jsonpath='{.status.flavorsReservation[0].resources[0].total}')
    [ "$reserved" = 2 ] && break
    sleep 0.5
done
[ "$reserved" = 2 ] || hub_fail "ClusterQueue $TIGHT on cloud-spot reserved \"$reserved\" GPUs for first's mirror, not 2"
mirror=$(record_field "onprem/$NS/first" mirror)
pods=$(kc cloud-spot get pods -n "$NS" -l "batch.kubernetes.io/job-name=$mirror" -o name | wc -l)
[ "$pods" = 0 ] || hub_fail "first's mirror has $pods pods in cloud-spot: the ResourceQuota did not hold them back"
sleep 2 # the hub's Workload informer on cloud-spot
cloud_first second 1 2 | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/second" state dispatched 60
[ "$(record_field "onprem/$NS/second" targetCluster)" = cloud-spot ] ||
    hub_fail "second went to $(record_field "onprem/$NS/second" targetCluster), not cloud-spot: first's 2 GPUs, reserved in $TIGHT, were counted twice"
pass "first's mirror reserved 2 of $TIGHT's 4 GPUs, no pod made yet: second (2 GPUs) went to cloud-spot too, into the 2 left"
kc cloud-spot delete resourcequota no-pods -n "$NS" >/dev/null
ran_once first cloud-spot
ran_once second cloud-spot
pass "with the ResourceQuota gone, first and second succeeded once in cloud-spot"

# ---- 6. a cloud member's Kueue read before its first mirror --------------
od_flavor=$(kc cloud-ondemand get clusterqueue gpu -o jsonpath='{.spec.resourceGroups[0].flavors[0].name}')
[ -n "$od_flavor" ] || hub_fail "cloud-ondemand's ClusterQueue gpu names no flavour"
! grep -q 'informer="Workloads on cloud-ondemand"' "$HUB_TMP/hub.log" ||
    hub_fail "the hub read cloud-ondemand's Kueue before the case that tests when it does"
gpu_queue cloud-ondemand "$SMALL" "$od_flavor" 2 "" "{}"
for c in onprem:gpu cloud-ondemand:$SMALL; do
    cat <<YAML | kc "${c%%:*}" apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: other, namespace: $NS}
spec: {clusterQueue: ${c#*:}}
YAML
done
cloud_first big 3 2 | sed 's|queue-name: gpu|queue-name: other|' | kc onprem apply -n "$NS" -f - >/dev/null
W6="onprem/$NS/big"
summary=$(decided_summary "$W6" 60)
[[ "$summary" == "stay at home (onprem"* ]] ||
    hub_fail "big (6 GPUs; cloud-ondemand's LocalQueue other has 2) was not kept at home: \"$summary\", state $(record_field "$W6" state), target $(record_field "$W6" targetCluster)"
grep -q 'informer="Workloads on cloud-ondemand"' "$HUB_TMP/hub.log" ||
    hub_fail "the hub decided big without reading cloud-ondemand's Kueue"
sleep 5
n=$(mirrors_of big)
[ "$n" = 0 ] || hub_fail "big has $n mirrors"
pass "cloud-ondemand's Kueue read before its first mirror: big (6 GPUs, LocalQueue other, 2 GPUs behind it there) kept at home: \"$summary\""

# ---- 7. a Workload ahead, its maximum execution time -----------------------
# minutes NAME: the minutes of home wait in the summary of NAME's record.
minutes() {
    record_field "onprem/$NS/$1" summary | sed -n 's/.*, \([0-9][0-9]*\) min wait.*/\1/p'
}
before=$(minutes big)
[ "$before" = 30 ] || hub_fail "big's home wait is \"$before\" min, not 30 (the filler's pods): $(record_field "$W6" summary)"
kueue_job ahead 8 1 10s no | sed 's|queue-name: gpu}|queue-name: gpu, kueue.x-k8s.io/max-exec-time-seconds: "600"}|' |
    kc onprem apply -n "$NS" -f - >/dev/null
[ "$(kc onprem get job ahead -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/max-exec-time-seconds}')" = 600 ] ||
    hub_fail "ahead has no max-exec-time-seconds label"
after=""
for _ in $(seq 1 120); do
    after=$(minutes big)
    [ -n "$after" ] && [ "$after" != 30 ] && break
    sleep 0.5
done
[ -n "$after" ] && [ "$after" -gt 30 ] && [ "$after" -le 40 ] ||
    hub_fail "with ahead (8 GPUs, 600 s at most) waiting in gpu, big's home wait is \"$after\" min, not 31-40: $(record_field "$W6" summary)"
pass "a Workload ahead that Kueue lets run 600 s at most: big's home wait from $before to $after min (an hour's prior would add 60)"

# ---- 8. a spot pool counts only the flavours a spot mirror can have -------
cat <<YAML | kc cloud-spot apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: $OD}
spec: {nodeLabels: {karpenter.sh/capacity-type: on-demand}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $MIXED}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $OD
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 60}
    - name: $spot_flavor
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: mixed, namespace: $NS}
spec: {clusterQueue: $MIXED}
YAML
kc cloud-spot wait --for=condition=Active "clusterqueue/$MIXED" --timeout=30s >/dev/null ||
    hub_fail "ClusterQueue $MIXED on cloud-spot is not active"
spot_queues_into mixed
cloud_first pair 2 2 | kc onprem apply -n "$NS" -f - >/dev/null
W8="onprem/$NS/pair"
decided_summary "$W8" 60 >/dev/null
[ "$(record_field "$W8" targetCluster)" = cloud-ondemand ] ||
    hub_fail "pair (4 GPUs) went to $(record_field "$W8" targetCluster), not cloud-ondemand: $MIXED's on-demand flavour counted for a spot mirror"
expl=$("$SPILLCTL" explain "$W8" -o json) || hub_fail "spillctl explain $W8 failed"
echo "$expl" | python3 -c '
import json, sys
opts = {o["pool"]: o for o in json.load(sys.stdin)["decision"]["options"]}
mixed = [o for p, o in opts.items() if p.startswith("cloud-spot/mixed")]
assert len(mixed) == 1 and mixed[0]["excluded"] in ("never-fits", "capacity"), mixed
' || hub_fail "pair's explanation does not show cloud-spot's queue mixed as too small: $expl"
ran_once pair cloud-ondemand
pass "ClusterQueue $MIXED on cloud-spot, flavours $OD (on-demand, 60 GPUs) then $spot_flavor (2): 4 GPUs asked went to cloud-ondemand, succeeded once"
cloud_first one 2 1 | kc onprem apply -n "$NS" -f - >/dev/null
fl=""
for _ in $(seq 1 120); do
    mirror=$(record_field "onprem/$NS/one" mirror)
    fl=$(kc cloud-spot get workloads -n "$NS" -o json | python3 -c '
import json, sys
for w in json.load(sys.stdin)["items"]:
    if any(r.get("name") == sys.argv[1] for r in w["metadata"].get("ownerReferences", [])):
        a = w.get("status", {}).get("admission")
        if a:
            print(a["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"])
' "$mirror")
    [ -n "$fl" ] && break
    sleep 0.5
done
[ "$fl" = "$spot_flavor" ] || hub_fail "one's mirror was admitted to flavour \"$fl\", not $spot_flavor"
ran_once one cloud-spot
pass "2 GPUs asked went to cloud-spot's $MIXED, admitted to flavour $spot_flavor ($OD, first, passed over), succeeded once"

# ---- big, kept at home in case 6, runs there once the filler is gone ------
kc onprem delete job filler -n "$NS" --wait=false >/dev/null
wait_record "$W6" state succeeded 120
[ "$(record_field "$W6" targetCluster)" = onprem ] || hub_fail "big ran in $(record_field "$W6" targetCluster), not at home"
[ "$(mirrors_of big)" = 0 ] || hub_fail "big has a mirror"
pass "with the filler gone, big ran at home once"

watcher_check
