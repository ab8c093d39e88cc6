#!/usr/bin/env bash
# burst.sh - the hub's burst lifecycle end to end on the lab, both opt-in
# forms, with an independent watcher on the three clusters for the whole
# test (watch_invariants.py):
#   - onprem saturated; an annotation-only Job with inputs and outputs in
#     S3 is suspended at home and runs as a mirror on cloud-spot, after its
#     inputs are verified there; its outputs come back; it succeeds once
#   - a delegated Job (spec.managedBy: spillway.io/hub) completes on the
#     origin cluster as far as `kubectl wait --for=condition=complete` sees
#   - a bad annotation gets a Warning Event naming it, and no record
#   - a missing input blocks the burst with the input named, no mirror
#   - a Job with a pod running at home is not burst
#   - deleting an origin deletes its mirror
#   - the Jobs that succeeded are counted once in spillway:runtimes and
#     /metrics, and a later Job's belief is its annotation corrected by
#     what they took (explain's Runtime line)
#   - the hub serves only the test's namespace (namespaceSelector,
#     HUB_SELECT=1): burstable Jobs in an unlabelled namespace on the
#     saturated onprem, one of each form and one with a bad annotation,
#     are never touched (no record, annotation, finalizer, suspension or
#     Event) while the test's own burst; once that namespace is labelled
#     for the hub, a Job there whose spillway.io/mirror names its mirror
#     (another hub placed it, and its mirror without this hub's proof
#     exists) is left alone with a HeldByAnotherHub Event
# The hub and spillctl reach Redis over TLS (rediss://, the lab's TLS port);
# SW_HUB_REDIS_TLS=0 runs it over plain redis:// instead.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "${SW_HUB_REDIS_TLS:-1}" = 0 ] || hub_use_tls
HUB_SELECT=1
hub_setup burst
watcher_start
saturate
s3put() { "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put "$@" >/dev/null; }
s3put datasets "$NS/in/part-0.bin" 1048576 1
s3put datasets "$NS/in/part-1.bin" 65536 2

# A bad config: exit 2, the file, line and field named, nothing started.
printf 'redis:\n  url: %s\nsecretKeyFile: %s\nleader:\n  leaseTTLSeconds: abc\n' \
    "$SPILLWAY_REDIS_URL" "$SPILLWAY_SECRET_KEY_FILE" >"$HUB_TMP/bad.yaml"
rc=0
"$SPILLWAYD" --config "$HUB_TMP/bad.yaml" 2>"$HUB_TMP/err" || rc=$?
[ $rc = 2 ] || hub_fail "spillwayd with a bad config exited $rc, not 2"
grep -qF "$HUB_TMP/bad.yaml:5: field \"leader.leaseTTLSeconds\"" "$HUB_TMP/err" ||
    hub_fail "bad config message: $(cat "$HUB_TMP/err")"
pass "spillwayd refuses a bad config with exit 2: $(cat "$HUB_TMP/err")"

# Burstable Jobs in a namespace the hub does not serve (no label): onprem
# is saturated, so a hub serving it would burst them.
OUT="$NS-out"
HUB_EXTRA_NS+=("$OUT")
kc onprem create namespace "$OUT" >/dev/null
burst_job outside 4 5s | kc onprem apply -n "$OUT" -f - >/dev/null
burst_job outside-d 4 5s delegated | kc onprem apply -n "$OUT" -f - >/dev/null
burst_job outside-bad 4 5s "" "    spillway.io/max-price: cheap" | kc onprem apply -n "$OUT" -f - >/dev/null

hub_start
burst_job train-a 4 5s "" "    spillway.io/inputs: s3://datasets/$NS/in/
    spillway.io/outputs: s3://checkpoints/$NS/out/" | kc onprem apply -n "$NS" -f - >/dev/null
burst_job train-d 4 5s delegated | kc onprem apply -n "$NS" -f - >/dev/null
burst_job bad 4 5s "" "    spillway.io/max-price: cheap" | kc onprem apply -n "$NS" -f - >/dev/null
burst_job missing 4 5s "" "    spillway.io/inputs: s3://datasets/$NS/nothing-here/" |
    kc onprem apply -n "$NS" -f - >/dev/null

# ---- annotation-only: suspended at home, mirror on spot after the data ------
A="onprem/$NS/train-a"
wait_record "$A" state succeeded 120
[ "$(record_field "$A" targetCluster)" = cloud-spot ] || hub_fail "train-a ran in $(record_field "$A" targetCluster), not cloud-spot"
[ "$(kc onprem get job train-a -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] || hub_fail "origin not suspended"
mirror=$(record_field "$A" mirror)
uid=$(kc onprem get job train-a -n "$NS" -o jsonpath='{.metadata.uid}')
[ "$mirror" = "sw-$uid-1" ] || hub_fail "mirror name $mirror is not derived from the UID and attempt 1"
[ "$(kc cloud-spot get job "$mirror" -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] || hub_fail "mirror did not succeed"
[ "$(kc cloud-spot get job "$mirror" -n "$NS" -o jsonpath='{.metadata.labels.spillway\.io/origin-uid}')" = "$uid" ] ||
    hub_fail "mirror lacks its origin-uid label"
# The inputs were verified in us-east-1 before the mirror existed.
dr=$(record_field "$A" dataReadyMs)
dm=$(record_field "$A" dispatchedMs)
[ "$dr" -gt 0 ] && [ "$dr" -le "$dm" ] || hub_fail "data ready at $dr, dispatched at $dm"
s3get "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 datasets "$NS/in/part-1.bin" | cmp -s - <(s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem datasets "$NS/in/part-1.bin") ||
    hub_fail "input not in us-east-1"
kc cloud-spot get job "$mirror" -n "$NS" -o json | grep -q "SPILLWAY_OUTPUTS" || hub_fail "mirror has no SPILLWAY_OUTPUTS"
kc onprem get events -n "$NS" --field-selector involvedObject.name=train-a -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' >"$HUB_TMP/ev"
grep -q "^Burst: burst to cloud-spot (spot): \$[0-9.]* expected vs .* wait at home" "$HUB_TMP/ev" || hub_fail "no Burst event: $(cat "$HUB_TMP/ev")"
grep -q "^Completed: completed in cloud-spot" "$HUB_TMP/ev" || hub_fail "no Completed event: $(cat "$HUB_TMP/ev")"
[ "$(kc onprem get job train-a -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state}')" = succeeded ] ||
    hub_fail "origin annotation state is not succeeded"
pass "annotation-only Job: suspended at home, inputs verified in us-east-1 first, mirror $mirror succeeded on cloud-spot"

# ---- a namespace the hub does not serve: nothing touched --------------------
grep -q "msg=\"namespace not served\" cluster=onprem namespace=$OUT " "$HUB_TMP/hub.log" ||
    hub_fail "the hub's log does not say namespace $OUT is not served"
grep -q "msg=\"namespace served\" cluster=onprem namespace=$NS " "$HUB_TMP/hub.log" ||
    hub_fail "the hub's log does not say namespace $NS is served"
for j in outside outside-d outside-bad; do
    [ -z "$(rcli GET "spillway:job:onprem/$OUT/$j")" ] || hub_fail "$OUT/$j, outside the selector, got a record"
    got=$(kc onprem get job "$j" -n "$OUT" -o json | jq -c '[(.metadata.annotations // {} | keys[] |
        select(startswith("spillway.io/") and . != "spillway.io/burst" and . != "spillway.io/expected-runtime" and
        . != "spillway.io/max-price")), (.metadata.finalizers // [])[], (.spec.suspend // false | select(.))]')
    [ "$got" = "[]" ] || hub_fail "$OUT/$j, outside the selector, was touched: $got"
done
rcli SMEMBERS spillway:jobs | grep -q "/$OUT/" && hub_fail "a Job of $OUT is in spillway:jobs"
ev=$(kc onprem get events -n "$OUT" -o jsonpath='{range .items[*]}{.source.component}/{.reason}{"\n"}{end}' | grep '^spillway' || true)
[ -z "$ev" ] || hub_fail "the hub wrote Events in $OUT, outside the selector: $ev"
pass "namespaceSelector $HUB_SELECT_LABEL=$NS: 3 burstable Jobs in $OUT (annotation, delegated, bad annotation) on the saturated onprem untouched while train-a burst"

# ---- a Job another hub placed, its namespace moved to this hub: left alone ----
# outside as another hub's dispatch leaves it (its mirror's name on the
# origin; that hub's mirror is not this hub's to see), then $OUT labelled
# for this hub (asked again within 30 s): no record, not suspended, a
# Warning Event HeldByAnotherHub saying what to do.
kc onprem delete job outside-d -n "$OUT" --wait=true >/dev/null
ouid=$(kc onprem get job outside -n "$OUT" -o jsonpath='{.metadata.uid}')
kc onprem annotate job outside -n "$OUT" "spillway.io/mirror=sw-$ouid-1" >/dev/null
# The other hub's mirror of it in cloud-spot (suspended; without this hub's
# proof): with no mirror anywhere the Job would be taken as new (docs/dr.md).
kc cloud-spot create namespace "$OUT" >/dev/null
kc cloud-spot apply -n "$OUT" -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: sw-$ouid-1
  labels: {spillway.io/origin-uid: "$ouid", spillway.io/attempt: "1"}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
EOF
hub_serve_ns onprem "$OUT"
ev=""
for _ in $(seq 1 120); do
    ev=$(kc onprem get events -n "$OUT" --field-selector involvedObject.name=outside,reason=HeldByAnotherHub \
        -o jsonpath='{.items[*].message}')
    [ -n "$ev" ] && break
    sleep 0.5
done
grep -q "Let it finish on the hub that placed it" <<<"$ev" ||
    hub_fail "no HeldByAnotherHub Event on $OUT/outside once its namespace was served: \"$ev\""
[ -z "$(rcli GET "spillway:job:onprem/$OUT/outside")" ] || hub_fail "$OUT/outside, placed by another hub, got a record"
[ "$(kc onprem get job outside -n "$OUT" -o jsonpath='{.spec.suspend}')" != true ] ||
    hub_fail "$OUT/outside, placed by another hub, was suspended"
pass "a Job another hub placed (its spillway.io/mirror names its mirror) in a namespace moved to this hub: left alone, Warning Event HeldByAnotherHub"

# ---- delegated: the origin's status is the mirror's -------------------------
kc onprem wait --for=condition=complete job/train-d -n "$NS" --timeout=120s >/dev/null ||
    hub_fail "kubectl wait --for=condition=complete on the delegated origin did not return"
[ "$(kc onprem get job train-d -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] || hub_fail "delegated origin succeeded != 1"
D="onprem/$NS/train-d"
wait_record "$D" state succeeded 30
pass "delegated Job: kubectl wait --for=condition=complete returned on onprem; it ran in $(record_field "$D" targetCluster)"

# ---- bad annotation ---------------------------------------------------------
ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=bad,reason=BadAnnotation -o jsonpath='{.items[0].message}')
grep -q 'annotation "spillway.io/max-price": value "cheap"' <<<"$ev" || hub_fail "bad annotation event: $ev"
[ -z "$(rcli GET "spillway:job:onprem/$NS/bad")" ] || hub_fail "a Job with a bad annotation got a record"
[ "$(kc onprem get job bad -n "$NS" -o jsonpath='{.spec.suspend}')" != true ] || hub_fail "a Job with a bad annotation was suspended"
pass "bad annotation: Warning Event \"$ev\"; the Job is left alone"

# ---- missing input ----------------------------------------------------------
M="onprem/$NS/missing"
wait_record "$M" state blocked 60
record_field "$M" reason | grep -q "$NS/nothing-here" || hub_fail "blocked reason does not name the input: $(record_field "$M" reason)"
[ "$(kc onprem get job missing -n "$NS" -o jsonpath='{.spec.suspend}')" != true ] || hub_fail "a blocked Job was suspended"
pass "missing input: blocked, \"$(record_field "$M" reason)\""

# ---- outputs come back ------------------------------------------------------
# (The lab's pods do not write; the test writes attempt 1's output as the
# workload would, runs a second Job through, and checks the copy home.)
burst_job train-o 4 8s "" "    spillway.io/outputs: s3://checkpoints/$NS/out2/" | kc onprem apply -n "$NS" -f - >/dev/null
O="onprem/$NS/train-o"
wait_record "$O" state running 90
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 put checkpoints "$NS/out2/attempt-1/model.pt" 4096 9 >/dev/null
wait_record "$O" state succeeded 90
s3get "$SW_LAB_S3_ENDPOINT_ONPREM" onprem checkpoints "$NS/out2/model.pt" >"$HUB_TMP/back" || hub_fail "output not copied back to onprem"
[ "$(stat -c %s "$HUB_TMP/back")" = 4096 ] || hub_fail "output copied back with the wrong size"
pass "outputs: attempt 1's model.pt copied back to onprem's store"

# ---- the home Job never burst ------------------------------------------------
[ "$(kc onprem get job home -n "$NS" -o jsonpath='{.spec.suspend}')" != true ] || hub_fail "a Job running at home was suspended"
[ "$(record_field "onprem/$NS/home" state)" = observed ] || hub_fail "the Job running at home is $(record_field "onprem/$NS/home" state)"
pass "a burstable Job with its pod running at home stays observed, not suspended"

# ---- ConfigMaps and Secrets the pod needs -----------------------------------
kc onprem create configmap train-config -n "$NS" --from-literal=lr=0.001 >/dev/null
cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: refs
  annotations: {spillway.io/burst: auto, spillway.io/expected-runtime: 1h}
spec:
  managedBy: spillway.io/hub
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      volumes: [{name: cfg, configMap: {name: train-config}}]
      containers:
      - name: train
        image: registry.example/train:1
        envFrom: [{secretRef: {name: optional-secret, optional: true}}]
        volumeMounts: [{name: cfg, mountPath: /etc/train}]
        resources: {limits: {nvidia.com/gpu: "2"}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: norefs
  annotations: {spillway.io/burst: auto, spillway.io/expected-runtime: 1h}
spec:
  managedBy: spillway.io/hub
  template:
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: registry.example/train:1
        env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: hf-token, key: token}}}]
        resources: {limits: {nvidia.com/gpu: "2"}}
YAML
wait_record "onprem/$NS/refs" state succeeded 90
[ "$(kc cloud-spot get configmap train-config -n "$NS" -o jsonpath='{.data.lr}')" = 0.001 ] ||
    hub_fail "the ConfigMap was not copied to cloud-spot"
wait_record "onprem/$NS/norefs" state blocked 60
record_field "onprem/$NS/norefs" reason | grep -q "references Secret $NS/hf-token, which does not exist in cluster onprem" ||
    hub_fail "missing Secret reason: $(record_field "onprem/$NS/norefs" reason)"
# The origin's ConfigMap changed: the next Job's copy is brought up to date.
# A ConfigMap of the same name in the target that is not spillway's copy
# blocks the burst instead of being used.
kc onprem create configmap train-config -n "$NS" --from-literal=lr=0.01 --dry-run=client -o yaml |
    kc onprem replace -f - >/dev/null
kc onprem create configmap foreign -n "$NS" --from-literal=x=home >/dev/null
kc cloud-spot create configmap foreign -n "$NS" --from-literal=x=someone-else >/dev/null
for pair in refs2:train-config foreign:foreign; do
    cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata:
  name: ${pair%%:*}
  annotations: {spillway.io/burst: auto, spillway.io/expected-runtime: 1h}
spec:
  managedBy: spillway.io/hub
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      volumes: [{name: cfg, configMap: {name: ${pair#*:}}}]
      containers:
      - {name: train, image: registry.example/train:1, resources: {limits: {nvidia.com/gpu: "2"}}}
YAML
done
wait_record "onprem/$NS/refs2" state succeeded 90
[ "$(kc cloud-spot get configmap train-config -n "$NS" -o jsonpath='{.data.lr}')" = 0.01 ] ||
    hub_fail "spillway's copy of train-config was not brought up to date"
wait_record "onprem/$NS/foreign" state blocked 60
record_field "onprem/$NS/foreign" reason | grep -q "ConfigMap $NS/foreign already exists in cluster cloud-spot and is not spillway's copy" ||
    hub_fail "foreign ConfigMap reason: $(record_field "onprem/$NS/foreign" reason)"
[ "$(kc cloud-spot get configmap foreign -n "$NS" -o jsonpath='{.data.x}')" = someone-else ] ||
    hub_fail "the foreign ConfigMap was changed"
pass "references: ConfigMap train-config copied to cloud-spot and updated; a missing Secret, or a ConfigMap in the target that is not spillway's copy, blocks the burst, named"

# ---- suspending a delegated origin suspends its mirror ---------------------
burst_job pause 2 120s delegated | kc onprem apply -n "$NS" -f - >/dev/null
P="onprem/$NS/pause"
wait_record "$P" state running 60
kc onprem patch job pause -n "$NS" --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
pm=$(record_field "$P" mirror)
for _ in $(seq 1 40); do
    [ "$(kc cloud-spot get job "$pm" -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] && break
    sleep 0.25
done
[ "$(kc cloud-spot get job "$pm" -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] || hub_fail "mirror $pm not suspended"
pass "a delegated origin suspended: its mirror $pm suspended"

# ---- runtimes learned from the Jobs that succeeded ---------------------------
# Five annotated Jobs (1h each) succeeded before pause was decided (train-a,
# train-d, train-o, refs, refs2; the lab runs them 3 to 8 s): each counted
# once, with its record, and pause's belief is its annotation corrected by
# what they took (seconds, not the hour). pause runs 120 s: not yet counted.
[ "$(rcli HLEN spillway:runtimes)" = 5 ] && [ "$(rcli ZCARD spillway:runtimes:order)" = 5 ] ||
    hub_fail "spillway:runtimes holds $(rcli HLEN spillway:runtimes) runtimes, $(rcli ZCARD spillway:runtimes:order) in order, not 5"
[ "$(rcli GET "spillway:job:$A" | jq -r .runtimeCounted)" = true ] || hub_fail "train-a's record does not say its runtime was counted"
"$SPILLCTL" explain "$P" -o json | jq -e '.decision.runtime_belief | .source == "annotation" and .runs == 5
    and .annotated_seconds == 3600 and .median_seconds < 120 and .p90_seconds > .median_seconds' >/dev/null ||
    hub_fail "pause's belief is not its annotation corrected by 5 runs: $("$SPILLCTL" explain "$P" -o json | jq -c .decision.runtime_belief)"
"$SPILLCTL" explain "$P" >"$HUB_TMP/explain-pause"
grep -Eq "^Runtime: +median [0-9]+ s, 90th percentile .*: annotation \(60 min\), corrected by what 5 annotated Jobs took$" "$HUB_TMP/explain-pause" ||
    hub_fail "explain's Runtime line: $(grep Runtime "$HUB_TMP/explain-pause")"
curl -sf http://127.0.0.1:19464/metrics >"$HUB_TMP/metrics-rt" || hub_fail "no /metrics"
grep -q '^spillway_runtime_observations_total{source="annotation"} 5$' "$HUB_TMP/metrics-rt" &&
    grep -q '^spillway_runtime_history 5$' "$HUB_TMP/metrics-rt" &&
    grep -q '^spillway_runtime_error_ratio_count{source="annotation"} 5$' "$HUB_TMP/metrics-rt" ||
    hub_fail "metrics: runtimes $(grep spillway_runtime_ "$HUB_TMP/metrics-rt" | grep -v '^#' | grep -v _bucket)"
pass "runtimes learned: 5 counted once in spillway:runtimes and /metrics; pause decided on \"$(grep Runtime "$HUB_TMP/explain-pause")\""

# ---- a member removed and added while the hub runs -------------------------
"$SPILLCTL" cluster remove cloud-ondemand >/dev/null
for _ in $(seq 1 60); do grep -q 'msg="member removed" cluster=cloud-ondemand' "$HUB_TMP/hub.log" && break; sleep 0.5; done
grep -q 'msg="member removed" cluster=cloud-ondemand' "$HUB_TMP/hub.log" || hub_fail "the hub did not drop a removed member"
"$SPILLCTL" cluster add cloud-ondemand --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-ondemand-token.kubeconfig" --role cloud \
    --region us-west-2 --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null
for _ in $(seq 1 60); do [ "$(grep -c 'msg="member added" cluster=cloud-ondemand' "$HUB_TMP/hub.log")" -ge 2 ] && break; sleep 0.5; done
[ "$(grep -c 'msg="member added" cluster=cloud-ondemand' "$HUB_TMP/hub.log")" -ge 2 ] || hub_fail "the hub did not pick up a re-added member"
pass "a member removed and added again (token auth now) while the hub runs: picked up, no restart"

# ---- what the platform team reads ------------------------------------------
"$SPILLCTL" status >"$HUB_TMP/status"
grep -E "^onprem/$NS/train-o +succeeded +cloud-spot +spot " "$HUB_TMP/status" >/dev/null || hub_fail "spillctl status: $(cat "$HUB_TMP/status")"
"$SPILLCTL" status -o json | python3 -c "
import json, sys
items = {i['key']: i for i in json.load(sys.stdin)['items']}
r = items['$A']
assert r['state'] == 'succeeded' and r['targetCluster'] == 'cloud-spot', r
assert r['costSoFar'] > 0 and r['expectedCost'] > 0 and r['burstNowCost'] > r['expectedCost'], r
" || hub_fail "spillctl status -o json"
"$SPILLCTL" explain "$A" >"$HUB_TMP/explain"
grep -E "^cloud-spot +spot +us-east-1 .*<- chosen$" "$HUB_TMP/explain" >/dev/null || hub_fail "explain: $(cat "$HUB_TMP/explain")"
grep -E "^cloud-ondemand +on-demand +us-west-2 " "$HUB_TMP/explain" >/dev/null || hub_fail "explain lacks on-demand: $(cat "$HUB_TMP/explain")"
grep -E "^onprem +owned +onprem " "$HUB_TMP/explain" >/dev/null || hub_fail "explain lacks home: $(cat "$HUB_TMP/explain")"
"$SPILLCTL" explain "onprem/$NS/nope" 2>"$HUB_TMP/err" && hub_fail "explain of an unknown Job succeeded"
grep -q "no Job onprem/$NS/nope is managed by the hub" "$HUB_TMP/err" || hub_fail "explain error: $(cat "$HUB_TMP/err")"
"$SPILLCTL" hub status >"$HUB_TMP/hub"
grep -q "^Leader:  .*/$HUB_PID-" "$HUB_TMP/hub" || hub_fail "hub status leader: $(cat "$HUB_TMP/hub")"
grep -E "^cloud-spot +cloud +us-east-1 +Ready +yes" "$HUB_TMP/hub" >/dev/null || hub_fail "hub status members: $(cat "$HUB_TMP/hub")"
curl -sf http://127.0.0.1:19464/metrics >"$HUB_TMP/metrics" || hub_fail "no /metrics"
grep -q '^spillway_jobs{state="succeeded"} [1-9]' "$HUB_TMP/metrics" || hub_fail "metrics: jobs by state"
grep -Eq '^spillway_cloud_spend_dollars_total\{team="'"$NS"'",cluster="cloud-spot",pool="[^"]+",capacity="spot"\} [0-9.]*[1-9]' "$HUB_TMP/metrics" || hub_fail "metrics: spend"
grep -Eq '^spillway_api_responses_total\{cluster="onprem",code="200"\} [1-9]' "$HUB_TMP/metrics" || hub_fail "metrics: API responses by status"
grep -Eq '^spillway_api_ratelimit_wait_seconds_total\{cluster="cloud-spot"\} [0-9.]+$' "$HUB_TMP/metrics" || hub_fail "metrics: rate-limit wait"
grep -Eq '^spillway_build_info\{version="[^"]+"\} 1$' "$HUB_TMP/metrics" || hub_fail "metrics: build info"
grep -Eq '^process_resident_memory_bytes [1-9][0-9]*$' "$HUB_TMP/metrics" || hub_fail "metrics: RSS"
grep -Eq '^process_open_fds [1-9][0-9]*$' "$HUB_TMP/metrics" || hub_fail "metrics: open fds"
grep -q '^ts=20[0-9-]*T[0-9:.]*Z level=' "$HUB_TMP/hub.log" || hub_fail "log lines do not start with ts="
grep -q '^spillway_dispatch_latency_seconds_count [1-9]' "$HUB_TMP/metrics" || hub_fail "metrics: latency"
grep -q '^spillway_decisions_total{outcome="burst",pool="cloud-spot"} [1-9]' "$HUB_TMP/metrics" || hub_fail "metrics: decisions by pool"
"$SPILLCTL" report chargeback --from-hub --from 2026-01-01 --to 2100-01-01 --ondemand-price 6.98 -o csv >"$HUB_TMP/cb" ||
    hub_fail "report chargeback --from-hub failed"
head -1 "$HUB_TMP/cb" | grep -q "^team,jobs," || hub_fail "chargeback CSV header: $(head -1 "$HUB_TMP/cb")"
grep -q "^$NS," "$HUB_TMP/cb" || hub_fail "chargeback has no row for team $NS: $(cat "$HUB_TMP/cb")"
pass "spillctl status, explain, hub status, report chargeback --from-hub, and /metrics, show the Jobs, the options, the leader and the spend"

# ---- deleting the origin deletes the mirror --------------------------------
kc onprem delete job train-a -n "$NS" --wait=false >/dev/null
for _ in $(seq 1 60); do
    kc cloud-spot get job "$mirror" -n "$NS" >/dev/null 2>&1 || break
    sleep 0.5
done
kc cloud-spot get job "$mirror" -n "$NS" >/dev/null 2>&1 && hub_fail "mirror $mirror still exists after its origin was deleted"
for _ in $(seq 1 30); do
    kc onprem get job train-a -n "$NS" >/dev/null 2>&1 || break
    sleep 0.5
done
kc onprem get job train-a -n "$NS" >/dev/null 2>&1 && hub_fail "origin still held by the finalizer"
for _ in $(seq 1 60); do
    [ -z "$(rcli GET "spillway:job:$A")" ] && break
    sleep 0.5
done
[ -z "$(rcli GET "spillway:job:$A")" ] || hub_fail "the record of a deleted origin stayed"
[ "$(rcli SISMEMBER spillway:jobs "$A")" = 0 ] || hub_fail "the deleted origin is still in spillway:jobs"
pass "origin deleted: mirror deleted, finalizer released, record removed"

watcher_check
[ -z "${HUB_TLS:-}" ] || hub_check_tls
