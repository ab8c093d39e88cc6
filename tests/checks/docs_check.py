#!/usr/bin/env python3
"""docs_check.py - the docs name only what the code has.

  docs_check.py [SOURCE_DIR] [--spillctl PATH] [--spillwayd PATH]

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
    have;
  * an example in a doc does not parse with the binary that reads its kind:
    every ```yaml and ```json block of every tracked Markdown file is one of
    a hub configuration (`spillwayd --config FILE --validate`; a fragment
    of one is completed with the two required fields), a cluster spec file
    (`spillctl cluster add NAME --spec FILE --dry-run`), a simulator
    clusters file (`spillctl simulate` on docs/examples/small-trace.csv),
    a Job with spillway.io/ annotations (`spillctl lint -f FILE`, the
    hub's own parser), another Kubernetes object or a Kustomize overlay
    (checked elsewhere: deploy/ by tests/e2e/deploy); a block that is
    none of these fails, so a new kind of example cannot go unchecked. So
    is every docs/examples/*.json clusters file. The binaries are given
    with --spillctl and --spillwayd (CTest does), else taken from
    SOURCE_DIR/build/controller when there; without them this part is
    skipped, and said so.
  * a table of a doc whose header begins "| resource | verbs |" lists other
    permissions than the member role it describes (deploy/rbac/: the
    ClusterRole its "role" column names, row by row, else spillway-member),
    or a count of permissions in docs/deploy.md or docs/clusters.md ("28
    permissions", "the 28 of", "of the 28", "role's 28") is not the number
    one of those roles, or the narrow role's two parts together, grant.

Command-line flags are checked by the CLI's own tests. Prints one line per
problem and exits 1 when there is any, else prints what it checked.
"""
import json
import os
import re
import subprocess
import sys


def parse_args(argv):
    src, bins, explicit = None, {}, set()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--spillctl", "--spillwayd") and i + 1 < len(argv):
            bins[a[2:]] = argv[i + 1]
            explicit.add(a[2:])
            i += 2
            continue
        if src is None:
            src = a
        i += 1
    src = os.path.abspath(src or os.path.join(os.path.dirname(__file__), "..", ".."))
    for b in ("spillctl", "spillwayd"):
        bins.setdefault(b, os.path.join(src, "build", "controller", b))
    return src, bins, explicit


SRC, BINS, EXPLICIT_BINS = parse_args(sys.argv[1:])

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


ROLE_FILES = ("deploy/rbac/member-clusterrole.yaml", "deploy/rbac/narrow/member-cluster-clusterrole.yaml",
              "deploy/rbac/narrow/member-namespace-clusterrole.yaml")
FLOW = re.compile(r"^\s*-?\s*(apiGroups|resources|verbs):\s*\[([^\]]*)\]\s*$")
COUNT = re.compile(r"\b(\d+) permissions\b|\bthe (\d+) of\b|\bof the (\d+)\b|\brole's (\d+)\b")


def read_role(rel, problems):
    """A role file's name and its permissions, {(group, resource, verb)}.
    The files write each rule's lists in flow style ([a, b]); anything else
    is reported rather than guessed."""
    name, perms, rule = None, set(), {}
    text = read(rel)
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("  name:") and name is None:
            name = line.split(":", 1)[1].strip()
        m = FLOW.match(line)
        if m:
            if line.lstrip().startswith("-"):
                rule = {}
            rule[m.group(1)] = [x.strip().strip('"') for x in m.group(2).split(",") if x.strip()]
            if len(rule) == 3:
                for g in rule["apiGroups"]:
                    for r in rule["resources"]:
                        for v in rule["verbs"]:
                            perms.add((g, r, v))
                rule = {}
        elif re.match(r"^\s*-?\s*(apiGroups|resources|verbs):", line):
            problems.append("%s:%d: a rule's list not in flow style ([a, b]): docs_check cannot read it" % (rel, n))
    return name, perms


def perm_text(p):
    return "%s %s%s" % (p[2], p[1], "." + p[0] if p[0] else "")


