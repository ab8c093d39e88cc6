#!/usr/bin/env bash
# kueue_delegated.sh - the delegated form (spec.managedBy: spillway.io/hub)
# in a Kueue queue. Kueue's webhook suspends such a Job and makes it a
# Workload like any other; the Job controller never runs it (managedBy).
# The test's namespace has LocalQueue gpu on onprem (ClusterQueue gpu, 8
# GPUs) and on cloud-spot, registered to queue mirrors there. Under the
# outside watcher:
#   1. onprem's quota full: a delegated Job in the queue is taken from
#      Kueue (label gone, its Workload inactive, spec.suspend false: Kueue's
#      hold is not the user's pause), its mirror admitted by cloud-spot's
#      Kueue and never suspended again by the hub, and the origin gets the
#      mirror's outcome (Complete), once;
#   2. the quota free, no hub running: Kueue admits and starts a delegated
#      Job (its template given Kueue's annotations and node labels); a hub
#      started then deactivates its Workload first, so that Kueue stops it
#      and restores the template, takes it, and decides it for home (the
#      quota Kueue reserved for it counted as its own): its mirror runs in
#      onprem's own queue while the origin's Workload is inactive (its quota
#      not held twice), and completes once;
#   3. the user pauses a delegated Job whose mirror is queued in Kueue
#      (spec.suspend true on the origin): the mirror's Workload is
#      deactivated (Kueue's own pause: it evicts the mirror), and reactivated
#      when the origin is resumed; the Job completes once;
#   3b. a delegated Job decided for home, its mirror in onprem's queue
#      preempted there by a higher-priority Job: a lost attempt (Requeued
#      Event naming the preemption), decided again and run once in
#      cloud-spot;
#   4. an annotated Job labelled with a LocalQueue that does not exist:
#      Kueue cannot admit it (its Workload Inadmissible), and the hub says
#      so: blocked with a reason naming the LocalQueue and quoting Kueue,
#      a KueueInadmissible Event, the annotations, spillctl status and
#      explain; once the LocalQueue is made, the block is cleared and Kueue
#      admits the Job at home, no mirror made;
#   5. a delegated Job labelled with a LocalQueue that does not exist at
#      home, the quota free: home is no option for it (its mirror would
#      wait in that queue for kueue.mirrorAdmissionSeconds, 300 s), so it
#      bursts to cloud-spot at once, its decision saying why, and completes
#      once.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup kueue-deleg
[ -f "$SW_LAB_DIR/kueue/on" ] || fail "the lab's Kueue is off (testbed kueue up)"
for c in onprem cloud-spot; do local_queue "$c"; done
"$SPILLCTL" cluster add cloud-spot --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-cert.kubeconfig" \
    --role cloud --region us-east-1 --local-queue gpu --replace \
    --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null

# djob NAME GPUS DELAY: a delegated burstable Job in LocalQueue gpu.
djob() { kueue_job "$1" "$2" 1 "$3" yes "" delegated; }
# workload_on CLUSTER JOB: the name of the Job's Workload there ("" while none).
workload_on() {
    local uid
    uid=$(kc "$1" get job "$2" -n "$NS" -o jsonpath='{.metadata.uid}')
    kc "$1" get workloads -n "$NS" -l "kueue.x-k8s.io/job-uid=$uid" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null
}
# origin_done JOB SECONDS: the delegated origin has the Complete condition.
origin_done() {
    kc onprem wait --for=condition=complete "job/$1" -n "$NS" --timeout="$2s" >/dev/null ||
        hub_fail "the delegated origin $1 did not get the Complete condition within $2 s"
}

watcher_start
hub_start

