#!/usr/bin/env bash
# jobset.sh - the lab's JobSet mode (testbed jobset, tests/testbed/jobset),
# under the lab's lock (it restarts every Kueue):
#   1. on: the JobSet controller ready on every cluster, each Kueue running
#      with its JobSet integration and Kueue's JobSet webhooks registered
#   2. a JobSet of two replicated Jobs (driver: 1 replica x parallelism 2 x
#      2 GPUs; workers: 2 replicas x parallelism 1 x 1 GPU) in a LocalQueue
#      of onprem's Kueue: suspended by Kueue, admitted as one Workload of two
#      pod sets (6 GPUs of the owned flavor), its 4 pods run on onprem's kwok
#      GPU nodes and the JobSet completes (condition Completed=True)
#   3. a JobSet with spec.managedBy: spillway.io/hub is left alone by the
#      JobSet controller: no child Job and no status 10 s after an ordinary
#      JobSet created beside it got its Jobs
#   4. off: Kueue's integration off again (its configuration and webhooks
#      as before, a Job in its queue admitted and completed), the controllers
#      stopped and their webhook registrations gone
# The lab is left as it was: the mode on again if it was on, Kueue's mode
# off again if the test turned it on.
source "$(dirname "$0")/common.sh"
TB="$SW_SOURCE_DIR/tests/testbed/testbed"
LOG=$(mktemp)
lab_lock
T0=$SECONDS
WAS_ON="" STARTED_KUEUE="" NS=""
[ -f "$SW_LAB_DIR/jobset/on" ] && WAS_ON=1
cleanup() {
    local rc=$?
    if [ -n "$NS" ]; then
        kc onprem delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
        kc onprem wait --for=delete "namespace/$NS" --timeout=90s >/dev/null 2>&1 ||
            echo "jobset.sh: namespace $NS on onprem not gone after 90 s" >&2
    fi
    if [ -n "$WAS_ON" ]; then
        "$TB" jobset on >"$LOG" 2>&1 || { echo "restoring: testbed jobset on failed:" >&2; tail -20 "$LOG" >&2; }
    elif [ -f "$SW_LAB_DIR/jobset/on" ]; then
        "$TB" jobset off >"$LOG" 2>&1 || { echo "restoring: testbed jobset off failed:" >&2; tail -20 "$LOG" >&2; }
    fi
    if [ -n "$STARTED_KUEUE" ]; then
        "$TB" kueue down >"$LOG" 2>&1 || { echo "restoring: testbed kueue down failed:" >&2; tail -20 "$LOG" >&2; }
    fi
    rm -f "$LOG"
    exit $rc
}
trap cleanup EXIT
if ! [ -f "$SW_LAB_DIR/kueue/on" ]; then
    STARTED_KUEUE=1
    "$TB" kueue up >"$LOG" 2>&1 || fail "testbed kueue up: $(tail -20 "$LOG")"
fi

# kueue_frameworks CLUSTER: the integrations CLUSTER's running Kueue loaded,
# comma-separated, from its log (the last configuration it printed).
kueue_frameworks() {
    grep '"Successfully loaded configuration"' "$SW_LAB_DIR/logs/$1-kueue.log" | tail -n 1 | python3 -c '
import json, sys, yaml
cfg = yaml.safe_load(json.loads(sys.stdin.read())["config"])
print(",".join(cfg["integrations"]["frameworks"]))'
}
# kueue_jobset_hooks CLUSTER: how many of Kueue's registered webhooks serve JobSets.
kueue_jobset_hooks() {
    kc "$1" get mutatingwebhookconfiguration/kueue-lab-mutating validatingwebhookconfiguration/kueue-lab-validating \
        -o jsonpath='{range .items[*].webhooks[*]}{.clientConfig.url}{"\n"}{end}' | grep -c -- '-jobset-x-k8s-io-' || true
}
# 1. The mode on (from off: the Kueue configurations before it, to compare
# after it).
if [ -n "$WAS_ON" ]; then
    "$TB" jobset off >"$LOG" 2>&1 || fail "testbed jobset off (the mode was on before the test): $(tail -20 "$LOG")"
fi
declare -A KCONF_BEFORE
for c in $SW_LAB_CLUSTERS; do
    KCONF_BEFORE[$c]=$(cat "$SW_LAB_DIR/kueue/$c/config.yaml")