def check_roles(files, problems):
    roles = {}
    for rel in ROLE_FILES:
        if rel in files:
            name, perms = read_role(rel, problems)
            roles[name] = (rel, perms)
    if "spillway-member" not in roles:
        return 0
    groups = {}
    for _, perms in roles.values():
        for g, r, _ in perms:
            groups.setdefault(r, set()).add(g)
    counts = {len(p) for _, p in roles.values()}
    narrow = [roles[n][1] for n in ("spillway-member-cluster", "spillway-member-namespace") if n in roles]
    if len(narrow) == 2:
        counts.add(len(narrow[0]) + len(narrow[1]))
    n_tables = 0
    for rel in [f for f in files if f.endswith(".md")]:
        text = read(rel)
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            if not (lines[i].startswith("|") and len(cells) >= 2 and cells[:2] == ["resource", "verbs"]):
                i += 1
                continue
            n_tables += 1
            start = i + 1
            col = cells.index("role") if "role" in cells else None
            listed = {}
            i += 2  # the header and its |---| line
            while i < len(lines) and lines[i].startswith("|"):
                row = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                # The role: the cell's first word (a remark may follow).
                role = (row[col].split() or [""])[0].strip("`") if col is not None and col < len(row) \
                    else "spillway-member"
                if role not in roles:
                    problems.append("%s:%d: role %s: no such role in deploy/rbac" % (rel, i + 1, role))
                    i += 1
                    continue
                for res in row[0].replace("`", "").split(","):
                    res = res.strip()
                    base = res.split("/")[0]
                    name, _, group = base.partition(".")
                    sub = res[len(base):]
                    if not group:
                        known = groups.get(name + sub, set())
                        group = next(iter(known)) if len(known) == 1 else ""
                    for v in row[1].replace("`", "").split(","):
                        listed.setdefault(role, set()).add((group, name + sub, v.strip()))
                i += 1
            for role, perms in listed.items():
                rfile, want = roles[role]
                for p in sorted(perms - want):
                    problems.append("%s:%d: the table lists %s, which %s (%s) does not grant"
                                    % (rel, start, perm_text(p), role, rfile))
                for p in sorted(want - perms):
                    problems.append("%s:%d: the table lacks %s, which %s (%s) grants"
                                    % (rel, start, perm_text(p), role, rfile))
    for rel in ("docs/deploy.md", "docs/clusters.md"):
        if rel not in files:
            continue
        text = read(rel)
        for para in re.finditer(r"(?:[^\n]+\n?)+", text):
            if "permission" not in para.group(0) and "role" not in para.group(0):
                continue
            for m in COUNT.finditer(para.group(0)):
                n = int(next(g for g in m.groups() if g))
                if n not in counts:
                    problems.append("%s: says %s, but the member roles grant %s permissions"
                                    % (where_of(rel, text, para.start() + m.start()), m.group(0),
                                       " or ".join(str(c) for c in sorted(counts))))
    return n_tables


def where_of(rel, text, pos):
    return "%s:%d" % (rel, text.count("\n", 0, pos) + 1)


def base_metric(name, exported):
    if name in exported:
        return name
    for s in HIST_SUFFIXES:
        if name.endswith(s) and name[: -len(s)] in exported:
            return name[: -len(s)]
    return None


FENCE = re.compile(r"^```(yaml|yml|json)[ \t]*\n(.*?)^```", re.M | re.S)
TOP_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*):", re.M)
HUB_KEYS = {"redis", "secretKeyFile", "listen", "placement", "leader", "outputs", "maxAttempts",
            "members", "replication", "buckets", "logLevel", "kueue", "records", "karpenter",
            "tenancy"}
SPEC_KEYS = {"role", "region", "pools", "localQueue", "namespaces"}
KUSTOMIZE_KEYS = {"resources", "components", "patches", "namespace", "images", "configMapGenerator",
                  "secretGenerator", "replicas", "labels"}
SIM_TRACE = "docs/examples/small-trace.csv"


def run_bin(args, stdin_file=None):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=60,
                           env=dict((k, v) for k, v in os.environ.items() if not k.startswith("SPILLWAY_")))
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    lines = [l for l in (p.stdout + p.stderr).splitlines() if "failpoints compiled in" not in l]
    return p.returncode, " / ".join(lines)