# ---- 1. quota full: the delegated Job bursts into cloud-spot's queue --------
kueue_filler
djob away 4 10s | kc onprem apply -n "$NS" -f - >/dev/null
A="onprem/$NS/away"
wait_record "$A" state succeeded 150
[ "$(record_field "$A" targetCluster)" = cloud-spot ] || hub_fail "away ran in $(record_field "$A" targetCluster)"
origin_done away 60
one_mirror_each away
[ "$(kc onprem get job away -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = "" ] ||
    hub_fail "away was not taken from onprem's queue"
awl=$(workload_on onprem away)
[ -z "$awl" ] || [ "$(kc onprem get workload "$awl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] ||
    hub_fail "away's Workload $awl at home is still active"
[ "$(kc onprem get job away -n "$NS" -o jsonpath='{.spec.suspend}')" = false ] ||
    hub_fail "away's origin is still suspended (Kueue's hold kept as if the user's pause)"
n=$(grep -c 'suspend copied to its mirror' "$HUB_TMP/hub.log" || true)
[ "$n" = 0 ] || hub_fail "the hub suspended or resumed away's mirror $n times"
pass "quota full: delegated away taken from onprem's queue (Workload ${awl:-none} inactive), its mirror admitted by cloud-spot's Kueue and completed once; the origin Complete"

# ---- 2. quota free: a delegated Job decided for home runs in onprem's queue ----
fwl=$(workload_on onprem filler)
kc onprem delete job filler -n "$NS" --wait=false >/dev/null
# Its quota back in the queue: the Job and its Workload gone.
kc onprem wait --for=delete job/filler -n "$NS" --timeout=60s >/dev/null || true
[ -z "$fwl" ] || kc onprem wait --for=delete "workload/$fwl" -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "the filler's Workload $fwl was not deleted"
# Created with the hub stopped, so that Kueue admits it first (quota free)
# and starts it: unsuspended, its template given Kueue's annotations and the
# flavour's node labels, which no mirror may carry.
kill "$HUB_PID"
wait "$HUB_PID" 2>/dev/null || true
djob home 4 10s | kc onprem apply -n "$NS" -f - >/dev/null
hwl=""
for _ in $(seq 1 60); do
    hwl=$(workload_on onprem home)
    [ -n "$hwl" ] && break
    sleep 0.5
done
kc onprem wait --for=condition=Admitted "workload/$hwl" -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "Kueue did not admit home's Workload with the quota free"
kc onprem wait --for=jsonpath='{.spec.suspend}'=false job/home -n "$NS" --timeout=30s >/dev/null ||
    hub_fail "Kueue did not start the delegated home"
hub_start
H="onprem/$NS/home"
wait_record "$H" state succeeded 150
[ "$(record_field "$H" targetCluster)" = onprem ] || hub_fail "home ran in $(record_field "$H" targetCluster), not onprem"
origin_done home 60
one_mirror_each home
hm=$(record_field "$H" mirror)
mwl=$(workload_on onprem "$hm")
[ -n "$mwl" ] || hub_fail "home's mirror $hm has no Workload: it did not go through onprem's queue"
owl=$(workload_on onprem home)
[ -z "$owl" ] || [ "$(kc onprem get workload "$owl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] ||
    hub_fail "home's own Workload $owl is still active: its quota would be held twice"
grep -q 'delegated origin admitted by Kueue: its Workload deactivated before the take.*home' "$HUB_TMP/hub.log" ||
    hub_fail "the hub took home without having Kueue stop it first"
pass "quota free: delegated home, started by Kueue before the hub saw it, stopped by its Workload's deactivation, then taken; its mirror $hm ran in onprem's queue (Workload $mwl), its own Workload ${owl:-none} inactive; completed once"

# ---- 3. the user pauses a delegated Job whose mirror is in Kueue -------------
djob paused 4 20s | kc onprem apply -n "$NS" -f - >/dev/null
P="onprem/$NS/paused"
wait_record "$P" state running 90
pt=$(record_field "$P" targetCluster)
pm=$(record_field "$P" mirror)
kc onprem patch job paused -n "$NS" --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
pwl=""
for _ in $(seq 1 60); do
    pwl=$(workload_on "$pt" "$pm")
    [ -n "$pwl" ] && [ "$(kc "$pt" get workload "$pwl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] && break
    sleep 0.5
done
[ "$(kc "$pt" get workload "$pwl" -n "$NS" -o jsonpath='{.spec.active}')" = false ] ||
    hub_fail "the origin paused, but its mirror's Workload $pwl in $pt is still active"
kc "$pt" wait --for=jsonpath='{.spec.suspend}'=true "job/$pm" -n "$NS" --timeout=30s >/dev/null ||
    hub_fail "Kueue did not suspend the mirror $pm whose Workload was deactivated"
kc onprem patch job paused -n "$NS" --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_record "$P" state succeeded 150
origin_done paused 60
one_mirror_each paused
pass "paused: the origin suspended deactivated mirror $pm's Workload $pwl in $pt (Kueue suspended it); resumed, it completed once"

# ---- 3b. a delegated Job's home mirror preempted by Kueue: a candidate again ----
# The quota free, a delegated Job of 8 GPUs (priority low) is decided for
# home: its mirror runs in onprem's LocalQueue gpu. vip (not burstable,
# priority high, 8 GPUs) makes Kueue preempt the mirror (Evicted=True,
# Preempted; the mirror suspended). The hub takes that as a lost attempt
# (a Requeued Event naming the preemption), deletes the home mirror and
# decides again: the quota held by vip, it bursts to cloud-spot and
# completes once. (Before, it stayed running with its mirror suspended and
# no Event until vip ended.)
kueue_job bumped 4 2 20s yes low delegated | kc onprem apply -n "$NS" -f - >/dev/null
B="onprem/$NS/bumped"
wait_record "$B" state running 90
[ "$(record_field "$B" targetCluster)" = onprem ] || hub_fail "bumped was not decided for home: $(record_field "$B" targetCluster)"
bm=$(record_field "$B" mirror)
kueue_job vip 4 2 3600s no high | kc onprem apply -n "$NS" -f - >/dev/null
t_vip=$SECONDS
bev=$(event_message bumped Requeued 45)
case "$bev" in *"mirror onprem/$bm evicted (evicted from onprem (Preempted): Kueue evicted mirror $bm (Workload $NS/"*", LocalQueue $NS/gpu)"*"; deciding again (attempt 2 of"*) ;;
*) hub_fail "no Requeued Event naming Kueue's preemption of the home mirror $bm within 45 s (record: $(record_field "$B" state), attempt $(record_field "$B" attempt)): \"$bev\"" ;; esac
wait_record "$B" state succeeded 150
[ "$(record_field "$B" targetCluster)" = cloud-spot ] || hub_fail "bumped ran again in $(record_field "$B" targetCluster), not cloud-spot"
[ "$(record_field "$B" attempt)" = 2 ] || hub_fail "bumped succeeded in attempt $(record_field "$B" attempt), not 2"
origin_done bumped 60
kc onprem wait --for=delete "job/$bm" -n "$NS" --timeout=30s >/dev/null 2>&1 || hub_fail "the preempted home mirror $bm is still there"
one_mirror_each bumped
[ "$(kc onprem get job vip -n "$NS" -o jsonpath='{.status.active}')" = 2 ] || hub_fail "vip does not run at home"
pass "preempted at home: delegated bumped's home mirror $bm evicted by vip, decided again and completed once in cloud-spot $((SECONDS - t_vip)) s after vip came (\"${bev:0:200}\")"
kc onprem delete job vip -n "$NS" --wait=true >/dev/null

