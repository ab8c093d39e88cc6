#!/usr/bin/env python3
"""docs_check.py - the docs name only what the code has.

  docs_check.py [SOURCE_DIR]

Reads the Markdown of the repository (README.md, docs/, deploy/, and every
other tracked *.md) and the code (C sources and headers, scripts, CMake
files; never Markdown), and fails, naming the file and line, when:

  * a doc names a metric (spillway_* or process_*) that no C source exports
    (a "# TYPE NAME" line; a histogram's _bucket, _sum and _count count as
    its name), or the Grafana dashboard or the Prometheus rules under
    deploy/monitoring read one;
  * the code exports a metric that no doc names;
  * a doc names a spillway.io/ annotation, label, taint, finalizer or
    manager that the code does not write or read as a string;
  * a doc names a SPILLWAY_* environment variable that the code does not
    have.

Command-line flags are checked by the CLI's own tests. Prints one line per
problem and exits 1 when there is any, else prints what it checked.
"""
import json
import os
import re
import subprocess
import sys

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))

METRIC = re.compile(r"\b((?:spillway|process)_[a-z0-9_]*[a-z0-9])\b")
ANNOTATION = re.compile(r"\bspillway\.io/([a-z0-9][a-z0-9.-]*[a-z0-9])")
ENV = re.compile(r"\b(SPILLWAY_[A-Z0-9_]*[A-Z0-9])\b")
TYPE = re.compile(r"# TYPE ((?:spillway|process)_[a-z0-9_]+) (counter|gauge|histogram|summary)")
HIST_SUFFIXES = ("_bucket", "_sum", "_count")
# Words of the docs that look like metric names and are not: the repository
# and its files.
NOT_METRICS = {"spillway_io"}
# Names the docs give on purpose as ones the code does not have.
EXAMPLES = {
    "something-new",  # annotations.md: an annotation the hub does not know is ignored
}


def tracked():
    try:
        out = subprocess.run(["git", "-C", SRC, "ls-files"], check=True, capture_output=True, text=True).stdout
        return [f for f in out.splitlines() if os.path.isfile(os.path.join(SRC, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(SRC):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
            files += [os.path.relpath(os.path.join(root, n), SRC) for n in names]
        return files


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def is_code(rel):
    base = os.path.basename(rel)
    if rel.endswith(".md") or rel.startswith("tests/checks/"):
        return False
    if rel.endswith((".c", ".h", ".sh", ".py", ".cmake", ".in")) or base in ("CMakeLists.txt", "Makefile"):
        return True
    # Scripts without an extension (tests/testbed/testbed).
    try:
        with open(os.path.join(SRC, rel), "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def base_metric(name, exported):
    if name in exported:
        return name
    for s in HIST_SUFFIXES:
        if name.endswith(s) and name[: -len(s)] in exported:
            return name[: -len(s)]
    return None


def main():
    files = tracked()
    docs = [f for f in files if f.endswith(".md")]
    code = [f for f in files if is_code(f)]
    code_text = {f: read(f) for f in code}
    c_text = {f: t for f, t in code_text.items() if f.endswith((".c", ".h"))}

    exported = {}
    for f, t in c_text.items():
        for m in TYPE.finditer(t):
            exported.setdefault(m.group(1), f)
    strings = set()
    for t in code_text.values():
        strings.update(ANNOTATION.findall(t))
        strings.update(ENV.findall(t))

    problems = []
    named = set()
    n_ann = n_env = 0

    def where(rel, text, pos):
        return "%s:%d" % (rel, text.count("\n", 0, pos) + 1)

    for rel in docs:
        text = read(rel)
        for m in METRIC.finditer(text):
            name = m.group(1)
            if name in NOT_METRICS:
                continue
            b = base_metric(name, exported)
            if b is None:
                problems.append("%s: names metric %s, which the code does not export" % (where(rel, text, m.start()), name))
            else:
                named.add(b)
        for m in ANNOTATION.finditer(text):
            n_ann += 1
            if m.group(1) not in strings and m.group(1) not in EXAMPLES:
                problems.append("%s: names spillway.io/%s, which the code does not have" % (where(rel, text, m.start()), m.group(1)))
        for m in ENV.finditer(text):
            n_env += 1
            if m.group(1) not in strings:
                problems.append("%s: names environment variable %s, which the code does not have" % (where(rel, text, m.start()), m.group(1)))

    # What the monitoring files read must be exported too.
    mon = "deploy/monitoring"
    for rel in [f for f in files if f.startswith(mon + "/") and f.endswith((".json", ".yaml"))]:
        text = read(rel)
        if rel.endswith(".json"):
            try:
                json.loads(text)
            except ValueError as e:
                problems.append("%s: not valid JSON: %s" % (rel, e))
        for m in METRIC.finditer(text):
            name = m.group(1)
            if name.startswith("process_") or name in NOT_METRICS:
                continue  # the hub exports the usual process_ set; a rule may read others'
            if base_metric(name, exported) is None:
                problems.append("%s: reads metric %s, which the code does not export" % (where(rel, text, m.start()), name))

    for name in sorted(set(exported) - named):
        problems.append("%s: exports metric %s, which no doc names" % (exported[name], name))

    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("ok: %d docs; %d metrics exported, each named in a doc and every one the docs name exported; "
          "%d spillway.io/ names and %d SPILLWAY_ variables named in docs, all in the code"
          % (len(docs), len(exported), n_ann, n_env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
