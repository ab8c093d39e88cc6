#!/usr/bin/env bash
# replication_rules.sh - the leading hub runs every replication rule:
#   - a model-registry rule (onprem -> us-east-1): each new model version
#     reaches the other region's store, verified, within the rule's RPO
#     objective; the time is measured and printed (the seeds' DR tier 2:
#     minutes);
#   - /metrics has the rule's RPO, last run age and objective;
#   - `spillctl replicate run` refuses the rule the hub runs, and runs it
#     with --force;
#   - records changed in Redis by hand are refused (issue 35 item 2): a
#     store whose endpoint now names a listener of the test's, and a rule
#     whose source now names another prefix; the hub logs each record and
#     why, the listener sees no connection, and nothing of that prefix is
#     copied;
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup rules
cat >>"$HUB_TMP/hub.yaml" <<YAML
replication:
  modelRegistrySeconds: 2
  intervalSeconds: 10
  rpoObjectiveSeconds: 60
YAML
s3head() { # ENDPOINT REGION BUCKET KEY
    curl -sf -o /dev/null --aws-sigv4 "aws:amz:$2:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$1/$3/$4"
}
B="mr-$(echo "$NS" | tr -cd 'a-z0-9-' | cut -c1-40)"
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem mb "$B" >/dev/null
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 mb "$B" >/dev/null
RULE="models-$$"
"$SPILLCTL" replicate add "$RULE" --from "onprem-s3:$B/models/" --to "us-east-1-s3:$B/models/" \
    --model-registry >/dev/null

# Records changed in Redis by hand, as anyone who can write to it could.
# A rogue endpoint: records every connection made to it.
python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, a = s.accept()
    c.settimeout(1)
    try:
        head = c.recv(200)
    except OSError:
        head = b""
    open(sys.argv[2], "a").write("connection from %s: %r\n" % (a, head))
    c.close()
' "$HUB_TMP/rogue.port" "$HUB_TMP/rogue.log" &
ROGUE_PID=$!
trap 'kill "$ROGUE_PID" 2>/dev/null; hub_cleanup' EXIT
for _ in $(seq 1 40); do [ -s "$HUB_TMP/rogue.port" ] && break; sleep 0.1; done
ROGUE="http://127.0.0.1:$(cat "$HUB_TMP/rogue.port")"
: >"$HUB_TMP/rogue.log"
# A store registered by spillctl, then its endpoint changed to the rogue one.
"$SPILLCTL" replicate store add side-s3 --endpoint "$SW_LAB_S3_ENDPOINT_ONPREM" --region onprem >/dev/null
SIDE="side-$$"
"$SPILLCTL" replicate add "$SIDE" --from "side-s3:$B/side/" --to "us-east-1-s3:$B/side/" >/dev/null
rcli SET sw:store:side-s3 "$(rcli GET sw:store:side-s3 | jq -c --arg e "$ROGUE" '.endpoint = $e')" >/dev/null
rcli GET sw:store:side-s3 | grep -qF "\"endpoint\":\"$ROGUE\"" || hub_fail "the store record was not changed"
# A rule added by spillctl, then its source changed to a private prefix.
EXFIL="exfil-$$"
"$SPILLCTL" replicate add "$EXFIL" --from "onprem-s3:$B/public/" --to "us-east-1-s3:$B/public/" >/dev/null
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put "$B" "private/secret.bin" 4096 9 >/dev/null
rcli SET "sw:repl:rule:$EXFIL" "$(rcli GET "sw:repl:rule:$EXFIL" | jq -c '.source.prefix = "private/"')" >/dev/null
rcli GET "sw:repl:rule:$EXFIL" | grep -qF '"source":{"store":"onprem-s3","bucket":"'"$B"'","prefix":"private/"}' ||
    hub_fail "the rule record was not changed: $(rcli GET "sw:repl:rule:$EXFIL")"
hub_start
for _ in $(seq 1 80); do
    rcli EXISTS "spillway:rule-owner:$RULE" | grep -q 1 && break
    sleep 0.25
done
owner=$(rcli GET "spillway:rule-owner:$RULE")
[ -n "$owner" ] || hub_fail "the hub did not take the rule"
pass "the leading hub runs rule $RULE ($owner)"

