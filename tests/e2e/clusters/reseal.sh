#!/usr/bin/env bash
# reseal.sh - `spillctl reseal` rotates the sealing key on the lab's Redis
# (a database of its own, 12): a cluster, an object store and a replication
# rule registered under key A; a key that opens neither stops it with
# nothing written; a rule from before records were signed (no MAC) stops it
# too, naming `spillctl replicate sign`, which signs it; after the re-seal
# all open and verify with key B (the cluster is probed on its API server)
# and no longer with A; a second run finds them already under B.
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
"$spillctl" replicate add rule-a --from s3-west:bucket-a/x/ --to s3-west:bucket-b/x/ >/dev/null
# A rule as a hub before signed records wrote it: no MAC.
rcli SET sw:repl:rule:rule-old '{"source":{"store":"s3-west","bucket":"bucket-a","prefix":"y/"},"targets":[{"store":"s3-west","bucket":"bucket-c","prefix":"y/"}],"name":"rule-old","model_registry":false,"concurrency":0,"part_concurrency":0,"part_size":0,"bytes_per_s":0,"server_copy":false,"rpo_objective_s":0}' >/dev/null
rcli SADD sw:repl:rules rule-old >/dev/null

# The unsigned rule stops the rotation, naming the command that signs it.
rc=0
"$spillctl" reseal --new-secret-key-file "$tmp/b.key" >"$tmp/out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "reseal with an unsigned rule exited $rc: $(cat "$tmp/out")"
grep -q "rule rule-old: the record carries no MAC.*spillctl replicate sign" "$tmp/out" &&
    grep -q "1 record cannot be opened or verified .*nothing was written" "$tmp/out" ||
    fail "reseal with an unsigned rule said: $(cat "$tmp/out")"
[ "$(rcli GET spillway:cluster:cloud-ondemand)" = "$before" ] || fail "a refused reseal changed the record"
"$spillctl" replicate sign --dry-run >"$tmp/out" || fail "sign --dry-run: $(cat "$tmp/out")"
grep -q "^rule rule-old: would be signed: s3-west:bucket-a/y/ -> s3-west:bucket-c/y/$" "$tmp/out" &&
    grep -q "^rule rule-a: already signed$" "$tmp/out" && grep -q "^store s3-west: already signed$" "$tmp/out" ||
    fail "sign --dry-run said: $(cat "$tmp/out")"
rcli GET sw:repl:rule:rule-old | grep -q '"mac"' && fail "a dry run signed the rule"
"$spillctl" replicate sign >"$tmp/out" || fail "sign: $(cat "$tmp/out")"
grep -q "^1 record signed, 2 already signed, 0 refused$" "$tmp/out" || fail "sign said: $(cat "$tmp/out")"
"$spillctl" replicate list -o name >"$tmp/out" || fail "rules do not verify after sign: $(cat "$tmp/out")"
pass "an unsigned rule stops reseal naming \`spillctl replicate sign\`, which lists it (dry run) and signs it"

# A current key that opens nothing: refused, nothing written.
rc=0
"$spillctl" reseal --secret-key-file "$tmp/c.key" --new-secret-key-file "$tmp/b.key" >"$tmp/out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "reseal with a wrong current key exited $rc"
grep -q "cluster cloud-ondemand: opens with neither key" "$tmp/out" && grep -q "4 records cannot be opened or verified .*nothing was written" "$tmp/out" ||
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
grep -q "^1 cluster, 1 store and 2 rules: 4 re-sealed, 0 already under the new key$" "$tmp/out" || fail "reseal said: $(cat "$tmp/out")"
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
grep -q "store s3-west: signed with key .*not the hub's key" "$tmp/old" || fail "old key, store: $(cat "$tmp/old")"
"$spillctl" replicate list -o name >"$tmp/rules" || fail "rule list with the new key: $(cat "$tmp/rules")"
[ "$(sort "$tmp/rules" | tr '\n' ' ')" = "rule-a rule-old " ] || fail "rule list: $(cat "$tmp/rules")"
SPILLWAY_SECRET_KEY_FILE="$tmp/a.key" "$spillctl" replicate list >"$tmp/old" 2>&1 && fail "the old key still verifies the rules"
grep -q "rule rule-a: signed with key" "$tmp/old" || fail "old key, rule: $(cat "$tmp/old")"
pass "after reseal, key B opens the cluster (probed Ready on its API server) and the store, and verifies both rules; key A no longer does"

"$spillctl" reseal --secret-key-file "$tmp/a.key" --new-secret-key-file "$tmp/b.key" >"$tmp/out" || fail "second reseal: $(cat "$tmp/out")"
grep -q "^1 cluster, 1 store and 2 rules: 0 re-sealed, 4 already under the new key$" "$tmp/out" || fail "second reseal said: $(cat "$tmp/out")"
pass "a second run (as after an interruption) finds all four already under key B"
rcli FLUSHDB >/dev/null
