#!/usr/bin/env bash
# with-second.sh CMD... - runs CMD against the second S3 implementation.
# When the lab has not exported SW_LAB_S3_SECOND_ENDPOINT, the server is
# started here (tests/testbed/s3-second, loopback only) and stopped again
# afterwards.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
if [ -n "${SW_LAB_S3_SECOND_ENDPOINT:-}" ]; then
    exec "$@"
fi
"$root/tests/testbed/s3-second" up >&2
trap '"$root/tests/testbed/s3-second" down' EXIT
eval "$("$root/tests/testbed/s3-second" env)"
"$@"