# Each new model version reaches us-east-1; the time from its upload is the RPO.
times=()
for v in v1 v2 v3; do
    "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put "$B" "models/bert/$v/weights.bin" $((8 << 20)) 7 >/dev/null
    "$S3TOOL" "$SW_LAB_S3_ENDPOINT_ONPREM" onprem put "$B" "models/bert/$v/config.json" 2048 8 >/dev/null
    t0=$(date +%s%N)
    ok=""
    for _ in $(seq 1 600); do
        if s3head "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$B" "models/bert/$v/weights.bin" &&
            s3head "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$B" "models/bert/$v/config.json"; then
            ok=1
            break
        fi
        sleep 0.1
    done
    t1=$(date +%s%N)
    [ -n "$ok" ] || hub_fail "model version $v did not reach us-east-1 in 60 s"
    times+=("$(python3 -c "print(f'{($t1 - $t0) / 1e9:.1f}')")")
done
python3 -c "import sys; t=[float(x) for x in sys.argv[1:]]; assert max(t) <= 60, t" "${times[@]}" ||
    hub_fail "a model version took longer than the 60 s objective: ${times[*]}"
pass "model versions v1 v2 v3 (8 MiB + 2 KiB each) in us-east-1 after ${times[*]} s (modelRegistrySeconds 2, objective 60 s)"

m=$(curl -sf http://127.0.0.1:19464/metrics)
grep -q "spillway_replication_rpo_seconds{rule=\"$RULE\",target=\"us-east-1-s3\"}" <<<"$m" ||
    hub_fail "/metrics has no RPO for the rule: $(echo "$m" | grep replication)"
grep -q "spillway_replication_rpo_objective_seconds{rule=\"$RULE\"} 60" <<<"$m" ||
    hub_fail "/metrics has no objective 60 for the rule"
grep -q "spillway_replication_last_run_age_seconds{rule=\"$RULE\"" <<<"$m" || hub_fail "/metrics has no last run age"
pass "/metrics: RPO, last run age and objective of $RULE"

# A second runner is refused while the hub runs the rule.
if "$SPILLCTL" replicate run "$RULE" --once --progress none >"$HUB_TMP/run.out" 2>"$HUB_TMP/run.err"; then
    hub_fail "spillctl replicate run ran a rule the hub runs"
fi
grep -q "is run by the hub" "$HUB_TMP/run.err" || hub_fail "refusal does not say why: $(cat "$HUB_TMP/run.err")"
"$SPILLCTL" replicate run "$RULE" --once --force --progress none >"$HUB_TMP/run.out" 2>&1 ||
    hub_fail "replicate run --force failed: $(cat "$HUB_TMP/run.out")"
grep -q "failed 0" "$HUB_TMP/run.out" || hub_fail "forced run: $(cat "$HUB_TMP/run.out")"
pass "spillctl replicate run: refused without --force (\"$(head -1 "$HUB_TMP/run.err" | cut -c1-90)...\"), ran with it"

# The records changed by hand: refused, each named with why, and nothing
# sent to what they name.
want_store='msg="object store refused: its record does not verify" kind=store store=side-s3 err="store side-s3: the MAC does not verify'
want_side="msg=\"replication rule refused: a record does not verify\" rule=$SIDE err=\"store side-s3: the MAC does not verify"
want_exfil="msg=\"replication rule refused: a record does not verify\" rule=$EXFIL err=\"rule $EXFIL: the MAC does not verify"
for _ in $(seq 1 80); do
    grep -qF "$want_store" "$HUB_TMP/hub.log" && grep -qF "$want_side" "$HUB_TMP/hub.log" &&
        grep -qF "$want_exfil" "$HUB_TMP/hub.log" && break
    sleep 0.25
done
[ ! -s "$HUB_TMP/rogue.log" ] || hub_fail "the rogue endpoint was contacted: $(cat "$HUB_TMP/rogue.log")"
s3head "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 "$B" "public/secret.bin" &&
    hub_fail "the changed rule copied private/secret.bin"
for w in "$want_store" "$want_side" "$want_exfil"; do
    grep -qF "$w" "$HUB_TMP/hub.log" || hub_fail "the hub did not log: $w"
done
# The listener does see a connection when one is made: its silence counts.
curl -s -m 2 -o /dev/null "$ROGUE/probe" || true
for _ in $(seq 1 20); do [ -s "$HUB_TMP/rogue.log" ] && break; sleep 0.1; done
grep -q "GET /probe" "$HUB_TMP/rogue.log" || hub_fail "the rogue listener records nothing, so its silence proves nothing"
pass "records changed in Redis by hand refused (store side-s3's endpoint, rule $EXFIL's source), each logged with why; the rogue endpoint saw no connection until the test's own probe; private/ not copied"
