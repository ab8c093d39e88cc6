#!/usr/bin/env python3
"""audit_check.py - what spillway's identities did on the lab's API servers,
read from their audit logs, against the member ClusterRole.

  audit_check.py ROLE_YAML SINCE USERS CLUSTER=AUDIT_LOG...

ROLE_YAML is deploy/rbac/member-clusterrole.yaml; SINCE an RFC 3339 time
(events received before it are ignored); USERS a comma-separated list of
the ServiceAccount user names the hub and spillctl used. For every event of
those users it checks:

  - no request was refused by RBAC (decision "forbid");
  - every request to a resource was allowed by the ClusterRole
    spillway-member (the audit's authorization reason names the role), except
    SelfSubjectAccessReview create, which `spillctl cluster add` makes and
    Kubernetes' system:basic-user grants;
  - requests to non-resource URLs are only GET /version and /readyz
    (system:public-info-viewer);
  - the set of (group, resource, subresource, verb) used, over all clusters,
    equals the set the role grants: nothing unused, nothing missing;
  - every pod create was a server-side dry run (dryRun=All): the role grants
    pods create for home's admission to judge a burst's pods
    (controller/hub/admission.c), and RBAC cannot limit it to dry runs.

Prints one line per permission with the clusters that used it and the count
of requests; exits 1 naming each difference.
"""
import collections
import json
import sys

import yaml

BASIC = {("authorization.k8s.io", "selfsubjectaccessreviews", "", "create")}
NONRESOURCE = {("get", "/version"), ("get", "/readyz")}


def role_perms(path):
    perms = set()
    with open(path) as f:
        role = yaml.safe_load(f)
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                res, _, sub = r.partition("/")
                for v in rule["verbs"]:
                    perms.add((g, res, sub, v))
    return perms


def name(p):
    g, r, s, v = p
    return "%s %s%s%s" % (v, r, "/" + s if s else "", "." + g if g else "")


def main():
    role_path, since, users = sys.argv[1], sys.argv[2], set(sys.argv[3].split(","))
    granted = role_perms(role_path)
    used = collections.defaultdict(collections.Counter)
    problems = []
    events = 0
    seen = set()
    for arg in sys.argv[4:]:
        cluster, _, log = arg.partition("=")
        with open(log) as f:
            for line in f:
                e = json.loads(line)
                if e["user"].get("username") not in users:
                    continue
                if e["requestReceivedTimestamp"] < since:
                    continue
                # A watch is logged when it starts and again when it ends
                # (if it has ended): count each request once.
                if e["auditID"] in seen:
                    continue
                seen.add(e["auditID"])
                events += 1
                ann = e.get("annotations", {})
                decision = ann.get("authorization.k8s.io/decision")
                reason = ann.get("authorization.k8s.io/reason", "")
                code = e.get("responseStatus", {}).get("code")
                o = e.get("objectRef")
                if decision != "allow":
                    problems.append("%s: %s %s refused (%s, HTTP %s) for %s" % (
                        cluster, e["verb"], e["requestURI"], decision, code, e["user"]["username"]))
                    continue
                if o is None:
                    path = e["requestURI"].split("?")[0]
                    if (e["verb"], path) not in NONRESOURCE:
                        problems.append("%s: unexpected non-resource request %s %s (%s)" % (
                            cluster, e["verb"], path, reason))
                    continue
                p = (o.get("apiGroup", ""), o["resource"], o.get("subresource", ""), e["verb"])
                if p in BASIC:
                    continue
                if 'ClusterRole "spillway-member"' not in reason:
                    problems.append("%s: %s allowed by something else than spillway-member: %s" % (
                        cluster, name(p), reason))
                    continue
                if p == ("", "pods", "", "create"):
                    query = e["requestURI"].partition("?")[2].split("&")
                    if "dryRun=All" not in query:
                        problems.append("%s: a pod created, not as a dry run: %s" % (
                            cluster, e["requestURI"]))
                used[p][cluster] += 1
    for p in sorted(granted, key=name):
        where = ", ".join("%s %d" % (c, n) for c, n in sorted(used[p].items())) if p in used else "-"
        print("%-32s %s" % (name(p), where))
    for p in sorted(granted - set(used), key=name):
        problems.append("granted but never used: %s" % name(p))
    for p in sorted(set(used) - granted, key=name):
        problems.append("used but not granted: %s" % name(p))
    print("audit events read: %d; permissions granted %d, used %d" % (events, len(granted), len(used)))
    if events == 0:
        problems.append("no audit event of %s since %s" % (sorted(users), since))
    for m in problems:
        print("PROBLEM: " + m)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
