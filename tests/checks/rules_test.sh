#!/usr/bin/env bash
# rules_test.sh - the alert and recording rules of deploy/monitoring, with
# Prometheus' own promtool (Debian's prometheus package):
#  - `promtool check rules` on the PrometheusRule's spec.groups;
#  - `promtool test rules` with spillway-rules.test.yaml: series that must
#    make each alert fire and series that must not;
#  - every spillway_ metric the rules read is one the hub exports
#    (controller/hub/metrics.c, replication/rpo.c).
set -euo pipefail
src=${SW_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PROMTOOL=${PROMTOOL:-promtool}
command -v "$PROMTOOL" >/dev/null || {
    echo "FAIL: promtool not found (Debian package prometheus; scripts/install-deps.sh installs it)" >&2
    exit 1
}
PY=python3
"$PY" -c "import yaml" 2>/dev/null || PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$PY" - "$src/deploy/monitoring/spillway-rules.yaml" "$tmp/spillway-rules.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
if doc.get("kind") != "PrometheusRule":
    sys.exit("%s: expected a PrometheusRule, got kind %r" % (sys.argv[1], doc.get("kind")))
yaml.safe_dump({"groups": doc["spec"]["groups"]}, open(sys.argv[2], "w"), sort_keys=False)
PY
cp "$src/tests/checks/spillway-rules.test.yaml" "$tmp/"
"$PROMTOOL" check rules "$tmp/spillway-rules.yaml"
"$PROMTOOL" test rules "$tmp/spillway-rules.test.yaml"

# The spillway_ metrics the rules read, against the names the code writes.
used=$(grep -o 'spillway_[a-z_]*' "$tmp/spillway-rules.yaml" | sed -E 's/_(bucket|sum|count)$//' | sort -u)
missing=""
for m in $used; do
    grep -Eq "$m([^a-z_]|\$)" "$src/controller/hub/metrics.c" "$src/replication/rpo.c" || missing="$missing $m"
done
if [ -n "$missing" ]; then
    echo "FAIL: the rules read metrics the hub does not export:$missing" >&2
    exit 1
fi
echo "ok: promtool check and test rules pass; the rules read $(echo "$used" | wc -l) spillway_ metrics, all exported"