done
t=$SECONDS
"$TB" jobset on >"$LOG" 2>&1 || fail "testbed jobset on: $(tail -20 "$LOG")"
echo "1. testbed jobset on in $((SECONDS - t)) s"
for c in $SW_LAB_CLUSTERS; do
    ip=$(kc "$c" config view --minify -o jsonpath='{.clusters[0].cluster.server}' | sed 's|https://||; s|:.*||')
    port=${SW_LAB_JOBSET_HEALTH_PORT:-29581}
    curl -sf "http://$ip:$port/readyz" >/dev/null || fail "the JobSet controller of $c does not answer /readyz on $ip:$port"
    [ "$(kueue_frameworks "$c")" = "batch/job,jobset.x-k8s.io/jobset" ] ||
        fail "Kueue of $c loaded frameworks '$(kueue_frameworks "$c")', expected batch/job,jobset.x-k8s.io/jobset"
    n=$(kueue_jobset_hooks "$c")
    [ "$n" = 2 ] || fail "Kueue's registrations on $c hold $n JobSet webhooks, expected 2 (mutating, validating)"
    n=$(kc "$c" get mutatingwebhookconfiguration jobset-lab-mutating -o jsonpath='{range .webhooks[*]}{.name}{" "}{end}')
    [ "$n" = "mjobset.kb.io mpod.kb.io " ] || fail "JobSet's mutating webhooks on $c are '$n', expected mjobset.kb.io mpod.kb.io"
    sel=$(kc "$c" get mutatingwebhookconfiguration jobset-lab-mutating -o jsonpath='{.webhooks[1].objectSelector.matchExpressions[0].key}')
    [ "$sel" = jobset.sigs.k8s.io/jobset-name ] || fail "JobSet's pod webhook on $c selects '$sel', expected the pods of a JobSet"
done
grep -Eq 'onprem +Ready +[0-9]+ JobSets, Kueue integration on' "$LOG" || fail "testbed jobset on's status: $(tail -5 "$LOG")"
pass "1. the JobSet controller ready on every cluster, each Kueue with its JobSet integration"

NS="jobset-$$-$RANDOM"
kc onprem create namespace "$NS" >/dev/null
printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: gpu, namespace: %s}\nspec: {clusterQueue: gpu}\n' "$NS" |
    kc onprem apply -f - >/dev/null

# rjob NAME REPLICAS PARALLELISM GPUS DELAY: one replicated Job of a JobSet.
rjob() {
    cat <<YAML
  - name: $1
    replicas: $2
    template:
      spec:
        parallelism: $3
        completions: $3
        backoffLimit: 0
        template:
          metadata:
            annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "$5"}
          spec:
            restartPolicy: Never
            tolerations:
            - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
            containers:
            - name: train
              image: registry.example/train:1
              resources: {limits: {nvidia.com/gpu: "$4"}}
YAML
}

# 2. A gang in onprem's Kueue.
t=$SECONDS
{
    printf 'apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: train\n'
    printf '  labels: {kueue.x-k8s.io/queue-name: gpu}\nspec:\n  replicatedJobs:\n'
    rjob driver 1 2 2 5s
    rjob workers 2 1 1 5s
} >"$LOG"
# Created unsuspended; the object as stored (after the webhooks) is: Kueue's
# webhook suspends it.
susp=$(kc onprem create -n "$NS" -f "$LOG" -o jsonpath='{.spec.suspend}') || fail "creating JobSet train failed"
[ "$susp" = true ] || fail "JobSet train was stored with spec.suspend '$susp': Kueue's webhook did not suspend it"
kc onprem wait -n "$NS" --for=condition=Completed jobset/train --timeout=180s >/dev/null ||
    fail "JobSet train did not complete: $(kc onprem get -n "$NS" jobsets,workloads,jobs,pods -o wide 2>&1)"
took=$((SECONDS - t))
kc onprem wait -n "$NS" --for=condition=Finished workloads --all --timeout=60s >/dev/null ||
    fail "the JobSet's Workload did not finish: $(kc onprem get -n "$NS" workloads -o yaml 2>&1)"
kc onprem get workloads -n "$NS" -o json | python3 -c '
import json, sys
ws = json.load(sys.stdin)["items"]
assert len(ws) == 1, "%d Workloads in the namespace, expected one for the JobSet: %s" % (len(ws), [w["metadata"]["name"] for w in ws])
w = ws[0]
o = w["metadata"]["ownerReferences"]
assert [(x["kind"], x["name"]) for x in o] == [("JobSet", "train")], "the Workload is owned by %s" % o
ps = {p["name"]: p["count"] for p in w["spec"]["podSets"]}
assert ps == {"driver": 2, "workers": 2}, "pod sets %s, expected driver 2, workers 2" % ps
a = w["status"]["admission"]
assert a["clusterQueue"] == "gpu", "admitted by ClusterQueue %s" % a["clusterQueue"]
gpus = 0
for p in a["podSetAssignments"]:
    assert p["flavors"]["nvidia.com/gpu"] == "owned", "pod set %s given flavor %s" % (p["name"], p["flavors"])
    gpus += int(p["resourceUsage"]["nvidia.com/gpu"])
assert gpus == 6, "the admission reserved %d GPUs, expected 6" % gpus
c = {x["type"]: x["status"] for x in w["status"]["conditions"]}
assert c.get("Admitted") == "True" and c.get("Finished") == "True", "Workload conditions %s" % c
' || fail "the JobSet's Workload: see above"
jobs=$(kc onprem get jobs -n "$NS" -l jobset.sigs.k8s.io/jobset-name=train \
    -o jsonpath='{range .items[*]}{.metadata.name}={.status.succeeded}{" "}{end}')
[ "$jobs" = "train-driver-0=2 train-workers-0=1 train-workers-1=1 " ] ||
    fail "the JobSet's Jobs and their succeeded pods are '$jobs', expected train-driver-0=2 train-workers-0=1 train-workers-1=1"
