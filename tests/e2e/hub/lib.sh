# lib.sh - helpers for the hub's end-to-end tests (sourced): a Redis
# database of the test's own, the lab's three clusters registered with
# their pools and prices, one object store per region, a hub config, and
# spillwayd processes to start and kill.
# shellcheck shell=bash
source "$(dirname "${BASH_SOURCE[0]}")/../lab/common.sh"
: "${SW_BUILD_DIR:?}"
SPILLCTL="$SW_BUILD_DIR/controller/spillctl"
SPILLWAYD="$SW_BUILD_DIR/controller/spillwayd"
S3TOOL="$SW_BUILD_DIR/tests/e2e/replication/sw_e2e_s3tool"

HUB_TMP=$(mktemp -d)
HUB_PIDS=()
WATCH_PID=""
# The password apart from the URL, as a platform team would give it.
_rest=${SW_LAB_REDIS_URL#redis://:}
HUB_REDIS_PASSWORD=${_rest%%@*}
_hp=${_rest#*@}
HUB_REDIS_HP=${_hp%%/*}
HUB_DB=${HUB_DB:-7}
export SPILLWAY_REDIS_URL="redis://$HUB_REDIS_HP/$HUB_DB"
export SPILLWAY_REDIS_PASSWORD="$HUB_REDIS_PASSWORD"
export SPILLWAY_SECRET_KEY_FILE="$HUB_TMP/secret.key"
export SW_S3_ACCESS_KEY="$SW_LAB_S3_ACCESS_KEY" SW_S3_SECRET_KEY="$SW_LAB_S3_SECRET_KEY"

rcli() { REDISCLI_AUTH="$HUB_REDIS_PASSWORD" redis-cli -h "${HUB_REDIS_HP%:*}" -p "${HUB_REDIS_HP##*:}" -n "$HUB_DB" "$@"; }

# drop_namespace CLUSTER NS: deletes a namespace whose Jobs may still hold
# spillway's finalizer (the hub that would release them is gone).
drop_namespace() {
    local jobs
    jobs=$(kc "$1" get jobs -n "$2" -o name 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -n "$jobs" ] && kc "$1" patch $jobs -n "$2" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    kc "$1" delete namespace "$2" --wait=false >/dev/null 2>&1 || true
}

HUB_EXTRA_NS=()
hub_cleanup() {
    local p c n
    [ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null
    for p in "${HUB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for n in ${NS:-} "${HUB_EXTRA_NS[@]}"; do
        for c in onprem cloud-spot cloud-ondemand; do drop_namespace "$c" "$n"; done
    done
    [ -n "${KEEP_HUB_TMP:-}" ] || rm -rf "$HUB_TMP"
}

# hub_setup PREFIX: a fresh database, the clusters, the stores, a config and
# a namespace $NS on every cluster.
hub_setup() {
    trap hub_cleanup EXIT
    # Every hub manages every burstable Job of the lab, so two hub tests at
    # once (two clones, two worktrees) would dispatch each other's Jobs:
    # one at a time, lab-wide.
    exec 8>"$SW_LAB_DIR/hub-e2e.lock"
    if ! flock -n 8; then
        echo "waiting for another hub test to finish (lock $SW_LAB_DIR/hub-e2e.lock)" >&2
        flock -w 1800 8 || fail "another hub test held the lab for 30 minutes"
    fi
    NS="$1-$$-$RANDOM"
    (umask 077 && openssl rand -hex 32 >"$SPILLWAY_SECRET_KEY_FILE")
    rcli FLUSHDB >/dev/null
    # The tests size their load for an empty lab: `make demo` leaves its
    # Jobs (namespace demo) in place for a look; clear them first.
    for c in onprem cloud-spot cloud-ondemand; do
        drop_namespace "$c" demo
        kc "$c" wait --for=delete namespace/demo --timeout=60s >/dev/null 2>&1 || true
    done
    local kcd="$SW_LAB_KUBECONFIG_DIR"
    "$SPILLCTL" cluster add onprem --kubeconfig "$kcd/onprem-cert.kubeconfig" --role onprem \
        --region onprem --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >/dev/null
    "$SPILLCTL" cluster add cloud-spot --kubeconfig "$kcd/cloud-spot-cert.kubeconfig" --role cloud \
        --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
    "$SPILLCTL" cluster add cloud-ondemand --kubeconfig "$kcd/cloud-ondemand-cert.kubeconfig" --role cloud \
        --region us-west-2 --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null
    "$SPILLCTL" replicate store add onprem-s3 --endpoint "$SW_LAB_S3_ENDPOINT_ONPREM" --region onprem >/dev/null
    "$SPILLCTL" replicate store add us-east-1-s3 --endpoint "$SW_LAB_S3_ENDPOINT_US_EAST_1" --region us-east-1 >/dev/null
    "$SPILLCTL" replicate store add us-west-2-s3 --endpoint "$SW_LAB_S3_ENDPOINT_US_WEST_2" --region us-west-2 >/dev/null
    for c in onprem cloud-spot cloud-ondemand; do kc "$c" create namespace "$NS" >/dev/null; done
    hub_config "$HUB_TMP/hub.yaml" 19464
}

# hub_config FILE PORT [LEASE_TTL]: writes a hub config.
hub_config() {
    cat >"$1" <<YAML
redis:
  url: $SPILLWAY_REDIS_URL
  passwordEnv: SPILLWAY_REDIS_PASSWORD
secretKeyFile: $SPILLWAY_SECRET_KEY_FILE
listen: 127.0.0.1:$2
placement:
  policy: cost-aware
  recheckSeconds: 2
leader:
  leaseTTLSeconds: ${3:-4}
outputs:
  syncSeconds: 2
logLevel: info
YAML
}

# hub_start [CONFIG] [ENV=VALUE...]: starts spillwayd; its pid is $HUB_PID.
hub_start() {
    local cfg=${1:-$HUB_TMP/hub.yaml}
    shift || true
    env "$@" "$SPILLWAYD" --config "$cfg" >>"$HUB_TMP/hub.log" 2>&1 &
    HUB_PID=$!
    HUB_PIDS+=("$HUB_PID")
}

hub_log() { cat "$HUB_TMP/hub.log" >&2; }

hub_fail() {
    echo "FAIL: $*" >&2
    echo "---- hub log (last 60 lines)" >&2
    tail -60 "$HUB_TMP/hub.log" >&2
    echo "---- records" >&2
    for k in $(rcli SMEMBERS spillway:jobs); do rcli GET "spillway:job:$k" >&2; done
    exit 1
}

# record_field KEY FIELD: a field of a Job's record in Redis.
record_field() {
    rcli GET "spillway:job:$1" | python3 -c "import json,sys; d=sys.stdin.read().strip(); print(json.loads(d).get('$2','') if d else '')"
}

# wait_record KEY FIELD VALUE SECONDS
wait_record() {
    local i
    for i in $(seq 1 $(($4 * 4))); do
        [ "$(record_field "$1" "$2")" = "$3" ] && return 0
        sleep 0.25
    done
    hub_fail "record $1: $2 is \"$(record_field "$1" "$2")\", not \"$3\", after $4 s"
}

# watcher_start [--lossy CLUSTER]: the independent oracle (watch_invariants.py)
# on the three clusters for the test's namespace, for the whole test.
watcher_start() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/watch_invariants.py" "$SW_LAB_KUBECTL" "$SW_LAB_KUBECONFIG_DIR" "$NS" "$@" \
        >"$HUB_TMP/watch.log" 2>&1 &
    WATCH_PID=$!
}

# watcher_check: stops the watcher and fails the test on any violation.
watcher_check() {
    kill -TERM "$WATCH_PID" 2>/dev/null || true
    wait "$WATCH_PID" 2>/dev/null || true
    WATCH_PID=""
    if grep -q VIOLATION "$HUB_TMP/watch.log"; then
        cat "$HUB_TMP/watch.log" >&2
        hub_fail "the watcher saw a violation"
    fi
    grep -q "^samples " "$HUB_TMP/watch.log" || hub_fail "the watcher took no sample: $(cat "$HUB_TMP/watch.log")"
    tail -1 "$HUB_TMP/watch.log"
}

# saturate: fills onprem (2 nodes x 4 GPUs) with a long non-burstable Job
# of one 4-GPU pod and a long burstable one that runs at home (a Job with a
# pod running at home is never burst).
saturate() {
    cat <<YAML | kc onprem apply -n "$NS" -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: filler}
spec:
  parallelism: 1
  completions: 1
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3600s"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: hold
        image: registry.example/hold:1
        resources: {limits: {nvidia.com/gpu: "4"}}
YAML
    burst_job home 4 3600s | kc onprem apply -n "$NS" -f - >/dev/null
    local i
    for i in $(seq 1 60); do
        [ "$(kc onprem get pods -n "$NS" --field-selector=status.phase=Running -o name | wc -l)" = 2 ] && return 0
        sleep 0.5
    done
    hub_fail "onprem was not saturated"
}

# burst_job NAME GPUS DELAY [delegated] [EXTRA_ANNOTATIONS_YAML]: a burstable
# Job (spillway.io/burst: $BURST_MODE, default auto).
burst_job() {
    local managed=""
    [ "${4:-}" = delegated ] && managed="  managedBy: spillway.io/hub"
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  annotations:
    spillway.io/burst: ${BURST_MODE:-auto}
    spillway.io/expected-runtime: 1h
${5:-}
spec:
$managed
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "$3"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "$2"}}
YAML
}
