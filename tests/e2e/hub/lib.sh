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

# rcli ARGS...: the hub's database (on the Sentinels' master after
# hub_use_sentinel).
rcli() {
    if [ -n "${HUB_SENTINEL:-}" ]; then
        dcli "$(master_port)" "$@"
    else
        REDISCLI_AUTH="$HUB_REDIS_PASSWORD" redis-cli -h "${HUB_REDIS_HP%:*}" -p "${HUB_REDIS_HP##*:}" -n "$HUB_DB" "$@"
    fi
}

# hub_use_sentinel [tls]: the hub, spillctl and rcli on the lab's Redis
# Sentinel (testbed sentinel up: a primary, a replica, three Sentinels)
# instead of the single Redis; call it before hub_setup. The data nodes'
# password and the Sentinels' own come apart, from the environment. With
# tls, the lab's TLS-only set (testbed sentinel up tls) over
# rediss+sentinel://, the helpers below (scli, dcli, rcli) speaking TLS too.
HUB_CLI_TLS=()
hub_use_sentinel() {
    "$SW_SOURCE_DIR/tests/testbed/testbed" sentinel up ${1:-} >/dev/null
    eval "$("$SW_SOURCE_DIR/tests/testbed/testbed" env)"
    export SPILLWAY_REDIS_URL="redis+sentinel://$SW_LAB_SENTINELS/$SW_LAB_SENTINEL_MASTER/$HUB_DB"
    if [ "${1:-}" = tls ]; then
        local t=$SW_LAB_REDIS_TLS_DIR
        SW_LAB_SENTINELS=$SW_LAB_SENTINELS_TLS
        SW_LAB_SENTINEL_DATA_PORTS=$SW_LAB_SENTINEL_TLS_DATA_PORTS
        HUB_CLI_TLS=(--tls --cacert "$t/ca.crt" --cert "$t/client.crt" --key "$t/client.key")
        SPILLWAY_REDIS_URL="rediss+sentinel://$SW_LAB_SENTINELS/$SW_LAB_SENTINEL_MASTER/$HUB_DB"
        SPILLWAY_REDIS_URL+="?tls_ca_file=$t/ca.crt&tls_cert_file=$t/client.crt&tls_key_file=$t/client.key"
        HUB_TLS=1
    fi
    export SPILLWAY_REDIS_PASSWORD="$SW_LAB_SENTINEL_DATA_PASSWORD"
    export SPILLWAY_SENTINEL_PASSWORD="$SW_LAB_SENTINEL_PASSWORD"
    HUB_REDIS_PASSWORD="$SW_LAB_SENTINEL_DATA_PASSWORD"
    HUB_SENTINEL=1
}
# hub_use_tls: the hub and spillctl on the lab's Redis over TLS (rediss://,
# its TLS port, with the lab's CA and client certificate), turning that
# port on first in a lab up without it; rcli stays on the plain port, an
# observer from outside. Call it before hub_setup.
hub_use_tls() {
    "$SW_SOURCE_DIR/tests/testbed/testbed" redis-tls >/dev/null
    eval "$("$SW_SOURCE_DIR/tests/testbed/testbed" env)"
    local rest=${SW_LAB_REDIS_TLS_URL#rediss://*@}
    export SPILLWAY_REDIS_URL="rediss://${rest%%/*}/$HUB_DB?${rest#*\?}"
    HUB_TLS=1
}
# hub_check_tls: the hub connected over TLS, and its password is nowhere in its log.
hub_check_tls() {
    grep -Eq 'msg="redis connected" redis="?rediss(\+sentinel)?://' "$HUB_TMP/hub.log" ||
        hub_fail "the hub's log shows no connection over rediss://"
    ! grep -qF "$HUB_REDIS_PASSWORD" "$HUB_TMP/hub.log" || hub_fail "the Redis password is in the hub's log"
    [ -z "${HUB_SENTINEL:-}" ] || ! grep -qF "$SW_LAB_SENTINEL_PASSWORD" "$HUB_TMP/hub.log" ||
        hub_fail "the Sentinels' password is in the hub's log"
    pass "the hub ran over ${SPILLWAY_REDIS_URL%%://*}:// ($(grep -c 'msg="redis connected"' "$HUB_TMP/hub.log") connections), no password in its log"
}
scli() { # scli ARGS...: the first Sentinel
    local s1=${SW_LAB_SENTINELS%%,*}
    REDISCLI_AUTH="$SW_LAB_SENTINEL_PASSWORD" redis-cli -h "${s1%:*}" -p "${s1##*:}" "${HUB_CLI_TLS[@]}" "$@"
}
master_port() { scli SENTINEL get-master-addr-by-name "$SW_LAB_SENTINEL_MASTER" | sed -n 2p; }
replica_port() {
    local p m
    m=$(master_port)
    for p in $SW_LAB_SENTINEL_DATA_PORTS; do
        if [ "$p" != "$m" ]; then echo "$p"; fi
    done
}
dcli() { # dcli PORT ARGS...: a Sentinel data node, the hub's database
    local p=$1
    shift
    REDISCLI_AUTH="$SW_LAB_SENTINEL_DATA_PASSWORD" redis-cli -h 127.0.0.1 -p "$p" -n "$HUB_DB" "${HUB_CLI_TLS[@]}" "$@"
}

# metric PORT NAME: a hub's /metrics value.
metric() {
    curl -sf "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v n="$2" '$1==n{print $2}'
}

# failover: asks Sentinel to fail over and waits until the other node is a
# master the Sentinels name; prints the new master's port.
failover() {
    local before after i
    before=$(master_port)
    [ "$(scli SENTINEL failover "$SW_LAB_SENTINEL_MASTER")" = OK ] || hub_fail "SENTINEL failover refused"
    for i in $(seq 1 150); do
        after=$(master_port)
        if [ -n "$after" ] && [ "$after" != "$before" ] &&
            [ "$(dcli "$after" ROLE | head -1)" = master ]; then
            echo "$after"
            return 0
        fi
        sleep 0.1
    done
    hub_fail "no failover from $before after 15 s"
}

# log_ms PATTERN: the time of the first hub log line matching it, in ms.
log_ms() {
    local ts
    ts=$(grep -m1 -- "$1" "$HUB_TMP/hub.log" | cut -d' ' -f1)
    ts=${ts#ts=} # log lines are logfmt: ts=TIME ...
    [ -n "$ts" ] || hub_fail "no log line matches $1"
    date -d "$ts" +%s%3N
}

# wait_sentinel_ready: the replica linked again, so that the next failover
# has a replica to promote.
wait_sentinel_ready() {
    local i
    for i in $(seq 1 150); do
        scli SENTINEL replicas "$SW_LAB_SENTINEL_MASTER" |
            awk 'p { print; exit } $0 == "master-link-status" { p = 1 }' | grep -qx ok &&
            [ "$(dcli "$(replica_port)" ROLE | head -1)" = slave ] && return 0
        sleep 0.2
    done
    hub_fail "the replica did not link to the new master within 30 s"
}

# s3get ENDPOINT REGION BUCKET KEY: an object, read apart from the hub
# (curl's own SigV4), on stdout.
s3get() {
    curl -sf --aws-sigv4 "aws:amz:$2:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$1/$3/$4"
}

# Members and stores may be reached through other addresses (the chaos
# suite's fault proxy): HUB_KUBECONFIG[CLUSTER] and HUB_STORE_ENDPOINT[REGION]
# override the lab's, for hub_setup.
declare -A HUB_KUBECONFIG=() HUB_STORE_ENDPOINT=()

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
    [ -n "${FAULT_PID:-}" ] && kill "$FAULT_PID" 2>/dev/null
    for p in "${HUB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for n in ${NS:-} "${HUB_EXTRA_NS[@]}"; do
        for c in onprem cloud-spot cloud-ondemand; do drop_namespace "$c" "$n"; done
    done
    [ -n "${KEEP_HUB_TMP:-}" ] || rm -rf "$HUB_TMP"
}

# hub_lock: every hub manages every burstable Job of the lab, so two hub
# tests at once (two clones, two worktrees) would dispatch each other's
# Jobs: one at a time, lab-wide. hub_setup takes it; a test that needs the
# lab before (the chaos suite's fault proxy) takes it first. What a test
# starts in the background (the hub, the watcher, the fault proxy) closes
# the lock's descriptor, so that one left running never holds the lab.
HUB_LOCKED=""
hub_lock() {
    [ -z "$HUB_LOCKED" ] || return 0
    exec 8>"$SW_LAB_DIR/hub-e2e.lock"
    if ! flock -n 8; then
        echo "waiting for another hub test to finish (lock $SW_LAB_DIR/hub-e2e.lock)" >&2
        flock -w 1800 8 || fail "another hub test held the lab for 30 minutes"
    fi
    HUB_LOCKED=1
}

# hub_setup PREFIX: a fresh database, the clusters, the stores, a config and
# a namespace $NS on every cluster.
hub_setup() {
    trap hub_cleanup EXIT
    hub_lock
    NS="$1-$$-$RANDOM"
    (umask 077 && openssl rand -hex 32 >"$SPILLWAY_SECRET_KEY_FILE")
    rcli FLUSHDB >/dev/null
    # The tests size their load for an empty lab: `make demo` leaves its
    # Jobs (label spillway-demo=1 and their mirrors, in the Kueue teams'
    # namespaces; namespace demo before) in place for a look; clear them
    # first, keeping the namespaces (their LocalQueues are the lab's).
    # One look per cluster finds them (nothing to do after `testbed clean`:
    # `make test` and `make e2e` say so with SW_LAB_CLEANED=1, and the look,
    # about a second of kubectl per test, is skipped).
    local c t j look="onprem cloud-spot cloud-ondemand"
    [ "${SW_LAB_CLEANED:-0}" != 1 ] || look=""
    for c in $look; do
        if kc "$c" get namespace demo >/dev/null 2>&1; then
            drop_namespace "$c" demo
            kc "$c" wait --for=delete namespace/demo --timeout=60s >/dev/null 2>&1 || true
        fi
        {
            kc "$c" get jobs -A -l 'spillway-demo=1' -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' 2>/dev/null || true
            kc "$c" get jobs -A -l 'spillway.io/origin-uid' -o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' 2>/dev/null || true
        } >"$HUB_TMP/leftover"
        while read -r t j; do
            case "$t" in team-cv | team-nlp | team-recsys) ;; *) continue ;; esac
            kc "$c" patch job "$j" -n "$t" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
            kc "$c" delete job "$j" -n "$t" --wait=false >/dev/null 2>&1 || true
        done <"$HUB_TMP/leftover"
    done
    local kcd="$SW_LAB_KUBECONFIG_DIR"
    "$SPILLCTL" cluster add onprem --kubeconfig "${HUB_KUBECONFIG[onprem]:-$kcd/onprem-cert.kubeconfig}" --role onprem \
        --region onprem --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >/dev/null
    "$SPILLCTL" cluster add cloud-spot --kubeconfig "${HUB_KUBECONFIG[cloud-spot]:-$kcd/cloud-spot-cert.kubeconfig}" --role cloud \
        --region us-east-1 --pool name=spot-h100,capacity=spot,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=2.10 >/dev/null
    "$SPILLCTL" cluster add cloud-ondemand --kubeconfig "${HUB_KUBECONFIG[cloud-ondemand]:-$kcd/cloud-ondemand-cert.kubeconfig}" --role cloud \
        --region us-west-2 --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null
    "$SPILLCTL" replicate store add onprem-s3 --endpoint "${HUB_STORE_ENDPOINT[onprem]:-$SW_LAB_S3_ENDPOINT_ONPREM}" --region onprem >/dev/null
    "$SPILLCTL" replicate store add us-east-1-s3 --endpoint "${HUB_STORE_ENDPOINT[us-east-1]:-$SW_LAB_S3_ENDPOINT_US_EAST_1}" --region us-east-1 >/dev/null
    "$SPILLCTL" replicate store add us-west-2-s3 --endpoint "${HUB_STORE_ENDPOINT[us-west-2]:-$SW_LAB_S3_ENDPOINT_US_WEST_2}" --region us-west-2 >/dev/null
    for c in onprem cloud-spot cloud-ondemand; do
        printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels: {%s: "%s"}\n' \
            "$NS" "$HUB_SELECT_LABEL" "$NS" | kc "$c" create -f - >/dev/null
    done
    hub_config "$HUB_TMP/hub.yaml" 19464
}

