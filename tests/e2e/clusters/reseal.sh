#!/usr/bin/env bash
# reseal.sh - `spillctl reseal` rotates the sealing key on the lab's Redis
# (a database of its own, 12): a cluster and an object store registered
# under key A; a key that opens neither stops it with nothing written;
# after the re-seal both open with key B (the cluster is probed on its API
# server) and no longer with A; a second run finds them already under B.
set -euo pipefail
source "$(dirname "$0")/../lab/common.sh"
: "${SW_BUILD_DIR:?}"
spillctl="$SW_BUILD_DIR/controller/spillctl"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rest=${SW_LAB_REDIS_URL#redis://:}
pw=${rest%%@*}
hp=${rest#*@}
hp=${hp%%/*}
export SPILLWAY_REDIS_URL="redis://$hp/12" SPILLWAY_REDIS_PASSWORD="$pw"
rcli() { REDISCLI_AUTH="$pw" redis-cli -h "${hp%:*}" -p "${hp##*:}" -n 12 "$@"; }
rcli FLUSHDB >/dev/null
for k in a b c; do (umask 077 && openssl rand -hex 32 >"$tmp/$k.key"); done
export SPILLWAY_SECRET_KEY_FILE="$tmp/a.key"
"$spillctl" cluster add cloud-ondemand --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-ondemand-token.kubeconfig" \
    --role cloud --region us-west-2 \
    --pool name=od,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 >/dev/null
SW_S3_ACCESS_KEY="$SW_LAB_S3_ACCESS_KEY" SW_S3_SECRET_KEY="$SW_LAB_S3_SECRET_KEY" \
    "$spillctl" replicate store add s3-west --endpoint "$SW_LAB_S3_ENDPOINT_US_WEST_2" --region us-west-2 >/dev/null
before=$(rcli GET spillway:cluster:cloud-ondemand)

# A current key that opens nothing: refused, nothing written.
rc=0
"$spillctl" reseal --secret-key-file "$tmp/c.key" --new-secret-key-file "$tmp/b.key" >"$tmp/out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "reseal with a wrong current key exited $rc"
grep -q "cluster cloud-ondemand: opens with neither key" "$tmp/out" && grep -q "2 records cannot be opened .*nothing was written" "$tmp/out" ||
    fail "reseal with a wrong key said: $(cat "$tmp/out")"
[ "$(rcli GET spillway:cluster:cloud-ondemand)" = "$before" ] || fail "a refused reseal changed the record"
# The same key twice: refused.
"$spillctl" reseal --new-secret-key-file "$tmp/a.key" >"$tmp/out" 2>&1 && fail "reseal to the same key succeeded"
grep -q "the new key is the current key" "$tmp/out" || fail "same key: $(cat "$tmp/out")"
# A dry run writes nothing.
"$spillctl" reseal --new-secret-key-file "$tmp/b.key" --dry-run >"$tmp/out"
grep -q "would be re-sealed (dry run)" "$tmp/out" || fail "dry run said: $(cat "$tmp/out")"
[ "$(rcli GET spillway:cluster:cloud-ondemand)" = "$before" ] || fail "a dry run changed the record"
pass "reseal refuses a current key that opens nothing, and the same key; a dry run writes nothing"

"$spillctl" reseal --new-secret-key-file "$tmp/b.key" >"$tmp/out" || fail "reseal: $(cat "$tmp/out")"
grep -q "^1 cluster and 1 store: 2 re-sealed, 0 already under the new key$" "$tmp/out" || fail "reseal said: $(cat "$tmp/out")"
[ "$(rcli GET spillway:cluster:cloud-ondemand)" != "$before" ] || fail "the record did not change"
export SPILLWAY_SECRET_KEY_FILE="$tmp/b.key"
"$spillctl" cluster list -o json >"$tmp/list" || fail "cluster list with the new key: $(cat "$tmp/list")"
python3 -c "
import json, sys
items = json.load(open(sys.argv[1]))['items']
c = [i for i in items if i['name'] == 'cloud-ondemand'][0]
assert c['health'] == 'Ready', c
" "$tmp/list" || fail "cloud-ondemand not Ready through the re-sealed connection: $(cat "$tmp/list")"
"$spillctl" replicate store list >"$tmp/stores" || fail "store list with the new key: $(cat "$tmp/stores")"
grep -q "^s3-west " "$tmp/stores" || fail "store list: $(cat "$tmp/stores")"
SPILLWAY_SECRET_KEY_FILE="$tmp/a.key" "$spillctl" cluster list -o json >"$tmp/old" 2>&1 || true
grep -q '"reason": "cluster cloud-ondemand: connection: sealed value: sealed with another key' "$tmp/old" ||
    fail "the old key still opens the cluster: $(cat "$tmp/old")"
SPILLWAY_SECRET_KEY_FILE="$tmp/a.key" "$spillctl" replicate store list >"$tmp/old" 2>&1 && fail "the old key still opens the store"
grep -q "store s3-west: credentials: .*another key" "$tmp/old" || fail "old key, store: $(cat "$tmp/old")"
pass "after reseal, key B opens the cluster (probed Ready on its API server) and the store; key A no longer does"

"$spillctl" reseal --secret-key-file "$tmp/a.key" --new-secret-key-file "$tmp/b.key" >"$tmp/out" || fail "second reseal: $(cat "$tmp/out")"
grep -q "^1 cluster and 1 store: 0 re-sealed, 2 already under the new key$" "$tmp/out" || fail "second reseal said: $(cat "$tmp/out")"
pass "a second run (as after an interruption) finds both already under key B"
rcli FLUSHDB >/dev/null
