#!/usr/bin/env bash
# outcomes.sh - the hub's promises where an ordinary event used to break
# them, with the independent watcher on the three clusters throughout:
#   - names at the limit: the spot cluster is registered under a name of
#     63 characters, the most a name may have; every Job below runs there
#   - a finished mirror deleted while the leader is paused (a cleanup
#     script, ttlSecondsAfterFinished, a person): on waking the hub takes
#     the mirror's last state as its outcome; attempt 1 only, nothing runs
#     again, the delegated origin is Complete
#   - the hub killed after recording the outcome and before writing the
#     delegated origin's status, the mirror deleted meanwhile: the next hub
#     writes the origin Complete, not Failed
#   - a Job carrying copies of spillway's labels, with a higher attempt, in
#     the mirror's namespace: after Redis loses the record, the record is
#     re-derived from the real mirror, never from the copy
#   - a burst refused (a ConfigMap missing in the pod template): the origin
#     shows it (spillway.io/state, spillway.io/reason, the delegated Job's
#     SpillwayBlocked condition); once the ConfigMap exists, attempt 1 runs
#   - an annotation-only origin resumed at home by its owner while its mirror
#     runs: suspended again, with an Event, never run twice
#   - the target cluster removed from the registry while Jobs run there:
#     each fails with its mirror named, never silent, never run twice
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_needs_failpoints
hub_setup outcomes
# The spot cluster under a name of 63 characters (the limit: one more is refused).
LONG=cloud-spot-$(printf 'x%.0s' $(seq 1 52))
[ ${#LONG} = 63 ] || hub_fail "the long name has ${#LONG} characters"
"$SPILLCTL" cluster remove cloud-spot >/dev/null
rc=0
"$SPILLCTL" cluster add "${LONG}y" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-cert.kubeconfig" --role cloud \
    --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 \
    >/dev/null 2>"$HUB_TMP/err" || rc=$?
[ $rc != 0 ] && grep -q "63" "$HUB_TMP/err" || hub_fail "a 64-character name was not refused naming the limit (exit $rc): $(cat "$HUB_TMP/err")"
"$SPILLCTL" cluster add "$LONG" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-cert.kubeconfig" --role cloud \
    --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
# A lease long enough for the pauses below (the paused leader must still
# hold it on waking: past it, it would exit, crash-only).
hub_config "$HUB_TMP/hub.yaml" 19464 40
# lease_expired: a dead hub's lease made to end now, as its TTL would
# 40 s later (the cases below restart the hub and test what it does next,
# not how long it waits for a dead leader: failover.sh does).
lease_expired() { rcli DEL spillway:hub:leader >/dev/null; }
watcher_start
saturate
hub_start

# mirror_of NAME: the record's mirror of origin NAME; mirror_cond NAME TYPE:
# that condition's status on the mirror in cloud-spot.
mirror_of() { record_field "onprem/$NS/$1" mirror; }
mirror_cond() {
    kc cloud-spot get job "$(mirror_of "$1")" -n "$NS" \
        -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null || true
}
wait_mirror_complete() {
    local i
    for i in $(seq 1 120); do
        [ "$(mirror_cond "$1" Complete)" = True ] && return 0
        sleep 0.25
    done
    hub_fail "the mirror of $1 did not complete in 30 s"
}

# ---- a finished mirror deleted while the leader is paused ---------------------
for form in annotation delegated; do
    j=p-$form
    burst_job "$j" 4 6s "$([ $form = delegated ] && echo delegated)" | kc onprem apply -n "$NS" -f - >/dev/null
done
for form in annotation delegated; do wait_record "onprem/$NS/p-$form" state running 90; done
[ "$(record_field "onprem/$NS/p-annotation" targetCluster)" = "$LONG" ] ||
    hub_fail "p-annotation went to \"$(record_field "onprem/$NS/p-annotation" targetCluster)\", not the 63-character cluster"
kill -STOP "$HUB_PID"
paused=$SECONDS
for form in annotation delegated; do wait_mirror_complete "p-$form"; done
for form in annotation delegated; do
    kc cloud-spot delete job "$(mirror_of "p-$form")" -n "$NS" --cascade=background --wait=true >/dev/null
done
kill -CONT "$HUB_PID"
echo "leader paused for $((SECONDS - paused)) s while both mirrors completed and were deleted"
for form in annotation delegated; do
    K="onprem/$NS/p-$form"
    wait_record "$K" state succeeded 60
    [ "$(record_field "$K" attempt)" = 1 ] || hub_fail "p-$form took attempt $(record_field "$K" attempt)"
    [ "$(mirrors_of "p-$form")" = 0 ] || hub_fail "p-$form has a mirror again"
done
kc onprem wait --for=condition=complete job/p-delegated -n "$NS" --timeout=30s >/dev/null ||
    hub_fail "the delegated origin is not Complete"
! grep -q "mirror lost; requeueing" "$HUB_TMP/hub.log" || hub_fail "the hub requeued a finished mirror"
pass "finished mirrors deleted while the leader was paused: both succeeded as attempt 1, nothing ran again, the delegated origin Complete"

# ---- the outcome recorded, the mirror deleted before the origin's status --------
kill -9 "$HUB_PID"
wait "$HUB_PID" 2>/dev/null || true
lease_expired
burst_job f-delegated 4 4s delegated | kc onprem apply -n "$NS" -f - >/dev/null
hub_start "$HUB_TMP/hub.yaml" SPILLWAY_CRASH_AT=after-finish
for _ in $(seq 1 360); do kill -0 "$HUB_PID" 2>/dev/null || break; sleep 0.25; done
! kill -0 "$HUB_PID" 2>/dev/null || hub_fail "the hub armed with after-finish did not reach it in 90 s"
wait "$HUB_PID" 2>/dev/null || true
lease_expired
[ "$(record_field "onprem/$NS/f-delegated" state)" = succeeded ] || hub_fail "the hub died before recording f-delegated's outcome"
[ -z "$(kc onprem get job f-delegated -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}')" ] ||
    hub_fail "f-delegated's status was written before the crash point: the case tests nothing"
kc cloud-spot delete job "$(mirror_of f-delegated)" -n "$NS" --cascade=background --wait=true >/dev/null
hub_start
kc onprem wait --for=condition=complete job/f-delegated -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "f-delegated is not Complete: $(kc onprem get job f-delegated -n "$NS" -o jsonpath='{.status.conditions}')"
[ -z "$(kc onprem get job f-delegated -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}')" ] ||
    hub_fail "f-delegated was marked Failed"
pass "outcome recorded, mirror deleted before the origin's status: the delegated origin is Complete, not Failed"

# ---- copied labels never take a record over -------------------------------------
burst_job c-delegated 4 20s delegated | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/c-delegated" state running 90
uid=$(kc onprem get job c-delegated -n "$NS" -o jsonpath='{.metadata.uid}')
real=$(mirror_of c-delegated)
cat <<YAML | kc cloud-ondemand apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: copy-of-c
  labels:
    app.kubernetes.io/managed-by: spillway
    spillway.io/origin-cluster: onprem
    spillway.io/origin-namespace: $NS
    spillway.io/origin-name: c-delegated
    spillway.io/origin-uid: "$uid"
    spillway.io/attempt: "5"
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: registry.example/copy:1}]
YAML
kill -9 "$HUB_PID"
wait "$HUB_PID" 2>/dev/null || true
lease_expired
rcli DEL "spillway:job:onprem/$NS/c-delegated" "spillway:explain:onprem/$NS/c-delegated" >/dev/null
rcli SREM spillway:jobs "onprem/$NS/c-delegated" >/dev/null
hub_start
wait_record "onprem/$NS/c-delegated" state succeeded 90
[ "$(record_field "onprem/$NS/c-delegated" mirror)" = "$real" ] ||
    hub_fail "the record was re-derived from $(record_field "onprem/$NS/c-delegated" mirror), not the real mirror $real"
