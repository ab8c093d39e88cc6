# common.sh - helpers for the lab's shell end-to-end tests (sourced).
set -euo pipefail
SW_SOURCE_DIR=${SW_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
eval "$("$SW_SOURCE_DIR/tests/testbed/testbed" env)"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
pass() { echo "PASS: $*"; }

kc() { # kc CLUSTER ARGS...
    local c=$1
    shift
    "$SW_LAB_KUBECTL" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/$c-cert.kubeconfig" --request-timeout=20s "$@"
}

# test_namespace CLUSTER PREFIX: creates a namespace of the test's own in
# $NS, removed when the test ends. (Not called as $(...): the trap must be
# set in the test's shell, not in a subshell.)
test_namespace() {
    NS="$2-$$-$RANDOM"
    kc "$1" create namespace "$NS" >/dev/null
    # shellcheck disable=SC2064
    trap "kc '$1' delete namespace '$NS' --wait=false >/dev/null 2>&1 || true" EXIT
}

# gpu_job NAME PARALLELISM GPUS_PER_POD DURATION: a Job manifest whose pods
# ask for GPUs, tolerate the GPU taint, and finish after DURATION in the lab.
gpu_job() {
    cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
spec:
  parallelism: $2
  completions: $2
  backoffLimit: 0
  template:
    metadata:
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: "$4"
    spec:
      restartPolicy: Never
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      containers:
      - name: train
        image: registry.example/train:1
        resources:
          limits:
            nvidia.com/gpu: "$3"
YAML
}

# lab_lock: the lab's lock (the hub tests' flock, tests/e2e/hub/lib.sh), on
# descriptor 8 until the test exits, for a test that switches a mode other
# tests use; `testbed` commands it runs go on under it.
lab_lock() {
    exec 8>"$SW_LAB_DIR/hub-e2e.lock"
    if ! flock -n 8; then
        echo "waiting for the lab's lock ($SW_LAB_DIR/hub-e2e.lock): a hub test, benchmark or the demo holds it" >&2
        flock -w 1800 8 || fail "the lab's lock was held for 30 minutes"
    fi
}
