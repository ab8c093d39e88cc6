#!/usr/bin/env bash
# kueue.sh - the hub with Kueue queueing the on-prem Jobs (testbed kueue up;
# started here if it is not on, and stopped again at the end then). The
# test's namespace gets a LocalQueue "gpu" on onprem's ClusterQueue "gpu"
# (8 GPUs); every Job below carries the queue-name label and is created
# unsuspended (Kueue's webhook suspends it). Under the outside watcher:
#   1. no hub running: three burstable 4-GPU Jobs are admitted by Kueue as
#      without spillway, two at once, the third once quota frees, and all
#      complete at home;
#   2. a hub running, quota full, cloud-spot registered to queue mirrors in
#      LocalQueue gpu: while that LocalQueue is missing there, the Job is
#      blocked (named) and left in Kueue; once it exists, the Job whose
#      Workload is pending for quota is taken from Kueue (queue-name label
#      gone, Workload inactive) and its mirror is admitted by cloud-spot's
#      Kueue and completes, the origin never started at home; its Burst
#      Event, decision annotation, spillctl status -o wide and explain name
#      ClusterQueue gpu with 8/8 GPUs reserved, and
#      spillway_kueue_bursts_total counts 1 for it;
#   3. Kueue preemption: a burstable Job of priority low running at home is
#      evicted by a Job of priority high (ClusterQueue preemption
#      withinClusterQueue: LowerPriority); the evicted Job is a candidate
#      again, is taken from Kueue and runs once, in the cloud;
#   4. the race, KUEUE_ROUNDS rounds (5; its contested paths are forced
#      in 7) of KUEUE_PER_ROUND (5) burstable
#      Jobs queued behind a filler holding the quota, deleted 0-0.8 s after
#      they are sent, as the hub decides: each Job completes once, in one
#      place, whichever of Kueue or the hub takes it, and one run in the
#      cloud was never started at home;
#   4b. cloud-spot's only ClusterQueue stopped (stopPolicy HoldAndDrain)
#      while a mirror runs there: Kueue evicts it, and the hub takes that as
#      a lost attempt (Requeued Event naming the eviction, the mirror
#      deleted, the Job decided again and run once more elsewhere); then, the
#      queue held, its headroom is 0, the hub counts no room there, and a
#      burstable Job goes elsewhere or waits, no mirror ever made in
#      cloud-spot;
#   5. cloud-spot queues mirrors in a LocalQueue whose ClusterQueue has GPU
#      quota but a flavour whose node taint the mirror does not tolerate, so
#      Kueue never admits it: the mirror is withdrawn after kueue.mirrorAdmissionSeconds
#      (KUEUE_ADMISSION_S, 15 s here), never having started, with an Event
#      naming the cluster, queue and wait; the Job is decided again and runs
#      once elsewhere, its new mirror in the LocalQueue of the origin's own
#      queue's name there (cloud-ondemand, registered without --local-queue,
#      or home), admitted by that cluster's ClusterQueue;
#   6. a hub killed at the crash point after-suspend, just after the take:
#      a hub started then deactivates the Job's Workload (found from the
#      take's annotation) before the mirror, and the Job runs once;
#   7. the race's contested paths forced with the hub's hold points
#      (SPILLWAY_TEST_HOLD) while the quota frees: a take sent after Kueue
#      started the Job is refused (409) and the burst abandoned, the Job run
#      once at home; a Workload Kueue reserved quota for after the take is
#      deactivated, the Job never started at home, run once in the cloud.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROUNDS=${KUEUE_ROUNDS:-5}
PER_ROUND=${KUEUE_PER_ROUND:-5}
TESTBED="$SW_SOURCE_DIR/tests/testbed/testbed"
STARTED_KUEUE=""
hub_needs_failpoints
hub_setup kueue
if ! [ -f "$SW_LAB_DIR/kueue/on" ]; then
    "$TESTBED" kueue up >/dev/null
    STARTED_KUEUE=1
