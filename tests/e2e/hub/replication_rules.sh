#!/usr/bin/env bash
# replication_rules.sh - the leading hub runs every replication rule:
#   - a model-registry rule (onprem -> us-east-1): each new model version
#     reaches the other region's store, verified, within the rule's RPO
#     objective; the time is measured and printed (the seeds' DR tier 2:
#     minutes);
#   - /metrics has the rule's RPO, last run age and objective;
#   - `spillctl replicate run` refuses the rule the hub runs, and runs it
#     with --force;
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
echo "$m" | grep -q "spillway_replication_rpo_seconds{rule=\"$RULE\",target=\"us-east-1-s3\"}" ||
    hub_fail "/metrics has no RPO for the rule: $(echo "$m" | grep replication)"
echo "$m" | grep -q "spillway_replication_rpo_objective_seconds{rule=\"$RULE\"} 60" ||
    hub_fail "/metrics has no objective 60 for the rule"
echo "$m" | grep -q "spillway_replication_last_run_age_seconds{rule=\"$RULE\"" || hub_fail "/metrics has no last run age"
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