# ---- 4. a queue label Kueue cannot admit: the Job says why ------------------
# (the quota free again: once its LocalQueue exists, Kueue admits it at home)
kueue_job noqueue 4 1 5s yes | sed 's/queue-name: gpu/queue-name: nosuch/' | kc onprem apply -n "$NS" -f - >/dev/null
N="onprem/$NS/noqueue"
wait_record "$N" state blocked 30
nreason=$(record_field "$N" reason)
want="left in its Kueue queue, which cannot admit it: LocalQueue $NS/nosuch: Kueue says \"LocalQueue nosuch doesn't exist\""
[ "$nreason" = "$want" ] || hub_fail "noqueue blocked for another reason: \"$nreason\""
ev=$(event_message noqueue KueueInadmissible 10)
[ "$ev" = "$want" ] || hub_fail "no KueueInadmissible Event with the reason on noqueue: \"$ev\""
ann=$(kc onprem get job noqueue -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state} {.metadata.annotations.spillway\.io/reason}')
[ "$ann" = "blocked $want" ] || hub_fail "noqueue's annotations: \"$ann\""
"$SPILLCTL" status -n "$NS" | grep "^$N " | grep -qF "LocalQueue $NS/nosuch" ||
    hub_fail "spillctl status shows no reason for noqueue: $("$SPILLCTL" status -n "$NS" | grep "^$N ")"
