#!/usr/bin/env bash
# image.sh - the image built from deploy/Dockerfile, as it is, and the hub
# run from it against the lab:
#  - `buildah bud --pull-never --isolation chroot --layers` builds it on the
#    base images `testbed build` makes from Debian's packages
#    (localhost/debian:bookworm and :bookworm-slim, no registry); the layer
#    cache keeps the apt layers, so only a change of the sources rebuilds,
#    and then only the compile;
#  - its size (the sum of its layers, uncompressed) is at most IMAGE_MAX
#    bytes, its user 65532:65532 (a passwd entry of its own, no login
#    shell), its entrypoint spillwayd;
#  - its spillwayd and spillctl carry no failpoint
#    (tests/checks/release_no_failpoints.sh on the image's files; the same
#    check fails on the test build's spillwayd, so it can fail);
#  - the Deployment's init step from the image (its install(1) copies the
#    sealing key and the Redis password from Secret-like volumes, mode
#    0400, owned by 65532), then spillwayd FROM the image (`buildah run
#    --isolation chroot --user 65532:65532`, the host's network, hub.yaml
#    and the copied secrets mounted read-only, as the Deployment mounts
#    them; the members' kubeconfigs are sealed in Redis by `spillctl
#    cluster add`):
#    the process is the image's binary (its /proc exe equals the image's
#    file, not the test build's), under uid and gid 65532, rooted in the
#    container; it takes the lease, answers /readyz on the host's network,
#    and with onprem saturated a burstable Job bursts to cloud-spot and
#    succeeds there;
#  - the hub is stopped with SIGTERM, as the kubelet stops a pod: nothing of
#    it is left running, the container is removed.
# It needs root (buildah's storage) and the bases (tests/testbed/testbed
# build). Prints the build's time and how many steps the cache answered.
set -euo pipefail
source "$(dirname "$0")/../hub/lib.sh"

IMAGE=localhost/spillway:dev
# The bound on the image's size: 132.6 MB measured (77.2 MB the slim base,
# 53.9 MB the runtime libraries and CA certificates, 1.5 MB the two
# programs), with room for the libraries' security updates.
IMAGE_MAX=150000000

[ "$(id -u)" = 0 ] || fail "building and running the image needs root (buildah's storage): run the test as root"
command -v buildah >/dev/null || fail "buildah is not installed (scripts/install-deps.sh installs it)"
for t in bookworm bookworm-slim; do
    buildah inspect --type image "localhost/debian:$t" >/dev/null 2>&1 ||
        fail "the base image localhost/debian:$t is missing: run tests/testbed/testbed build (it makes it from Debian's packages)"
done

CTR="" MNT_CTR="" RUN_PID="" HUB_INNER=""
image_cleanup() {
    if [ -n "$HUB_INNER" ] && kill -0 "$HUB_INNER" 2>/dev/null; then
        kill -TERM "$HUB_INNER" 2>/dev/null || true
        sleep 1
        kill -KILL "$HUB_INNER" 2>/dev/null || true
    fi
    [ -z "$RUN_PID" ] || wait "$RUN_PID" 2>/dev/null || true
    [ -z "$CTR" ] || buildah rm "$CTR" >/dev/null 2>&1 || true
    [ -z "$MNT_CTR" ] || buildah rm "$MNT_CTR" >/dev/null 2>&1 || true
    hub_cleanup
}
trap image_cleanup EXIT

# ---- build ------------------------------------------------------------------
# One build at a time on the machine (two clones' tests): the pruning below
# must not take another build's newest step for a leftover.
exec 7>"$SW_LAB_DIR/image-build.lock"
flock -w 1200 7 || fail "another image build held $SW_LAB_DIR/image-build.lock for 20 minutes"
t0=$(date +%s%N)
buildah bud --pull-never --isolation chroot --layers -f "$SW_SOURCE_DIR/deploy/Dockerfile" \
    -t "$IMAGE" "$SW_SOURCE_DIR" >"$HUB_TMP/build.log" 2>&1 ||
    {
        tail -40 "$HUB_TMP/build.log" >&2
        fail "buildah bud of deploy/Dockerfile failed"
    }