fi
# Section 5's ClusterQueue is cluster-scoped: deleted here (Kueue, still
# running, releases it), before Kueue goes down if the test started it.
HELD_CQ="held-$NS"
CQ_HELD=""
trap '[ -n "$CQ_HELD" ] && kc cloud-spot patch clusterqueue gpu --type=merge -p "{\"spec\":{\"stopPolicy\":\"None\"}}" >/dev/null 2>&1
kc cloud-spot delete clusterqueue "$HELD_CQ" --ignore-not-found --wait=false >/dev/null 2>&1
kc cloud-spot delete resourceflavor "$HELD_CQ" --ignore-not-found --wait=false >/dev/null 2>&1
[ -n "$STARTED_KUEUE" ] && "$TESTBED" kueue down >/dev/null 2>&1; hub_cleanup' EXIT
# A mirror unadmitted this long in the target's queue is withdrawn (section 5).
printf 'kueue:\n  mirrorAdmissionSeconds: %s\n' "${KUEUE_ADMISSION_S:-15}" >>"$HUB_TMP/hub.yaml"
local_queue onprem


# workload_of JOB: the name of the Job's Workload ("" while none).
workload_of() {
    local uid
    uid=$(kc onprem get job "$1" -n "$NS" -o jsonpath='{.metadata.uid}')
    kc onprem get workloads -n "$NS" -l "kueue.x-k8s.io/job-uid=$uid" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null
}

# wait_complete JOB CLUSTER SECONDS
wait_complete() {
    kc "$2" wait --for=condition=complete "job/$1" -n "$NS" --timeout="$3s" >/dev/null ||
        hub_fail "job $1 did not complete in $2 within $3 s"
}

watcher_start

# ---- 1. no hub: Kueue admits as without spillway ---------------------------
for j in home-a home-b home-c; do kueue_job "$j" 4 1 6s yes | kc onprem apply -n "$NS" -f - >/dev/null; done
[ "$(kueue_job probe 4 1 1s yes | kc onprem apply -n "$NS" --dry-run=server -o jsonpath='{.spec.suspend}' -f -)" = true ] ||
    hub_fail "Kueue's webhook does not suspend a Job created unsuspended"
pending_seen=""
for _ in $(seq 1 40); do
    for j in home-a home-b home-c; do
        wl=$(workload_of "$j")
        [ -n "$wl" ] || continue
        msg=$(kc onprem get workload "$wl" -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="QuotaReserved")].message}')
        case "$msg" in *"insufficient unused quota"*) pending_seen="$j: $msg" ;; esac
    done
    [ -n "$pending_seen" ] && break
    sleep 0.25