[ "$("$SPILLCTL" explain "$N" | grep '^Reason:')" = "Reason:    $want" ] ||
    hub_fail "spillctl explain shows no reason for noqueue: $("$SPILLCTL" explain "$N" | grep '^Reason:')"
cat <<YAML | kc onprem apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: nosuch, namespace: $NS}
spec: {clusterQueue: gpu}
YAML
for _ in $(seq 1 60); do
    [ "$(record_field "$N" state)" != blocked ] &&
        [ -z "$(kc onprem get job noqueue -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/reason}')" ] && break
    sleep 0.25
done
[ "$(record_field "$N" state)" != blocked ] || hub_fail "noqueue still blocked 15 s after its LocalQueue was made"
ann=$(kc onprem get job noqueue -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state}/{.metadata.annotations.spillway\.io/reason}')
[ "$ann" = "observed/" ] || hub_fail "noqueue's annotations once unblocked: \"$ann\""
wl=$(workload_on onprem noqueue)
kc onprem wait --for=condition=Admitted "workload/$wl" -n "$NS" --timeout=30s >/dev/null ||
    hub_fail "Kueue did not admit noqueue's Workload $wl once its LocalQueue was made"
[ "$(mirrors_of noqueue)" = 0 ] || hub_fail "noqueue has a mirror: Kueue admits it at home with the quota free"
kc onprem delete job noqueue -n "$NS" --wait=false >/dev/null
pass "a missing LocalQueue: noqueue blocked with \"$nreason\" (Event, annotations, status, explain); the LocalQueue made, unblocked and admitted by Kueue at home, no mirror"

# ---- 5. a delegated Job whose LocalQueue is missing at home bursts ------------
djob lost 4 5s | sed 's/queue-name: gpu/queue-name: nowhere/' | kc onprem apply -n "$NS" -f - >/dev/null
L="onprem/$NS/lost"
t0=$(date +%s)
wait_record "$L" state succeeded 90
[ "$(record_field "$L" targetCluster)" = cloud-spot ] || hub_fail "lost ran in $(record_field "$L" targetCluster), not cloud-spot"
lsum=$(record_field "$L" summary)
case "$lsum" in
*"not at home: its LocalQueue $NS/nowhere does not exist in onprem"* | *"not at home: its LocalQueue $NS/nowhere in onprem cannot admit it: Kueue says \"LocalQueue nowhere doesn't exist\""*) ;;
*) hub_fail "lost's decision does not say why not at home: \"$lsum\"" ;;
esac
[ "$(record_field "$L" withdrawals)" = "" ] || [ "$(record_field "$L" withdrawals)" = 0 ] ||
    hub_fail "lost had a mirror withdrawn: it was placed in the missing queue first"
origin_done lost 60
one_mirror_each lost
pass "a missing LocalQueue at home: delegated lost burst to cloud-spot in $(($(date +%s) - t0)) s (\"$lsum\"), completed once"
watcher_check
