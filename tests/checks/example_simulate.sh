#!/usr/bin/env bash
# The README's "Try it without a cluster" keeps working: spillctl simulate
# on the example trace shipped in docs/examples exits 0, reads every row,
# runs both policies, and prints every line the README shows of its output
# (the README's console block, less its command lines and "...").
# Usage: example_simulate.sh PATH/TO/spillctl   (SW_SOURCE_DIR: the repository)
set -u
spillctl=$1
src=${SW_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
# The command as the README gives it, with this build's spillctl.
cmd=$(sed -n '/^```console$/,/^```$/p' README.md | sed -n 's/^\$ build\/controller\/spillctl simulate /simulate /p')
[ -n "$cmd" ] || {
    echo "FAIL: README.md has no console block running build/controller/spillctl simulate"
    exit 1
}
# shellcheck disable=SC2086
"$spillctl" $cmd >"$tmp/out" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "spillctl $cmd: exit $rc: $(cat "$tmp/out")"
grep -q "^spillctl simulate: 40 jobs from docs/examples/small-trace.csv (0 rows skipped)" "$tmp/out" ||
    fail "not every row of the example trace was read: $(head -1 "$tmp/out")"
for p in cost-aware burst-now; do
    grep -q "^$p " "$tmp/out" || fail "no $p row in the output"
done
n=0
while IFS= read -r line; do
    case "$line" in '$ '* | '...' | '```'*) continue ;; esac
    n=$((n + 1))
    grep -qxF -- "$line" "$tmp/out" || fail "README shows a line the run does not print: $line"
done < <(sed -n '/^```console$/,/^```$/p' README.md)
[ "$n" -ge 3 ] || fail "README shows only $n lines of the output"
echo "spillctl $cmd: exit $rc, $n lines of the README's output found, $fails failed"
[ "$fails" = 0 ]
