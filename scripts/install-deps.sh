#!/usr/bin/env bash
# install-deps.sh - installs what spillway's build, tests and lab need, and
# nothing when it is all there already. Debian packages come from apt-get;
# the lab's Go programs are built by tests/testbed/testbed (go build/install).
set -euo pipefail

PACKAGES=(
    # build
    gcc make cmake ninja-build pkg-config
    # libraries (-dev): HTTP, TLS/crypto, JSON, event loop, Redis, YAML, XML, tests
    libcurl4-openssl-dev libssl-dev libcjson-dev libuv1-dev libhiredis-dev
    libyaml-dev libxml2-dev libcmocka-dev
    # the lab and its smoke tests
    redis-server redis-tools curl openssl ca-certificates procps jq
    # fuzzing (libFuzzer), sanitizers and formatting
    clang libclang-rt-14-dev clang-format
    # the replication benchmark's baseline; python3-venv for the second S3
    # server (moto, from PyPI)
    rclone python3 python3-venv
    # the deploy test's manifest checks (PyYAML for Debian's python3)
    python3-yaml
    # promtool, which checks and unit-tests the alert and recording rules
    prometheus
    # the image test: its base images made from Debian's packages
    # (debootstrap), deploy/Dockerfile built and run with buildah
    debootstrap buildah
)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
    echo "install-deps: error: Go (1.25 or newer) is needed to build the lab's Kubernetes, kwok and versitygw; it is not on PATH" >&2
    exit 1
fi
gov=$(go env GOVERSION | sed 's/^go//')
case "$gov" in
1.2[5-9]* | 1.[3-9][0-9]* | [2-9].*) ;;
*)
    echo "install-deps: error: Go $gov is too old; the lab's Kubernetes $(
        grep -m1 'k8s.io/kubernetes v' "$(dirname "$0")/../tests/testbed/kube/go.mod" | awk '{print $2}'
    ) needs Go 1.25 or newer" >&2
    exit 1
    ;;
esac

# The second S3 implementation for the replication cross-checks (moto's
# server from PyPI, in its own venv under ~/.cache/spillway).
"$(dirname "$0")/../tests/testbed/s3-second" install