ms=$((($(date +%s%N) - t0) / 1000000))
steps=$(grep -cE '^\[[0-9]/[0-9]\] STEP' "$HUB_TMP/build.log")
cached=$(grep -c '^--> Using cache' "$HUB_TMP/build.log" || true)
# The build stage tagged too (every step from the cache: no time), and
# what earlier builds left removed: the dangling images built on the lab's
# bases (their label io.spillway.base), again until none is left, so that
# an earlier build's chain goes step by step. The steps of this build have
# a name or a child, so they stay (the apt layers, the cache, with them),
# and no other image of the machine is touched: the storage does not grow
# with every change of the sources.
buildah bud --pull-never --isolation chroot --layers --target build -f "$SW_SOURCE_DIR/deploy/Dockerfile" \
    -t localhost/spillway-build:dev "$SW_SOURCE_DIR" >>"$HUB_TMP/build.log" 2>&1 ||
    fail "tagging the build stage failed: $(tail -5 "$HUB_TMP/build.log")"
pruned=0
for _ in $(seq 1 30); do
    n=0
    for id in $(buildah images -a -q --filter dangling=true); do
        [ -n "$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "io.spillway.base"}}' "$id" 2>/dev/null)" ] || continue
        buildah rmi "$id" >/dev/null 2>&1 && n=$((n + 1))
    done
    pruned=$((pruned + n))
    [ $n -gt 0 ] || break
done
exec 7>&-
pass "$IMAGE built from deploy/Dockerfile in $((ms / 1000)).$((ms % 1000 / 100)) s, $cached of $steps steps from the layer cache; $pruned images of earlier builds removed"

# ---- size, user, entrypoint ---------------------------------------------------
buildah inspect --type image "$IMAGE" >"$HUB_TMP/inspect.json"
size=$(jq -r '.Manifest | fromjson | [.layers[].size] | add' "$HUB_TMP/inspect.json")
[[ "$size" =~ ^[0-9]+$ ]] || fail "could not read the image's layer sizes: $size"
[ "$size" -le $IMAGE_MAX ] || fail "the image is $size bytes, over the bound of $IMAGE_MAX"
user=$(jq -r '.OCIv1.config.User' "$HUB_TMP/inspect.json")
[ "$user" = 65532:65532 ] || fail "the image's user is \"$user\", not 65532:65532"
ep=$(jq -c '[.OCIv1.config.Entrypoint, .OCIv1.config.Cmd]' "$HUB_TMP/inspect.json")
[ "$ep" = '[["/usr/local/bin/spillwayd"],["--config","/etc/spillway/hub.yaml"]]' ] ||
    fail "the image's entrypoint and command are $ep"
MNT_CTR=$(buildah from --pull-never --quiet "$IMAGE")
mnt=$(buildah mount "$MNT_CTR")
pw=$(grep -E '^[^:]*:[^:]*:65532:' "$mnt/etc/passwd" || true)
[ "$pw" = "spillway:x:65532:65532::/nonexistent:/usr/sbin/nologin" ] || fail "the image's passwd entry for 65532 is \"$pw\""
pass "image $((size / 100000 / 10)).$((size / 100000 % 10)) MB (bound $((IMAGE_MAX / 1000000)) MB), user $user ($pw), entrypoint $ep"

# ---- no failpoints ------------------------------------------------------------
bash "$SW_SOURCE_DIR/tests/checks/release_no_failpoints.sh" "$mnt/usr/local/bin/spillwayd" "$mnt/usr/local/bin/spillctl" >"$HUB_TMP/fp" 2>&1 ||
    fail "the image's programs carry failpoints: $(cat "$HUB_TMP/fp")"
if grep -aq SPILLWAY_CRASH_AT "$SPILLWAYD"; then
    ! bash "$SW_SOURCE_DIR/tests/checks/release_no_failpoints.sh" "$SPILLWAYD" >/dev/null 2>&1 ||
        fail "release_no_failpoints.sh passed the test build's spillwayd, which has failpoints"
