#!/usr/bin/env bash
# retire.sh - a finished Job's record ends (issue 18 item 8): an
# annotation-only origin stays on its cluster, suspended, for as long as
# nobody deletes it, and its record used to live as long, in Redis and in
# the leader's memory. With records.retireAfterSeconds (20 s here) after
# the end, under the independent watcher:
#   - both forms: the finished mirror is deleted, spillway's finalizer
#     leaves the origin, the record leaves spillway:jobs for the archive
#     spillway:ended; the chargeback report reads the same before and after
#   - never burst again: neither the leader nor a hub started afterwards
#     (no record in Redis) makes a record or a mirror for a retired origin;
#     the origin keeps its outcome and is deleted without any hub
#   - a copy of a retired origin (its annotations, spillway.io/state and
#     spillway.io/mirror included, under a new UID) is a new Job: it bursts
#     and runs once
#   - a record ended by its origin's deletion (mirror deleted first) is
#     archived too: the report still bills it
#   - the Secret both Jobs reference (secretKeyRef), which dispatch copied
#     to the target, is deleted there once both have retired (issue 35 item
#     11); a Secret of that name spillway did not make (at home, and in
#     another namespace of the target) stays
#   - a release never deletes a copy a new mirror relies on (the delete held
#     6 s by hold-copy-delete after the copy was read and found unused: a
#     Job of the same namespace dispatched meanwhile waits for the release,
#     then copies the Secret again)
#   - a deleted origin whose target does not answer (fenced) is let go at
#     once (CleanupLeft, spillway_origins_let_go_total); its record deletes
#     the mirror and the copy once the target answers again
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup retire
hub_needs_failpoints
printf 'records:\n  retireAfterSeconds: 20\n' >>"$HUB_TMP/hub.yaml"
watcher_start
saturate
hub_start

A="onprem/$NS/r-annotation"
D="onprem/$NS/r-delegated"
in_set() { rcli SISMEMBER spillway:jobs "$1"; }
# mirrors_of_uid UID: mirrors of an origin (by its UID) in every cluster.
mirrors_of_uid() {
    local c n=0
    for c in cloud-spot cloud-ondemand onprem; do
        n=$((n + $(kc "$c" get jobs -n "$NS" -l "spillway.io/origin-uid=$1" -o name | wc -l)))
    done
    echo "$n"
}
# ended KEY: how many archived records name KEY.
ended() {
    rcli ZRANGE spillway:ended 0 -1 | python3 -c "
import json, sys
print(sum(1 for l in sys.stdin if l.strip() and json.loads(l).get('key') == '$1'))"
}
# bill: this test's team in the chargeback report (JSON), one line.
day=$(date -u +%Y-%m-%d)
next=$(date -u -d "$day + 1 day" +%Y-%m-%d)
bill() {
    "$SPILLCTL" report chargeback --from-hub --from "$day" --to "$next" --ondemand-price 6.98 -o json |
        python3 -c "
import json, sys
t = [t for t in json.load(sys.stdin)['teams'] if t['team'] == '$NS']
print(json.dumps(t[0] if t else None, sort_keys=True))"
}

# Both Jobs' pods read the Secret r-token: dispatch copies it to the target,
# where one copy serves both mirrors.
with_secret() {
    sed 's|^        image: registry.example/train:1$|&\n        env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: r-token, key: token}}}]|'
}
kc onprem create secret generic r-token -n "$NS" --from-literal=token=home-token >/dev/null
burst_job r-annotation 4 3s | with_secret | kc onprem apply -n "$NS" -f - >/dev/null
burst_job r-delegated 4 3s delegated | with_secret | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "$A" state succeeded 90
wait_record "$D" state succeeded 90
old_uid=$(kc onprem get job r-annotation -n "$NS" -o jsonpath='{.metadata.uid}')
old_mirror=$(record_field "$A" mirror)
[ -n "$old_mirror" ] && [ "$(record_field "$A" targetCluster)" != onprem ] ||
    hub_fail "r-annotation did not burst (mirror \"$old_mirror\"): the case tests nothing"
before=$(bill)
[ "$(echo "$before" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"])')" = 2 ] ||
    hub_fail "the report before retirement does not bill the two Jobs: $before"
[ "$(in_set "$A")" = 1 ] && [ "$(in_set "$D")" = 1 ] ||
    hub_fail "a record ended before records.retireAfterSeconds"
target=$(record_field "$A" targetCluster)
[ "$(record_field "$D" targetCluster)" = "$target" ] || hub_fail "the two Jobs ran in $target and $(record_field "$D" targetCluster)"
[ "$(kc "$target" get secret r-token -n "$NS" -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}')" = spillway ] ||
    hub_fail "the Secret r-token was not copied to $target as spillway's"
# A Secret of the same name that spillway did not make, in another namespace
# of the target.
OTHER="$NS-other"
HUB_EXTRA_NS+=("$OTHER")
kc "$target" create namespace "$OTHER" >/dev/null
kc "$target" create secret generic r-token -n "$OTHER" --from-literal=token=not-spillways >/dev/null

