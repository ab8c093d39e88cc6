#!/usr/bin/env bash
# Each region's versitygw accepts a SigV4-signed PUT and GET made by a
# standard client (curl --aws-sigv4) and rejects a request signed with a
# wrong secret.
source "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 100000 /dev/urandom >"$tmp/obj"
for pair in onprem:$SW_LAB_S3_ENDPOINT_ONPREM us-east-1:$SW_LAB_S3_ENDPOINT_US_EAST_1 us-west-2:$SW_LAB_S3_ENDPOINT_US_WEST_2; do
    region=${pair%%:*}
    ep=${pair#*:}
    key="smoke/$$-$RANDOM.bin"
    sign=(--aws-sigv4 "aws:amz:$region:s3" --user "$SW_LAB_S3_ACCESS_KEY:$SW_LAB_S3_SECRET_KEY")
    nobody=(-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    code=$(curl -s -o /dev/null -w '%{http_code}' "${sign[@]}" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
        -T "$tmp/obj" "$ep/datasets/$key")
    [ "$code" = 200 ] || fail "$region: signed PUT datasets/$key answered HTTP $code"
    code=$(curl -s -o "$tmp/back" -w '%{http_code}' "${sign[@]}" "${nobody[@]}" "$ep/datasets/$key")
    [ "$code" = 200 ] || fail "$region: signed GET datasets/$key answered HTTP $code"
    cmp -s "$tmp/obj" "$tmp/back" || fail "$region: GET returned different bytes than PUT"
    code=$(curl -s -o "$tmp/err" -w '%{http_code}' --aws-sigv4 "aws:amz:$region:s3" \
        --user "$SW_LAB_S3_ACCESS_KEY:not-the-secret" "${nobody[@]}" "$ep/datasets/$key")
    [ "$code" = 403 ] || fail "$region: GET with a wrong secret answered HTTP $code, expected 403"
    grep -q SignatureDoesNotMatch "$tmp/err" || fail "$region: expected SignatureDoesNotMatch, got $(cat "$tmp/err")"
    curl -s -o /dev/null "${sign[@]}" "${nobody[@]}" -X DELETE "$ep/datasets/$key"
    pass "$region: SigV4 PUT/GET round trip, wrong secret refused with 403 SignatureDoesNotMatch"
done