done
[ -n "$pending_seen" ] || hub_fail "no Workload was seen pending for quota with 12 GPUs asked of 8"
for j in home-a home-b home-c; do wait_complete "$j" onprem 60; done
for j in home-a home-b home-c; do
    [ "$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
        hub_fail "$j lost its queue-name label with no hub running"
    [ "$(mirrors_of "$j")" = 0 ] || hub_fail "$j has a mirror with no hub running"
done
pass "no hub: Kueue admitted and ran all three Jobs at home (pending for quota seen: \"$pending_seen\")"

# ---- 2. quota full: taken from Kueue, run in the cloud's queue ----------------
# cloud-spot queues mirrors in LocalQueue gpu, not there yet in the test's
# namespace: the Job is blocked and left alone until it is.
"$SPILLCTL" cluster add cloud-spot --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-cert.kubeconfig" \
    --role cloud --region us-east-1 --local-queue gpu --replace \
    --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
hub_start
kueue_filler
sleep 11 # the hub reads the registry every 10 s
kueue_job spill 4 1 10s yes | kc onprem apply -n "$NS" -f - >/dev/null
S="onprem/$NS/spill"
wait_record "$S" state blocked 60
reason=$(record_field "$S" reason)
case "$reason" in *"LocalQueue $NS/gpu"*"does not exist"*) ;; *) hub_fail "blocked for another reason: $reason" ;; esac
ev=$(event_message spill BurstRefused 10)
[ "$ev" = "$reason" ] || hub_fail "no BurstRefused event with the reason: \"$ev\""
[ "$(kc onprem get job spill -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
    hub_fail "the blocked Job was taken from Kueue"
pass "a LocalQueue missing in the target: spill blocked and left in Kueue (\"$reason\")"
cat <<YAML | kc cloud-spot apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpu, namespace: $NS}
spec: {clusterQueue: gpu}
YAML
wait_record "$S" state succeeded 120
[ "$(record_field "$S" targetCluster)" = cloud-spot ] || hub_fail "spill ran in $(record_field "$S" targetCluster)"
m=$(record_field "$S" mirror)
[ "$(kc cloud-spot get job "$m" -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
    hub_fail "the mirror $m is not in cloud-spot's LocalQueue gpu"
mw=$(kc cloud-spot get workloads -n "$NS" -l "kueue.x-k8s.io/job-uid=$(kc cloud-spot get job "$m" -n "$NS" -o jsonpath='{.metadata.uid}')" \
    -o jsonpath='{.items[0].status.admission.clusterQueue}')
[ "$mw" = gpu ] || hub_fail "the mirror's Workload was not admitted by cloud-spot's ClusterQueue gpu (\"$mw\")"
[ "$(kc onprem get job spill -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = "" ] ||
    hub_fail "spill still has its queue-name label"
[ "$(kc onprem get job spill -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/kueue-queue}')" = gpu ] ||
    hub_fail "spill does not keep the LocalQueue it was taken from (annotation spillway.io/kueue-queue)"
wl=$(workload_of spill)
[ "$(kc onprem get workload "$wl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] ||
    hub_fail "spill's Workload $wl is still active"
[ "$(kc onprem get job spill -n "$NS" -o jsonpath='{.status.startTime}')" = "" ] ||
    hub_fail "spill started at home"
one_mirror_each spill
pass "quota full: spill taken from Kueue (label removed, Workload $wl inactive), admitted by cloud-spot's Kueue and succeeded there"
# What people see: the origin says why in its queue's figures (the filler
# holds the 8 GPUs of onprem's only ClusterQueue, gpu), before the engine's.
dec=$(kc onprem get job spill -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/decision}')
[[ "$dec" =~ ^queued\ in\ ClusterQueue\ gpu:\ 8/8\ GPUs\ reserved,\ ([0-9]+)\ Workloads?\ ahead\;\ burst\ to\ cloud-spot\ \(spot\):\ \$[0-9.]+\ expected\ vs\ .+\ wait\ at\ home$ ]] ||
    hub_fail "spill's decision does not name its queue: \"$dec\""
ahead=${BASH_REMATCH[1]}
[ "$(record_field "$S" summary)" = "$dec" ] || hub_fail "the record's summary is not the origin's decision: \"$(record_field "$S" summary)\""
bev=""
for _ in $(seq 1 40); do
    bev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=spill,reason=Burst -o jsonpath='{.items[0].message}' 2>/dev/null || true)
    [ -n "$bev" ] && break
    sleep 0.25
done
[ "$bev" = "$dec; mirror cloud-spot/$NS/$m (attempt 1)" ] || hub_fail "spill's Burst Event does not say why in its queue's figures: \"$bev\""
kq=$(rcli GET "spillway:job:$S" | python3 -c 'import json,sys; k=json.load(sys.stdin)["kueue"]; print(k["clusterQueue"], k["localQueue"], k["reservedGpus"], k["nominalGpus"], k["ahead"])')
[ "$kq" = "gpu gpu 8 8 $ahead" ] || hub_fail "the record's kueue is \"$kq\", not \"gpu gpu 8 8 $ahead\""
row=$("$SPILLCTL" status -n "$NS" -o wide | grep "^onprem/$NS/spill ") || hub_fail "spillctl status -o wide lists no spill"
[[ "$row" == *" gpu 8/8, $ahead ahead "* ]] || hub_fail "spillctl status -o wide shows no QUEUE gpu 8/8, $ahead ahead: \"$row\""
hdr=$("$SPILLCTL" status -n "$NS" -o wide | head -1)
[[ "$hdr" == *" QUEUE "* ]] || hub_fail "spillctl status -o wide has no QUEUE column: \"$hdr\""
eq=$("$SPILLCTL" explain "$S" | grep '^Queue:') || hub_fail "spillctl explain $S shows no Queue line"
want_eq="Queue:     queued in ClusterQueue gpu: 8/8 GPUs reserved, $ahead Workload$([ "$ahead" = 1 ] || echo s) ahead (LocalQueue gpu), when decided"
[ "$eq" = "$want_eq" ] || hub_fail "spillctl explain: \"$eq\", not \"$want_eq\""
kb=$(curl -sf http://127.0.0.1:19464/metrics | grep '^spillway_kueue_bursts_total' || true)
[ "$kb" = 'spillway_kueue_bursts_total{cluster="onprem",cluster_queue="gpu"} 1' ] ||
    hub_fail "spillway_kueue_bursts_total is not 1 for onprem's ClusterQueue gpu: \"$kb\""
pass "what people see: the Burst Event \"$bev\"; status -o wide \"$(echo "$row" | grep -o "gpu 8/8, $ahead ahead")\"; explain \"$eq\"; $kb"
kc onprem delete job filler -n "$NS" --wait=true >/dev/null

# ---- 3. Kueue preemption: the evicted Job is a candidate again -------------
[ "$(kc onprem get clusterqueue gpu -o jsonpath='{.spec.preemption.withinClusterQueue}')" = LowerPriority ] ||
    hub_fail "onprem's ClusterQueue gpu does not preempt lower priorities (its queues predate that: testbed kueue down, then up)"
# victim (burstable, priority low) takes the whole quota and runs at home;
# vip (not burstable, priority high) makes Kueue evict it. Its pods complete
# 40 s after they start: long enough to be preempted first.
kueue_job victim 4 2 40s yes low | kc onprem apply -n "$NS" -f - >/dev/null
kc onprem wait --for=jsonpath='{.status.active}'=2 job/victim -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "victim did not start at home"
V="onprem/$NS/victim"
wait_record "$V" state observed 30
[ "$(mirrors_of victim)" = 0 ] || hub_fail "victim has a mirror while it runs at home"
kueue_job vip 4 2 3600s no high | kc onprem apply -n "$NS" -f - >/dev/null
vwl=$(workload_of victim)
preempted=""
for _ in $(seq 1 120); do
    preempted=$(kc onprem get events -n "$NS" -o jsonpath='{.items[*].message}' --field-selector \
        "involvedObject.kind=Workload,involvedObject.name=$vwl,reason=Preempted")
    [ -n "$preempted" ] && break
    sleep 0.25
done
[ -n "$preempted" ] || hub_fail "Kueue did not preempt victim's Workload $vwl for vip"
wait_record "$V" state succeeded 150
[ "$(record_field "$V" targetCluster)" = cloud-spot ] || hub_fail "victim ran in $(record_field "$V" targetCluster)"
one_mirror_each victim
[ "$(kc onprem get job victim -n "$NS" -o jsonpath='{.status.succeeded}')" = "" ] ||
    hub_fail "victim also completed at home"
[ "$(kc onprem get job victim -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = "" ] ||
    hub_fail "victim still has its queue-name label"
[ "$(kc onprem get workload "$vwl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] ||
    hub_fail "victim's Workload $vwl is still active"
[ "$(kc onprem get job vip -n "$NS" -o jsonpath='{.status.active}')" = 2 ] ||
    hub_fail "vip does not run at home any more"
pass "preemption: vip evicted victim at home (\"${preempted%%;*}\"); victim was decided again, taken from Kueue, ran once in cloud-spot"
kc onprem delete job vip -n "$NS" --wait=true >/dev/null

# ---- 4. the race: quota freed as the hub decides ---------------------------
t0=$SECONDS
home=0 away=0 reserved=0
for r in $(seq 1 "$ROUNDS"); do
    kueue_job "fill-$r" 4 2 3600s no | kc onprem apply -n "$NS" -f - >/dev/null
    kc onprem wait --for=jsonpath='{.status.active}'=2 "job/fill-$r" -n "$NS" --timeout=60s >/dev/null ||
        hub_fail "fill-$r did not start"
    # The Jobs arrive together; the filler goes (its quota free at once) 0 to
    # 0.8 s after the request that creates them starts: while Kueue makes
    # their Workloads and the hub sees them pending and decides.
    delay=$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", (r % 800) / 1000 }')
    (sleep "$delay" && kc onprem delete job "fill-$r" -n "$NS" --wait=false >/dev/null) &
    freer=$!
    for i in $(seq 1 "$PER_ROUND"); do
        echo "---"
        kueue_job "race-$r-$i" 4 1 3s yes
    done | kc onprem apply -n "$NS" -f - >/dev/null
    wait "$freer" || hub_fail "fill-$r could not be deleted"
    for i in $(seq 1 "$PER_ROUND"); do
        wait_record "onprem/$NS/race-$r-$i" state succeeded 120
        if [ "$(record_field "onprem/$NS/race-$r-$i" mirror)" = "" ]; then
            home=$((home + 1))
            [ "$(mirrors_of "race-$r-$i")" = 0 ] || hub_fail "race-$r-$i ran at home and has a mirror"
        else
            away=$((away + 1))
            one_mirror_each "race-$r-$i"
            [ "$(kc onprem get job "race-$r-$i" -n "$NS" -o jsonpath='{.status.startTime}')" = "" ] ||
                hub_fail "race-$r-$i ran in the cloud and was started at home"
            # Kueue reserved quota for it (its scheduler's QuotaReserved
            # Event on the Workload) and still never started it.
            wl=$(workload_of "race-$r-$i")
            [ -z "$(kc onprem get events -n "$NS" -o name --field-selector \
                "involvedObject.kind=Workload,involvedObject.name=$wl,reason=QuotaReserved")" ] ||
                reserved=$((reserved + 1))
        fi
    done
done
abandoned=$(grep -c "burst abandoned" "$HUB_TMP/hub.log" || true)
pass "race: $((ROUNDS * PER_ROUND)) Jobs in $ROUNDS rounds in $((SECONDS - t0)) s, $home ran at home (admitted by Kueue; $abandoned bursts abandoned just before the take), $away in the cloud (taken from Kueue; Kueue reserved quota for $reserved of them, none started); each succeeded once"

# ---- 4b. the cloud's queue stopped: its running mirror evicted, no room ----
# cloud-spot queues mirrors in LocalQueue gpu. evicted (burstable, 20 s)
# bursts there and runs; then its only ClusterQueue, gpu, is stopped with
# HoldAndDrain: Kueue evicts the mirror (Evicted=True, ClusterQueueStopped;
# the Job suspended, its pods gone) and admits nothing new. The hub takes
# that as a lost attempt: a Requeued Event naming the eviction, the old
# mirror deleted, the Job decided again (before, the record stayed running,
# attempt 1, for as long as the hold lasted). Then, the queue still held,
# its headroom is 0, so its pool counts no free GPUs and no room to grow,
# and a Job goes elsewhere or waits, never into a queue that cannot admit
# it. (Before the hub read the target's headroom it went to cloud-spot, the
# cheapest, and was withdrawn only after kueue.mirrorAdmissionSeconds.)
kueue_job fill-room 4 2 3600s no | kc onprem apply -n "$NS" -f - >/dev/null
kc onprem wait --for=jsonpath='{.status.active}'=2 job/fill-room -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "fill-room did not start"
kueue_job evicted 4 1 20s yes | kc onprem apply -n "$NS" -f - >/dev/null
E="onprem/$NS/evicted"
wait_record "$E" state running 60
[ "$(record_field "$E" targetCluster)" = cloud-spot ] || hub_fail "evicted runs in $(record_field "$E" targetCluster), not cloud-spot"
me=$(record_field "$E" mirror)
kc cloud-spot patch clusterqueue gpu --type=merge -p '{"spec":{"stopPolicy":"HoldAndDrain"}}' >/dev/null
CQ_HELD=1
t_hold=$SECONDS
rev=$(event_message evicted Requeued 30)
case "$rev" in *"mirror cloud-spot/$me evicted (evicted from cloud-spot (ClusterQueueStopped): Kueue evicted mirror $me (Workload $NS/"*", LocalQueue $NS/gpu)"*"; deciding again (attempt 2 of"*) ;;
*) hub_fail "no Requeued Event naming Kueue's eviction of $me within 30 s of the hold (record: $(record_field "$E" state), attempt $(record_field "$E" attempt)): \"$rev\"" ;; esac
kc cloud-spot wait --for=delete "job/$me" -n "$NS" --timeout=30s >/dev/null 2>&1 ||
    hub_fail "the evicted mirror $me is still there"
[ "$(record_field "$E" preemptions)" = 1 ] || hub_fail "evicted's record counts $(record_field "$E" preemptions) lost attempts"
pass "evicted: cloud-spot's ClusterQueue gpu stopped (HoldAndDrain), mirror $me evicted by Kueue, deleted and the Job decided again (Requeued $((SECONDS - t_hold)) s after the hold) (\"${rev:0:200}\")"
kueue_job roomless 4 1 5s yes | kc onprem apply -n "$NS" -f - >/dev/null
K="onprem/$NS/roomless"
dec=$(decided_summary "$K" 30)
sleep 5 # a mirror sent to cloud-spot would be there by now
rtgt=$(record_field "$K" targetCluster)
[ "$rtgt" != cloud-spot ] || hub_fail "roomless was sent to cloud-spot, whose only ClusterQueue is held (\"$dec\")"
[ -z "$(kc cloud-spot get jobs -n "$NS" -l "spillway.io/origin-uid=$(kc onprem get job roomless -n "$NS" -o jsonpath='{.metadata.uid}')" -o name)" ] ||
    hub_fail "a mirror of roomless was made in cloud-spot"
kc cloud-spot patch clusterqueue gpu --type=merge -p '{"spec":{"stopPolicy":"None"}}' >/dev/null
CQ_HELD=""
kc onprem delete job fill-room -n "$NS" --wait=false >/dev/null
wait_record "$K" state succeeded 150
[ "$(record_field "$K" withdrawals)" = 0 ] || [ "$(record_field "$K" withdrawals)" = "" ] ||
    hub_fail "roomless was withdrawn from a queue: $(record_field "$K" withdrawals)"
wait_record "$E" state succeeded 150
[ "$(record_field "$E" attempt)" = 2 ] || hub_fail "evicted succeeded in attempt $(record_field "$E" attempt), not 2"
[ "$(record_field "$E" mirror)" != "$me" ] || hub_fail "evicted succeeded as its evicted mirror $me"
[ "$(mirrors_of evicted)" -le 1 ] || hub_fail "evicted has $(mirrors_of evicted) mirrors"
pass "held queue: cloud-spot's only ClusterQueue held, evicted succeeded in attempt 2 as $(record_field "$E" targetCluster); roomless decided without it (\"${dec:0:160}\"), first target ${rtgt:-none}; succeeded once as $(record_field "$K" targetCluster)"

# ---- 5. a mirror left unadmitted in the cloud's queue is decided again -------
# cloud-spot now queues mirrors in LocalQueue held, on a ClusterQueue with
# GPU quota (the hub counts its headroom) whose only flavour has a node
# taint the mirrors do not tolerate: its Kueue never admits them. cloud-ondemand is registered
# without --local-queue but has a LocalQueue gpu in the namespace: a mirror
# sent there goes into it (the origin's own LocalQueue name), as one sent
# back home does into onprem's.
cat <<YAML | kc cloud-ondemand apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpu, namespace: $NS}
spec: {clusterQueue: gpu}
YAML
cat <<YAML | kc cloud-spot apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: $HELD_CQ}
spec:
  nodeTaints:
  - {key: spillway.io/held, value: "true", effect: NoSchedule}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $HELD_CQ}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: $HELD_CQ
      resources:
      - {name: cpu, nominalQuota: "100000"}
      - {name: memory, nominalQuota: 100000Gi}
      - {name: nvidia.com/gpu, nominalQuota: 64}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: held, namespace: $NS}
