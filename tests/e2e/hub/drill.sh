#!/usr/bin/env bash
# drill.sh - `spillctl drill` against running hubs on the lab:
#   - hub-loss --signal STOP: the leader stopped; the standby takes the lease
#     within the lease TTL plus one renewal period; the old leader, resumed,
#     exits on finding its lease gone; the drill passes;
#   - hub-loss (SIGKILL): the same with the next standby;
#   - cluster-loss --dry-run: names the Job that would move, the expected
#     RTO, and touches nothing (no fence, the Job stays);
#   - cluster-loss: the fence cuts cloud-spot off, the hub finds it lost and
#     runs the Job elsewhere; RTO measured and under the objective; the fence
#     lifted, the stale mirror deleted; the report in JSON and Markdown; the
#     Job then completes once (the watcher);
#   - region-loss --region us-east-1: the model registry read there (run by
#     the hub to us-west-2) is complete in the other region, in the dry run
#     and in the drill, which also fences cloud-spot and restores it;
#   - drill history: the four drills that ran, newest first, none of the dry
#     runs; one drill's whole report again, as Markdown.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup drill
TTL=6
for h in a b c; do
    port=$((19464 + $(printf '%d' "'$h") - 97))
    hub_config "$HUB_TMP/$h.yaml" "$port" $TTL
    cat >>"$HUB_TMP/$h.yaml" <<YAML
members:
  probeIntervalSeconds: 1
  lostAfterSeconds: 6
  rtoTargetSeconds: 120
replication:
  modelRegistrySeconds: 2
YAML
done
s3head() { # ENDPOINT REGION BUCKET KEY
    curl -sf -o /dev/null --aws-sigv4 "aws:amz:$2:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$1/$3/$4"
}
watcher_start --lossy cloud-spot
saturate
hub_start_leading "$HUB_TMP/a.yaml" 19464
A=$HUB_PID
hub_start_standby "$HUB_TMP/b.yaml" 19465
B=$HUB_PID
# The leader's view is in Redis once it has read the members.
for _ in $(seq 1 60); do rcli EXISTS spillway:hub:members | grep -q 1 && break; sleep 0.25; done

# ---- hub-loss, SIGSTOP -----------------------------------------------------------
"$SPILLCTL" drill hub-loss --dry-run >"$HUB_TMP/dry-hub.txt" || hub_fail "hub-loss --dry-run failed"
grep -q "would be stopped with SIGKILL" "$HUB_TMP/dry-hub.txt" || hub_fail "dry run: $(cat "$HUB_TMP/dry-hub.txt")"
kill -0 "$A" || hub_fail "the dry run touched the leader"
"$SPILLCTL" drill hub-loss --signal STOP -o json >"$HUB_TMP/stop.json" 2>"$HUB_TMP/stop.err" ||
    { cat "$HUB_TMP/stop.err" >&2; cat "$HUB_TMP/stop.json" >&2; hub_fail "the hub-loss (STOP) drill failed"; }
rto=$(python3 -c "import json; d=json.load(open('$HUB_TMP/stop.json')); assert d['pass'] and d['rtoSeconds'] <= d['rtoTargetSeconds'] <= $TTL*4/3+0.01, d; print(d['rtoSeconds'])")
wait "$A" 2>/dev/null && hub_fail "the stopped leader exited 0" || true
grep -q "another hub holds the lease\|lease expired" "$HUB_TMP/hub.log" || hub_fail "the old leader did not say why it exited"
[ "$(leader_of 19465)" = 1 ] || hub_fail "hub b does not lead after the drill"
pass "drill hub-loss --signal STOP: b took over in ${rto} s (objective TTL ${TTL} s + TTL/3); a, resumed, exited"

# ---- hub-loss, SIGKILL -----------------------------------------------------------
hub_start "$HUB_TMP/c.yaml"
for _ in $(seq 1 40); do [ "$(leader_of 19466)" = 0 ] && break; sleep 0.25; done
"$SPILLCTL" drill hub-loss -o json >"$HUB_TMP/kill.json" 2>"$HUB_TMP/kill.err" ||
    { cat "$HUB_TMP/kill.err" >&2; hub_fail "the hub-loss (KILL) drill failed"; }
