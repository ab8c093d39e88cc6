#!/usr/bin/env bash
# kill9_resume.sh - `kill -9` in the middle of a replication, then a resume:
# nothing is lost, no multipart upload is left open, and every byte on the
# target is checked against its SHA-256 (spillctl replicate verify reads
# both sides in full). Runs against the lab (onprem -> us-west-2, Redis).
set -euo pipefail
: "${SW_BUILD_DIR:?}" "${SW_LAB_S3_ENDPOINT_ONPREM:?start the lab}" "${SW_LAB_S3_ENDPOINT_US_WEST_2:?}"
: "${SW_LAB_S3_ACCESS_KEY:?}" "${SW_LAB_S3_SECRET_KEY:?}" "${SW_LAB_REDIS_URL:?}"
S="$SW_BUILD_DIR/controller/spillctl"
T="$SW_BUILD_DIR/tests/e2e/replication/sw_e2e_s3tool"
ID="k9-$$-$(date +%s)"
export SPILLWAY_SECRET_KEY="$(openssl rand -hex 32)"
export SW_S3_ACCESS_KEY="$SW_LAB_S3_ACCESS_KEY" SW_S3_SECRET_KEY="$SW_LAB_S3_SECRET_KEY"
SRC_EP="$SW_LAB_S3_ENDPOINT_ONPREM" SRC_REGION="${SW_LAB_S3_REGION_ONPREM:-onprem}"
DST_EP="$SW_LAB_S3_ENDPOINT_US_WEST_2" DST_REGION="${SW_LAB_S3_REGION_US_WEST_2:-us-west-2}"
LOG="$(mktemp)"
# redis-cli wants the password apart: redis://:PASSWORD@HOST:PORT/DB
rurl=${SW_LAB_REDIS_URL#redis://}
rpass=${rurl%%@*}; rpass=${rpass#*:}
rhostport=${rurl#*@}; rhostport=${rhostport%%/*}
rcli() { REDISCLI_AUTH="$rpass" redis-cli -h "${rhostport%:*}" -p "${rhostport##*:}" "$@"; }
# spillctl too takes the password apart from the URL, as a user would.
export SPILLWAY_REDIS_URL="redis://${rurl#*@}" SPILLWAY_REDIS_PASSWORD="$rpass"
pid=""

cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    "$S" replicate remove "$ID" >/dev/null 2>&1 || true
    "$S" replicate store remove "$ID-src" >/dev/null 2>&1 || true
    "$S" replicate store remove "$ID-dst" >/dev/null 2>&1 || true
    "$T" "$SRC_EP" "$SRC_REGION" rm datasets "$ID/" >/dev/null 2>&1 || true
    "$T" "$DST_EP" "$DST_REGION" rm datasets "$ID/" >/dev/null 2>&1 || true
    rm -f "$LOG"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat "$LOG" >&2; exit 1; }

"$S" replicate store add "$ID-src" --endpoint "$SRC_EP" --region "$SRC_REGION" >/dev/null
"$S" replicate store add "$ID-dst" --endpoint "$DST_EP" --region "$DST_REGION" >/dev/null
# 3 x 100 MiB plus small files; 5 MiB parts, throttled to 60 MB/s so the
# kill lands in the middle of multipart uploads.
for i in 1 2 3; do "$T" "$SRC_EP" "$SRC_REGION" put datasets "$ID/big-$i.bin" 104857600 "$i" >/dev/null; done
for i in $(seq 1 20); do "$T" "$SRC_EP" "$SRC_REGION" put datasets "$ID/small/f $i.txt" 1000 "$((100 + i))" >/dev/null; done
"$S" replicate add "$ID" --from "$ID-src:datasets/$ID/" --to "$ID-dst:datasets/$ID/" \
    --part-size-mib 5 --concurrency 4 --part-concurrency 2 --bandwidth-mbps 60 >/dev/null

"$S" replicate run "$ID" --once --progress plain >"$LOG" 2>&1 &
pid=$!
# Wait until some bytes have moved, then kill -9 in the middle.
for _ in $(seq 1 100); do
    b=$(grep -o 'bytes=[0-9]*' "$LOG" | tail -1 | cut -d= -f2 || true)
    [ -n "$b" ] && [ "$b" -gt 50000000 ] && break
    sleep 0.1
done
kill -0 "$pid" 2>/dev/null || fail "the run ended before it could be killed"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
# The bandwidth limit held: no progress line shows more than the limit
# (its mean since the start, MB = 10^6 bytes), a part's worth of slack
# allowed. A copy fetching parts before their reserved time ran at 3x.
check_rate() { # FILE WHAT
    awk -v lim=60 -v what="$2" '
        /^progress / { for (i = 1; i <= NF; i++) if ($i ~ /^mbps=/) { m = substr($i, 6) + 0; n++
            if (m > lim * 1.25) { printf "%s: progress at %.1f MB/s, over the %d MB/s limit: %s\n", what, m, lim, $0; bad = 1 } } }
        END { if (n == 0) { printf "%s: no progress line\n", what; bad = 1 } exit bad }' "$1"
}
check_rate "$LOG" "throttled run" >&2 || fail "the bandwidth limit was not held"

open=$("$T" "$DST_EP" "$DST_REGION" uploads datasets "$ID/")
journaled=$(rcli HLEN "sw:repl:$ID:uploads")
echo "after kill -9: $open multipart upload(s) open on the target, $journaled in the journal"
[ "$open" -ge 1 ] || fail "expected the kill to leave a multipart upload open"
[ "$journaled" -ge 1 ] || fail "expected the journal to name the open upload(s)"

# Resume (same limit): stale uploads are aborted, everything is copied.
"$S" replicate run "$ID" --once --progress plain >"$LOG" 2>&1 || fail "resume failed"
out=$(grep -v '^progress ' "$LOG")
echo "$out"
check_rate "$LOG" "resume" >&2 || fail "the bandwidth limit was not held by the resume"
echo "$out" | grep -Eq "aborted [1-9][0-9]* stale upload" || fail "the resume aborted no stale upload"

# Every byte verified; nothing open; journal empty.
vout=$("$S" replicate verify "$ID" 2>&1) || fail "verify failed: $vout"
echo "$vout"
grep -q "23 object copies checked byte for byte, 0 mismatched, 0 missing, 0 open multipart uploads" <<<"$vout" \
    || fail "unexpected verify result"
[ "$("$T" "$DST_EP" "$DST_REGION" uploads datasets "$ID/")" = 0 ] || fail "uploads left open"
[ "$(rcli HLEN "sw:repl:$ID:uploads")" = 0 ] || fail "journal not empty"
# A third run has nothing to do.
out=$("$S" replicate run "$ID" --once --progress none 2>&1)
grep -q "copied 0, skipped 23" <<<"$out" || fail "third run not idempotent: $out"
# status -o json: the target is caught up and nothing is open.
st=$("$S" replicate status "$ID" -o json) || fail "status -o json failed"
python3 -c '
import json, sys
items = json.loads(sys.argv[1])["items"]
assert len(items) == 1 and items[0]["target"] == sys.argv[2], items
assert items[0]["openUploads"] == 0 and items[0]["rpoSeconds"] is not None, items
' "$st" "$ID-dst" || fail "unexpected replicate status -o json: $st"
echo "PASS: kill -9 then resume: nothing lost, nothing left open, every byte verified"
