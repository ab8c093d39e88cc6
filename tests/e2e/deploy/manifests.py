#!/usr/bin/env python3
"""manifests.py - checks and rewrites of deploy/'s rendered manifests for
dry_run.sh (the API server's dry run checks the schemas; this checks what a
schema cannot: our own rules for the hub's objects).

  manifests.py check RENDERED_EVAL RENDERED_BASE CLUSTER_C MEMBER_ROLE
      asserts the hub's least-privilege and availability settings, that the
      base holds no Secret, that `spillctl cluster add` reads the
      permissions it checks from the member ClusterRole (built in); prints
      one line per check.
  manifests.py local-member RENDERED_LM RENDERED_EVAL MEMBER_ROLE OUT
      the eval overlay with components/local-member: exactly eval's objects
      plus the member ClusterRole (as in the file) and one binding of it to
      the hub's ServiceAccount in the hub's namespace; the hub's pods mount
      the token; writes those two RBAC objects to OUT
  manifests.py retarget RENDERED NS OUT      objects moved to namespace NS
  manifests.py pods RENDERED NS OUT          a Pod per Deployment template
  manifests.py count FILE                    the number of objects
"""
import re
import sys

import yaml


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def one(objs, kind, name):
    got = [o for o in objs if o["kind"] == kind and o["metadata"]["name"].startswith(name)]
    if len(got) != 1:
        fail("expected one %s %s, found %d" % (kind, name, len(got)))
    return got[0]