[ "$(record_field "onprem/$NS/c-delegated" attempt)" = 1 ] || hub_fail "c-delegated's record took attempt $(record_field "onprem/$NS/c-delegated" attempt)"
kc onprem wait --for=condition=complete job/c-delegated -n "$NS" --timeout=30s >/dev/null ||
    hub_fail "c-delegated is not Complete"
kc cloud-ondemand delete job copy-of-c -n "$NS" >/dev/null
pass "a Job with copied labels (attempt 5) next to the real mirror: the lost record re-derived from the real one, completed once"

# ---- a refused burst shows on the origin and uses up no attempt -----------------
cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: b-delegated
  annotations: {spillway.io/burst: auto, spillway.io/expected-runtime: 1h}
spec:
  managedBy: spillway.io/hub
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "4s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: registry.example/train:1
        envFrom: [{configMapRef: {name: b-settings}}]
        resources: {limits: {nvidia.com/gpu: "4"}}
YAML
kc onprem wait --for=condition=SpillwayBlocked job/b-delegated -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "b-delegated has no SpillwayBlocked condition: $(kc onprem get job b-delegated -n "$NS" -o jsonpath='{.status.conditions}')"
[ "$(kc onprem get job b-delegated -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state}')" = blocked ] ||
    hub_fail "b-delegated's spillway.io/state is not blocked"
