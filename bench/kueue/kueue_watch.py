#!/usr/bin/env python3
"""kueue_watch.py - the Kueue benchmark's outside observer of admissions.

Watches the Workloads of one namespace on the named clusters (one
`kubectl get --watch -o json` each) and prints, for each Workload, the
moment this process first saw it with the condition Admitted=True:

    admitted CLUSTER WORKLOAD OWNER_JOB UNIX_MS

and, on a cluster named origin:CLUSTER (the Jobs' own), when each Workload
was first seen at all, pending for quota (QuotaReserved=False with
Kueue's "insufficient unused quota") and with quota reserved:

    created|pending|reserved CLUSTER WORKLOAD - UNIX_MS

OWNER_JOB is the Job the Workload's ownerReferences name ("-" for none: a
MultiKueue worker's copy is created before its Job). A line "watching
CLUSTER" is printed once each watch has listed, so that the caller can
start its load after it. The time is taken when the event arrives here,
not from the condition's lastTransitionTime (whole seconds), so that a
sub-second latency can be measured; the watch's own delay is in it, the
same for both sides of the benchmark. Runs until SIGTERM.

usage: kueue_watch.py KUBECTL KUBECONFIG_DIR NAMESPACE [origin:]CLUSTER...
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

lock = threading.Lock()
procs = []


def say(line):
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def states(obj):
    """The states of a Workload this watch reports, by its conditions."""
    out = set()
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "Admitted" and c.get("status") == "True":
            out.add("admitted")
        if c.get("type") == "QuotaReserved":
            if c.get("status") == "True":
                out.add("reserved")
            elif c.get("reason") == "Pending" and "insufficient unused quota" in c.get("message", ""):
                out.add("pending")
    return out


def watch(kubectl, kdir, ns, cluster, origin):
    # The list that starts the watch is printed as its items one by one;
    # the namespace is new, so "listed" is the first moment the stream is
    # open, told by kubectl's first byte or, with nothing to list, a short
    # wait after the process started.
    p = subprocess.Popen(
        [kubectl, "--kubeconfig", f"{kdir}/{cluster}-cert.kubeconfig", "get", "workloads.kueue.x-k8s.io",
         "-n", ns, "--watch", "-o", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    procs.append(p)
    seen = set()
    dec = json.JSONDecoder()
    buf = ""
    started = time.time()
    told = False
    fd = p.stdout.fileno()
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            chunk = None
        if chunk is None:
            if not told and time.time() - started > 1.5:
                say(f"watching {cluster}")
                told = True
            time.sleep(0.01)
            continue
        if not chunk:
            say(f"ended {cluster}")
            return
        now = int(time.time() * 1000)
        if not told:
            say(f"watching {cluster}")
            told = True
        buf += chunk.decode()
        while True:
            buf = buf.lstrip()
            if not buf:
                break
            try:
                obj, end = dec.raw_decode(buf)
            except ValueError:
                break
            buf = buf[end:]
            name = obj.get("metadata", {}).get("name", "")
            if origin:
                for state in ["created"] + sorted(states(obj) & {"pending", "reserved"}):
                    if (state, name) not in seen:
                        seen.add((state, name))
                        say(f"{state} {cluster} {name} - {now}")
                continue
            if name in seen or "admitted" not in states(obj):
                continue
            seen.add(name)
            owners = [o["name"] for o in obj["metadata"].get("ownerReferences", []) or [] if o.get("kind") == "Job"]
            say(f"admitted {cluster} {name} {owners[0] if owners else '-'} {now}")


def main():
    kubectl, kdir, ns = sys.argv[1:4]
    def stop(*_):
        for p in procs:
            p.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    for c in sys.argv[4:]:
        origin = c.startswith("origin:")
        c = c.removeprefix("origin:")
        threading.Thread(target=watch, args=(kubectl, kdir, ns, c, origin), daemon=True).start()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
