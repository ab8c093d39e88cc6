#!/usr/bin/env bash
# End-to-end, read-only: the Helm chart deploy/helm/spillway (helm v3.22.0,
# built by `testbed build` from its Go module, $SW_LAB_HELM).
#  - `helm lint --strict` with the defaults and with helm-values.yaml
#    (Redis Sentinel over TLS with a client certificate, the Sentinels'
#    password, monitoring, the management cluster a member, tenancy grants);
#  - the defaults render the objects `kubectl kustomize deploy/hub/base`
#    renders, and helm-values.yaml those of the base with the monitoring and
#    local-member components with exactly the changes its values ask for
#    (chart_compare.py: compared as data, sorted by kind, namespace, name);
#  - the ConfigMap's name carries the hash Kustomize's configMapGenerator
#    gives the same hub.yaml, and a change of the config changes it;
#  - the values example of docs/deploy.md renders, its hub.yaml valid;
#  - values the chart cannot honour are refused, naming the value;
#  - values.schema.json refuses values that would write YAML of their own
#    (a newline and keys in a string), strings for booleans and a
#    redis.username with ':', '@' or '/', naming the value; with the schema
#    skipped, the templates write the same strings quoted (as data) and
#    refuse the string boolean themselves;
#  - spillwayd --validate accepts both rendered hub.yaml files;
#  - both renders applied to the lab's onprem API server with
#    `kubectl apply --server-side --dry-run=server --validate=strict`, in a
#    namespace of the test's own (restricted Pod Security), every object
#    reported applied with no warning, and a Pod from each render's
#    Deployment admitted by Pod Security (dry run).
# Nothing is left in the lab: the dry runs store nothing; the namespace and
# the monitoring CRDs (when the lab did not have them) are deleted.
source "$SW_SOURCE_DIR/tests/e2e/lab/common.sh"
here="$SW_SOURCE_DIR/tests/e2e/deploy"
chart="$SW_SOURCE_DIR/deploy/helm/spillway"
PY=python3
"$PY" -c "import yaml" 2>/dev/null || PY=/usr/bin/python3
HELM=${SW_LAB_HELM:-}
[ -x "$HELM" ] || fail "helm is not built ($HELM): run tests/testbed/testbed build"
tmp=$(mktemp -d)
# Helm's own folders in the test's, so that no repository or plugin of the
# machine's user is read.
export HELM_CACHE_HOME="$tmp/helm/cache" HELM_CONFIG_HOME="$tmp/helm/config" HELM_DATA_HOME="$tmp/helm/data"
k() { kc onprem --cache-dir="$tmp/cache" "$@"; }
crds=(servicemonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com)
ours_crds=0
cleanup() {
    [ -n "${NS:-}" ] && k delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
    [ "$ours_crds" = 1 ] && k delete crd -l spillway.io/e2e=deploy-dry-run --wait=false >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
values="$here/helm-values.yaml"
kust() { "$SW_LAB_KUBECTL" kustomize "$@"; }

# ---- helm lint -------------------------------------------------------------------
"$HELM" version --short | grep -q '^v3\.22\.0' || fail "helm is not v3.22.0: $("$HELM" version --short)"
"$HELM" lint --strict "$chart" >"$tmp/lint" 2>&1 || fail "helm lint: $(cat "$tmp/lint")"
"$HELM" lint --strict "$chart" -f "$values" >"$tmp/lint" 2>&1 || fail "helm lint -f helm-values.yaml: $(cat "$tmp/lint")"
pass "helm lint --strict: the defaults and helm-values.yaml"

# ---- the defaults are the Kustomize base ---------------------------------------------
"$HELM" template spillway "$chart" >"$tmp/default.yaml" 2>"$tmp/err" || fail "helm template: $(cat "$tmp/err")"
kust "$SW_SOURCE_DIR/deploy/hub/base" >"$tmp/base.yaml" || fail "kustomize base"
n=$("$PY" "$here/chart_compare.py" same "$tmp/base.yaml" "$tmp/default.yaml") || exit 1
[ "$n" = 7 ] || fail "the base renders $n objects, expected 7"
"$HELM" template spillway "$chart" --set replicaCount=3 >"$tmp/three.yaml" 2>"$tmp/err" || fail "helm template --set: $(cat "$tmp/err")"
out=$("$PY" "$here/chart_compare.py" same "$tmp/base.yaml" "$tmp/three.yaml" 2>&1) && fail "3 replicas compared equal to the base's 2"
grep -q "Deployment spillway/spillway-hub: .spec.replicas: Kustomize's 2, the chart's 3" <<<"$out" ||
    fail "3 replicas: not the difference expected: $out"
pass "the chart's defaults render the Kustomize base's $n objects (and 3 replicas are told apart)"

# ---- helm-values.yaml: the base and both components, with its changes -----------------
mkdir "$tmp/k"
cat >"$tmp/k/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: spillway
resources: [$(realpath --relative-to="$tmp/k" "$SW_SOURCE_DIR/deploy/hub/base")]
components:
- $(realpath --relative-to="$tmp/k" "$SW_SOURCE_DIR/deploy/hub/components/monitoring")
- $(realpath --relative-to="$tmp/k" "$SW_SOURCE_DIR/deploy/hub/components/local-member")
YAML
kust "$tmp/k" >"$tmp/k.yaml" || fail "kustomize base + monitoring + local-member"
"$HELM" template spillway "$chart" -f "$values" >"$tmp/full.yaml" 2>"$tmp/err" || fail "helm template -f: $(cat "$tmp/err")"
n=$("$PY" "$here/chart_compare.py" full "$tmp/k.yaml" "$tmp/full.yaml") || exit 1
[ "$n" = 11 ] || fail "base + components render $n objects, expected 11"
pass "helm-values.yaml renders the $n objects of the base with components/monitoring and components/local-member, Sentinel, TLS, grants and all"

# ---- the ConfigMap's name is Kustomize's hash of its content ---------------------------
"$HELM" template spillway "$chart" --set config.logLevel=warn >"$tmp/warn.yaml" 2>"$tmp/err" || fail "helm template --set: $(cat "$tmp/err")"
names=""
for r in default full warn; do
    mkdir -p "$tmp/g-$r"
    name=$("$PY" "$here/chart_compare.py" hubyaml "$tmp/$r.yaml" "$tmp/g-$r/hub.yaml") || exit 1
    printf 'configMapGenerator:\n- name: spillway-hub-config\n  files: [hub.yaml]\n' >"$tmp/g-$r/kustomization.yaml"
    want=$(kust "$tmp/g-$r" | sed -n 's/^  name: //p')
    [ "$name" = "$want" ] || fail "$r: the chart names its ConfigMap $name, Kustomize names the same content $want"
    names="$names $name"
done
[ "$(echo $names | tr ' ' '\n' | sort -u | wc -l)" = 3 ] || fail "three configs, not three ConfigMap names:$names"
pass "the ConfigMap's name is Kustomize's for the same hub.yaml, and changes with it:$names"

# ---- the values example of docs/deploy.md ------------------------------------------------
"$PY" - "$SW_SOURCE_DIR/docs/deploy.md" "$tmp/docs-values.yaml" <<'PY' || fail "docs/deploy.md: no values example"
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## Installing with Helm"):]
section = section[:section.index("\n## ")]
m = re.search(r"^```yaml\n(.*?)^```", section, re.M | re.S)
open(sys.argv[2], "w").write(m.group(1))
PY
"$HELM" template spillway "$chart" -f "$tmp/docs-values.yaml" >"$tmp/docs.yaml" 2>"$tmp/err" ||
    fail "helm template with docs/deploy.md's values example: $(cat "$tmp/err")"
mkdir "$tmp/g-docs"
"$PY" "$here/chart_compare.py" hubyaml "$tmp/docs.yaml" "$tmp/g-docs/hub.yaml" >/dev/null || exit 1
"$SW_BUILD_DIR/controller/spillwayd" --config "$tmp/g-docs/hub.yaml" --validate >"$tmp/hub.out" 2>&1 ||
    fail "spillwayd --validate refuses the hub.yaml of docs/deploy.md's values example: $(cat "$tmp/hub.out")"
pass "docs/deploy.md's values example renders, and spillwayd --validate accepts its hub.yaml"

# ---- values the chart refuses ---------------------------------------------------------
refused() { # refused WHAT ARGS...: helm template must fail naming WHAT
    local what=$1 out
    shift
    out=$("$HELM" template spillway "$chart" "$@" 2>&1) && fail "helm template $* was accepted"
    grep -qF "$what" <<<"$out" || fail "helm template $*: refused without naming $what: $out"
}
refused 'redis.sentinel.hosts: empty' --set redis.sentinel.enabled=true --set redis.sentinel.masterName=m
refused 'redis.sentinel.masterName' --set redis.sentinel.enabled=true --set 'redis.sentinel.hosts={a:26379}'
refused 'give both or neither' --set redis.tls.enabled=true --set redis.tls.existingSecret=s --set redis.tls.certKey=tls.crt
refused 'redis.tls.existingSecret: set, but redis.tls.enabled is false' --set redis.tls.existingSecret=s
refused 'config.redis: set by the chart' --set config.redis.url=redis://x
refused 'secretKey.existingSecret: empty' --set secretKey.existingSecret=
pass "values the chart cannot honour are refused, naming the value (6 cases)"

# ---- values that would write YAML of their own, and strings for booleans ------------------
# values.schema.json refuses them, naming the value and what it expected...
open_np=$'monitoring\n    - podSelector: {}\n      namespaceSelector: {}'
privileged=$'0.1.0\n        securityContext: {privileged: true}'
refused "at '/networkPolicy/monitoringNamespace': '" --set networkPolicy.monitoringNamespace="$open_np"
refused "at '/image/tag': '" --set image.tag="$privileged"
refused "at '/namespace/name': '" --set namespace.name=$'spillway\n  labels: {a: b}'
refused "at '/monitoring/interval': '" --set monitoring.enabled=true --set monitoring.interval=$'30s\n    honorLabels: true'
refused "at '/image/pullPolicy': value must be one of" --set image.pullPolicy=$'Always\n        privileged: true'
refused "at '/localMember/enabled': got string, want boolean" --set-string localMember.enabled=false
printf 'localMember:\n  enabled: "false"\nnamespace:\n  create: "false"\n' >"$tmp/strbool.yaml"
out=$("$HELM" template spillway "$chart" -f "$tmp/strbool.yaml" 2>&1) && fail "enabled: \"false\" (a string) was accepted"
for v in localMember/enabled namespace/create; do
    grep -qF "at '/$v': got string, want boolean" <<<"$out" || fail "a string for $v: refused without naming it: $out"
done
refused "at '/redis/username': '" --set redis.username=hub:x
refused "at '/redis/username': '" --set redis.username=hub@x
refused "at '/redis/username': '" --set redis.username=hub/x
refused "at '': additional properties 'localmember' not allowed" --set localmember.enabled=true
# ... and, the schema skipped, the templates still write every string quoted
# and refuse a string for a boolean.
"$HELM" template spillway "$chart" --skip-schema-validation --set image.tag="$privileged" \
    --set networkPolicy.monitoringNamespace="$open_np" >"$tmp/inject.yaml" 2>"$tmp/err" ||
    fail "helm template --skip-schema-validation: $(cat "$tmp/err")"
"$PY" - "$tmp/inject.yaml" "spillway:$privileged" "$open_np" <<'PY' || fail "a value wrote YAML of its own (schema skipped)"
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
pod = docs["Deployment"]["spec"]["template"]["spec"]
for c in pod["initContainers"] + pod["containers"]:
    assert c["image"] == sys.argv[2], "%s: image %r" % (c["name"], c["image"])
    assert c["securityContext"]["privileged"] is False, "%s: %r" % (c["name"], c["securityContext"])
frm = docs["NetworkPolicy"]["spec"]["ingress"][0]["from"]
assert frm == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": sys.argv[3]}}}], frm
PY
refused 'localMember.enabled: "false" (a string); expected true or false' --skip-schema-validation --set-string localMember.enabled=false
refused 'redis.username: "hub@x"; expected' --skip-schema-validation --set redis.username=hub@x
refused 'namespace.name: "spillway\n  x: y"; expected' --skip-schema-validation --set namespace.name=$'spillway\n  x: y'
pass "values that would add YAML (a NetworkPolicy open to all, privileged containers, a namespace, a scrape interval, a pull policy), string booleans, a redis.username with ':', '@' or '/', and a misspelt value are refused by values.schema.json naming the value; the schema skipped, the same strings are written quoted, as data, and a string boolean, a bad username or namespace are refused by the templates (17 cases)"

# ---- spillwayd accepts both rendered configs -------------------------------------------
for r in default full; do
    "$SW_BUILD_DIR/controller/spillwayd" --config "$tmp/g-$r/hub.yaml" --validate >"$tmp/hub.out" 2>&1 ||
        fail "spillwayd --validate refuses the chart's $r hub.yaml: $(cat "$tmp/hub.out")"
done
pass "spillwayd --validate accepts the hub.yaml of both renders"

# ---- the API server: server-side apply, dry run ------------------------------------------
NS="e2e-helm-$$-$RANDOM"
k create namespace "$NS" >/dev/null
k label namespace "$NS" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted >/dev/null
if ! k get crd "${crds[0]}" >/dev/null 2>&1 && ! k get crd "${crds[1]}" >/dev/null 2>&1; then
    ours_crds=1
    k create -f "$here/monitoring-crds.yaml" >/dev/null || fail "creating the test's CRDs"
    k wait --for=condition=Established "crd/${crds[0]}" "crd/${crds[1]}" --timeout=60s >/dev/null ||
        fail "the test's CRDs are not Established"
    sleep 2 # discovery
fi
k create serviceaccount spillway-hub -n "$NS" >/dev/null
had_crb=0
k get clusterrolebinding spillway-hub-local-member >/dev/null 2>&1 && had_crb=1
for r in default full; do
    args=()
    [ $r = full ] && args=(-f "$values")
    "$HELM" template spillway "$chart" "${args[@]}" --set namespace.name="$NS" >"$tmp/apply-$r.yaml" 2>"$tmp/err" ||
        fail "helm template ($r, namespace $NS): $(cat "$tmp/err")"
    want=$("$PY" "$here/manifests.py" count "$tmp/apply-$r.yaml")
    k apply --server-side --dry-run=server --validate=strict --field-manager=spillway-e2e --force-conflicts \
        -f "$tmp/apply-$r.yaml" >"$tmp/applied" 2>"$tmp/err" || fail "$r: server dry run: $(cat "$tmp/err")"
    [ ! -s "$tmp/err" ] || fail "$r: the server warned: $(cat "$tmp/err")"
    got=$(grep -c 'serverside-applied (server dry run)$' "$tmp/applied" || true)
    [ "$got" = "$want" ] || fail "$r: $got of $want objects applied: $(cat "$tmp/applied")"
    np=$("$PY" "$here/manifests.py" pods "$tmp/apply-$r.yaml" "$NS" "$tmp/pods.yaml")
    [ "$np" = 1 ] || fail "$r: expected 1 pod template, got $np"
    k create --dry-run=server -f "$tmp/pods.yaml" >"$tmp/pods.out" 2>&1 || fail "$r: pod refused: $(cat "$tmp/pods.out")"
    grep -qi warning "$tmp/pods.out" && fail "$r: Pod Security warned: $(cat "$tmp/pods.out")"
    pass "$r: $got of $want objects accepted by onprem's API server (server-side apply, dry run, strict), the hub's pod by Pod Security 'restricted'"
done
[ -z "$(k get deployments,services,configmaps,servicemonitors,prometheusrules -n "$NS" -o name 2>/dev/null | grep -v kube-root-ca)" ] ||
    fail "a dry run stored something in $NS"
[ $had_crb = 1 ] || ! k get clusterrolebinding spillway-hub-local-member >/dev/null 2>&1 ||
    fail "a dry run stored the ClusterRoleBinding spillway-hub-local-member"
pass "nothing stored"