def check_examples(docs, files, problems):
    """Every example config or spec in the docs, parsed by its binary."""
    import tempfile
    missing = [b for b in ("spillctl", "spillwayd") if not os.access(BINS[b], os.X_OK)]
    if missing:
        if EXPLICIT_BINS & set(missing):
            problems.append("examples: %s not found" % ", ".join(BINS[b] for b in missing))
        return None
    counts = {"hub": 0, "spec": 0, "clusters": 0, "job": 0, "other": 0}
    tmp = tempfile.mkdtemp(prefix="docs-check-")
    try:
        def parse(kind, rel, line, body):
            path = os.path.join(tmp, "example.json" if kind == "clusters" else "example.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(body)
            if kind == "hub":
                rc, out = run_bin([BINS["spillwayd"], "--config", path, "--validate"])
            elif kind == "spec":
                rc, out = run_bin([BINS["spillctl"], "cluster", "add", "docs-example", "--spec", path, "--dry-run"])
            elif kind == "job":
                rc, out = run_bin([BINS["spillctl"], "lint", "-f", path])
            else:
                rc, out = run_bin([BINS["spillctl"], "simulate", "--trace", os.path.join(SRC, SIM_TRACE),
                                   "--clusters", path, "--policy", "cost-aware"])
            counts[kind] += 1
            if rc != 0:
                problems.append("%s:%d: the example does not parse as a %s (exit %d): %s"
                                % (rel, line, {"hub": "hub configuration", "spec": "cluster spec file",
                                               "clusters": "simulator clusters file",
                                               "job": "Job spillctl lint passes"}[kind], rc, out))

        for rel in docs:
            text = read(rel)
            for m in FENCE.finditer(text):
                line = text.count("\n", 0, m.start()) + 2
                body = m.group(2)
                keys = set(TOP_KEY.findall(body))
                if m.group(1) == "json":
                    try:
                        doc = json.loads(body)
                    except ValueError as e:
                        problems.append("%s:%d: the JSON example is not valid JSON: %s" % (rel, line, e))
                        continue
                    if isinstance(doc, dict) and "pools" in doc:
                        parse("clusters", rel, line, body)
                    else:
                        problems.append("%s:%d: a JSON example of no kind this check knows" % (rel, line))
                elif "apiVersion" in keys and "kind" in keys and re.search(r"^kind: Job$", body, re.M) \
                        and "spillway.io/" in body:
                    parse("job", rel, line, body)
                elif "apiVersion" in keys and "kind" in keys:
                    counts["other"] += 1  # a Kubernetes object
                elif keys and keys <= KUSTOMIZE_KEYS:
                    counts["other"] += 1  # a Kustomize overlay
                elif keys and keys <= SPEC_KEYS:
                    parse("spec", rel, line, body)
                elif keys and keys <= HUB_KEYS:
                    # A fragment of a hub configuration: the required fields added.
                    extra = ""
                    if "redis" not in keys:
                        extra += "redis:\n  url: redis://127.0.0.1:6379/0\n"
                    if "secretKeyFile" not in keys:
                        extra += "secretKeyFile: secret.key\n"
                    parse("hub", rel, line, extra + body)
                else:
                    problems.append("%s:%d: a YAML example of no kind this check knows (top-level keys: %s)"
                                    % (rel, line, ", ".join(sorted(keys)) or "none"))
        for rel in sorted(f for f in files if f.startswith("docs/examples/") and f.endswith(".json")):
            parse("clusters", rel, 1, read(rel))
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return counts


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

    examples = check_examples(docs, files, problems)
    n_tables = check_roles(files, problems)

    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("ok: %d docs; %d metrics exported, each named in a doc and every one the docs name exported; "
          "%d spillway.io/ names and %d SPILLWAY_ variables named in docs, all in the code; "
          "%d tables of the member roles' permissions and every count of them agree with deploy/rbac"
          % (len(docs), len(exported), n_ann, n_env, n_tables))
    if examples is None:
        print("examples not parsed: no spillctl and spillwayd built (give --spillctl and --spillwayd)")
    else:
        print("ok: examples parsed by the binaries: %d hub configurations, %d cluster spec files, "
              "%d simulator clusters files, %d Jobs linted; %d Kubernetes objects and overlays "
              "left to their own tests"
              % (examples["hub"], examples["spec"], examples["clusters"], examples["job"],
                 examples["other"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