# The test's namespace $NS carries the label HUB_SELECT_LABEL=$NS on every
# cluster. With HUB_SELECT=1 (set before hub_setup), every hub config
# hub_config writes has namespaceSelector "HUB_SELECT_LABEL=$NS": the
# test's hubs serve only its own namespaces (docs/hub.md, "Serving some
# namespaces"), and a namespace the test makes itself is served once
# hub_serve_ns labels it.
HUB_SELECT_LABEL=spillway.io/e2e
HUB_SELECT=${HUB_SELECT:-0}
# hub_serve_ns CLUSTER NS: namespace NS of CLUSTER labelled for the test's hubs.
hub_serve_ns() {
    kc "$1" label namespace "$2" "$HUB_SELECT_LABEL=$NS" --overwrite >/dev/null
}

# hub_tenancy: the buckets and grants the lab's hub tests use (tenancy.h,
# docs/security.md): the lab's buckets under their own names in every cloud
# region (and HUB_EXTRA_BUCKETS), and for the test's namespace $NS (and
# HUB_EXTRA_NS) on each cluster the whole lab buckets to read and write,
# every priority, and the namespace the test made itself in the cloud
# members (useExistingNamespace). A test of tenancy writes its own.
hub_tenancy() {
    local b r c n
    echo "buckets:"
    for b in datasets checkpoints models ${HUB_EXTRA_BUCKETS:-}; do
        echo "  $b: {us-east-1: $b, us-west-2: $b}"
    done
    echo "tenancy:"
    echo "  grants:"
    for c in onprem cloud-spot cloud-ondemand; do
        for n in ${NS:-} "${HUB_EXTRA_NS[@]}"; do
            [ -n "$n" ] || continue
            local w=""
            for b in ${HUB_EXTRA_BUCKETS:-}; do w="$w, \"s3://$b/\""; done
            cat <<YAML
  - cluster: $c
    namespace: $n
    priorities: [best-effort, development, training, production]
    read: ["s3://datasets/", "s3://checkpoints/", "s3://models/"$w]
    write: ["s3://datasets/", "s3://checkpoints/", "s3://models/"$w]
    useExistingNamespace: true
YAML
        done
    done
}

