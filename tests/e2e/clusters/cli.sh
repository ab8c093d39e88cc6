#!/usr/bin/env bash
# End-to-end: spillctl cluster add|list|show|remove on the lab.
#  - add refuses a kubeconfig lacking permissions and names each missing one
#    (the lab's spillway-limited user, then with part of the RBAC granted);
#  - add works with each auth kind (client certificate, exec plugin, token);
#  - the records in Redis hold no credential in clear (grepped for);
#  - list shows health and free/total GPUs per pool equal to what kubectl
#    shows for the same nodes and pods;
#  - list -o json and -o yaml carry the same figures;
#  - global options before or after the command, the Redis password from a
#    file (no warning) or inside --redis (one warning line);
#  - show, duplicate add, remove, --help and usage errors.
source "$SW_SOURCE_DIR/tests/e2e/lab/common.sh"
spillctl="$SW_BUILD_DIR/controller/spillctl"
tmp=$(mktemp -d)
suffix="$$"
names=("e2e-onprem-$suffix" "e2e-spot-$suffix" "e2e-od-$suffix")
cleanup() {
    for n in "${names[@]}" "e2e-lim-$suffix"; do "$spillctl" cluster remove "$n" >/dev/null 2>&1 || true; done
    kc onprem delete clusterrolebinding "e2e-lim-$suffix" >/dev/null 2>&1 || true
    kc onprem delete clusterrole "e2e-lim-$suffix" >/dev/null 2>&1 || true
    kc onprem delete clusterrolebinding "e2e-member-$suffix" >/dev/null 2>&1 || true
    kc onprem delete clusterrole "e2e-member-$suffix" >/dev/null 2>&1 || true
    [ -n "${ns:-}" ] && kc onprem delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    kc cloud-ondemand uncordon "${cordoned:-none}" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
export SPILLWAY_REDIS_URL="$SW_LAB_REDIS_URL"
rest=${SW_LAB_REDIS_URL#redis://:}
redis_pw=${rest%%@*}
redis_tail=${rest#*@} # host:port/db
redis_hp=${redis_tail%%/*}
rcli() { redis-cli -h "${redis_hp%:*}" -p "${redis_hp##*:}" -a "$redis_pw" --no-auth-warning "$@"; }

# ---- the secret key must be private ------------------------------------------
head -c 32 /dev/urandom | base64 >"$tmp/key"
chmod 644 "$tmp/key"
out=$("$spillctl" cluster add "${names[0]}" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/onprem-cert.kubeconfig" \
    --role onprem --region onprem --secret-key-file "$tmp/key" 2>&1) && fail "a 0644 key file was accepted"
grep -q "secret key file \"$tmp/key\": mode 0644" <<<"$out" || fail "unexpected message: $out"
chmod 600 "$tmp/key"
export SPILLWAY_SECRET_KEY_FILE="$tmp/key"
pass "a key file readable by others is refused, naming file and mode"

# ---- usage -------------------------------------------------------------------
"$spillctl" cluster add --help | grep -qF "cluster add NAME [--kubeconfig FILE] [--context NAME]" || fail "cluster add --help lacks its usage"
"$spillctl" cluster --help | grep -q "^  add  *check access" || fail "cluster --help does not list add"
"$spillctl" cluster --help | grep -q "Global options (--redis, -o, ...): see spillctl --help" ||
    fail "cluster --help does not point to the global options"
"$spillctl" --help | grep -q -- "--redis-password-file FILE" || fail "spillctl --help lacks the global options"
rc=0
"$spillctl" cluster list -o xml 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "-o xml is not a usage error (exit $rc)"
"$spillctl" cluster add 2>/dev/null && fail "add without NAME succeeded"
rc=0
"$spillctl" cluster add x --bogus 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "an unknown option is not a usage error (exit $rc)"
out=$("$spillctl" cluster add e2e-x --kubeconfig "$tmp/missing" --role onprem --region r 2>&1) && fail "missing kubeconfig accepted"
grep -q "kubeconfig \"$tmp/missing\": cannot open" <<<"$out" || fail "unexpected message: $out"
pass "usage errors and help"

# ---- missing permissions are named -------------------------------------------
cp "$SW_LAB_KUBECONFIG_DIR/onprem-token.kubeconfig" "$tmp/lim.kubeconfig"
user=$("$SW_LAB_KUBECTL" --kubeconfig "$tmp/lim.kubeconfig" config view -o jsonpath='{.contexts[0].context.user}')
"$SW_LAB_KUBECTL" --kubeconfig "$tmp/lim.kubeconfig" config set-credentials "$user" --token="$SW_LAB_LIMITED_TOKEN" >/dev/null
out=$("$spillctl" cluster add "e2e-lim-$suffix" --kubeconfig "$tmp/lim.kubeconfig" --role onprem --region onprem 2>&1) &&
    fail "add with no permissions succeeded: $out"
for p in "list jobs.batch" "watch pods" "create jobs.batch" "patch jobs/status.batch" "create events" "list nodes" \
    "create namespaces" "get configmaps" "create secrets" "patch workloads.kueue.x-k8s.io"; do
    grep -q -- "- $p (in all namespaces)\$" <<<"$out" || fail "missing permission '$p' not named in: $out"
done
grep -q "Nothing was stored" <<<"$out" || fail "no word on storage: $out"
[ -z "$(rcli GET "spillway:cluster:e2e-lim-$suffix")" ] || fail "a record was stored"
grep -q "$SW_LAB_LIMITED_TOKEN" <<<"$out" && fail "the token was printed"
kc onprem create clusterrole "e2e-lim-$suffix" --verb=list,watch,create,patch,delete \
    --resource=jobs.batch,jobs.batch/status >/dev/null
kc onprem create clusterrolebinding "e2e-lim-$suffix" --clusterrole="e2e-lim-$suffix" --user=spillway-limited >/dev/null
sleep 1
out=$("$spillctl" cluster add "e2e-lim-$suffix" --kubeconfig "$tmp/lim.kubeconfig" --role onprem --region onprem 2>&1) &&
    fail "add with partial permissions succeeded"
grep -q -- "- list jobs.batch" <<<"$out" && fail "a granted permission is still named: $out"
grep -q -- "- watch pods (in all namespaces)$" <<<"$out" || fail "pods not named: $out"
n=$(echo "$out" | grep -c -- '^  - ')
total=$(python3 -c 'import sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))["rules"]
print(sum(len(r["apiGroups"]) * len(r["resources"]) * len(r["verbs"]) for r in rules))' \
    "$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml")
[ "$n" = $((total - 6)) ] ||
    fail "expected $((total - 6)) missing permissions (the member role's $total less 6 granted), got $n: $out"
# With the ClusterRole spillway ships, nothing is missing.
sed "s/name: spillway-member/name: e2e-member-$suffix/" "$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml" | kc onprem apply -f - >/dev/null
kc onprem create clusterrolebinding "e2e-member-$suffix" --clusterrole="e2e-member-$suffix" --user=spillway-limited >/dev/null
sleep 1
"$spillctl" cluster add "e2e-lim-$suffix" --kubeconfig "$tmp/lim.kubeconfig" --role onprem --region onprem >"$tmp/out" 2>&1 ||
    fail "add with deploy/rbac/member-clusterrole.yaml granted: $(cat "$tmp/out")"
"$spillctl" cluster remove "e2e-lim-$suffix" >/dev/null
pass "cluster add names every missing permission ($n with jobs granted) and passes with deploy/rbac/member-clusterrole.yaml"

# ---- add with each auth kind -------------------------------------------------
cat >"$tmp/spot.yaml" <<YAML
role: cloud
region: us-east-1
pools:
- name: spot-h100
  capacityType: spot
  gpuProduct: NVIDIA-H100-80GB-HBM3
  gpuMemoryMiB: 81920
  zone: us-east-1a
  pricePerGpuHour: 2.10
  maxGpus: 64
YAML
"$spillctl" cluster add "${names[0]}" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/onprem-cert.kubeconfig" --role onprem \
    --region onprem --pool name=a100,capacity=owned,product=NVIDIA-A100-SXM4-80GB,memory=81920,price=0 >"$tmp/out" 2>&1 ||
    fail "add onprem (cert): $(cat "$tmp/out")"
grep -q "auth client-certificate" "$tmp/out" || fail "$(cat "$tmp/out")"
"$spillctl" cluster add "${names[1]}" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-spot-exec.kubeconfig" --spec "$tmp/spot.yaml" \
    >"$tmp/out" 2>&1 || fail "add cloud-spot (exec): $(cat "$tmp/out")"
grep -q "auth exec" "$tmp/out" || fail "$(cat "$tmp/out")"
"$spillctl" cluster add "${names[2]}" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-ondemand-token.kubeconfig" --role cloud \
    --region us-west-2 --pool name=od-h100,capacity=on-demand,product=NVIDIA-H100-80GB-HBM3,memory=81920,price=6.98 \
    >"$tmp/out" 2>&1 || fail "add cloud-ondemand (token): $(cat "$tmp/out")"
grep -q "Kubernetes v1.34.4" "$tmp/out" || fail "$(cat "$tmp/out")"
out=$("$spillctl" cluster add "${names[0]}" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/onprem-cert.kubeconfig" --role onprem --region onprem 2>&1) &&
    fail "a duplicate add succeeded"
grep -q "already registered" <<<"$out" || fail "$out"
pass "cluster add with client certificate, exec plugin and token"

# ---- no credential in clear in Redis ------------------------------------------
secrets=()
tok=$("$SW_LAB_KUBECTL" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/cloud-ondemand-token.kubeconfig" config view --raw -o jsonpath='{.users[0].user.token}')
[ -n "$tok" ] || fail "no token in the lab's token kubeconfig"
secrets+=("$tok")
keyb64=$("$SW_LAB_KUBECTL" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/onprem-cert.kubeconfig" config view --raw -o jsonpath='{.users[0].user.client-key-data}')
keyfile=$("$SW_LAB_KUBECTL" --kubeconfig "$SW_LAB_KUBECONFIG_DIR/onprem-cert.kubeconfig" config view --raw -o jsonpath='{.users[0].user.client-key}')
case "$keyfile" in /*) ;; *) keyfile="$SW_LAB_KUBECONFIG_DIR/$keyfile" ;; esac # relative to the kubeconfig
if [ -n "$keyb64" ]; then keypem=$(echo "$keyb64" | base64 -d); else keypem=$(cat "$keyfile"); fi
secrets+=("$(echo "$keypem" | sed -n 2p)") # a line of the private key's base64 body
[ -n "$keyb64" ] && secrets+=("${keyb64:0:40}")
# The token the lab's exec plugin hands out (spillway stores the plugin, not its output).
[ -r "$SW_LAB_KUBECONFIG_DIR/cloud-spot-exec.token" ] && secrets+=("$(cat "$SW_LAB_KUBECONFIG_DIR/cloud-spot-exec.token")")
dump=""
for k in $(rcli --scan --pattern 'spillway:*'); do
    case $(rcli TYPE "$k") in
    string) dump+=$(rcli GET "$k") ;;
    set) dump+=$(rcli SMEMBERS "$k") ;;
    hash) dump+=$(rcli HGETALL "$k") ;;
    esac
done
grep -q "swseal:v1:" <<<"$dump" || fail "no sealed envelope in the records"
for s in "${secrets[@]}"; do
    [ ${#s} -ge 16 ] || fail "a secret to look for is too short: '${#s}' chars"
    grep -qF -- "$s" <<<"$dump" && fail "a credential is stored in clear in Redis"
done
grep -q "PRIVATE KEY" <<<"$dump" && fail "a private key is stored in clear in Redis"
pass "Redis holds no credential in clear (${#secrets[@]} secrets grepped in $(echo "$dump" | wc -c) bytes)"

# ---- capacity equals kubectl's view ----------------------------------------------
ns=$(kc onprem create namespace "e2e-cap-$suffix" -o jsonpath='{.metadata.name}')
gpu_job busy 1 3 600s | kc onprem apply -n "$ns" -f - >/dev/null
for _ in $(seq 1 60); do
    [ "$(kc onprem get pods -n "$ns" --field-selector=status.phase=Running -o name | wc -l)" = 1 ] && break
    sleep 1
done
cordoned=$(kc cloud-ondemand get nodes -o jsonpath='{.items[0].metadata.name}')
kc cloud-ondemand cordon "$cordoned" >/dev/null
# kubectl's figures: allocatable of Ready, schedulable nodes minus the GPU
# requests "kubectl describe node" reports as allocated on them.
kubectl_free_total() { # CLUSTER -> "free/total"
    local c=$1 total=0 used=0 node alloc req ready unsched
    for node in $(kc "$c" get nodes -o jsonpath='{.items[*].metadata.name}'); do
        ready=$(kc "$c" get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
        unsched=$(kc "$c" get node "$node" -o jsonpath='{.spec.unschedulable}')
        [ "$ready" = True ] && [ "$unsched" != true ] || continue
        alloc=$(kc "$c" get node "$node" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
        req=$(kc "$c" describe node "$node" | awk '/Allocated resources:/ {a=1} a && $1 == "nvidia.com/gpu" {print $2; exit}')
        total=$((total + alloc))
        used=$((used + ${req:-0}))
    done
    echo "$((total - used))/$total"
}
"$spillctl" cluster list >"$tmp/list" 2>&1 || fail "cluster list: $(cat "$tmp/list")"
cat "$tmp/list"
for pair in "onprem:${names[0]}" "cloud-spot:${names[1]}" "cloud-ondemand:${names[2]}"; do
    c=${pair%%:*} n=${pair#*:}
    want=$(kubectl_free_total "$c")
    row=$(grep -m 1 "^$n " "$tmp/list") || fail "$n not listed"
    grep -q " Ready " <<<"$row" || fail "$n is not Ready: $row"
    got=$(echo "$row" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) {print $i; exit}}')
    [ "$got" = "$want" ] || fail "$n ($c): spillctl says $got free/total, kubectl says $want"
    echo "  $c: free/total $got (kubectl: $want)"
done
grep -q "spot-h100=spot/NVIDIA-H100-80GB-HBM3/81920/us-east-1/us-east-1a" "$tmp/list" || fail "the spot pool is not matched to its record"
grep -q -- "$tok" "$tmp/list" && fail "list printed a token"
pass "cluster list: health Ready and free/total GPUs per pool equal kubectl's"

# ---- -o json and yaml, global options anywhere, the Redis password off argv ----
# The same figures as the table, from -o json given before the command, with
# Redis given by URL and password file instead of the environment.
printf '%s\n' "$redis_pw" >"$tmp/redis-pw"
chmod 600 "$tmp/redis-pw"
env -u SPILLWAY_REDIS_URL "$spillctl" -o json --redis "redis://$redis_tail" cluster list \
    --redis-password-file "$tmp/redis-pw" >"$tmp/list.json" 2>"$tmp/err" || fail "list -o json: $(cat "$tmp/err")"
grep -q "spillctl: warning" "$tmp/err" && fail "a warning without a password on the command line: $(cat "$tmp/err")"
for n in "${names[@]}"; do
    table=$(grep -m 1 "^$n " "$tmp/list" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) {print $i; exit}}')
    json=$(python3 -c '
import json, sys
items = json.load(open(sys.argv[1]))["items"]
c = [i for i in items if i["name"] == sys.argv[2]][0]
assert c["health"] == "Ready", c
p = c["pools"][0]
print("%d/%d" % (p["free"], p["total"]))' "$tmp/list.json" "$n") || fail "$n: bad -o json: $(cat "$tmp/list.json")"
    [ "$json" = "$table" ] || fail "$n: -o json says $json, the table $table"
done
grep -q -- "$tok" "$tmp/list.json" && fail "list -o json printed a token"
"$spillctl" cluster list -o yaml >"$tmp/list.yaml" || fail "list -o yaml"
grep -q "^- name: ${names[0]}\$" "$tmp/list.yaml" || fail "-o yaml: $(cat "$tmp/list.yaml")"
grep -q "^  health: Ready\$" "$tmp/list.yaml" || fail "-o yaml: $(cat "$tmp/list.yaml")"
# A password inside --redis works, with one warning; in the environment, none.
env -u SPILLWAY_REDIS_URL "$spillctl" cluster list --no-probe --redis "$SW_LAB_REDIS_URL" >/dev/null 2>"$tmp/err" ||
    fail "list with the password in --redis: $(cat "$tmp/err")"
[ "$(cat "$tmp/err")" = "spillctl: warning: the Redis password is on the command line, where ps shows it; use --redis-password-file or SPILLWAY_REDIS_PASSWORD" ] ||
    fail "unexpected stderr: $(cat "$tmp/err")"
"$spillctl" cluster list --no-probe 2>"$tmp/err" >/dev/null || fail "list --no-probe: $(cat "$tmp/err")"
grep -q "spillctl: warning" "$tmp/err" && fail "a warning with the URL in the environment: $(cat "$tmp/err")"
pass "cluster list -o json/yaml match the table; global options anywhere; Redis password from a file"

# ---- show and remove ------------------------------------------------------------
"$spillctl" cluster show "${names[1]}" >"$tmp/show" 2>&1 || fail "show: $(cat "$tmp/show")"
grep -q "Authentication:  exec (sealed" "$tmp/show" || fail "$(cat "$tmp/show")"
grep -q "spot-h100" "$tmp/show" || fail "$(cat "$tmp/show")"
grep -q '\$2.1000/GPU-h' "$tmp/show" || fail "price not shown: $(cat "$tmp/show")"
"$spillctl" cluster list --no-probe >/dev/null || fail "list --no-probe"
for n in "${names[@]}"; do
    "$spillctl" cluster remove "$n" >/dev/null || fail "remove $n"
done
out=$("$spillctl" cluster remove "${names[0]}" 2>&1) && fail "removing twice succeeded"
grep -q "is not registered" <<<"$out" || fail "$out"
[ -z "$(rcli GET "spillway:cluster:${names[0]}")" ] || fail "the record is still in Redis"
[ "$(rcli SISMEMBER spillway:clusters "${names[0]}")" = 0 ] || fail "the name is still in the set"
pass "cluster show and remove"
