#!/usr/bin/env bash
# End-to-end, read-only: deploy/ on the lab's onprem API server.
#  - renders deploy/hub/overlays/eval and deploy/hub/base with kubectl's
#    built-in Kustomize, and checks our own rules on them (manifests.py:
#    replicas, security context, probes on the config's port, Secrets only
#    from volumes, ingress from monitoring only, the alerts, and the member
#    ClusterRole read by `spillctl cluster add` from the file itself);
#  - spillwayd itself accepts the rendered hub config (not exit 2);
#  - applies every rendered object, the sealing-key and Redis-password Secrets made as
#    docs/deploy.md makes them, and the member ClusterRole with
#    `kubectl apply --server-side --dry-run=server --validate=strict`, in a
#    namespace of the test's own (restricted Pod Security), and counts them;
#  - creates a Pod from each Deployment's template with --dry-run=server, so
#    Pod Security admission (restricted) judges them; a privileged Pod is
#    refused there, proving the check can fail;
#  - ServiceMonitor and PrometheusRule against minimal CRDs written for this
#    test (monitoring-crds.yaml; not the Prometheus Operator's published
#    schemas), created and deleted here; a misspelt field is refused.
# Nothing is left in the lab: the dry runs store nothing; the namespace and
# the CRDs (when the lab did not have them) are deleted at the end.
source "$SW_SOURCE_DIR/tests/e2e/lab/common.sh"
here="$SW_SOURCE_DIR/tests/e2e/deploy"
# A python3 with PyYAML: the one on PATH, else Debian's (python3-yaml).
PY=python3
"$PY" -c "import yaml" 2>/dev/null || PY=/usr/bin/python3
tmp=$(mktemp -d)
k() { kc onprem --cache-dir="$tmp/cache" "$@"; }
crds=(servicemonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com)
ours_crds=0
cleanup() {
    [ -n "${NS:-}" ] && k delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
    [ "$ours_crds" = 1 ] && k delete crd -l spillway.io/e2e=deploy-dry-run --wait=false >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# ---- render and check our rules ------------------------------------------------
"$SW_LAB_KUBECTL" kustomize "$SW_SOURCE_DIR/deploy/hub/overlays/eval" >"$tmp/eval.yaml" || fail "kustomize eval"
"$SW_LAB_KUBECTL" kustomize "$SW_SOURCE_DIR/deploy/hub/base" >"$tmp/base.yaml" || fail "kustomize base"
n_eval=$("$PY" "$here/manifests.py" count "$tmp/eval.yaml")
n_base=$("$PY" "$here/manifests.py" count "$tmp/base.yaml")
[ "$n_eval" -ge 12 ] || fail "the eval overlay renders $n_eval objects, expected 12 or more"
"$PY" "$here/manifests.py" check "$tmp/eval.yaml" "$tmp/base.yaml" "$SW_SOURCE_DIR/controller/cli/cluster.c" \
    "$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml" || fail "manifests.py check"
pass "kustomize renders $n_eval objects (eval) and $n_base (base); our rules hold"

# ---- the management cluster as a member: components/local-member --------------
mkdir "$tmp/lm"
cat >"$tmp/lm/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [$(realpath --relative-to="$tmp/lm" "$SW_SOURCE_DIR/deploy/hub/overlays/eval")]
components: [$(realpath --relative-to="$tmp/lm" "$SW_SOURCE_DIR/deploy/hub/components/local-member")]
YAML
"$SW_LAB_KUBECTL" kustomize "$tmp/lm" >"$tmp/lm.yaml" || fail "kustomize eval + local-member"
"$PY" "$here/manifests.py" local-member "$tmp/lm.yaml" "$tmp/eval.yaml" \
    "$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml" "$tmp/lm-rbac.yaml" || fail "manifests.py local-member"
pass "eval with components/local-member: the member ClusterRole bound to the hub's ServiceAccount, its token mounted, nothing else"

# ---- spillwayd accepts the rendered config ---------------------------------------
"$PY" - "$tmp/eval.yaml" "$tmp/hub.yaml" "$tmp" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
cm = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("spillway-hub-config")][0]
text = cm["data"]["hub.yaml"].replace("/run/spillway", sys.argv[3] + "/run")
# A Redis nobody listens on, and a free local port: this hub must not join the lab's.
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
text = text.replace("redis://spillway-redis:6379/0", "redis://127.0.0.1:1/0").replace("0.0.0.0:9464", "127.0.0.1:%d" % port)
open(sys.argv[2], "w").write(text)
PY
mkdir -m 700 "$tmp/run"
head -c 32 /dev/urandom | base64 >"$tmp/run/secret.key"
echo pw >"$tmp/run/password"
chmod 400 "$tmp/run/secret.key" "$tmp/run/password"
rc=0
timeout 3 "$SW_BUILD_DIR/controller/spillwayd" --config "$tmp/hub.yaml" >"$tmp/hub.out" 2>&1 || rc=$?
[ $rc != 2 ] || fail "spillwayd refuses the rendered config: $(cat "$tmp/hub.out")"
grep -q 'field "' "$tmp/hub.out" && fail "spillwayd names a config field: $(cat "$tmp/hub.out")"
pass "spillwayd accepts the rendered hub.yaml (exit $rc with no Redis to reach, not 2)"