# hub_config FILE PORT [LEASE_TTL]: writes a hub config (hub_tenancy's
# grants included, unless HUB_NO_TENANCY=1; the test's namespaceSelector
# with HUB_SELECT=1).
hub_config() {
    [ "${HUB_NO_TENANCY:-0}" = 1 ] || hub_tenancy >"$1.tenancy"
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
    [ "$HUB_SELECT" != 1 ] || echo "namespaceSelector: \"$HUB_SELECT_LABEL=$NS\"" >>"$1"
    if [ "${HUB_NO_TENANCY:-0}" != 1 ]; then
        cat "$1.tenancy" >>"$1"
    fi
    rm -f "$1.tenancy"
}

# hub_start [CONFIG] [ENV=VALUE...]: starts spillwayd; its pid is $HUB_PID.
hub_start() {
    local cfg=${1:-$HUB_TMP/hub.yaml}
    shift || true
    env "$@" "$SPILLWAYD" --config "$cfg" >>"$HUB_TMP/hub.log" 2>&1 8>&- &
    HUB_PID=$!
    HUB_PIDS+=("$HUB_PID")
}

hub_log() { cat "$HUB_TMP/hub.log" >&2; }

# hub_needs_failpoints: fails at once, saying why, unless spillwayd is a
# test build (common/failpoint.h: -DSW_FAILPOINTS=ON, as `make build` and
# `make test` configure it). A release build ignores SPILLWAY_CRASH_AT and
# SPILLWAY_TEST_HOLD, and a test arming them would wait for nothing.
hub_needs_failpoints() {
    grep -aq SPILLWAY_CRASH_AT "$SPILLWAYD" || {
        echo "FAIL: $SPILLWAYD has no failpoints: configure $SW_BUILD_DIR with -DSW_FAILPOINTS=ON (make build does)" >&2
        exit 1
    }
}

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
    # (jq, not python: the suite polls records several times a second, and
    # a python start costs a tenth of a core.)
    rcli GET "spillway:job:$1" | jq -r --arg f "$2" 'if type == "object" then (.[$f] // "") else "" end'
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