pods=$(kc onprem get pods -n "$NS" -o jsonpath='{range .items[*]}{.status.phase} {.spec.nodeName} {.spec.nodeSelector.nvidia\.com/gpu\.product}{"\n"}{end}')
[ "$(grep -c . <<<"$pods")" = 4 ] || fail "expected the JobSet's 4 pods, got: $pods"
grep -Ev '^Succeeded onprem-gpu-[0-9]+ [^ ]+$' <<<"$pods" && fail "a pod of the JobSet did not succeed on an onprem GPU node with the flavor's node selector: $pods"
pass "2. JobSet train (6 GPUs, 4 pods) admitted by onprem's Kueue as one Workload, run on $(cut -d' ' -f2 <<<"$pods" | sort -u | paste -sd,), Completed in $took s"

# 3. spec.managedBy: spillway.io/hub is not the JobSet controller's.
{
    printf 'apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: delegated}\n'
    printf 'spec:\n  managedBy: spillway.io/hub\n  replicatedJobs:\n'
    rjob workers 2 1 1 5s
    printf -- '---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: control}\nspec:\n  replicatedJobs:\n'
    rjob workers 2 1 1 5s
} | kc onprem apply -n "$NS" -f - >/dev/null
[ "$(kc onprem get jobset delegated -n "$NS" -o jsonpath='{.spec.managedBy}')" = spillway.io/hub ] ||
    fail "JobSet delegated lost its spec.managedBy"
for i in $(seq 1 60); do
    [ "$(kc onprem get jobs -n "$NS" -l jobset.sigs.k8s.io/jobset-name=control -o name | wc -l)" = 2 ] && break
    sleep 0.5
done
[ "$(kc onprem get jobs -n "$NS" -l jobset.sigs.k8s.io/jobset-name=control -o name | wc -l)" = 2 ] ||
    fail "the control JobSet got no 2 Jobs in 30 s: $(kc onprem get -n "$NS" jobsets,jobs 2>&1)"
sleep 10
n=$(kc onprem get jobs -n "$NS" -o json | python3 -c '
import json, sys
print(sum(1 for j in json.load(sys.stdin)["items"] for o in j["metadata"].get("ownerReferences", []) if o["name"] == "delegated"))')
[ "$n" = 0 ] || fail "the JobSet controller made $n Jobs for JobSet delegated (spec.managedBy spillway.io/hub)"
st=$(kc onprem get jobset delegated -n "$NS" -o jsonpath='{.status}')
[ -z "$st" ] || [ "$st" = "{}" ] || fail "the JobSet controller wrote the status of JobSet delegated: $st"
pass "3. JobSet delegated (managedBy spillway.io/hub) left alone: no Job, no status 10 s after control got its 2 Jobs"

# 4. The mode off.
t=$SECONDS
"$TB" jobset off >"$LOG" 2>&1 || fail "testbed jobset off: $(tail -20 "$LOG")"
echo "4. testbed jobset off in $((SECONDS - t)) s"
for c in $SW_LAB_CLUSTERS; do
    [ "$(kueue_frameworks "$c")" = batch/job ] ||
        fail "Kueue of $c loaded frameworks '$(kueue_frameworks "$c")' after the mode, expected batch/job"
    [ "$(cat "$SW_LAB_DIR/kueue/$c/config.yaml")" = "${KCONF_BEFORE[$c]}" ] ||
        fail "Kueue's configuration of $c differs from before the mode: $(diff <(echo "${KCONF_BEFORE[$c]}") "$SW_LAB_DIR/kueue/$c/config.yaml")"
    n=$(kueue_jobset_hooks "$c")
    [ "$n" = 0 ] || fail "Kueue's registrations on $c still hold $n JobSet webhooks"
    left=$(kc "$c" get mutatingwebhookconfigurations,validatingwebhookconfigurations -o name | grep jobset-lab || true)
    [ -z "$left" ] || fail "JobSet's webhook registrations left on $c: $left"
    [ ! -s "$SW_LAB_DIR/run/$c-jobset.pid" ] || fail "the JobSet controller of $c still has a pid file"
done
gpu_job after 1 1 2s | sed 's/^metadata:/metadata:\n  labels: {kueue.x-k8s.io\/queue-name: gpu}/' |
    kc onprem apply -n "$NS" -f - >/dev/null
kc onprem wait -n "$NS" --for=condition=Complete job/after --timeout=120s >/dev/null ||
    fail "a Job in onprem's Kueue did not complete after the mode: $(kc onprem get -n "$NS" jobs,workloads,pods -o wide 2>&1)"
[ "$(kc onprem get workloads -n "$NS" -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}{" "}{end}' | grep -o 'Job/after')" = Job/after ] ||
    fail "Job after has no Workload of Kueue's"
pass "4. mode off: every Kueue back to batch/job alone (same configuration), JobSet's controllers and webhooks gone, a queued Job admitted and completed"
echo "jobset.sh: $((SECONDS - T0)) s after the lab's lock"