fi
pass "no failpoint in the image's spillwayd and spillctl (the same check fails on the test build's)"
IMAGE_HUB="$mnt/usr/local/bin/spillwayd"

# ---- the hub from the image ---------------------------------------------------
t_lock=$SECONDS
hub_lock
t_lock=$((SECONDS - t_lock))
hub_setup image
trap image_cleanup EXIT
# The volumes as the Deployment (deploy/hub/base) gives them: hub.yaml from
# the ConfigMap, read-only; the key and the password as Secret volumes
# with fsGroup 65532 (root's, group-readable), which the init container
# copies with the image's install(1), mode 0400, owned by the hub's user,
# into a volume of its own (a memory volume there) that the hub reads
# read-only.
etc="$HUB_TMP/etc" sec="$HUB_TMP/secrets" run="$HUB_TMP/run"
mkdir -p "$etc" "$sec/key" "$sec/redis" "$run"
sed -e 's|^secretKeyFile: .*|secretKeyFile: /run/spillway/secret.key|' \
    -e 's|^  passwordEnv: .*|  passwordFile: /run/spillway/password|' "$HUB_TMP/hub.yaml" >"$etc/hub.yaml"
grep -q '^secretKeyFile: /run/spillway/secret.key$' "$etc/hub.yaml" && grep -q '^  passwordFile: /run/spillway/password$' "$etc/hub.yaml" ||
    fail "the hub config for the image was not written: $(cat "$etc/hub.yaml")"
cp "$SPILLWAY_SECRET_KEY_FILE" "$sec/key/secret.key"
printf '%s' "$HUB_REDIS_PASSWORD" >"$sec/redis/password"
chown -R 0:65532 "$sec"
chmod 0440 "$sec/key/secret.key" "$sec/redis/password"
chmod 0755 "$etc" "$sec" "$sec/key" "$sec/redis"
chmod 0644 "$etc/hub.yaml"
chown 65532:65532 "$run"
chmod 0700 "$run"

CTR=$(buildah from --pull-never --quiet "$IMAGE")
buildah run --isolation chroot --user 65532:65532 --network host \
    -v "$sec/key:/secrets/key:ro" -v "$sec/redis:/secrets/redis:ro" -v "$run:/run/spillway" "$CTR" \
    -- install -m 0400 -t /run/spillway /secrets/key/secret.key /secrets/redis/password >"$HUB_TMP/init.log" 2>&1 ||
    fail "the init container's install(1) failed: $(cat "$HUB_TMP/init.log")"
[ "$(stat -c '%u:%g %a' "$run/secret.key" "$run/password" | sort -u)" = "65532:65532 400" ] ||
    fail "the init step left $(stat -c '%n %u:%g %a' "$run"/* | tr '\n' ' ')"
buildah run --isolation chroot --user 65532:65532 --network host \
    -v "$etc:/etc/spillway:ro" -v "$run:/run/spillway:ro" "$CTR" \
    -- /usr/local/bin/spillwayd --config /etc/spillway/hub.yaml >>"$HUB_TMP/hub.log" 2>&1 8>&- &