# decided_summary KEY SECONDS: the summary of KEY's record once it has one
# (its first decision), waiting up to SECONDS.
decided_summary() {
    local i sum=""
    for i in $(seq 1 $(($2 * 4))); do
        sum=$(record_field "$1" summary)
        [ -n "$sum" ] && break
        sleep 0.25
    done
    [ -n "$sum" ] || hub_fail "no decision on $1 in $2 s"
    echo "$sum"
}

# watcher_start [--lossy CLUSTER]: the independent oracle (watch_invariants.py)
# on the three clusters for the test's namespace, for the whole test.
watcher_start() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/watch_invariants.py" "$SW_LAB_KUBECTL" "$SW_LAB_KUBECONFIG_DIR" "$NS" "$@" \
        >"$HUB_TMP/watch.log" 2>&1 8>&- &
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

# ---- Kueue -------------------------------------------------------------------

# kueue_job NAME GPUS_PER_POD PODS DELAY BURSTABLE [PRIORITY_CLASS] [delegated]:
# a Job in LocalQueue gpu, created unsuspended, with a WorkloadPriorityClass
# if named, and spec.managedBy spillway.io/hub when the seventh argument
# says "delegated".
kueue_job() {
    local ann="" prio="" managed=""
    [ "$5" = yes ] && ann="    spillway.io/burst: auto
    spillway.io/expected-runtime: 1h"
    [ -n "${6:-}" ] && prio=", kueue.x-k8s.io/priority-class: $6"
    [ "${7:-}" = delegated ] && managed="  managedBy: spillway.io/hub"
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  labels: {kueue.x-k8s.io/queue-name: gpu$prio}
  annotations:
    kueue-lab: "1"
$ann
spec:
$managed
  parallelism: $3
  completions: $3
  backoffLimit: 0
  template:
    metadata:
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "$4"}
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: "$2"}}
YAML
}