spec: {clusterQueue: $HELD_CQ}
YAML
"$SPILLCTL" cluster add cloud-spot --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-cert.kubeconfig" \
    --role cloud --region us-east-1 --local-queue held --replace \
    --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
kueue_job fill-held 4 2 3600s no | kc onprem apply -n "$NS" -f - >/dev/null
kc onprem wait --for=jsonpath='{.status.active}'=2 job/fill-held -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "fill-held did not start"
sleep 11 # the hub reads the registry every 10 s
kueue_job stuck 4 1 5s yes | kc onprem apply -n "$NS" -f - >/dev/null
K="onprem/$NS/stuck"
wait_record "$K" state dispatched 60
[ "$(record_field "$K" targetCluster)" = cloud-spot ] || hub_fail "stuck went to $(record_field "$K" targetCluster), not cloud-spot"
m1=$(record_field "$K" mirror)
# The bound runs from the record's dispatch time (the test may see the
# state a moment later on a busy machine).
t_disp_ms=$(record_field "$K" dispatchedMs)
[ "$(kc cloud-spot get job "$m1" -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = held ] ||
    hub_fail "the mirror $m1 is not in cloud-spot's LocalQueue held"
wev=""
for _ in $(seq 1 $((4 * (${KUEUE_ADMISSION_S:-15} + 45)))); do
    wev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=stuck,reason=MirrorWithdrawn -o jsonpath='{.items[*].message}')
    [ -n "$wev" ] && break
    sleep 0.25
