#!/usr/bin/env python3
"""derive-workloads.py - two workloads derived from the Alibaba GPU 2023 pod
list, for the evaluation of docs/simulator.md on what a hub meets beside the
default list. Both keep the pod list's format, so the simulator reads them as
it reads the original; both are deterministic (no random draw: choices come
from a hash of the pod's name).

  shared.csv     every GPU pod asks for a share of one GPU. Pods that already
                 did keep their share; a pod with whole GPUs becomes a one-GPU
                 pod whose share (gpu_milli) is one of the fractional pods'
                 shares, picked by a hash of its name, so the shares follow
                 the trace's own distribution. Times, QoS and everything else
                 are kept.
  long-burst.csv the default list plus a burst of long multi-GPU pods: 120
                 copies of the list's multi-GPU pods that ran at least 4 hours
                 (cycled in name order), submitted one every 6 minutes over
                 12 hours from day 75 (the middle of the trace), each running
                 as long as the pod it copies.

usage: bench/placement/derive-workloads.py POD_LIST OUT_DIR

POD_LIST is openb_pod_list_default.csv (the header is checked); OUT_DIR is
created if needed. The output is data derived from the trace: keep it beside
the repository, like the trace, not in it.
"""
import csv
import hashlib
import os
import sys

HEADER = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
          "pod_phase", "creation_time", "deletion_time", "scheduled_time"]
BURST_PODS = 120
BURST_START_S = 75 * 86400
BURST_GAP_S = 360
LONG_S = 4 * 3600


def fail(msg):
    print(f"derive-workloads: {msg}", file=sys.stderr)
    sys.exit(1)


def name_hash(name):
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")


def as_int(row, field, path, line):
    try:
        return int(row[field]) if row[field] != "" else None
    except ValueError:
        fail(f'{path}:{line}: field "{field}": expected an integer, got "{row[field]}"')


def read(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        if r.fieldnames != HEADER:
            fail(f"{path}:1: expected the header {','.join(HEADER)}")
        rows = []
        for line, row in enumerate(r, start=2):
            for field in ("num_gpu", "gpu_milli", "scheduled_time", "deletion_time"):
                as_int(row, field, path, line)
            rows.append(row)
        return rows


def ran(row):
    """Whether the simulator replays the pod: GPUs, scheduled, ended after."""
    g, s, d = row["num_gpu"], row["scheduled_time"], row["deletion_time"]
    return g not in ("", "0") and s != "" and d != "" and int(d) > int(s)


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def shared(rows):
    shares = sorted(int(r["gpu_milli"]) for r in rows
                    if ran(r) and r["gpu_milli"] != "" and 0 < int(r["gpu_milli"]) < 1000)
    if not shares:
        fail("no pod with a fractional GPU to take shares from")
    out = []
    for r in rows:
        r = dict(r)
        if ran(r) and (r["gpu_milli"] == "" or int(r["gpu_milli"]) >= 1000 or int(r["num_gpu"]) > 1):
            r["num_gpu"] = "1"
            r["gpu_milli"] = str(shares[name_hash(r["name"]) % len(shares)])
        out.append(r)
    return out


def long_burst(rows):
    src = sorted((r for r in rows if ran(r) and int(r["num_gpu"]) > 1
                  and int(r["deletion_time"]) - int(r["scheduled_time"]) >= LONG_S),
                 key=lambda r: r["name"])
    if not src:
        fail("no multi-GPU pod ran 4 hours or more")
    out = list(rows)
    for k in range(BURST_PODS):
        r = dict(src[k % len(src)])
        run = int(r["deletion_time"]) - int(r["scheduled_time"])
        t = BURST_START_S + k * BURST_GAP_S
        r.update(name=f"burst-pod-{k:04d}", creation_time=str(t), scheduled_time=str(t),
                 deletion_time=str(t + run))
        out.append(r)
    return out


def main():
    if len(sys.argv) != 3:
        fail("usage: derive-workloads.py POD_LIST OUT_DIR")
    rows = read(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    for name, rs in (("shared.csv", shared(rows)), ("long-burst.csv", long_burst(rows))):
        write(os.path.join(sys.argv[2], name), rs)
        print(f"{os.path.join(sys.argv[2], name)}: {sum(ran(r) for r in rs)} GPU pods")


if __name__ == "__main__":
    main()
