#!/usr/bin/env bash
# outputs_fail.sh - a Job whose outputs cannot come back is not reported
# plainly successful:
#   - two Jobs (annotation-only and delegated) burst to the cloud with
#     spillway.io/outputs in a bucket that the origin's store lacks; their
#     mirrors complete; every final outputs round fails (NoSuchBucket);
#   - each ends `failed` in its record, with the reason "outputs not copied
#     back (3 tries): ..." naming the bucket; the annotation-only origin's
#     spillway.io/state annotation says failed, and the delegated origin
#     gets the Failed condition that `kubectl wait --for=condition=failed`
#     reads, with that message;
#   - a third Job with outputs in a bucket that is there on both sides
#     succeeds (the rule only bites when the outputs did not come back).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
hub_setup outfail
watcher_start
saturate
NB="nohome-$(echo "$NS" | tr -cd 'a-z0-9-' | cut -c1-40)"
for ep in "$SW_LAB_S3_ENDPOINT_US_EAST_1 us-east-1" "$SW_LAB_S3_ENDPOINT_US_WEST_2 us-west-2"; do
    # shellcheck disable=SC2086
    "$S3TOOL" $ep mb "$NB" >/dev/null
done
# The bucket is granted and named in the cloud regions: what fails is only
# that the origin's store lacks it.
HUB_EXTRA_BUCKETS="$NB" hub_config "$HUB_TMP/hub.yaml" 19464
hub_start
BURST_MODE=cloud-first burst_job lost-a 4 3s "" "    spillway.io/outputs: s3://$NB/out-a/" |
    kc onprem apply -n "$NS" -f - >/dev/null
BURST_MODE=cloud-first burst_job lost-d 4 3s delegated "    spillway.io/outputs: s3://$NB/out-d/" |
    kc onprem apply -n "$NS" -f - >/dev/null
BURST_MODE=cloud-first burst_job fine 4 3s "" "    spillway.io/outputs: s3://checkpoints/$NS/fine/" |
    kc onprem apply -n "$NS" -f - >/dev/null
A="onprem/$NS/lost-a"
D="onprem/$NS/lost-d"
F="onprem/$NS/fine"
wait_record "$F" state succeeded 150
pass "outputs in a bucket on both sides: $F succeeded"
for k in "$A" "$D"; do
    for _ in $(seq 1 600); do
        st=$(record_field "$k" state)
        [ "$st" = failed ] && break
        [ "$st" = succeeded ] && hub_fail "$k ended succeeded although its outputs did not come back: $(record_field "$k" reason)"
        sleep 0.25
    done
    [ "$st" = failed ] || hub_fail "$k is $st after 150 s"
    why=$(record_field "$k" reason)
    grep -q "^outputs not copied back (3 tries): " <<<"$why" || hub_fail "$k: reason \"$why\""
    grep -q "$NB" <<<"$why" || hub_fail "$k: the reason does not name the bucket: $why"
    m=$(record_field "$k" mirror)
    c=$(record_field "$k" targetCluster)
    [ "$(kc "$c" get job "$m" -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] ||
        hub_fail "$k: the mirror $c/$m did not complete"
done
pass "mirrors complete, outputs not home: both Jobs failed, \"$(record_field "$A" reason | cut -c1-120)...\""
for _ in $(seq 1 40); do
    st=$(kc onprem get job lost-a -n "$NS" -o jsonpath='{.metadata.annotations.spillway\.io/state}')
    [ "$st" = failed ] && break
    sleep 0.25
done
[ "$st" = failed ] || hub_fail "annotation-only origin: spillway.io/state is \"$st\", not failed"
kc onprem wait --for=condition=failed job/lost-d -n "$NS" --timeout=60s >/dev/null ||
    hub_fail "kubectl wait --for=condition=failed on the delegated origin did not return"
msg=$(kc onprem get job lost-d -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
grep -q "outputs not copied back" <<<"$msg" || hub_fail "delegated origin's Failed condition: \"$msg\""
[ -z "$(kc onprem get job lost-d -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}')" ] ||
    hub_fail "the delegated origin shows Complete too"
pass "origins: spillway.io/state failed; delegated Failed condition \"$(echo "$msg" | cut -c1-100)...\""
watcher_check