# ---- retired: mirror, finalizer, record ---------------------------------------
t0=$SECONDS
for i in $(seq 1 240); do
    [ "$(in_set "$A")" = 0 ] && [ "$(in_set "$D")" = 0 ] && break
    sleep 0.25
done
[ "$(in_set "$A")" = 0 ] && [ "$(in_set "$D")" = 0 ] ||
    hub_fail "the records did not end within 60 s of their Jobs finishing (retireAfterSeconds 20)"
echo "records ended $((SECONDS - t0)) s after both Jobs were seen succeeded"
[ "$(ended "$A")" = 1 ] && [ "$(ended "$D")" = 1 ] ||
    hub_fail "the archive holds $(ended "$A") and $(ended "$D") records of the two Jobs, not 1 each"
[ -z "$(rcli GET "spillway:job:$A")" ] && [ -z "$(rcli GET "spillway:explain:$A")" ] ||
    hub_fail "the record or explanation of r-annotation is still in Redis"
after=$(bill)
[ "$after" = "$before" ] || hub_fail "the bill changed with retirement: before $before, after $after"
for j in r-annotation r-delegated; do
    [ "$(mirrors_of "$j")" = 0 ] || hub_fail "$j still has $(mirrors_of "$j") mirrors after retirement"
    fins=$(kc onprem get job "$j" -n "$NS" -o jsonpath='{.metadata.finalizers}')
    [[ "$fins" != *spillway.io/mirror* ]] || hub_fail "$j still carries spillway's finalizer: $fins"
done
[ "$(kc onprem get job r-annotation -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state} {.spec.suspend}')" = "succeeded true" ] ||
    hub_fail "r-annotation does not show its outcome, suspended"
kc onprem wait --for=condition=complete job/r-delegated -n "$NS" --timeout=10s >/dev/null ||
    hub_fail "r-delegated is not Complete"
grep -q 'msg="record ended".*why="finished, retired' "$HUB_TMP/hub.log" || hub_fail "the hub did not log the retirement"
pass "both forms retired 20 s after their end: mirrors deleted, finalizers removed, records archived, the bill unchanged ($after)"
# The copy of r-token went with the last record of the namespace there.
kc "$target" get secret r-token -n "$NS" >/dev/null 2>&1 &&
    hub_fail "spillway's copy of r-token is still in $target after both Jobs retired"
grep -q "deleted spillway's copy of a Secret.*name=\"\?r-token" "$HUB_TMP/hub.log" ||
    hub_fail "the hub did not log the copy's deletion"
[ "$(kc "$target" get secret r-token -n "$OTHER" -o jsonpath='{.data.token}' | base64 -d)" = not-spillways ] ||
    hub_fail "a Secret r-token spillway did not make, in $target/$OTHER, was touched"
[ "$(kc onprem get secret r-token -n "$NS" -o jsonpath='{.data.token}' | base64 -d)" = home-token ] ||
    hub_fail "the origin's Secret r-token at home was touched"
pass "the copied Secret r-token left $target/$NS with the last of its Jobs; r-token at home and in $target/$OTHER, not spillway's, stayed"

# ---- never burst again, by the leader or by a hub without the record ------------
sleep 8 # four decision rounds (recheckSeconds 2)
kill -9 "$HUB_PID"
wait "$HUB_PID" 2>/dev/null || true
hub_start "$HUB_TMP/hub.yaml" SPILLWAY_TEST_HOLD=hold-copy-delete:6000
sleep 12
for K in "$A" "$D"; do
    [ "$(in_set "$K")" = 0 ] || hub_fail "$K has a record again: $(rcli GET "spillway:job:$K")"
done
for j in r-annotation r-delegated; do
    [ "$(mirrors_of "$j")" = 0 ] || hub_fail "$j was sent again: $(mirrors_of "$j") mirrors"
done
kc onprem delete job r-annotation r-delegated -n "$NS" --timeout=30s >/dev/null ||
    hub_fail "a retired origin could not be deleted"
pass "retired origins stay finished through 4 rounds and a restarted hub, and are deleted without the hub"

# The watcher takes an origin's first succeeded state as its committed
# outcome: the copy below starts with one it did not earn, so it is checked
# by its record and its mirrors instead.
watcher_check

# ---- a copy under a new UID is a new Job ----------------------------------------
burst_job r-copy 4 3s "" "    spillway.io/state: succeeded
    spillway.io/mirror: $old_mirror" | with_secret | kc onprem apply -n "$NS" -f - >/dev/null
wait_record "onprem/$NS/r-copy" state succeeded 90
copy_uid=$(kc onprem get job r-copy -n "$NS" -o jsonpath='{.metadata.uid}')
[ "$(record_field "onprem/$NS/r-copy" attempt)" = 1 ] && [ "$(mirrors_of r-copy)" = 1 ] ||
    hub_fail "r-copy ran as attempt $(record_field "onprem/$NS/r-copy" attempt) with $(mirrors_of r-copy) mirrors"