rto=$(python3 -c "import json; d=json.load(open('$HUB_TMP/kill.json')); assert d['pass'], d; print(d['rtoSeconds'])")
kill -0 "$B" 2>/dev/null && hub_fail "the killed leader still runs"
[ "$(leader_of 19466)" = 1 ] || hub_fail "hub c does not lead after the drill"
pass "drill hub-loss (SIGKILL): c took over in ${rto} s"

# ---- cluster-loss ----------------------------------------------------------------
# cloud-first: spot, then on-demand rather than the 30-minute wait at home.
BURST_MODE=cloud-first burst_job x 4 45s "" "    spillway.io/outputs: s3://checkpoints/$NS/x/" | kc onprem apply -n "$NS" -f - >/dev/null
X="onprem/$NS/x"
wait_record "$X" state running 90
[ "$(record_field "$X" targetCluster)" = cloud-spot ] || hub_fail "x runs in $(record_field "$X" targetCluster)"
"$SPILLCTL" drill cluster-loss --cluster cloud-spot --dry-run -o json >"$HUB_TMP/dry.json" ||
    hub_fail "cluster-loss --dry-run failed"
python3 - "$HUB_TMP/dry.json" "$X" <<'PY' || hub_fail "dry run report: $(cat "$HUB_TMP/dry.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["dryRun"] and d["scenario"] == "cluster-loss", d
jobs = {j["job"]: j for j in d["jobs"]}
assert sys.argv[2] in jobs and jobs[sys.argv[2]]["onClusterLoss"] == "requeue", jobs
assert 6 <= d["expectedRtoSeconds"] < 600, d["expectedRtoSeconds"]
assert not d["timeline"], d["timeline"]
PY
[ "$(rcli HLEN spillway:fence)" = 0 ] || hub_fail "the dry run set a fence"
[ "$(record_field "$X" targetCluster)" = cloud-spot ] || hub_fail "the dry run moved the Job"
pass "drill cluster-loss --dry-run: names $X, expected RTO $(python3 -c "import json; print(round(json.load(open('$HUB_TMP/dry.json'))['expectedRtoSeconds']))") s, nothing touched"

"$SPILLCTL" drill cluster-loss --cluster cloud-spot --timeout 4m --report "$HUB_TMP/drill.md" -o json \
    >"$HUB_TMP/cl.json" 2>"$HUB_TMP/cl.err" ||
    { cat "$HUB_TMP/cl.err" >&2; cat "$HUB_TMP/cl.json" >&2; hub_fail "the cluster-loss drill failed"; }
rto=$(python3 - "$HUB_TMP/cl.json" "$X" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pass"] and 6 <= d["rtoSeconds"] <= d["rtoTargetSeconds"] == 120, d
j = [j for j in d["jobs"] if j["job"] == sys.argv[2]][0]
assert j["to"] == "cloud-ondemand" and j["runningElsewhereAfterSeconds"] > 0, j
events = " | ".join(e["event"] for e in d["timeline"])
for want in ("fence set on cloud-spot", "the hub found cloud-spot lost", "running in cloud-ondemand",
             "fence lifted", "no stale mirror left on cloud-spot"):
    assert want in events, (want, events)
print(d["rtoSeconds"])
PY
) || hub_fail "cluster-loss report: $(cat "$HUB_TMP/cl.json")"
grep -q "^| Job | on loss" "$HUB_TMP/drill.md" && grep -q "PASS" "$HUB_TMP/drill.md" || hub_fail "Markdown report: $(cat "$HUB_TMP/drill.md")"
[ "$(rcli HLEN spillway:fence)" = 0 ] || hub_fail "the fence was not lifted"
pass "drill cluster-loss cloud-spot: $X running in cloud-ondemand ${rto} s after the fence (objective 120 s); fence lifted, stale mirror deleted; Markdown report written"
wait_record "$X" state succeeded 180
[ "$(record_field "$X" attempt)" = 2 ] || hub_fail "x ended at attempt $(record_field "$X" attempt)"

# ---- region-loss -----------------------------------------------------------------
MB="mr-$(echo "$NS" | tr -cd 'a-z0-9-' | cut -c1-40)"
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 mb "$MB" >/dev/null
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_US_WEST_2" us-west-2 mb "$MB" >/dev/null
"$SPILLCTL" replicate add "east-models-$$" --from "us-east-1-s3:$MB/models/" --to "us-west-2-s3:$MB/models/" \
    --model-registry --rpo-objective-seconds 120 >/dev/null