# kwok_gpu_nodes CLUSTER TYPE RESOURCES_JSON LABELS KEY VALUE NODE...: adds
# kwok nodes NODE... to CLUSTER, labelled type=TYPE and with LABELS (YAML
# lines indented 4 spaces), tainted nvidia.com/gpu, their allocatable and
# capacity RESOURCES_JSON; returns once they are Ready and each shows VALUE
# at KEY of its allocatable (a jsonpath key, dots escaped: kwok's
# node-initialize stage may write its defaults over the status sent at
# creation, so it is set again once they are Ready). The caller deletes them.
kwok_gpu_nodes() {
    local cluster=$1 type=$2 res=$3 labels=$4 key=$5 value=$6 n i got=""
    shift 6
    for n in "$@"; do
        cat <<YAML | kc "$cluster" apply -f - >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: $n
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    type: $type
    kubernetes.io/hostname: $n
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
$labels
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  allocatable: $res
  capacity: $res
YAML
    done
    kc "$cluster" wait --for=condition=Ready node -l "type=$type" --timeout=60s >/dev/null ||
        hub_fail "the $type nodes on $cluster did not turn Ready"
    for n in "$@"; do
        kc "$cluster" patch node "$n" --subresource=status --type=merge \
            -p "{\"status\":{\"allocatable\":$res,\"capacity\":$res}}" >/dev/null
    done
    for i in $(seq 1 60); do
        got=$(kc "$cluster" get nodes -l "type=$type" -o jsonpath="{range .items[*]}{.status.allocatable.$key}{\"\\n\"}{end}" | grep -cx "$value" || true)
        [ "$got" = $# ] && return 0
        sleep 0.5
    done
    hub_fail "the $type nodes on $cluster do not show $key $value ($got of $#)"
}

# node_resources CLUSTER RESOURCES_JSON: the allocatable and capacity of
# CLUSTER's kwok GPU nodes (label type=kwok) set to RESOURCES_JSON (put back
# by testbed reseed CLUSTER); prints how many nodes.
node_resources() {
    local node n=0
    for node in $(kc "$1" get nodes -l type=kwok -o name); do
        kc "$1" patch "$node" --subresource=status --type=merge \
            -p "{\"status\":{\"allocatable\":$2,\"capacity\":$2}}" >/dev/null
        n=$((n + 1))
    done
    echo "$n"
}

# kueue_filler: Job filler in $NS on onprem, 2 pods x 4 GPUs for an hour,
# holding the 8 GPUs of ClusterQueue gpu's nominal quota; returns once both
# pods run. The tests before delete their namespaces without waiting: their
# Workloads may still hold or wait for the queue's quota, and Kueue was seen
# (CI, stop 26) to leave a filler created then pending for 60 s after the
# quota it lacked was freed. So it waits first (up to 180 s) for the queue
# to reserve nothing and have nothing pending, naming what is there if not.
kueue_filler() {
    local q="" i idle=""
    for i in $(seq 1 180); do
        q=$(kc onprem get clusterqueue gpu -o jsonpath='{.status.reservingWorkloads}/{.status.pendingWorkloads}' || true)
        case "$q" in /|0/0|/0|0/) idle=1 && break ;; esac
        sleep 1
    done
    if [ -z "$idle" ]; then
        kc onprem get workloads -A -o custom-columns='NAMESPACE:.metadata.namespace,WORKLOAD:.metadata.name,ADMITTED BY:.status.admission.clusterQueue' >&2 || true
        hub_fail "ClusterQueue gpu on onprem still has $q Workloads reserving/pending after 180 s (listed above)"
    fi
    [ "$i" = 1 ] || echo "kueue_filler: waited $((i - 1)) s for ClusterQueue gpu on onprem to reserve nothing and have nothing pending" >&2
    kueue_job filler 4 2 3600s no | kc onprem apply -n "$NS" -f - >/dev/null
    if ! kc onprem wait --for=jsonpath='{.status.active}'=2 job/filler -n "$NS" --timeout=120s >/dev/null; then
        echo "---- filler's Workload, pods and ClusterQueue gpu" >&2
        kc onprem get workloads -n "$NS" -o jsonpath='{range .items[*]}{.metadata.name}: {range .status.conditions[*]}{.type}={.status} ({.message}); {end}{"\n"}{end}' >&2 || true
        kc onprem get pods -n "$NS" -o wide >&2 || true
        kc onprem get clusterqueue gpu -o jsonpath='{.status}{"\n"}' >&2 || true
        hub_fail "the filler (2 pods x 4 GPUs in LocalQueue gpu) did not run within 120 s"
    fi
}

