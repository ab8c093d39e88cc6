#!/usr/bin/env python3
"""chart_compare.py - the Helm chart's objects against Kustomize's
(tests/e2e/deploy/helm.sh).

  same KUSTOMIZE.yaml CHART.yaml
      the same objects: compared as data, sorted by kind, namespace and name,
      after normalizing what differs by design: Helm's own metadata
      (app.kubernetes.io/managed-by, helm.sh/chart, helm.sh/resource-policy),
      the hash suffix of spillway-hub-config (both are Kustomize's hash of
      the content; helm.sh checks the chart's apart), and hub.yaml compared
      parsed, not as text (comments, key order).
  full KUSTOMIZE.yaml CHART.yaml
      CHART.yaml rendered with helm-values.yaml (Sentinel, TLS, monitoring,
      local member, grants) is KUSTOMIZE.yaml (the base with the monitoring
      and local-member components) with exactly the changes those values
      ask for, written out below.
  hubyaml CHART.yaml OUT
      the ConfigMap's hub.yaml, as text, to OUT; prints the ConfigMap's name.
"""
import copy
import re
import sys

import yaml

HASHED = re.compile(r"^spillway-hub-config-[a-z0-9]{10}$")
HELM_LABELS = ("app.kubernetes.io/managed-by", "helm.sh/chart")
HELM_ANNOTATIONS = ("helm.sh/resource-policy",)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            return [o for o in yaml.safe_load_all(f) if o]
    except yaml.YAMLError as e:
        fail("%s: not YAML: %s" % (path, e))


def key(o):
    m = o.get("metadata", {})
    return (o.get("kind", ""), m.get("namespace", ""), m.get("name", ""))