"$S3TOOL" "$SW_LAB_S3_ENDPOINT_US_EAST_1" us-east-1 put "$MB" models/llama/v1/weights.bin $((4 << 20)) 3 >/dev/null
for _ in $(seq 1 300); do
    s3head "$SW_LAB_S3_ENDPOINT_US_WEST_2" us-west-2 "$MB" models/llama/v1/weights.bin && break
    sleep 0.2
done
s3head "$SW_LAB_S3_ENDPOINT_US_WEST_2" us-west-2 "$MB" models/llama/v1/weights.bin || hub_fail "the hub did not replicate the model registry"
"$SPILLCTL" drill region-loss --region us-east-1 --dry-run -o json >"$HUB_TMP/rdry.json" ||
    hub_fail "region-loss --dry-run failed"
"$SPILLCTL" drill region-loss --region us-east-1 --timeout 3m -o json >"$HUB_TMP/region.json" 2>"$HUB_TMP/region.err" ||
    { cat "$HUB_TMP/region.err" >&2; cat "$HUB_TMP/region.json" >&2; hub_fail "the region-loss drill failed"; }
python3 - "$HUB_TMP/rdry.json" "$HUB_TMP/region.json" "east-models-$$" <<'PY' || hub_fail "region-loss reports: $(cat "$HUB_TMP/rdry.json" "$HUB_TMP/region.json")"
import json, sys
dry, run, rule = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for d in (dry, run):
    regs = {r["rule"]: r for r in d["modelRegistries"]}
    assert rule in regs and regs[rule]["missingObjects"] == 0 and regs[rule]["pass"], regs
    assert d["target"] == "region us-east-1 (cloud-spot)", d["target"]
assert dry["dryRun"] and not dry["timeline"]
assert run["pass"], run
events = " | ".join(e["event"] for e in run["timeline"])
assert "the hub found region us-east-1 (cloud-spot) lost" in events and "fence lifted" in events, events
PY
[ "$(rcli HLEN spillway:fence)" = 0 ] || hub_fail "region-loss left a fence"
pass "drill region-loss us-east-1: the model registry complete in us-west-2; cloud-spot fenced, found lost in $(python3 -c "import json; print(json.load(open('$HUB_TMP/region.json'))['rtoSeconds'])") s, restored"

"$SPILLCTL" drill history -o json >"$HUB_TMP/history.json" || hub_fail "drill history failed"
"$SPILLCTL" drill history >"$HUB_TMP/history.txt" || hub_fail "drill history (table) failed"
CL_ID=$(python3 - "$HUB_TMP" <<'PY'
import json, sys
d = sys.argv[1]
ran = [json.load(open(f"{d}/{n}.json")) for n in ("stop", "kill", "cl", "region")]
items = json.load(open(f"{d}/history.json"))["items"]
assert [i["id"] for i in items] == [r["id"] for r in reversed(ran)], (items, ran)
assert not any(i["dryRun"] for i in items), items
assert [i["scenario"] for i in items] == ["region-loss", "cluster-loss", "hub-loss", "hub-loss"]
assert all(i["pass"] for i in items), items
print(ran[2]["id"])
PY
) || hub_fail "drill history: $(cat "$HUB_TMP/history.json")"
awk -v id="$CL_ID" '$1==id && /cluster-loss/ && /cloud-spot/ && /PASS/ {f=1} END {exit !f}' "$HUB_TMP/history.txt" ||
    hub_fail "drill history table: $(cat "$HUB_TMP/history.txt")"
"$SPILLCTL" drill history "$CL_ID" --report "$HUB_TMP/again.md" >/dev/null || hub_fail "drill history $CL_ID failed"
grep -q "^| Job | on loss" "$HUB_TMP/again.md" && grep -q "$X" "$HUB_TMP/again.md" || hub_fail "drill history $CL_ID --report: $(cat "$HUB_TMP/again.md")"
if "$SPILLCTL" drill history 999999 2>"$HUB_TMP/nohist.err"; then hub_fail "drill history of an unknown id succeeded"; fi
grep -q "no drill 999999 is kept" "$HUB_TMP/nohist.err" || hub_fail "unknown id: $(cat "$HUB_TMP/nohist.err")"
pass "drill history: 4 drills newest first, no dry run; drill $CL_ID's report again as Markdown"
watcher_check