# ---- a namespace of our own, restricted --------------------------------------------
NS="e2e-deploy-$$-$RANDOM"
k create namespace "$NS" >/dev/null
k label namespace "$NS" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/warn=restricted >/dev/null

# ---- the monitoring CRDs, ours unless the lab has the operator's -------------------
if ! k get crd "${crds[0]}" >/dev/null 2>&1 && ! k get crd "${crds[1]}" >/dev/null 2>&1; then
    ours_crds=1
    k create -f "$here/monitoring-crds.yaml" >/dev/null || fail "creating the test's CRDs"
    k wait --for=condition=Established "crd/${crds[0]}" "crd/${crds[1]}" --timeout=60s >/dev/null ||
        fail "the test's CRDs are not Established"
    sleep 2 # discovery
fi

# ---- every object, server-side dry run ----------------------------------------------
"$PY" "$here/manifests.py" retarget "$tmp/eval.yaml" "$NS" "$tmp/apply.yaml"
# The sealing key's and the Redis password's Secrets, made as docs/deploy.md
# makes them.
head -c 32 /dev/urandom | base64 >"$tmp/secret.key"
{
    echo "---"
    k create secret generic spillway-secret-key -n "$NS" --from-file=secret.key="$tmp/secret.key" --dry-run=client -o yaml
    echo "---"
    k create secret generic spillway-redis -n "$NS" --from-literal=password="$(openssl rand -base64 24)" --dry-run=client -o yaml
    echo "---"
    cat "$SW_SOURCE_DIR/deploy/rbac/member-clusterrole.yaml"
} >>"$tmp/apply.yaml"
want=$("$PY" "$here/manifests.py" count "$tmp/apply.yaml")
[ "$want" = $((n_eval + 3)) ] || fail "expected $((n_eval + 3)) objects to apply, have $want"
k apply --server-side --dry-run=server --validate=strict --field-manager=spillway-e2e --force-conflicts \
    -f "$tmp/apply.yaml" >"$tmp/applied" 2>"$tmp/err" || fail "server dry run: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "the server warned: $(cat "$tmp/err")"
got=$(grep -c 'serverside-applied (server dry run)$' "$tmp/applied" || true)
[ "$got" = "$want" ] || fail "$got of $want objects applied: $(cat "$tmp/applied")"
for kind in namespace/ serviceaccount/ configmap/ secret/spillway-redis secret/spillway-secret-key \
    deployment.apps/spillway-hub deployment.apps/spillway-redis poddisruptionbudget.policy/ \
    service/spillway-hub-metrics service/spillway-redis networkpolicy.networking.k8s.io/spillway-hub \
    servicemonitor.monitoring.coreos.com/ prometheusrule.monitoring.coreos.com/ clusterrole.rbac.authorization.k8s.io/spillway-member; do
    grep -q "^$kind" "$tmp/applied" || fail "$kind not applied: $(cat "$tmp/applied")"
