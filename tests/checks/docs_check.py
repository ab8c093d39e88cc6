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
    one of those roles, or the narrow role's two parts together, grant;
  * an Event reason the hub writes (every call of its Event recorders in
    controller/hub/*.c: sw_follow_event, sw_follow_block, wl_event) is
    missing from the tables of docs/events.md (header "| reason | type |"),
    or a reason there is not in the code; a Warning there has no section
    (heading) in docs/troubleshooting.md; a file of controller/hub/ that
    creates Events by another function fails, so a new recorder cannot go
    unread;
  * an alert of deploy/monitoring/spillway-rules.yaml has no runbook_url,
    or its URL is not .../docs/troubleshooting.md#ANCHOR with ANCHOR a
    heading of that page;
  * a page of docs/ is not reached by links from README.md (directly or
    through other pages), a relative link of a tracked Markdown file names
    a file that does not exist or an #anchor that is not a heading of that
    file, or README.md has 1,000 words or more;
  * the values table of docs/deploy.md (header "| value | default | what |")
    does not list exactly the values of the Helm chart's values.yaml
    (deploy/helm/spillway; a map the chart passes on as is, such as config,
    is one value), or gives a scalar's or a list's default otherwise than
    values.yaml has it; or a ```yaml example of Helm values (its top-level
    keys the chart's, not only the hub config's) names a value the chart
    does not have; or the chart's copies of the rules and the member role
    (deploy/helm/spillway/files/) differ from the files in deploy/.

Command-line flags are checked by the CLI's own tests. Prints one line per
problem and exits 1 when there is any, else prints what it checked.
"""
import json
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:  # Debian's python3 has it (python3-yaml, scripts/install-deps.sh)
    if sys.executable != "/usr/bin/python3" and os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise


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
            "tenancy", "budgets", "namespaceSelector"}
SPEC_KEYS = {"role", "region", "pools", "localQueue", "namespaces"}
KUSTOMIZE_KEYS = {"resources", "components", "patches", "namespace", "images", "configMapGenerator",
                  "secretGenerator", "replicas", "labels"}
SIM_TRACE = "docs/examples/small-trace.csv"
CHART_VALUES = "deploy/helm/spillway/values.yaml"
# Values of the chart that are maps or lists passed on as they are: one
# value each in the docs' table, any keys below them in an example.
CHART_OPAQUE = {"config", "resources", "nodeSelector", "tolerations", "podAnnotations", "monitoring.labels",
                "tenancy.grants"}


def chart_values():
    try:
        with open(os.path.join(SRC, CHART_VALUES)) as f:
            return yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError):
        return None


def chart_leaves(values, prefix=""):
    """The chart's values, path -> default: every non-map, every empty map,
    and every map in CHART_OPAQUE."""
    out = {}
    for k, v in values.items():
        path = prefix + k
        if isinstance(v, dict) and v and path not in CHART_OPAQUE:
            out.update(chart_leaves(v, path + "."))
        else:
            out[path] = v
    return out


def default_text(v):
    if isinstance(v, str):
        return v if v else '""'
    return json.dumps(v)


def check_chart_table(problems):
    """docs/deploy.md's values table against values.yaml."""
    values = chart_values()
    if values is None:
        problems.append("%s: cannot be read as YAML" % CHART_VALUES)
        return 0
    leaves = chart_leaves(values)
    rel = "docs/deploy.md"
    text = read(rel)
    start = text.find("| value | default | what |")
    if start < 0:
        problems.append("%s: no values table of the Helm chart (header \"| value | default | what |\")" % rel)
        return 0
    listed = {}
    pos = start
    for line in text[start:].split("\n")[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        pos = text.find(line, pos)
        m = re.fullmatch(r"`([A-Za-z0-9_.]+)`", cells[0])
        if not m:
            problems.append("%s: values table row without a `value` first: %s" % (where_of(rel, text, pos), line))
            continue
        listed[m.group(1)] = (cells[1] if len(cells) > 1 else "", pos)
    for name in sorted(set(leaves) - set(listed)):
        problems.append("%s: %s has value %s, which the values table does not list" % (rel, CHART_VALUES, name))
    for name in sorted(set(listed) - set(leaves)):
        problems.append("%s: the values table lists %s, which %s does not have" % (where_of(rel, text, listed[name][1]), name, CHART_VALUES))
    for name in sorted(set(listed) & set(leaves)):
        v = leaves[name]
        if isinstance(v, dict):
            continue  # a map: described in words
        want = "`%s`" % default_text(v)
        if listed[name][0] != want:
            problems.append("%s: the values table gives %s the default %s; %s has %s"
                            % (where_of(rel, text, listed[name][1]), name, listed[name][0], CHART_VALUES, want))
    return len(listed)


def check_chart_example(rel, line, body, problems):
    """A Helm values example names only the chart's values."""
    values = chart_values() or {}
    try:
        doc = yaml.safe_load(body)
    except yaml.YAMLError as e:
        problems.append("%s:%d: the Helm values example is not YAML: %s" % (rel, line, e))
        return

    def walk(d, have, prefix):
        for k, v in d.items():
            path = prefix + str(k)
            if not isinstance(have, dict) or k not in have:
                problems.append("%s:%d: the Helm values example sets %s, which %s does not have"
                                % (rel, line, path, CHART_VALUES))
            elif isinstance(v, dict) and isinstance(have[k], dict) and have[k] and path not in CHART_OPAQUE:
                walk(v, have[k], path + ".")

    if isinstance(doc, dict):
        walk(doc, values, "")


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
    counts = {"hub": 0, "spec": 0, "clusters": 0, "job": 0, "other": 0, "helm": 0}
    CHART_TOP = set(chart_values() or {})
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
                elif keys and keys <= CHART_TOP and not keys <= HUB_KEYS:
                    counts["helm"] += 1  # Helm values
                    check_chart_example(rel, line, body, problems)
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


# ---- Events, alerts' runbooks, links -----------------------------------------

# The hub's Event recorders and the index of the reason among their
# arguments. A file of controller/hub/ that creates an Event (SW_KIND_EVENT)
# must define one of them.
RECORDERS = {"sw_follow_event": 3, "sw_follow_block": 2, "wl_event": 3, "warn_once": 6}
EVENTS_DOC = "docs/events.md"
TROUBLE_DOC = "docs/troubleshooting.md"
RULES = "deploy/monitoring/spillway-rules.yaml"
README_MAX_WORDS = 1000
C_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def c_args(text, start):
    """The arguments of the call whose "(" is at text[start], as strings,
    and the index just past its ")"."""
    depth, args, cur, i = 0, [], [], start
    while i < len(text):
        c = text[i]
        if c == '"':
            m = C_STRING.match(text, i)
            if m is None:
                break
            cur.append(m.group(0))
            i = m.end()
            continue
        if c in "([{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i + 1
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args, i


def code_event_reasons(files, problems):
    """{reason: [file:line, ...]} of every Event reason the hub's code writes."""
    reasons = {}
    call = re.compile(r"\b(%s)\s*\(" % "|".join(RECORDERS))
    for rel in sorted(f for f in files if f.startswith("controller/hub/") and f.endswith(".c")):
        raw = read(rel)
        # Comments blanked (newlines kept, so that lines still count).
        text = C_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), raw)
        defines = set()
        for m in call.finditer(text):
            name = m.group(1)
            line_start = text.rfind("\n", 0, m.start()) + 1
            line = text[line_start:text.find("\n", m.start())]
            args, end = c_args(text, m.end() - 1)
            where = "%s:%d" % (rel, text.count("\n", 0, m.start()) + 1)
            # A definition or declaration: at the start of a line, a type before it.
            if re.match(r"^(static\s+)?(void|int|bool)\s+$", line[: m.start() - line_start]):
                defines.add(name)
                continue
            idx = RECORDERS[name]
            if len(args) <= idx:
                problems.append("%s: a call of %s with %d arguments: docs_check cannot read its reason"
                                % (where, name, len(args)))
                continue
            arg = args[idx]
            lits = C_STRING.findall(arg)
            if not lits and re.fullmatch(r"[A-Za-z_]\w*", arg):
                # A variable: the reason a recorder was given (its parameter),
                # or the literals assigned to it in this file.
                fn = text.rfind("\n{", 0, m.start())
                head = text[text.rfind("\n\n", 0, fn) + 1:fn] if fn >= 0 else ""
                owner = re.search(r"\b(%s)\s*\(" % "|".join(RECORDERS), head)
                if owner and re.search(r"\b%s\s*[,)]" % re.escape(arg), head):
                    continue  # forwarded by a recorder; its callers are read
                lits = re.findall(r"\b%s\s*=\s*\"([^\"]*)\"" % re.escape(arg), text)
            if not lits:
                problems.append("%s: the Event reason %s of a call of %s is not a string literal, nor a "
                                "variable given literals in this file: docs_check cannot read it"
                                % (where, arg, name))
                continue
            for r in lits:
                reasons.setdefault(r, []).append(where)
        if "SW_KIND_EVENT" in text and not (defines & set(RECORDERS)):
            problems.append("%s: creates Events (SW_KIND_EVENT) but defines none of the recorders "
                            "docs_check reads (%s): add it to RECORDERS" % (rel, ", ".join(sorted(RECORDERS))))
    return reasons


def doc_tables(rel, text, first_cells):
    """Rows of the tables of a doc whose header begins with first_cells:
    [(line, {column: cell})]."""
    rows, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
        if lines[i].startswith("|") and cells[: len(first_cells)] == first_cells:
            header = cells
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                row = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.append((i + 1, dict(zip(header, row))))
                i += 1
        else:
            i += 1
    return rows


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    h = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", h).replace(" ", "-")


def anchors_of(text):
    out, seen, fence = set(), {}, False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            a = slug(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else "%s-%d" % (a, n))
    for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', text):
        out.add(m.group(1))
    return out


def check_events(files, problems):
    if EVENTS_DOC not in files:
        problems.append("%s: missing (the reference of the hub's Events)" % EVENTS_DOC)
        return 0
    code = code_event_reasons(files, problems)
    text = read(EVENTS_DOC)
    documented = {}
    for line, row in doc_tables(EVENTS_DOC, text, ["reason", "type"]):
        name = row.get("reason", "").strip("`")
        if name in documented:
            problems.append("%s:%d: reason %s listed twice" % (EVENTS_DOC, line, name))
        documented[name] = (line, row.get("type", ""))
    for name in sorted(set(code) - set(documented)):
        problems.append("%s: writes the Event reason %s, which %s does not list"
                        % (code[name][0], name, EVENTS_DOC))
    for name in sorted(set(documented) - set(code)):
        problems.append("%s:%d: lists the Event reason %s, which the hub's code does not write"
                        % (EVENTS_DOC, documented[name][0], name))
    trouble = anchors_of(read(TROUBLE_DOC)) if TROUBLE_DOC in files else set()
    for name, (line, typ) in sorted(documented.items()):
        if "Warning" in typ and slug(name) not in trouble:
            problems.append("%s:%d: the Warning %s has no section in %s (a heading \"### %s\")"
                            % (EVENTS_DOC, line, name, TROUBLE_DOC, name))
    return len(code)


def check_runbooks(files, problems):
    if RULES not in files:
        return 0
    trouble = anchors_of(read(TROUBLE_DOC)) if TROUBLE_DOC in files else set()
    text = read(RULES)
    alerts = list(re.finditer(r"^\s*- alert:\s*(\S+)\s*$", text, re.M))
    for k, m in enumerate(alerts):
        end = alerts[k + 1].start() if k + 1 < len(alerts) else len(text)
        nxt = re.search(r"^\s*- (record|name):", text[m.end():end], re.M)
        block = text[m.end(): m.end() + nxt.start()] if nxt else text[m.end():end]
        where = "%s:%d" % (RULES, text.count("\n", 0, m.start()) + 1)
        u = re.search(r"^\s*runbook_url:\s*\"?([^\"\s]+)\"?\s*$", block, re.M)
        if u is None:
            problems.append("%s: alert %s has no runbook_url annotation (its section of %s)"
                            % (where, m.group(1), TROUBLE_DOC))
            continue
        url = u.group(1)
        path, _, anchor = url.partition("#")
        if not path.endswith("/" + TROUBLE_DOC) or not anchor:
            problems.append("%s: alert %s: runbook_url %s is not .../%s#ANCHOR"
                            % (where, m.group(1), url, TROUBLE_DOC))
        elif anchor not in trouble:
            problems.append("%s: alert %s: runbook_url's anchor #%s is not a heading of %s"
                            % (where, m.group(1), anchor, TROUBLE_DOC))
    return len(alerts)


LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_links(files, docs, problems):
    """Relative links resolve (files and anchors); every docs/ page is
    reached from README.md; README.md stays under README_MAX_WORDS words."""
    tracked_set = set(files)
    dirs = {os.path.dirname(f) for f in files}
    while True:
        more = {os.path.dirname(d) for d in dirs if d} - dirs
        if not more:
            break
        dirs |= more
    anchors, links, n = {}, {}, 0
    for rel in docs:
        text = read(rel)
        # Links inside code blocks and inline code are not links.
        body = re.sub(r"^```.*?^```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.M | re.S)
        body = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), body)
        for m in LINK.finditer(body):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL
            n += 1
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
            where = "%s:%d" % (rel, text.count("\n", 0, m.start()) + 1)
            if dest not in tracked_set and dest not in dirs:
                problems.append("%s: links to %s, which does not exist" % (where, target))
                continue
            links.setdefault(rel, set()).add(dest)
            if anchor and dest.endswith(".md"):
                if dest not in anchors:
                    anchors[dest] = anchors_of(read(dest))
                if anchor not in anchors[dest]:
                    problems.append("%s: links to %s, but #%s is not a heading of %s" % (where, target, anchor, dest))
    seen, todo = {"README.md"}, ["README.md"]
    while todo:
        for d in links.get(todo.pop(), ()):
            if d.endswith(".md") and d not in seen:
                seen.add(d)
                todo.append(d)
    for rel in sorted(f for f in docs if f.startswith("docs/") and f.count("/") == 1):
        if rel not in seen:
            problems.append("%s: no link from README.md reaches it (link it from README.md or a page it links)" % rel)
    words = len(read("README.md").split()) if "README.md" in tracked_set else 0
    if words >= README_MAX_WORDS:
        problems.append("README.md: %d words; keep it under %d (details go to docs/)" % (words, README_MAX_WORDS))
    return n, words


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
    n_reasons = check_events(files, problems)
    n_alerts = check_runbooks(files, problems)
    n_links, readme_words = check_links(files, docs, problems)
    n_values = check_chart_table(problems)
    # The chart's copies of files it cannot reach outside its folder.
    for copy_, orig in (("deploy/helm/spillway/files/spillway-rules.yaml", "deploy/monitoring/spillway-rules.yaml"),
                        ("deploy/helm/spillway/files/member-clusterrole.yaml", "deploy/rbac/member-clusterrole.yaml")):
        if read(copy_) != read(orig):
            problems.append("%s: differs from %s, of which it is the Helm chart's copy (cp %s %s)" % (copy_, orig, orig, copy_))

    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("ok: %d docs; %d metrics exported, each named in a doc and every one the docs name exported; "
          "%d spillway.io/ names and %d SPILLWAY_ variables named in docs, all in the code; "
          "%d tables of the member roles' permissions and every count of them agree with deploy/rbac"
          % (len(docs), len(exported), n_ann, n_env, n_tables))
    print("ok: %d Event reasons the hub writes, each in %s and each there in the code, every Warning "
          "with its section in %s; %d alerts, each with a runbook_url to a section there; %d relative "
          "links resolve; every docs/ page reached from README.md (%d words)"
          % (n_reasons, EVENTS_DOC, TROUBLE_DOC, n_alerts, n_links, readme_words))
    print("ok: the Helm chart's %d values each in docs/deploy.md's table, with its default; "
          "its copies of the rules and the member role are deploy/'s" % n_values)
    if examples is None:
        print("examples not parsed: no spillctl and spillwayd built (give --spillctl and --spillwayd)")
    else:
        print("ok: examples parsed by the binaries: %d hub configurations, %d cluster spec files, "
              "%d simulator clusters files, %d Jobs linted; %d Helm values examples naming only the "
              "chart's values; %d Kubernetes objects and overlays left to their own tests"
              % (examples["hub"], examples["spec"], examples["clusters"], examples["job"],
                 examples["helm"], examples["other"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
