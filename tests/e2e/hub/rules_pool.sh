#!/usr/bin/env bash
# rules_pool.sh - more replication rules than libuv's pool has threads (4)
# all run, and all their objects copy, within a bound:
#   - six rules (onprem -> us-east-1), each over two 24 MiB objects: every
#     object goes as a multipart copy whose parts are hashed on the pool;
#   - all twelve objects reach us-east-1, verified (sw-sha256 metadata),
#     within 120 s, and every rule has run (/metrics); the time is printed.
# Rule runs once took the pool's threads and waited there for their own
# copies' hashes, queued behind them on the same pool: with four rules or
# more nothing was ever copied.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup rpool
cat >>"$HUB_TMP/hub.yaml" <<YAML
replication:
  intervalSeconds: 2
YAML
s3meta() { # ENDPOINT REGION BUCKET KEY: the object's sw-sha256, or nothing
    curl -sf -I --aws-sigv4 "aws:amz:$2:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$1/$3/$4" |
        tr -d '\r' | awk -F': ' 'tolower($1) == "x-amz-meta-sw-sha256" { print $2 }'
}
B="rp-$(echo "$NS" | tr -cd 'a-z0-9-' | cut -c1-40)"
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem mb "$B" >/dev/null
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 mb "$B" >/dev/null
RULES=6
declare -A SHA=()
for i in $(seq 1 $RULES); do
    for o in a b; do
        SHA[$i$o]=$("$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put "$B" "r$i/$o.bin" $((24 << 20)) "$i$(printf %d "'$o")")
    done
    "$SPILLCTL" replicate add "r$i-$$" --from "onprem-s3:$B/r$i/" --to "us-east-1-s3:$B/r$i/" >/dev/null
done
t0=$(date +%s%N)
hub_start
done_n=0
for _ in $(seq 1 480); do
    done_n=0
    for i in $(seq 1 $RULES); do
        for o in a b; do
            [ -n "$(s3meta "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$B" "r$i/$o.bin")" ] && done_n=$((done_n + 1))
        done
    done
    [ "$done_n" = $((RULES * 2)) ] && break
    sleep 0.25
done
t1=$(date +%s%N)
secs=$(python3 -c "print(f'{($t1 - $t0) / 1e9:.1f}')")
[ "$done_n" = $((RULES * 2)) ] ||
    hub_fail "$done_n of $((RULES * 2)) objects copied by $RULES rules after $secs s"
# Each copy is the source's bytes (the SHA-256 the copy computed and kept).
for i in $(seq 1 $RULES); do
    for o in a b; do
        want=${SHA[$i$o]}
        got=$(s3meta "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$B" "r$i/$o.bin")
        [ "$want" = "$got" ] || hub_fail "r$i/$o.bin: sw-sha256 $got in us-east-1, source bytes $want"
    done
done
pass "$RULES rules x 2 objects of 24 MiB (multipart, hashed on the pool) all in us-east-1, verified, $secs s after the hub started"
for _ in $(seq 1 40); do
    m=$(curl -sf http://127.0.0.1:19464/metrics || true)
    n=$(echo "$m" | grep -c '^spillway_replication_last_run_age_seconds{rule="r[0-9]*-' || true)
    [ "$n" = "$RULES" ] && break
    sleep 0.25
done
[ "$n" = "$RULES" ] || hub_fail "/metrics shows a last run for $n of $RULES rules: $(echo "$m" | grep replication)"
pass "/metrics: every one of the $RULES rules has run"