kc onprem get job b-delegated -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/reason}' | grep -q b-settings ||
    hub_fail "b-delegated's spillway.io/reason does not name the ConfigMap"
kc onprem create configmap b-settings -n "$NS" --from-literal=mode=test >/dev/null
wait_record "onprem/$NS/b-delegated" state succeeded 120
[ "$(record_field "onprem/$NS/b-delegated" attempt)" = 1 ] ||
    hub_fail "the refused burst used up an attempt: b-delegated ran as attempt $(record_field "onprem/$NS/b-delegated" attempt)"
kc onprem wait --for=condition=complete job/b-delegated -n "$NS" --timeout=30s >/dev/null || hub_fail "b-delegated is not Complete"
[ "$(kc onprem get job b-delegated -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="SpillwayBlocked")].status}')" != True ] ||
    hub_fail "b-delegated still shows SpillwayBlocked=True"
pass "a burst refused for a missing ConfigMap: SpillwayBlocked and spillway.io/state=blocked on the origin; once it exists, attempt 1 completes"

# ---- the target removed from the registry while a Job runs there ----------------
burst_job s-annotation 4 3600s | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/s-annotation" state running 90
kc onprem patch job s-annotation -n "$NS" --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
for _ in $(seq 1 40); do
    [ "$(kc onprem get job s-annotation -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] && break
    sleep 0.25
done
[ "$(kc onprem get job s-annotation -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] ||
    hub_fail "the origin resumed at home after its burst was not suspended again within 10 s"
kc onprem get events -n "$NS" --field-selector involvedObject.name=s-annotation -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' |
    grep -q "^ResumedAtHome$" || hub_fail "no ResumedAtHome Event on the origin"
[ "$(record_field "onprem/$NS/s-annotation" state)" = running ] || hub_fail "s-annotation is $(record_field "onprem/$NS/s-annotation" state)"
[ "$(mirrors_of s-annotation)" = 1 ] || hub_fail "s-annotation has $(mirrors_of s-annotation) mirrors"
pass "an annotation-only origin resumed at home during its burst: suspended again, a ResumedAtHome Event, still one mirror"

burst_job r-annotation 4 3600s | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/r-annotation" state running 90
rm_mirror=$(mirror_of r-annotation)
"$SPILLCTL" cluster remove "$LONG" >/dev/null
wait_record "onprem/$NS/r-annotation" state failed 60
reason=$(record_field "onprem/$NS/r-annotation" reason)
grep -qF "$LONG/$NS/$rm_mirror" <<<"$reason" || hub_fail "the reason does not name the mirror: $reason"
kc onprem get events -n "$NS" --field-selector involvedObject.name=r-annotation -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' |
    grep -q "^BurstFailed$" || hub_fail "no BurstFailed Event on the origin"
sleep 3
[ "$(mirrors_of r-annotation)" = 1 ] || hub_fail "r-annotation has $(mirrors_of r-annotation) mirrors"
wait_record "onprem/$NS/s-annotation" state failed 30
kc cloud-spot delete job "$rm_mirror" "$(mirror_of s-annotation)" -n "$NS" --cascade=background >/dev/null
pass "target removed while the Job ran there: failed with the mirror named ($reason)"
watcher_check