RUN_PID=$!
# The hub's process: the spillwayd below `buildah run`.
for _ in $(seq 1 100); do
    HUB_INNER=$(ps -e -o pid=,ppid=,comm= | awk -v root="$RUN_PID" '
        { pp[$1] = $2; c[$1] = $3 }
        END { for (p in c) if (c[p] == "spillwayd") { q = p; while (q in pp && q != root) q = pp[q]; if (q == root) print p } }')
    [ -n "$HUB_INNER" ] && break
    kill -0 "$RUN_PID" 2>/dev/null || hub_fail "buildah run exited before spillwayd started"
    sleep 0.1
done
[ -n "$HUB_INNER" ] || hub_fail "no spillwayd process below buildah run ($RUN_PID) after 10 s"
cmp -s "/proc/$HUB_INNER/exe" "$IMAGE_HUB" || hub_fail "the running spillwayd is not the image's ($(readlink "/proc/$HUB_INNER/exe"))"
! cmp -s "/proc/$HUB_INNER/exe" "$SPILLWAYD" || hub_fail "the running spillwayd is the test build's"
ids=$(awk '/^Uid:|^Gid:/ { print $2, $3, $4, $5 }' "/proc/$HUB_INNER/status" | tr '\n' ' ')
[ "$ids" = "65532 65532 65532 65532 65532 65532 65532 65532 " ] || hub_fail "the hub runs as uid/gid $ids, not 65532"
# Its root: the container's (buildah binds it under a directory of its
# own), the image's passwd, the volumes mounted read-only.
croot=$(readlink "/proc/$HUB_INNER/root")
[ "$croot" != / ] && cmp -s "/proc/$HUB_INNER/root/etc/passwd" "$mnt/etc/passwd" &&
    cmp -s "/proc/$HUB_INNER/root/etc/spillway/hub.yaml" "$etc/hub.yaml" ||
    hub_fail "the hub's root $croot is not the container's with /etc/spillway mounted"
for m in /etc/spillway /run/spillway; do
    grep -qE "^[^ ]+ $m [^ ]+ ro[, ]" "/proc/$HUB_INNER/mounts" ||
        hub_fail "$m is not mounted read-only in the hub's view: $(grep spillway "/proc/$HUB_INNER/mounts")"
done
for _ in $(seq 1 120); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:19464/readyz)" = 200 ] && break
    sleep 0.25
done
[ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:19464/readyz)" = 200 ] || hub_fail "the hub in the image is not ready after 30 s: $(curl -s http://127.0.0.1:19464/readyz)"
for _ in $(seq 1 60); do
    [ "$(metric 19464 spillway_leader)" = 1 ] && break
    sleep 0.25
done
[ "$(metric 19464 spillway_leader)" = 1 ] || hub_fail "the hub in the image did not take the lease"
grep -qE "msg=\"took the lease\" hub=\"?[^/ ]*/$HUB_INNER-" "$HUB_TMP/hub.log" ||
    hub_fail "the hub's log does not show process $HUB_INNER taking the lease"
pass "spillwayd from the image: pid $HUB_INNER, uid/gid 65532, rooted in the container ($croot), /etc/spillway and /run/spillway read-only, ready on 127.0.0.1:19464 and the leader"

# ---- a Job bursts with that hub -----------------------------------------------
saturate
burst_job train 4 5s | kc onprem apply -n "$NS" -f - >/dev/null
J="onprem/$NS/train"
wait_record "$J" state succeeded 120
[ "$(record_field "$J" targetCluster)" = cloud-spot ] || hub_fail "train ran in $(record_field "$J" targetCluster), not cloud-spot"
mirror=$(record_field "$J" mirror)
[ "$(kc cloud-spot get job "$mirror" -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ] || hub_fail "the mirror $mirror did not succeed"
[ "$(kc onprem get job train -n "$NS" -o jsonpath='{.spec.suspend}')" = true ] || hub_fail "the origin was not suspended"
pass "onprem saturated: train suspended at home, its mirror $mirror succeeded on cloud-spot, decided by the hub in the image"

# ---- a clean stop -------------------------------------------------------------
kill -TERM "$HUB_INNER"
rc=0
for _ in $(seq 1 100); do
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$RUN_PID" 2>/dev/null && hub_fail "buildah run still runs 10 s after the hub's SIGTERM"
wait "$RUN_PID" || rc=$?
RUN_PID=""
! kill -0 "$HUB_INNER" 2>/dev/null || hub_fail "spillwayd $HUB_INNER still runs after SIGTERM"
HUB_INNER=""
[ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:19464/healthz)" = 000 ] || hub_fail "something still answers on 19464"
buildah rm "$CTR" >/dev/null
CTR=""
pass "the hub stopped on SIGTERM (buildah run exited $rc), no process left, the container removed"
echo "image.sh: $SECONDS s, $t_lock s of them waiting for the lab's hub lock"