# local_queue CLUSTER: LocalQueue gpu in $NS there, on ClusterQueue gpu.
local_queue() {
    cat <<YAML | kc "$1" apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpu, namespace: $NS}
spec: {clusterQueue: gpu}
YAML
}

# sa_kubeconfig CLUSTER FILE: a kubeconfig for ServiceAccount spillway in
# $NS there (created first), with a token valid for an hour.
sa_kubeconfig() {
    kc "$1" create serviceaccount spillway -n "$NS" >/dev/null
    cat >"$2" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: $1
  cluster:
    server: $(kc "$1" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
    certificate-authority-data: $(base64 -w0 "$SW_LAB_DIR/$1/pki/ca.crt")
users:
- name: spillway
  user:
    token: $(kc "$1" create token spillway -n "$NS" --duration=1h)
contexts:
- name: $1
  context: {cluster: $1, user: spillway}
current-context: $1
YAML
}

# ---- the fault proxy (faultproxy.py), for the chaos suite ---------------------

FAULT_CTL=127.0.0.1:19480
FAULT_PID=""
# faultproxy_start: a TCP route in front of each member's API server (on
# 127.0.0.21-23:6443; the hub's kubeconfig for it is the lab's token one,
# pointed at the proxy: its tls-server-name keeps TLS verified) and an HTTP
# route in front of each region's store (127.0.0.1:17170-17172). Sets
# HUB_KUBECONFIG and HUB_STORE_ENDPOINT, so call it before hub_setup.
# Routes are named after the cluster, or s3-REGION.
faultproxy_start() {
    local routes=() i=0 c up listen r ep var
    for c in onprem cloud-spot cloud-ondemand; do
        i=$((i + 1))
        up=$(awk '$1=="server:"{print $2; exit}' "$SW_LAB_KUBECONFIG_DIR/$c-token.kubeconfig")
        listen=127.0.0.$((20 + i)):6443
        routes+=("$c=$listen=${up#https://}")
        sed "s|server: $up|server: https://$listen|" "$SW_LAB_KUBECONFIG_DIR/$c-token.kubeconfig" \
            >"$HUB_TMP/$c-proxy.kubeconfig"
        chmod 600 "$HUB_TMP/$c-proxy.kubeconfig"
        HUB_KUBECONFIG[$c]="$HUB_TMP/$c-proxy.kubeconfig"
    done
    i=0
    for r in onprem us-east-1 us-west-2; do
        var=SW_LAB_S3_ENDPOINT_$(echo "$r" | tr 'a-z-' 'A-Z_')
        ep=${!var}
        routes+=("s3-$r=127.0.0.1:$((17170 + i))=${ep#http://}=http")
        HUB_STORE_ENDPOINT[$r]="http://127.0.0.1:$((17170 + i))"
        i=$((i + 1))
    done
    faultproxy_run "${routes[@]}"
}

# faultproxy_run NAME=LISTEN=UPSTREAM[=http]...: starts the fault proxy with
# these routes, its control on $FAULT_CTL; stopped by hub_cleanup.
faultproxy_run() {
    local i
    python3 "$(dirname "${BASH_SOURCE[0]}")/faultproxy.py" "$FAULT_CTL" "$@" \
        >"$HUB_TMP/faultproxy.log" 2>&1 8>&- &
    FAULT_PID=$!
    for i in $(seq 1 50); do
        grep -qs "faultproxy ready" "$HUB_TMP/faultproxy.log" && return 0
        kill -0 "$FAULT_PID" 2>/dev/null || break
        sleep 0.1
    done
    fail "the fault proxy did not start: $(cat "$HUB_TMP/faultproxy.log")"
}

# fault ROUTE KEY=VALUE...: switches a route's faults (faultproxy.py: latency
# in ms, drop and err503 as fractions, partition=0|1, cut=1, for=SECONDS).
fault() {
    local q="route=$1" kv
    shift
    for kv in "$@"; do q="$q&$kv"; done
    curl -sf "http://$FAULT_CTL/set?$q" >/dev/null || hub_fail "the fault proxy refused $q"
}
fault_clear() { curl -sf "http://$FAULT_CTL/clear" >/dev/null || hub_fail "the fault proxy did not answer"; }
# fault_stat ROUTE COUNTER: one of the proxy's counters.
fault_stat() {
    curl -sf "http://$FAULT_CTL/stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1']['$2'])"
}

# event_message JOB REASON SECONDS: the message of the first Event of
# REASON on Job JOB in onprem's $NS, waiting up to SECONDS ("" if none).
# (Events are best effort and wait behind the dispatch path: a few seconds.)
event_message() {
    local i ev=""
    for i in $(seq 1 $(($3 * 4))); do
        ev=$(kc onprem get events -n "$NS" --field-selector "involvedObject.name=$1,reason=$2" -o jsonpath='{.items[0].message}' 2>/dev/null || true)
        [ -n "$ev" ] && break
        sleep 0.25
    done
    echo "$ev"
}

# wait_log PATTERN SECONDS WHAT: waits up to SECONDS for an extended regular
# expression in the hub's log ($HUB_TMP/hub.log); fails with WHAT if none.
wait_log() { # wait_log PATTERN SECONDS WHAT
    local i
    for i in $(seq 1 $(($2 * 4))); do
        grep -Eq "$1" "$HUB_TMP/hub.log" && return 0
        sleep 0.25
    done
    hub_fail "$3"
}

# mirrors_of NAME: how many mirrors the origin Job NAME has, in every cluster.
mirrors_of() {
    local uid c n=0
    uid=$(kc onprem get job "$1" -n "$NS" -o jsonpath='{.metadata.uid}')
    for c in cloud-spot cloud-ondemand onprem; do
        n=$((n + $(kc "$c" get jobs -n "$NS" -l "spillway.io/origin-uid=$uid" -o name | wc -l)))
    done
    echo "$n"
}

# one_mirror_each NAME...: fails the test unless each origin has one mirror.
one_mirror_each() {
    local j n
    for j in "$@"; do
        n=$(mirrors_of "$j")
        [ "$n" = 1 ] || hub_fail "$j has $n mirrors"
    done
}

# hub_start_leading CONFIG PORT: starts a hub and waits until it holds the
# lease; hub_start_standby CONFIG PORT: starts one and waits until it
# answers, not leading. Their pid is $HUB_PID.
hub_start_leading() {
    hub_start "$1"
    for _ in $(seq 1 60); do [ "$(leader_of "$2")" = 1 ] && return 0; sleep 0.25; done
    hub_fail "the hub on :$2 did not take the lease"
}
hub_start_standby() {
    hub_start "$1"
    for _ in $(seq 1 40); do [ -n "$(leader_of "$2")" ] && break; sleep 0.25; done
    [ "$(leader_of "$2")" = 0 ] || hub_fail "the hub on :$2 is not a standby (leader: \"$(leader_of "$2")\")"
}

# leader_of PORT: 1 when the hub whose metrics listen there holds the lease.
leader_of() {
    curl -sf "http://127.0.0.1:$1/metrics" 2>/dev/null | awk '$1=="spillway_leader"{print $2}'
}