def normalize(objs, path):
    out = {}
    for o in copy.deepcopy(objs):
        m = o.setdefault("metadata", {})
        for field, names in (("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)):
            d = m.get(field) or {}
            for n in names:
                d.pop(n, None)
            if field in m and not d:
                del m[field]
        if o.get("kind") == "ConfigMap" and HASHED.match(m.get("name", "")):
            m["name"] = "spillway-hub-config-HASH"
            o["data"]["hub.yaml"] = yaml.safe_load(o["data"]["hub.yaml"])
        if o.get("kind") == "Deployment":
            for v in o["spec"]["template"]["spec"].get("volumes", []):
                if "configMap" in v and HASHED.match(v["configMap"]["name"]):
                    v["configMap"]["name"] = "spillway-hub-config-HASH"
        k = key(o)
        if k in out:
            fail("%s: %s %s/%s twice" % (path, *k))
        out[k] = o
    return out


def diff(a, b, where, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append("%s.%s: only in the chart: %r" % (where, k, b[k]))
            elif k not in b:
                out.append("%s.%s: only in Kustomize's: %r" % (where, k, a[k]))
            else:
                diff(a[k], b[k], "%s.%s" % (where, k), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (where, i), out)
    elif a != b or type(a) is not type(b):
        out.append("%s: Kustomize's %r, the chart's %r" % (where, a, b))


def compare(kobjs, cobjs, kpath, cpath):
    k = normalize(kobjs, kpath)
    c = normalize(cobjs, cpath)
    problems = []
    for name in sorted(set(k) - set(c)):
        problems.append("%s %s/%s: rendered by Kustomize, not by the chart" % name)
    for name in sorted(set(c) - set(k)):
        problems.append("%s %s/%s: rendered by the chart, not by Kustomize" % name)
    for name in sorted(set(k) & set(c)):
        d = []
        diff(k[name], c[name], "", d)
        problems += ["%s %s/%s: %s" % (*name, x) for x in d]
    if problems:
        fail("%s and %s differ:\n  %s" % (kpath, cpath, "\n  ".join(problems)))
    return len(k)


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    if len(found) != 1:
        fail("expected one %s%s, found %d" % (kind, " " + name if name else "", len(found)))
    return found[0]


def full(kpath, cpath):
    """What helm-values.yaml asks for, applied to Kustomize's objects."""
    objs = load(kpath)
    dep = one(objs, "Deployment", "spillway-hub")
    spec = dep["spec"]["template"]["spec"]
    dep["spec"]["replicas"] = 3
    init, hub = spec["initContainers"][0], spec["containers"][0]
    for c in (init, hub):
        c["image"] = "registry.example/spillway:0.1.1"
    init["command"].append("/secrets/sentinel/sentinel-password")
    init["volumeMounts"].insert(2, {"name": "sentinel-password", "mountPath": "/secrets/sentinel", "readOnly": True})
    hub["volumeMounts"].insert(2, {"name": "redis-tls", "mountPath": "/etc/spillway-redis-tls", "readOnly": True})
    vols = spec["volumes"]
    rp = [v for v in vols if v["name"] == "redis-password"][0]
    rp["secret"]["secretName"] = "hub-redis"
    rp["secret"]["items"] = [{"key": "redis-password", "path": "password"}]
    at = vols.index(rp) + 1
    vols[at:at] = [
        {"name": "sentinel-password", "secret": {"secretName": "hub-sentinel", "defaultMode": 0o440,
                                                 "items": [{"key": "password", "path": "sentinel-password"}]}},
        {"name": "redis-tls", "secret": {"secretName": "hub-redis-tls", "defaultMode": 0o440,
                                         "items": [{"key": "ca.crt", "path": "ca.crt"},
                                                   {"key": "tls.crt", "path": "tls.crt"},
                                                   {"key": "tls.key", "path": "tls.key"}]}},
    ]
    np = one(objs, "NetworkPolicy", "spillway-hub")
    np["spec"]["egress"][1]["ports"].append({"protocol": "TCP", "port": 26380})
    for kind in ("ServiceMonitor", "PrometheusRule"):
        one(objs, kind)["metadata"]["labels"]["release"] = "prometheus"
    cm = one(objs, "ConfigMap")
    hubyaml = yaml.safe_load(cm["data"]["hub.yaml"])
    t = "/etc/spillway-redis-tls/"
    hubyaml["redis"] = {
        "url": "rediss+sentinel://spillway:@sentinel-0.redis:26379,sentinel-1.redis:26379,sentinel-2.redis:26380"
               "/hub-redis/0?tls_ca_file=%sca.crt&tls_cert_file=%stls.crt&tls_key_file=%stls.key" % (t, t, t),
        "passwordFile": "/run/spillway/password",
        "sentinelPasswordFile": "/run/spillway/sentinel-password",
    }
    hubyaml["logLevel"] = "debug"
    hubyaml["tenancy"] = {"grants": [
        {"cluster": "onprem", "namespace": "team-cv", "teams": ["cv"],
         "priorities": ["best-effort", "development", "training", "production"],
         "read": ["s3://datasets/team-cv/", "s3://models/"], "write": ["s3://checkpoints/team-cv/"]},
        {"cluster": "onprem", "namespace": "team-nlp", "teams": ["nlp", "research"], "useExistingNamespace": True},
    ]}
    cm["data"]["hub.yaml"] = yaml.safe_dump(hubyaml)
    return compare(objs, load(cpath), kpath + " (with helm-values.yaml's changes)", cpath)


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "same" and len(sys.argv) == 4:
        print(compare(load(sys.argv[2]), load(sys.argv[3]), sys.argv[2], sys.argv[3]))
    elif cmd == "full" and len(sys.argv) == 4:
        print(full(sys.argv[2], sys.argv[3]))
    elif cmd == "hubyaml" and len(sys.argv) == 4:
        cm = one(load(sys.argv[2]), "ConfigMap")
        with open(sys.argv[3], "w") as f:
            f.write(cm["data"]["hub.yaml"])
        print(cm["metadata"]["name"])
    else:
        fail("usage: chart_compare.py same|full KUSTOMIZE.yaml CHART.yaml | hubyaml CHART.yaml OUT")


if __name__ == "__main__":
    main()