done
[ -n "$wev" ] || hub_fail "no MirrorWithdrawn event on stuck"
waited=$((($(date +%s%3N) - ${t_disp_ms%.*}) / 1000))
case "$wev" in *"cloud-spot"*"mirror $m1 waited"*"unadmitted in LocalQueue $NS/held"*"mirrorAdmissionSeconds"*) ;;
*) hub_fail "the MirrorWithdrawn event does not name the cluster, mirror, queue and wait: \"$wev\"" ;; esac
[ "$waited" -ge "${KUEUE_ADMISSION_S:-15}" ] || hub_fail "withdrawn after $waited s, before the bound"
kc cloud-spot wait --for=delete "job/$m1" -n "$NS" --timeout=30s >/dev/null 2>&1 ||
    hub_fail "the withdrawn mirror $m1 is still there"
kc onprem delete job fill-held -n "$NS" --wait=false >/dev/null
wait_record "$K" state succeeded 150
[ "$(record_field "$K" withdrawals)" = 1 ] || hub_fail "stuck's record counts $(record_field "$K" withdrawals) withdrawals"
tgt=$(record_field "$K" targetCluster)
[ "$tgt" != cloud-spot ] || hub_fail "stuck was sent to cloud-spot again while its queue was set aside"
one_mirror_each stuck
m2=$(record_field "$K" mirror)
[ "$(kc "$tgt" get job "$m2" -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
    hub_fail "the new mirror $m2 in $tgt is not in LocalQueue gpu (the origin's own, by default)"
m2cq=$(kc "$tgt" get workloads -n "$NS" -l "kueue.x-k8s.io/job-uid=$(kc "$tgt" get job "$m2" -n "$NS" -o jsonpath='{.metadata.uid}')" \
    -o jsonpath='{.items[0].status.admission.clusterQueue}')
[ "$m2cq" = gpu ] || hub_fail "the new mirror's Workload was not admitted by $tgt's ClusterQueue gpu (\"$m2cq\")"
[ "$(kc onprem get job stuck -n "$NS" -o jsonpath='{.status.startTime}')" = "" ] ||
    hub_fail "stuck started at home"
pass "unadmitted: mirror $m1 withdrawn from cloud-spot's LocalQueue held after ~$waited s (\"$wev\"), the Job decided again and succeeded once in $tgt, its mirror in LocalQueue gpu there by default"

# ---- 6. a hub killed just after the take: the next one releases the Workload --
# The take's annotation is all a new hub has to know the Job is Kueue's: it
# starts the Kueue informers from it and deactivates the Workload before the
# mirror is made.
"$SPILLCTL" cluster add cloud-spot --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-cert.kubeconfig" \
    --role cloud --region us-east-1 --local-queue gpu --replace \
    --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
kill "$HUB_PID"
wait "$HUB_PID" 2>/dev/null || true
kueue_job fill-crash 4 2 3600s no | kc onprem apply -n "$NS" -f - >/dev/null
kc onprem wait --for=jsonpath='{.status.active}'=2 job/fill-crash -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "fill-crash did not start"
hub_start "$HUB_TMP/hub.yaml" SPILLWAY_CRASH_AT=after-suspend
kueue_job crash 4 1 5s yes | kc onprem apply -n "$NS" -f - >/dev/null
for _ in $(seq 1 240); do kill -0 "$HUB_PID" 2>/dev/null || break; sleep 0.25; done
kill -0 "$HUB_PID" 2>/dev/null && hub_fail "the hub did not reach the crash point after-suspend within 60 s"
grep -Eq 'crash point reached.*point="?after-suspend' "$HUB_TMP/hub.log" || hub_fail "the hub stopped, but not at after-suspend"
[ "$(kc onprem get job crash -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = "" ] ||
    hub_fail "crash was not taken before the hub died"
cwl=$(workload_of crash)
[ "$(kc onprem get workload "$cwl" -n "$NS" -o jsonpath='{.spec.active}')" != false ] ||
    hub_fail "crash's Workload was released before the crash point: the test proves nothing"
hub_start
C="onprem/$NS/crash"
wait_record "$C" state succeeded 120
[ "$(kc onprem get workload "$cwl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] ||
    hub_fail "the hub started after the take did not deactivate crash's Workload $cwl"
one_mirror_each crash
[ "$(kc onprem get job crash -n "$NS" -o jsonpath='{.status.startTime}')" = "" ] || hub_fail "crash started at home"
kc onprem delete job fill-crash -n "$NS" --wait=false >/dev/null
pass "a hub killed just after the take: the next one found the Job Kueue's by its annotation, deactivated Workload $cwl, and crash ran once in $(record_field "$C" targetCluster)"

# ---- 7. the contested paths, forced by the hub's hold points -----------------
# The race above has the hub faster than Kueue's release of the quota
# almost always. Here a hub holds a step (SPILLWAY_TEST_HOLD, as over a slow
# link) while the quota is freed, so that Kueue acts in between.
# 7a. hold-take: the take's patch, built from the Job as the hub checked
#     it, is sent HOLD_MS later; Kueue admits and unsuspends the Job
#     meanwhile, so the patch's resourceVersion is stale: refused (409),
#     the check runs again and the burst is abandoned; the Job runs once, at
#     home.
# 7b. hold-release: the take lands (label gone, suspended), and the
#     Workload's deactivation waits HOLD_MS; Kueue reserves quota for the
#     still-active Workload meanwhile, and must not start the Job (its label
#     is gone); then the Workload is deactivated, the quota goes back, and
#     the Job runs once, in the cloud.
HOLD_MS=${KUEUE_HOLD_MS:-8000}
contest_hub() { # contest_hub POINT: a hub holding there
    kill "$HUB_PID"
    wait "$HUB_PID" 2>/dev/null || true
    : >"$HUB_TMP/hub.log"
    hub_start "$HUB_TMP/hub.yaml" SPILLWAY_TEST_HOLD="$1:$HOLD_MS"
}
contest_hub hold-take
kueue_job fill-take 4 2 3600s no | kc onprem apply -n "$NS" -f - >/dev/null
kc onprem wait --for=jsonpath='{.status.active}'=2 job/fill-take -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "fill-take did not start"
kueue_job held-take 4 1 40s yes | kc onprem apply -n "$NS" -f - >/dev/null
wait_log 'hold point reached.*point="?hold-take"? key="?[^ ]*held-take' 60 "the hub did not hold held-take's take"
kc onprem delete job fill-take -n "$NS" --wait=false >/dev/null
kc onprem wait --for=jsonpath='{.spec.suspend}'=false job/held-take -n "$NS" --timeout="$((HOLD_MS / 1000 - 1))s" >/dev/null ||
    hub_fail "Kueue did not unsuspend held-take while the take was held: the test proves nothing"
wait_log 'cannot prepare the origin Job.*held-take.*(modified|onflict)' 30 "the held take of held-take was not refused with a conflict"
wait_log 'burst abandoned.*held-take' 30 "held-take's burst was not abandoned after the refused take"
wait_complete held-take onprem 120
[ "$(mirrors_of held-take)" = 0 ] || hub_fail "held-take ran at home and has a mirror"
[ "$(kc onprem get job held-take -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
    hub_fail "held-take lost its queue-name label though the take was refused"
pass "take held ${HOLD_MS} ms while the quota freed: Kueue started held-take, the stale take was refused (409), the burst abandoned, the Job ran once at home"

contest_hub hold-release
kueue_job fill-rel 4 2 3600s no | kc onprem apply -n "$NS" -f - >/dev/null
kc onprem wait --for=jsonpath='{.status.active}'=2 job/fill-rel -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "fill-rel did not start"
kueue_job held-rel 4 1 5s yes | kc onprem apply -n "$NS" -f - >/dev/null
wait_log 'hold point reached.*point="?hold-release"? key="?[^ ]*held-rel' 60 "the hub did not hold held-rel's release"
[ "$(kc onprem get job held-rel -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = "" ] ||
    hub_fail "held-rel was not taken before the release was held"
rwl=$(workload_of held-rel)
kc onprem delete job fill-rel -n "$NS" --wait=false >/dev/null
kc onprem wait --for=jsonpath='{.status.conditions[?(@.type=="QuotaReserved")].status}'=True \
    "workload/$rwl" -n "$NS" --timeout="$((HOLD_MS / 1000 - 1))s" >/dev/null ||
    hub_fail "Kueue did not reserve quota for held-rel's Workload while the release was held: the test proves nothing"
R="onprem/$NS/held-rel"
wait_record "$R" state succeeded 120
[ "$(kc onprem get workload "$rwl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] ||
    hub_fail "held-rel's Workload $rwl was not deactivated"
one_mirror_each held-rel
[ "$(kc onprem get job held-rel -n "$NS" -o jsonpath='{.status.startTime}')" = "" ] ||
    hub_fail "held-rel started at home after Kueue reserved quota for its Workload"
pass "release held ${HOLD_MS} ms after the take: Kueue reserved quota for Workload $rwl meanwhile and did not start held-rel (its label gone); deactivated, it ran once in $(record_field "$R" targetCluster)"
watcher_check