done
[ -z "$(k get deployments,services,configmaps,secrets,servicemonitors,prometheusrules -n "$NS" -o name 2>/dev/null | grep -v kube-root-ca)" ] ||
    fail "a dry run stored something in $NS"
pass "$got of $want objects accepted by the API server (server-side apply, dry run, strict validation); nothing stored"
k apply --server-side --dry-run=server --validate=strict --field-manager=spillway-e2e --force-conflicts \
    -f "$tmp/lm-rbac.yaml" >"$tmp/applied" 2>"$tmp/err" || fail "local-member server dry run: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] && [ "$(grep -c 'serverside-applied (server dry run)$' "$tmp/applied")" = 2 ] ||
    fail "local-member's RBAC: $(cat "$tmp/applied" "$tmp/err")"
pass "local-member's ClusterRole and ClusterRoleBinding accepted by the API server (dry run, strict)"

# ---- Pod Security admission on the pods the Deployments make ------------------------
# The ServiceAccount admission plugin looks the account up: this one is real,
# in the test's namespace, deleted with it.
k create serviceaccount spillway-hub -n "$NS" >/dev/null
np=$("$PY" "$here/manifests.py" pods "$tmp/eval.yaml" "$NS" "$tmp/pods.yaml")
[ "$np" = 2 ] || fail "expected 2 pod templates, got $np"
k create --dry-run=server -f "$tmp/pods.yaml" >"$tmp/pods.out" 2>&1 || fail "pods refused: $(cat "$tmp/pods.out")"
[ "$(grep -c 'created (server dry run)' "$tmp/pods.out")" = 2 ] || fail "$(cat "$tmp/pods.out")"
grep -qi warning "$tmp/pods.out" && fail "Pod Security warned: $(cat "$tmp/pods.out")"
sed 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/' "$tmp/pods.yaml" >"$tmp/bad-pods.yaml"
out=$(k create --dry-run=server -f "$tmp/bad-pods.yaml" 2>&1) && fail "an escalating pod was admitted: $out"
grep -q "violates PodSecurity" <<<"$out" || fail "not refused by Pod Security: $out"
pass "the hub's and Redis' pods pass Pod Security 'restricted' (a pod allowing escalation is refused)"

# ---- the test's CRDs catch a typo ------------------------------------------------------
"$PY" - "$tmp/apply.yaml" "$tmp/typo-sm.yaml" "$tmp/typo-rule.yaml" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
sm = [o for o in objs if o["kind"] == "ServiceMonitor"][0]
sm["spec"]["endpoints"][0]["prot"] = sm["spec"]["endpoints"][0].pop("port")
yaml.safe_dump(sm, open(sys.argv[2], "w"))
pr = [o for o in objs if o["kind"] == "PrometheusRule"][0]
pr["spec"]["groups"][0]["rules"][0]["exp"] = pr["spec"]["groups"][0]["rules"][0].pop("expr")
yaml.safe_dump(pr, open(sys.argv[3], "w"))
PY
for f in typo-sm typo-rule; do
    out=$(k apply --server-side --dry-run=server --validate=strict --field-manager=spillway-e2e -f "$tmp/$f.yaml" 2>&1) &&
        fail "$f was accepted: $out"
    echo "$out" | grep -Eq 'unknown field|field not declared in schema|Required value' || fail "$f refused for another reason: $out"
done
pass "a misspelt ServiceMonitor or PrometheusRule field is refused ($([ $ours_crds = 1 ] && echo "the test's minimal CRDs" || echo "the lab's CRDs"))"
