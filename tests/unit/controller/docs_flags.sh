#!/usr/bin/env bash
# docs/cli.md and spillctl agree on flags: every --flag the page names is a
# flag spillctl has (a command's or a global one), and every flag spillctl
# has is named on the page. spillctl's flags are read from
# `spillctl completion bash`, generated from the tables its parser reads.
# Usage: docs_flags.sh PATH/TO/spillctl PATH/TO/docs/cli.md
set -u
spillctl=$1
doc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$spillctl" completion bash >"$tmp/comp" || {
    echo "FAIL: spillctl completion bash"
    exit 1
}
{
    sed -n '/^_spillctl_opts()/,/^}/p;/^_spillctl_globals()/,/^}/p' "$tmp/comp" | grep -o -- '--[a-z][a-z0-9-]*'
    echo --help
} | sort -u >"$tmp/code"
grep -o -- '--[a-z][a-z0-9-]*' "$doc" | sort -u >"$tmp/doc"
[ "$(wc -l <"$tmp/code")" -ge 50 ] || {
    echo "FAIL: only $(wc -l <"$tmp/code") flags read from spillctl"
    exit 1
}
fails=0
for f in $(comm -23 "$tmp/doc" "$tmp/code"); do
    echo "FAIL: $doc names $f, which spillctl does not have"
    fails=$((fails + 1))
done
for f in $(comm -13 "$tmp/doc" "$tmp/code"); do
    echo "FAIL: spillctl has $f, which $doc does not name"
    fails=$((fails + 1))
done
echo "$(wc -l <"$tmp/code") flags in spillctl, $(wc -l <"$tmp/doc") named in $doc, $fails mismatched"
[ "$fails" = 0 ]
