#!/usr/bin/env bash
# kueue_unreadable.sh - members whose Kueue the hub cannot read. onprem and
# cloud-ondemand are registered with a ServiceAccount bound to a copy of the
# member role (deploy/rbac/member-clusterrole.yaml), which passes cluster
# add's check; then the copy's Kueue rules are taken away, so the hub's
# Kueue informers there are refused (403). cloud-spot is not registered.
# Under the outside watcher, with onprem's quota and GPUs full:
#   1. a burstable Job in onprem's Kueue queue is left alone: a Warning
#      Event KueueUnreadable on it says why (cluster onprem refuses the
#      hub's list), and nothing of it is taken or mirrored;
#   2. cloud-ondemand, registered to queue mirrors in its LocalQueue gpu,
#      has no room while the hub cannot see that queue: a plain burstable
#      Job stays at home, and the hub logs why (cluster cloud-ondemand
#      refuses), where it would otherwise burst there;
#   3. the rules given back, all but the optional one on ResourceFlavors:
#      both Jobs burst to cloud-ondemand, their mirrors admitted by its
#      Kueue, and complete once; the hub warns that it cannot list the
#      ResourceFlavors (every flavour counts for every pool).
# The 404 answers (Kueue not installed, a Kueue without v1beta2) take the
# same path from discovery's answer: tests/unit/clusters/test_kueue.c on
# the API server's documents, tests/e2e/clusters/test_rest.c on the lab's
# API server.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TESTBED="$SW_SOURCE_DIR/tests/testbed/testbed"
hub_setup kueue-unread
[ -f "$SW_LAB_DIR/kueue/on" ] || fail "the lab's Kueue is off (testbed kueue up)"
ROLE="spillway-member-$NS"
trap 'for c in onprem cloud-ondemand; do
    kc "$c" delete clusterrolebinding "$ROLE" --ignore-not-found >/dev/null 2>&1
    kc "$c" delete clusterrole "$ROLE" --ignore-not-found >/dev/null 2>&1
done; hub_cleanup' EXIT

"$SPILLCTL" cluster remove cloud-spot >/dev/null || hub_fail "cloud-spot not removed"

# role_json [without-kueue|without-flavours]: the member role, named $ROLE,
# as JSON.
role_json() {
    python3 - "$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml" "$ROLE" "${1:-}" <<'PY'
import json, sys, yaml
role = yaml.safe_load(open(sys.argv[1]))
role["metadata"] = {"name": sys.argv[2]}
if sys.argv[3] == "without-kueue":
    role["rules"] = [r for r in role["rules"] if "kueue.x-k8s.io" not in r.get("apiGroups", [])]
elif sys.argv[3] == "without-flavours":
    role["rules"] = [r for r in role["rules"] if r.get("resources") != ["resourceflavors"]]
    assert len(role["rules"]) == len(yaml.safe_load(open(sys.argv[1]))["rules"]) - 1
print(json.dumps(role))
PY
}

for c in onprem cloud-ondemand; do
    role_json | kc "$c" apply -f - >/dev/null
    sa_kubeconfig "$c" "$HUB_TMP/$c-sa.kubeconfig"
    kc "$c" create clusterrolebinding "$ROLE" --clusterrole="$ROLE" --serviceaccount="$NS:spillway" >/dev/null
    local_queue "$c"
done
"$SPILLCTL" cluster add onprem --replace --kubeconfig "$HUB_TMP/onprem-sa.kubeconfig" --role onprem \
    --region onprem --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=1.00 >/dev/null ||
    hub_fail "onprem not registered with the member role"
# Priced below home's GPU-hour, so that with its queue read every Job here
# bursts there at once: its staying home in part 2 is the missing room's.
"$SPILLCTL" cluster add cloud-ondemand --replace --kubeconfig "$HUB_TMP/cloud-ondemand-sa.kubeconfig" --role cloud \
    --region us-west-2 --local-queue gpu \
    --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=0.90 >/dev/null ||
    hub_fail "cloud-ondemand not registered with the member role"
# Registered; now the operator takes the Kueue rules away.
for c in onprem cloud-ondemand; do
    role_json without-kueue | kc "$c" apply -f - >/dev/null
