#!/usr/bin/env bash
# demo.sh - what `make demo` runs: the burst story on the lab, in the world
# of the seeds' platforms (Kueue queues the on-prem Jobs, Karpenter grows the
# cloud's GPU nodes from zero).
#
#   1. build spillway, bring the lab up (three real clusters with Kueue,
#      Redis, S3), turn on its Karpenter mode (testbed karpenter up)
#   2. register the clusters (the cloud pools bound to Karpenter NodePools,
#      mirrors queued in the cloud's LocalQueues) and the object stores
#   3. start two hubs (one leads, one stands by)
#   4. three teams queue Jobs in on-prem Kueue: a long non-burstable training
#      Job fills the 8-GPU quota, two more non-burstable Jobs wait behind it,
#      four burstable Jobs wait for quota and two delegated Jobs
#      (spec.managedBy: spillway.io/hub) hand themselves to spillway
#   5. kill the leading hub mid-dispatch: the standby takes over
#   6. watch the burstable ones leave Kueue after their inputs are copied,
#      queue in the cloud's Kueue, get nodes from Karpenter, complete, and
#      their outputs come back; a table of where each ran and what it cost
#   7. end the training Job: the non-burstable ones are admitted at home
#
# The demo stops the hubs it started, leaves its Jobs in place (label
# spillway-demo=1 in team-cv, team-nlp and team-recsys) for a look with
# kubectl, and turns the Karpenter mode off again so the lab is back in its
# default mode (Kueue on, Karpenter off) for `make test`
# (SW_DEMO_KEEP_MODES=1 keeps it on). The next run clears the previous
# run's Jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
t0=$SECONDS