pass "a copy carrying a retired Job's outcome annotations (mirror $old_mirror of uid $old_uid) burst and ran once"

# ---- a record ended by its origin's deletion is archived too ---------------------
C="onprem/$NS/r-copy"
kc onprem delete job r-copy -n "$NS" --wait=false >/dev/null || hub_fail "r-copy could not be deleted"
# ---- a Job of the namespace dispatched while its copy is being released ---------
# r-copy's release read the copy of r-token and found no other user: its
# delete is held 6 s. r-next, which uses r-token too, is decided meanwhile:
# its dispatch waits for the release, then copies r-token again.
wait_log 'hold point reached.*point="?hold-copy-delete"? key="?[^ ]*r-copy' 30 "r-copy's release did not reach the copy's delete"
N="onprem/$NS/r-next"
burst_job r-next 4 120s | with_secret | kc onprem apply -n "$NS" -f - >/dev/null
wait_log 'dispatch waits for a release of copies.*job="?[^ ]*r-next' 10 \
    "r-next's dispatch did not wait for r-copy's release (decided after it, or not at all): the case tests nothing"
wait_record "$N" state running 60
[ "$(record_field "$N" targetCluster)" = "$target" ] || hub_fail "r-next ran in $(record_field "$N" targetCluster), not $target"
grep -q "deleted spillway's copy of a Secret.*job=\"\?onprem/$NS/r-copy" "$HUB_TMP/hub.log" ||
    hub_fail "r-copy's release did not delete the copy it held"
[ "$(kc "$target" get secret r-token -n "$NS" -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}' 2>/dev/null)" = spillway ] ||
    hub_fail "r-next runs in $target without the copy of r-token: the release deleted the copy it relies on"
pass "a copy released while r-next was dispatched to $target: r-next waited for the release and copied r-token again"
for i in $(seq 1 120); do [ "$(in_set "$C")" = 0 ] && break; sleep 0.25; done
[ "$(in_set "$C")" = 0 ] || hub_fail "r-copy's record did not end within 30 s of its origin's deletion"
[ "$(ended "$C")" = 1 ] || hub_fail "r-copy's record is not in the archive ($(ended "$C"))"
[ "$(mirrors_of_uid "$copy_uid")" = 0 ] || hub_fail "r-copy's mirror outlived its origin"
billed=$(bill | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"])')
[ "$billed" = 4 ] || hub_fail "the report bills $billed Jobs after r-copy's deletion, not 4 (r-next runs)"
pass "r-copy deleted: its mirror deleted, its record archived, the report still bills all 3 Jobs and r-next"

# ---- a deleted origin whose target does not answer is let go ----------------------
rcli HSET spillway:fence "$target" "retire.sh: the target does not answer" >/dev/null
wait_log 'member fenced.*cluster="?'"$target" 10 "the hub did not fence $target"
t0=$SECONDS
kc onprem delete job r-next -n "$NS" --timeout=20s >/dev/null ||
    hub_fail "r-next, deleted while $target does not answer, kept spillway's finalizer for 20 s"
echo "r-next let go $((SECONDS - t0)) s after its deletion"
grep -q 'deleted origin let go before its cleanup ended.*job="\?onprem/'"$NS"'/r-next.*copies="\?Secret r-token' "$HUB_TMP/hub.log" ||
    hub_fail "the hub did not log what r-next left"
[ "$(metric 19464 spillway_origins_let_go_total)" = 1 ] || hub_fail "spillway_origins_let_go_total is $(metric 19464 spillway_origins_let_go_total), not 1"
for i in $(seq 1 20); do
    kc onprem get events -n "$NS" --field-selector reason=CleanupLeft,involvedObject.name=r-next -o name | grep -q . && break
    sleep 0.25
done
kc onprem get events -n "$NS" --field-selector reason=CleanupLeft,involvedObject.name=r-next -o name | grep -q . ||
    hub_fail "no CleanupLeft Event on r-next"
[ "$(in_set "$N")" = 1 ] || hub_fail "r-next's record ended with its mirror and copy left in $target"
rcli HDEL spillway:fence "$target" >/dev/null
for i in $(seq 1 120); do [ "$(in_set "$N")" = 0 ] && break; sleep 0.25; done
[ "$(in_set "$N")" = 0 ] || hub_fail "r-next's record did not end within 30 s of $target answering again"
[ "$(mirrors_of r-next)" = 0 ] || hub_fail "r-next's mirror is still in $target"
kc "$target" get secret r-token -n "$NS" >/dev/null 2>&1 && hub_fail "the copy of r-token is still in $target"
pass "r-next deleted while $target was fenced: let go at once (CleanupLeft, counted); mirror and copy deleted once $target answered"