def check(eval_path, base_path, cluster_c, role_path):
    objs, base = load(eval_path), load(base_path)
    if any(o["kind"] == "Secret" for o in base):
        fail("the base renders a Secret: secrets are never in the base")
    if any(o["kind"] in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding") for o in objs):
        fail("the hub is granted RBAC on the management cluster; it uses none")
    print("ok: no Secret in the base, no Role or binding for the hub")

    hub = one(objs, "Deployment", "spillway-hub")
    spec = hub["spec"]
    if spec["replicas"] != 2:
        fail("hub replicas %r, expected 2" % spec["replicas"])
    pod = spec["template"]["spec"]
    if pod.get("automountServiceAccountToken") is not False:
        fail("the hub's pod mounts a ServiceAccount token it does not use")
    psc = pod["securityContext"]
    if psc.get("runAsNonRoot") is not True or psc.get("runAsUser", 0) == 0:
        fail("the hub's pod may run as root: %r" % psc)
    for c in pod["containers"] + pod.get("initContainers", []):
        sc = c.get("securityContext", {})
        want = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}
        for k, v in want.items():
            if sc.get(k) is not v:
                fail("container %s: securityContext.%s is %r, expected %r" % (c["name"], k, sc.get(k), v))
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            fail("container %s does not drop ALL capabilities" % c["name"])
        if "requests" not in c.get("resources", {}):
            fail("container %s has no resource requests" % c["name"])
    print("ok: hub Deployment: 2 replicas, non-root, read-only root, no escalation, drop ALL, requests")

    cm = one(objs, "ConfigMap", "spillway-hub-config")
    conf = yaml.safe_load(cm["data"]["hub.yaml"])
    host, port = conf["listen"].rsplit(":", 1)
    if conf["listen"] != "0.0.0.0:9464":
        fail("listen is %r, expected 0.0.0.0:9464" % conf["listen"])
    main = [c for c in pod["containers"] if c["name"] == "spillwayd"][0]
    ports = {p["name"]: p["containerPort"] for p in main["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        g = main[probe]["httpGet"]
        if g["path"] != path or ports.get(g["port"], g["port"]) != int(port):
            fail("%s is %r, expected %s on port %s" % (probe, g, path, port))
    mounts = {m["mountPath"] for m in main["volumeMounts"]}
    for f in (conf["secretKeyFile"], conf["redis"]["passwordFile"]):
        if not any(f.startswith(m + "/") for m in mounts):
            fail("%s is not on a volume of the hub's container" % f)
    if any(o["kind"] == "Secret" for o in objs):
        fail("the eval overlay renders a Secret: its password would be in git")
    if "password:" in cm["data"]["hub.yaml"].replace("passwordFile:", ""):
        fail("the hub's ConfigMap holds a password")
    vols = {v["name"]: v for v in pod["volumes"]}
    secret_names = {v["secret"]["secretName"] for v in vols.values() if "secret" in v}
    if secret_names != {"spillway-secret-key", "spillway-redis"}:
        fail("the hub's Secret volumes are %r" % secret_names)
    print("ok: listen %s, /healthz and /readyz on %s, key and password from Secret volumes, no Secret rendered, no password in the ConfigMap" % (conf["listen"], port))

    pdb = one(objs, "PodDisruptionBudget", "spillway-hub")
    if pdb["spec"].get("minAvailable") != 1:
        fail("PDB minAvailable %r" % pdb["spec"].get("minAvailable"))
    np = one(objs, "NetworkPolicy", "spillway-hub")
    ing = np["spec"]["ingress"]
    if len(ing) != 1 or ing[0]["ports"] != [{"protocol": "TCP", "port": 9464}] or \
            ing[0]["from"] != [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]:
        fail("the hub's ingress is not 9464 from the monitoring namespace only: %r" % ing)
    egress_ports = {p["port"] for r in np["spec"]["egress"] for p in r.get("ports", [])}
    for p, what in ((6379, "Redis"), (26379, "Redis Sentinel"), (443, "HTTPS"), (6443, "API servers")):
        if p not in egress_ports:
            fail("the hub's egress does not allow %s (%d): %r" % (what, p, np["spec"]["egress"]))
    print("ok: PDB minAvailable 1; ingress only 9464 from the monitoring namespace; egress to 6379, 26379, 443, 6443")

    # The Prometheus Operator's objects come from components/monitoring,
    # which eval uses and the base does not.
    for kind in ("ServiceMonitor", "PrometheusRule"):
        if any(o["kind"] == kind for o in base):
            fail("the base renders a %s: it belongs to components/monitoring" % kind)
    one(objs, "ServiceMonitor", "spillway-hub")
    print("ok: ServiceMonitor and PrometheusRule only through components/monitoring")

    rules = one(objs, "PrometheusRule", "spillway")
    alerts = {r["alert"]: r["expr"] for g in rules["spec"]["groups"] for r in g["rules"] if "alert" in r}
    want = {
        "SpillwayNoLeader": "sum(spillway_leader) < 1",
        "SpillwayMemberLost": "spillway_member_lost",
        "SpillwayMemberNotReady": "spillway_member_ready",
        "SpillwayDispatchStuck": "spillway_dispatches_total",
        "SpillwayCloudSpendOverBudget": "spillway_cloud_spend_dollars_total",
        "SpillwayReplicationRPOOverObjective": "spillway_replication_rpo_seconds",
    }
    for a, m in want.items():
        if a not in alerts or m not in str(alerts[a]):
            fail("alert %s missing or not on %s" % (a, m))
    print("ok: alerts %s" % ", ".join(sorted(want)))

    # `spillctl cluster add` checks the member ClusterRole's permissions read
    # from the file itself, built into spillctl (cmake/embed.cmake,
    # clusters/rbac.h), not a list of its own.
    with open(cluster_c) as f:
        src = f.read()
    if "perms[] = {" in src or "sw_rbac_parse(sw_member_role_yaml" not in src:
        fail("cluster add does not read its permissions from the built-in member ClusterRole")
    role = load(role_path)[0]
    n = sum(len(r["apiGroups"]) * len(r["resources"]) * len(r["verbs"]) for r in role["rules"])
    print("ok: cluster add checks the member ClusterRole's %d permissions, read from the file" % n)


def retarget(path, ns, out):
    objs = load(path)
    for o in objs:
        if o["kind"] == "Namespace":
            o["metadata"]["name"] = ns
        elif "namespace" in o["metadata"]:
            o["metadata"]["namespace"] = ns
    with open(out, "w") as f:
        yaml.safe_dump_all(objs, f)


def local_member(lm_path, eval_path, role_path, out):
    lm, ev = load(lm_path), load(eval_path)
    key = lambda o: (o["kind"], o["metadata"]["name"])
    extra = sorted(set(map(key, lm)) - set(map(key, ev)))
    if extra != [("ClusterRole", "spillway-member"), ("ClusterRoleBinding", "spillway-hub-local-member")]:
        fail("local-member adds %r, expected the member ClusterRole and its binding" % extra)
    if set(map(key, ev)) - set(map(key, lm)):
        fail("local-member drops objects of the eval overlay")
    role = one(lm, "ClusterRole", "spillway-member")
    with open(role_path) as f:
        want = yaml.safe_load(f)
    if role["rules"] != want["rules"]:
        fail("local-member's ClusterRole differs from %s" % role_path)
    b = one(lm, "ClusterRoleBinding", "spillway-hub-local-member")
    hub = one(lm, "Deployment", "spillway-hub")
    sa, ns = hub["spec"]["template"]["spec"]["serviceAccountName"], hub["metadata"]["namespace"]
    if b["roleRef"] != {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "spillway-member"}:
        fail("local-member binds %r" % b["roleRef"])
    if b["subjects"] != [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]:
        fail("local-member binds %r, not the hub's ServiceAccount %s/%s" % (b["subjects"], ns, sa))
    if hub["spec"]["template"]["spec"].get("automountServiceAccountToken") is not True:
        fail("local-member: the hub's pods do not mount the ServiceAccount token")
    for o in ev:
        if o["kind"] == "Deployment" and o["metadata"]["name"] != "spillway-hub":
            other = one(lm, "Deployment", o["metadata"]["name"])
            if other["spec"]["template"]["spec"].get("automountServiceAccountToken") is not False:
                fail("local-member mounts a token into %s" % o["metadata"]["name"])
    with open(out, "w") as f:
        yaml.safe_dump_all([role, b], f)
    print("ok: local-member adds only spillway-member bound to %s/%s, and mounts its token in the hub only" % (ns, sa))


def pods(path, ns, out):
    objs = load(path)
    res = []
    for o in objs:
        if o["kind"] == "Deployment":
            t = o["spec"]["template"]
            res.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": o["metadata"]["name"] + "-template", "namespace": ns,
                                     "labels": t["metadata"].get("labels", {})},
                        "spec": t["spec"]})
    with open(out, "w") as f:
        yaml.safe_dump_all(res, f)
    print(len(res))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "check":
        check(*sys.argv[2:6])
    elif cmd == "local-member":
        local_member(*sys.argv[2:6])
    elif cmd == "retarget":
        retarget(*sys.argv[2:5])
    elif cmd == "pods":
        pods(*sys.argv[2:5])
    elif cmd == "count":
        print(len(load(sys.argv[2])))
    else:
        fail("unknown command " + cmd)