step "building spillway"
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "${JOBS:-2}" >/dev/null
step "bringing the lab up (the first run builds Kubernetes, kwok and versitygw from source: ~15 min)"
tests/testbed/testbed up | tail -8
eval "$(tests/testbed/testbed env)"
# The hub e2e tests and the demo each start hubs that manage every
# burstable Job of the lab: one at a time (the tests' lock).
exec 8>"$SW_LAB_DIR/hub-e2e.lock"
flock -n 8 || { echo "waiting for a hub test on this lab to finish" >&2; flock -w 1800 8; }
S="$ROOT/build/controller/spillctl"
D="$ROOT/build/controller/spillwayd"
T="$ROOT/build/tests/e2e/replication/sw_e2e_s3tool"
k() { tests/testbed/testbed kubectl "$@"; }
TEAMS=(team-cv team-nlp team-recsys)
DEMO=$ROOT/build/demo
mkdir -p "$DEMO"
rest=${SW_LAB_REDIS_URL#redis://:}
export SPILLWAY_REDIS_PASSWORD=${rest%%@*}
hp=${rest#*@}
hp=${hp%%/*}
export SPILLWAY_REDIS_URL="redis://$hp/11"
export SPILLWAY_SECRET_KEY_FILE="$DEMO/secret.key"
export SW_S3_ACCESS_KEY="$SW_LAB_S3_ACCESS_KEY" SW_S3_SECRET_KEY="$SW_LAB_S3_SECRET_KEY"
rcli() { REDISCLI_AUTH="$SPILLWAY_REDIS_PASSWORD" redis-cli -h "${hp%:*}" -p "${hp##*:}" -n 11 "$@"; }
pids=()
modes_off() {
    [ -n "${SW_DEMO_KEEP_MODES:-}" ] && return 0
    tests/testbed/testbed karpenter down >"$DEMO/karpenter-down.log" 2>&1 ||
        echo "demo: testbed karpenter down failed (see $DEMO/karpenter-down.log)" >&2
}
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; modes_off' EXIT

step "Kueue on every cluster (the lab's default) and Karpenter on the cloud clusters; the first run builds them (~5 min)"
tests/testbed/testbed kueue up >"$DEMO/kueue-up.log" 2>&1 || { tail -20 "$DEMO/kueue-up.log" >&2; exit 1; }
tests/testbed/testbed karpenter up >"$DEMO/karpenter-up.log" 2>&1 || { tail -20 "$DEMO/karpenter-up.log" >&2; exit 1; }
echo "onprem: ClusterQueue gpu, 8 nvidia.com/gpu nominal; LocalQueue gpu in ${TEAMS[*]}"
echo "cloud:  ClusterQueues with spot / on-demand flavours; Karpenter NodePools gpu-spot (64 GPUs) and gpu-on-demand (32)"
echo "GPU nodes in the cloud at rest: cloud-spot $(k cloud-spot get nodes -l nvidia.com/gpu.product -o name | wc -l), cloud-ondemand $(k cloud-ondemand get nodes -l nvidia.com/gpu.product -o name | wc -l)"

step "clearing the previous run's demo"
for c in onprem cloud-spot cloud-ondemand; do
    for t in "${TEAMS[@]}" demo; do
        for j in $(k "$c" get jobs -n "$t" -l spillway-demo=1 -o name 2>/dev/null); do
            k "$c" patch "$j" -n "$t" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
        done
        k "$c" delete jobs -n "$t" -l spillway-demo=1 --cascade=foreground --wait=true --timeout=60s >/dev/null 2>&1 || true
    done
    # The team namespaces are the demo's: its mirrors (labelled by the hub,
    # not by the demo), the Workloads of Jobs the hub took from Kueue (no
    # owner left to take them along) and the Events go too.
    for t in "${TEAMS[@]}"; do
        for j in $(k "$c" get jobs -n "$t" -l spillway.io/origin-uid -o name 2>/dev/null); do
            k "$c" patch "$j" -n "$t" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
        done
        k "$c" delete jobs -n "$t" -l spillway.io/origin-uid --cascade=foreground --wait=true --timeout=60s >/dev/null 2>&1 || true
        k "$c" delete workloads -n "$t" --all --wait=false >/dev/null 2>&1 || true
        k "$c" delete events -n "$t" --all --wait=false >/dev/null 2>&1 || true
    done
    k "$c" delete namespace demo --wait=true --timeout=60s >/dev/null 2>&1 || true
done
rcli FLUSHDB >/dev/null
[ -f "$SPILLWAY_SECRET_KEY_FILE" ] || (umask 077 && openssl rand -hex 32 >"$SPILLWAY_SECRET_KEY_FILE")

step "registering the clusters (spillctl cluster add) and the object stores"
kcd=$SW_LAB_KUBECONFIG_DIR
"$S" cluster add onprem --kubeconfig "$kcd/onprem-cert.kubeconfig" --role onprem --region onprem \
    --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 | tail -1
"$S" cluster add cloud-spot --kubeconfig "$kcd/cloud-spot-exec.kubeconfig" --role cloud --region us-east-1 \
    --local-queue gpu \
    --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10,nodepool=gpu-spot | tail -1
"$S" cluster add cloud-ondemand --kubeconfig "$kcd/cloud-ondemand-token.kubeconfig" --role cloud --region us-west-2 \
    --local-queue gpu \
    --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98,nodepool=gpu-on-demand | tail -1
"$S" replicate store add onprem-s3 --endpoint "$SW_LAB_S3_ENDPOINT_ONPREM" --region onprem >/dev/null
"$S" replicate store add us-east-1-s3 --endpoint "$SW_LAB_S3_ENDPOINT_US_EAST_1" --region us-east-1 >/dev/null
"$S" replicate store add us-west-2-s3 --endpoint "$SW_LAB_S3_ENDPOINT_US_WEST_2" --region us-west-2 >/dev/null
"$S" cluster list

step "starting two hubs (spillwayd): one takes the lease, the other stands by"
for h in a b; do
    port=$([ $h = a ] && echo 19470 || echo 19471)
    cat >"$DEMO/hub-$h.yaml" <<YAML
redis:
  url: $SPILLWAY_REDIS_URL
  passwordEnv: SPILLWAY_REDIS_PASSWORD
secretKeyFile: $SPILLWAY_SECRET_KEY_FILE
listen: 127.0.0.1:$port
placement:
  policy: cost-aware
  recheckSeconds: 2
leader:
  id: hub-$h
  leaseTTLSeconds: 5
outputs:
  syncSeconds: 2
# The demo's buckets keep their names in every region, and each team's
# namespace may read and write only its own part of them (docs/security.md).
buckets:
  datasets: {us-east-1: datasets, us-west-2: datasets}
  checkpoints: {us-east-1: checkpoints, us-west-2: checkpoints}
tenancy:
  grants:
  - cluster: onprem
    namespace: team-cv
    teams: [cv]
    read: ["s3://datasets/demo/"]
    write: ["s3://checkpoints/demo/"]
    useExistingNamespace: true   # the lab's own, with its LocalQueue gpu
  - cluster: onprem
    namespace: team-nlp
    teams: [nlp]
    read: ["s3://datasets/demo/"]
    write: ["s3://checkpoints/demo/"]
    useExistingNamespace: true
  - cluster: onprem
    namespace: team-recsys
    teams: [recsys]
    read: ["s3://datasets/demo/"]
    write: ["s3://checkpoints/demo/"]
    useExistingNamespace: true
YAML
    "$D" --config "$DEMO/hub-$h.yaml" >"$DEMO/hub-$h.log" 2>&1 &
    pids+=($!)
    disown
    [ $h = a ] && sleep 1
done
sleep 1
"$S" hub status | head -3

# demo_status: spillctl status of the demo's namespaces, one table.
demo_status() {
    "$S" status -n team-cv
    "$S" status -n team-nlp --no-headers
    "$S" status -n team-recsys --no-headers
}

# job NAME PODS GPUS_PER_POD RUN_FOR QUEUED BURST: a Job, created unsuspended
# as a user would (Kueue's webhook suspends the queued ones).
job() {
    local labels="spillway-demo: \"1\"" ann="" managed=""
    [ "$5" = yes ] && labels="$labels, kueue.x-k8s.io/queue-name: gpu"
    case "$6" in
    annotation | delegated)
        ann="  annotations:
    spillway.io/burst: auto
    spillway.io/expected-runtime: 1h
    spillway.io/inputs: s3://datasets/demo/$1/
    spillway.io/outputs: s3://checkpoints/demo/$1/"
        [ "$6" = delegated ] && managed="  managedBy: spillway.io/hub"
        ;;
    esac
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  labels: {$labels}
$ann
spec:
$managed
  parallelism: $2
  completions: $2
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "$4"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - {name: train, image: registry.example/train:1, resources: {limits: {nvidia.com/gpu: "$3"}}}
YAML
}

step "team-recsys's long training Job (2 pods x 4 GPUs, not burstable) fills onprem's Kueue quota"
job recsys-train 2 4 1h yes no | k onprem apply -n team-recsys -f - >/dev/null
for _ in $(seq 1 120); do
    [ "$(k onprem get pods -n team-recsys -l batch.kubernetes.io/job-name=recsys-train --field-selector=status.phase=Running -o name | wc -l)" = 2 ] && break
    sleep 0.5
done
k onprem get clusterqueue gpu -o custom-columns='CLUSTERQUEUE:.metadata.name,ADMITTED WORKLOADS:.status.admittedWorkloads,GPUS IN USE:.status.flavorsUsage[0].resources[?(@.name=="nvidia.com/gpu")].total'

step "putting the burstable Jobs' inputs in onprem's object store (s3://datasets/demo/...)"
BURST=(cv-train-1:team-cv:annotation:2 cv-train-2:team-cv:delegated:4 nlp-train-1:team-nlp:annotation:3
    nlp-train-2:team-nlp:delegated:2 recsys-train-1:team-recsys:annotation:4 recsys-train-2:team-recsys:annotation:3)
for b in "${BURST[@]}"; do
    IFS=: read -r name _ _ _ <<<"$b"
    "$T" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put datasets "demo/$name/shard-0.bin" $((4 << 20)) 7 >/dev/null
done
echo "${#BURST[@]} data sets of 4 MiB"

step "the teams submit: two non-burstable Jobs queue behind the training Job, six burstable Jobs"
job cv-eval 1 2 30s yes no | k onprem apply -n team-cv -f - >/dev/null
job nlp-eval 1 4 30s yes no | k onprem apply -n team-nlp -f - >/dev/null
echo "team-cv/cv-eval (2 GPUs) and team-nlp/nlp-eval (4 GPUs): not burstable, queued in Kueue"
for b in "${BURST[@]}"; do
    IFS=: read -r name ns form gpus <<<"$b"
    # One hour declared: the hub expects onprem's quota to free in about 30
    # minutes, after the Jobs queued ahead (it does not know the training
    # Job's runtime); for an hour's run spot now beats that wait at the
    # derived value of delay. Annotation-only Jobs queue in Kueue like any
    # other; delegated ones hand themselves to spillway (no queue label).
    queued=yes
    [ "$form" = delegated ] && queued=no
    job "$name" 1 "$gpus" 40s "$queued" "$form" | k onprem apply -n "$ns" -f - >/dev/null
    echo "$ns/$name ($form$([ "$queued" = yes ] && echo ", queued in Kueue"), $gpus GPUs)"
done

step "killing the leading hub as the first mirror is created"
# The first record past its data copy: its mirror is being created, the
# others are still being decided or copied.
for _ in $(seq 1 600); do
    keys=$(rcli SMEMBERS spillway:jobs | sed 's/^/spillway:job:/')
    [ -n "$keys" ] && rcli MGET $keys | grep -qE '"state":"(data-ready|dispatching|dispatched|running)"' && break
    sleep 0.05
done
leader=$(rcli GET spillway:hub:leader)
case "$leader" in hub-a/*) victim=0 ;; *) victim=1 ;; esac
kill -9 "${pids[$victim]}"
echo "killed $leader (SIGKILL); the standby takes the lease within its TTL (5 s)"
demo_status | cut -c1-160

step "following them: data copied, mirrors queued in the cloud's Kueue, nodes from Karpenter, pods run"
deadline=$((SECONDS + 240))
done_n=0
while [ $SECONDS -lt $deadline ]; do
    # The lab's pods do not write; the demo writes each running attempt's
    # checkpoint into its region's store, as the workload would.
    for key in $(rcli SMEMBERS spillway:jobs); do
        rec=$(rcli GET "spillway:job:$key")
        st=$(echo "$rec" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["state"], r["targetRegion"], r["attempt"], r["name"])')
        read -r state region attempt name <<<"$st"
        if [ "$state" = running ] && [ ! -f "$DEMO/wrote-$name-$attempt" ]; then
            ep=$SW_LAB_S3_ENDPOINT_US_EAST_1
            [ "$region" = us-west-2 ] && ep=$SW_LAB_S3_ENDPOINT_US_WEST_2
            [ "$region" = onprem ] && ep=$SW_LAB_S3_ENDPOINT_ONPREM
            "$T" "$ep" "$region" put checkpoints "demo/$name/attempt-$attempt/model.pt" 65536 7 >/dev/null && touch "$DEMO/wrote-$name-$attempt"
        fi
    done
    done_n=$("$S" status -o json | python3 -c 'import json,sys; print(sum(1 for i in json.load(sys.stdin)["items"] if i["namespace"].startswith("team-") and i["state"] in ("succeeded","failed")))')
    nodes=$(k cloud-spot get nodes -l karpenter.sh/nodepool -o name | wc -l)
    nodes_od=$(k cloud-ondemand get nodes -l karpenter.sh/nodepool -o name | wc -l)
    printf '%3ds: %d of %d done; Karpenter nodes: cloud-spot %d, cloud-ondemand %d\n' $((SECONDS - t0)) "$done_n" "${#BURST[@]}" "$nodes" "$nodes_od"
    [ "$done_n" = "${#BURST[@]}" ] && break
    sleep 3
done
echo
demo_status
"$S" hub status | head -2
echo
"$S" cluster list

step "onprem's Kueue: what it admitted, what spillway took, what waits"
for t in "${TEAMS[@]}"; do
    k onprem get workloads -n "$t" -o json
done | python3 -c '
import json, sys
dec = json.JSONDecoder(); text = sys.stdin.read(); pos = 0; rows = []
while pos < len(text):
    text_ = text[pos:].lstrip()
    if not text_: break
    obj, n = dec.raw_decode(text_); pos = len(text) - len(text_) + n
    for w in obj["items"]:
        job = next((o["name"] for o in w["metadata"].get("ownerReferences", []) if o["kind"] == "Job"), None)
        if job is None:  # taken: the owner reference went with the take
            job = w["metadata"]["name"].removeprefix("job-").rsplit("-", 1)[0]
        conds = {c["type"]: c for c in w.get("status", {}).get("conditions", [])}
        if w["spec"].get("active") is False:
            what = "taken by spillway (Workload deactivated, never admitted at home)"
        elif conds.get("Admitted", {}).get("status") == "True":
            what = "admitted at home"
        else:
            what = "waiting: " + conds.get("QuotaReserved", {}).get("message", "pending")[:70]
        rows.append((w["metadata"]["namespace"], job, what))
for r in sorted(rows):
    print("%-12s %-16s %s" % r)
'

step "the delegated Jobs, as their submitters see them on onprem"
for t in team-cv team-nlp; do
    k onprem get jobs -n "$t" -l spillway-demo=1 -o custom-columns='JOB:.metadata.name,MANAGED BY:.spec.managedBy,COMPLETIONS:.status.succeeded,STATE:.metadata.annotations.spillway\.io/state,PLACED IN:.metadata.annotations.spillway\.io/placed-in' |
        awk 'NR == 1 && "'"$t"'" != "team-cv" {next} $2 == "spillway.io/hub" || NR == 1'
done
echo
for t in "${TEAMS[@]}"; do
    k onprem get events -n "$t" --field-selector reason=Burst -o custom-columns='JOB:.involvedObject.name,WHY:.message' --no-headers
done | cut -c1-150

step "outputs back in onprem's store"
for b in "${BURST[@]}"; do
    IFS=: read -r name _ _ _ <<<"$b"
    code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:onprem:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
        "$SW_LAB_S3_ENDPOINT_ONPREM/checkpoints/demo/$name/model.pt")
    echo "s3://checkpoints/demo/$name/model.pt: $([ "$code" = 200 ] && echo present || echo "missing (HTTP $code)")"
done

step "where each ran and what it cost"
"$S" status -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
print("%-26s %-11s %-15s %-10s %7s %11s %11s %11s" % ("JOB", "FORM", "RAN IN", "CAPACITY", "ATTEMPT",
      "LAB RUN $", "EXPECTED $", "BURST-NOW $"))
tot = [0, 0, 0]
for i in sorted(items, key=lambda i: (i["namespace"], i["name"])):
    if not i["namespace"].startswith("team-"):
        continue
    print("%-26s %-11s %-15s %-10s %7d %11.2f %11.2f %11.2f" % (i["namespace"] + "/" + i["name"], i["form"], i["targetCluster"],
          i["capacity"], i["attempt"], i["costSoFar"], i["expectedCost"], i["burstNowCost"]))
    tot[0] += i["costSoFar"]; tot[1] += i["expectedCost"]; tot[2] += i["burstNowCost"]
print("%-83s %11.2f %11.2f %11.2f" % ("total", *tot))
if tot[2] > 0:
    print("\nFor their declared 1 h runtime, the chosen placements cost $%.2f against $%.2f" % (tot[1], tot[2]))
    print("for bursting to on-demand at once (%.0f%% less); the lab ran each for about 40 s." % (100 * (1 - tot[1] / tot[2])))
'

step "the training Job ends: Kueue admits the non-burstable Jobs at home, in their turn"
k onprem delete job recsys-train -n team-recsys --cascade=foreground --wait=true --timeout=60s >/dev/null ||
    echo "demo: could not delete team-recsys/recsys-train on onprem" >&2
home_ok=0
for _ in $(seq 1 120); do
    a=$(k onprem get job cv-eval -n team-cv -o jsonpath='{.status.startTime}')
    b=$(k onprem get job nlp-eval -n team-nlp -o jsonpath='{.status.startTime}')
    if [ -n "$a" ] && [ -n "$b" ]; then home_ok=1 && break; fi
    sleep 0.5
done
for j in team-cv/cv-eval team-nlp/nlp-eval; do
    echo "$j: started at home at $(k onprem get job "${j#*/}" -n "${j%/*}" -o jsonpath='{.status.startTime}'), mirrors: $(for c in cloud-spot cloud-ondemand; do k "$c" get jobs -n "${j%/*}" -l spillway.io/origin-uid -o name; done | grep -c "/${j#*/}" || true)"
done
echo
mirrors=$(for c in cloud-spot cloud-ondemand onprem; do for t in "${TEAMS[@]}"; do k "$c" get jobs -n "$t" -l spillway.io/origin-uid -o name; done; done | wc -l)
echo "Mirrors that ran: $mirrors for ${#BURST[@]} burstable Jobs (one each: nothing ran twice)."
echo "Look around: tests/testbed/testbed kubectl cloud-spot get jobs -n team-cv; spillctl explain onprem/team-cv/cv-train-1"
echo "(spillctl needs: export SPILLWAY_REDIS_URL=$SPILLWAY_REDIS_URL SPILLWAY_REDIS_PASSWORD=... SPILLWAY_SECRET_KEY_FILE=$SPILLWAY_SECRET_KEY_FILE)"
if [ -z "${SW_DEMO_KEEP_MODES:-}" ]; then
    echo "Turning Karpenter off again (the lab's default mode, Kueue on, as make test expects; SW_DEMO_KEEP_MODES=1 keeps it on)."
fi
echo "Demo took $((SECONDS - t0)) s. The lab stays up; stop it with: tests/testbed/testbed down"
if [ "$done_n" != "${#BURST[@]}" ]; then
    echo "demo: only $done_n of the ${#BURST[@]} burstable Jobs finished within 240 s; 'spillctl explain onprem/NAMESPACE/NAME' says what each is waiting for" >&2
    exit 1
fi
if [ "$home_ok" != 1 ]; then
    echo "demo: the non-burstable Jobs were not admitted at home within 60 s of the quota freeing" >&2
    exit 1
fi
if [ "$mirrors" != "${#BURST[@]}" ]; then
    echo "demo: $mirrors mirrors for ${#BURST[@]} burstable Jobs" >&2
    exit 1
fi
