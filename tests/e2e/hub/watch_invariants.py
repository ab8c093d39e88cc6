#!/usr/bin/env python3
"""watch_invariants.py - the hub tests' independent oracle (Jepsen's habit).

Samples the pods and Jobs of one namespace on the lab's three clusters with
kubectl, about twice a second, until SIGTERM, and checks what the hub
promises, from the outside:
  - no burstable Job has active pods (bound to a node that exists, not
    terminal) in two clusters at once;
  - no burstable Job completes in more than one place (one Job object with
    succeeded pods per origin).
  - a Job's outcome is committed once: once its origin says it succeeded
    or failed (spillway.io/state), that state and the attempt it names
    (spillway.io/mirror) never change.
Every breach is printed as a line starting with VIOLATION; the last line
is "samples N origins M completions K terminal T" (T: origins whose state
is succeeded or failed).

With --lossy CLUSTER (a cluster the test cuts off, whose Jobs the hub
places again: at least once), pods on that cluster do not count toward the
first rule: a mirror left running there while it was unreachable is the
documented cost of requeue (docs/dr.md). The second rule still holds.
With --lossy-file FILE the clusters named in FILE (one a line) are lossy
while they are named there: the chaos suite names a cluster for the time
it cuts it off, until the hub has deleted its stale mirrors. Under a
partition the cut-off cluster still runs, so a stale mirror there may
even complete: that is compute run twice, which requeue documents, and
while the cluster is named in the file it does not count toward the
second rule either; the third rule (one committed outcome) holds
everywhere.

usage: watch_invariants.py KUBECTL KUBECONFIG_DIR NAMESPACE [--lossy CLUSTER]
       [--lossy-file FILE]
"""
import json
import signal
import subprocess
import sys
import time

CLUSTERS = ["onprem", "cloud-spot", "cloud-ondemand"]
stop = False


def on_term(*_):
    global stop
    stop = True


def sample(kubectl, kdir, ns, cluster):
    out = subprocess.run(
        [kubectl, "--kubeconfig", f"{kdir}/{cluster}-cert.kubeconfig", "--request-timeout=10s",
         "get", "pods,jobs,nodes", "-n", ns, "-o", "json"],
        capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)["items"]


def main():
    kubectl, kdir, ns = sys.argv[1:4]
    always_lossy = set()
    lossy_file = None
    rest = sys.argv[4:]
    while rest:
        if rest[0] == "--lossy" and len(rest) > 1:
            always_lossy.add(rest[1])
            rest = rest[2:]
        elif rest[0] == "--lossy-file" and len(rest) > 1:
            lossy_file = rest[1]
            rest = rest[2:]
        else:
            sys.exit(f"watch_invariants.py: unknown argument {rest[0]!r}")
    signal.signal(signal.SIGTERM, on_term)
    samples = 0
    completions = {}  # origin uid -> set of (cluster, job name)
    origins = set()
    outcome = {}  # origin uid -> (state, mirror) once terminal
    while not stop:
        cut = set()  # named in the lossy file now
        if lossy_file:
            try:
                with open(lossy_file) as f:
                    cut = {ln.strip() for ln in f if ln.strip()}
            except OSError:
                pass
        lossy = always_lossy | cut
        active = {}  # origin uid -> set of clusters
        uid_of = {}  # (cluster, job name) -> origin uid, for origin Jobs
        seen = {}
        for c in CLUSTERS:
            items = sample(kubectl, kdir, ns, c)
            if items is None:
                continue
            seen[c] = items
            for o in items:
                md = o["metadata"]
                if o["kind"] == "Job":
                    ann = md.get("annotations") or {}
                    labels = md.get("labels") or {}
                    if "spillway.io/burst" in ann and "spillway.io/origin-uid" not in labels:
                        uid_of[(c, md["name"])] = md["uid"]
                        origins.add(md["uid"])
                        state = ann.get("spillway.io/state", "")
                        if state in ("succeeded", "failed"):
                            now = (state, ann.get("spillway.io/mirror", ""))
                            before = outcome.setdefault(md["uid"], now)
                            if before != now:
                                print(f"VIOLATION job {md['uid']} ({c}/{ns}/{md['name']}) committed "
                                      f"{before} then {now}", flush=True)
        for c, items in seen.items():
            nodes = {o["metadata"]["name"] for o in items if o["kind"] == "Node"}
            for o in items:
                md = o["metadata"]
                if o["kind"] == "Node":
                    continue
                labels = md.get("labels") or {}
                if o["kind"] == "Job":
                    origin = labels.get("spillway.io/origin-uid") or uid_of.get((c, md["name"]))
                    if origin and (o.get("status") or {}).get("succeeded", 0) > 0 and \
                            "spillway.io/origin-uid" in labels and c not in cut:
                        completions.setdefault(origin, set()).add((c, md["name"]))
                    continue
                origin = labels.get("spillway.io/origin-uid")
                if origin is None:
                    job = labels.get("batch.kubernetes.io/job-name") or labels.get("job-name")
                    origin = uid_of.get((c, job))
                if origin is None:
                    continue
                phase = (o.get("status") or {}).get("phase")
                # A pod bound to a node that no longer exists runs nowhere.
                if c in lossy:
                    continue
                if o["spec"].get("nodeName") in nodes and phase in ("Pending", "Running"):
                    active.setdefault(origin, set()).add(c)
        for origin, cs in active.items():
            if len(cs) > 1:
                print(f"VIOLATION job {origin} has active pods in {sorted(cs)} at {time.time():.1f}",
                      flush=True)
        for origin, where in completions.items():
            if len(where) > 1:
                print(f"VIOLATION job {origin} completed in {sorted(where)}", flush=True)
        samples += 1
        time.sleep(0.3)
    n = sum(len(w) for w in completions.values())
    print(f"samples {samples} origins {len(origins)} completions {n} terminal {len(outcome)}", flush=True)


if __name__ == "__main__":
    main()