done
[ "$(kc onprem auth can-i list workloads.kueue.x-k8s.io --as="system:serviceaccount:$NS:spillway" -A 2>/dev/null || true)" = no ] ||
    hub_fail "the ServiceAccount may still list Workloads"

watcher_start
# onprem full, in Kueue (8 of 8 GPUs reserved) and on its nodes.
kueue_filler
hub_start

# ---- 1. a Job in the unreadable Kueue queue: left alone, told why ----------
kueue_job queued 4 1 10s yes | kc onprem apply -n "$NS" -f - >/dev/null
ev=""
for _ in $(seq 1 120); do
    ev=$(kc onprem get events -n "$NS" --field-selector involvedObject.name=queued,reason=KueueUnreadable \
        -o jsonpath='{.items[0].message}' 2>/dev/null || true)
    [ -n "$ev" ] && break
    sleep 0.5
done
case "$ev" in
*"left in its Kueue queue"*"cluster onprem refuses the hub's list of Kueue Workloads"*) ;;
*) hub_fail "no KueueUnreadable Event naming onprem's refused list on the Job: '$ev'" ;;
esac
[ "$(kc onprem get job queued -n "$NS" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/queue-name}')" = gpu ] ||
    hub_fail "the Job left in its queue lost its queue-name label"
[ "$(mirrors_of queued)" = 0 ] || hub_fail "the Job left in its queue has a mirror"
pass "a Job in onprem's Kueue queue, Kueue unreadable: left there, Event \"$ev\""

# ---- 2. a target whose queue the hub cannot see has no room ----------------
burst_job plain 4 10s | kc onprem apply -n "$NS" -f - >/dev/null
P="onprem/$NS/plain"
wait_record "$P" state observed 60
logged=""
for _ in $(seq 1 60); do
    logged=$(grep 'cannot read Kueue on a member' "$HUB_TMP/hub.log" | grep -m1 'cluster="\?cloud-ondemand' || true)
    [ -n "$logged" ] && break
    sleep 0.5
done
case "$logged" in
*"cluster cloud-ondemand refuses"*) ;;
*) hub_fail "the hub did not log why it cannot read cloud-ondemand's Kueue: '$logged'" ;;
esac
sleep 10 # five decision rounds
[ "$(record_field "$P" state)" = observed ] || hub_fail "plain went on to $(record_field "$P" state) with cloud-ondemand's queue unseen"
[ "$(mirrors_of plain)" = 0 ] || hub_fail "plain has a mirror while cloud-ondemand's queue is unseen"
pass "cloud-ondemand's Kueue unreadable: no room there, plain stayed home 10 s (hub: cannot read Kueue, cluster cloud-ondemand refuses)"

# ---- 3. the rules given back but ResourceFlavors': both burst, run once ----
for c in onprem cloud-ondemand; do role_json without-flavours | kc "$c" apply -f - >/dev/null; done
[ "$(kc onprem auth can-i list resourceflavors.kueue.x-k8s.io --as="system:serviceaccount:$NS:spillway" 2>/dev/null || true)" = no ] ||
    hub_fail "the ServiceAccount may list ResourceFlavors"
Q="onprem/$NS/queued"
wait_record "$P" state succeeded 180
wait_record "$Q" state succeeded 180
for k in "$P" "$Q"; do
    [ "$(record_field "$k" targetCluster)" = cloud-ondemand ] || hub_fail "$k ran in $(record_field "$k" targetCluster)"
done
[ "$(kc onprem get job queued -n "$NS" -o jsonpath='{.status.startTime}')" = "" ] ||
    hub_fail "queued started at home as well"
grep 'cannot list the member.s Kueue ResourceFlavors' "$HUB_TMP/hub.log" | grep -q 'cluster="\?cloud-ondemand' ||
    hub_fail "the hub did not warn that it cannot list cloud-ondemand's ResourceFlavors"
n=$(grep -c 'cannot list the member.s Kueue ResourceFlavors' "$HUB_TMP/hub.log" || true)
[ "$n" -le 2 ] || hub_fail "the ResourceFlavors warning was logged $n times, not once per member"
pass "rules given back but ResourceFlavors': plain and queued burst to cloud-ondemand's queue and completed once; the hub warned once per member ($n) that it reads them without flavours"
watcher_check
