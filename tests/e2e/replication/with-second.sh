#!/usr/bin/env bash
# with-second.sh CMD... - runs CMD against the second S3 implementation,
# starting it (tests/testbed/s3-second, loopback only) when the lab has not.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
if [ -z "${SW_LAB_S3_SECOND_ENDPOINT:-}" ]; then
    "$root/tests/testbed/s3-second" up >&2
    eval "$("$root/tests/testbed/s3-second" env)"
fi
exec "$@"
