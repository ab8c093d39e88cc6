#!/usr/bin/env bash
# The CLI's grammar, table-driven over every command spillctl has. The list
# of commands and their options is read from `spillctl completion bash`,
# which is generated from the same tables the parser reads, so a command
# added later is tested without touching this file. For each command:
#  - COMMAND --help and `help COMMAND`: exit 0, the same text on stdout,
#    nothing on stderr, a Usage line naming the command, an Examples section;
#  - an unknown option: exit 2 naming it; a misspelt one (an option of the
#    command with a letter dropped): exit 2 with "did you mean --OPTION?";
#  - a misplaced option (one another command has): exit 2 naming its owner;
#  - every DURATION option with a bad duration, and with 0 and 0s: exit 2
#    saying what a duration looks like; and one good duration in the other form
#    (--opt=VALUE) gets past the parser.
# Then the groups' help, --version, version -o json, unknown commands with
# a suggestion, and the completion script itself in bash.
# Usage: cli_table.sh PATH/TO/spillctl
set -u
spillctl=$1
unset SPILLWAY_REDIS_URL SPILLWAY_SECRET_KEY_FILE SPILLWAY_SECRET_KEY SPILLWAY_LOG
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
# run ARGS...: runs spillctl; sets rc, out, err.
run() {
    rc=0
    "$spillctl" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    checks=$((checks + 1))
}

"$spillctl" completion bash >"$tmp/comp" || {
    echo "FAIL: spillctl completion bash"
    exit 1
}
# Lines of _spillctl_opts: "cluster add") echo "--kubeconfig --context ..." ;;
sed -n '/^_spillctl_opts()/,/^}/p' "$tmp/comp" | sed -n 's/^    "\([^"]*\)") echo "\([^"]*\)" ;;$/\1|\2/p' >"$tmp/table"
n=$(wc -l <"$tmp/table")
[ "$n" -ge 20 ] || fail "only $n commands read from the completion script"
all_opts=$(cut -d'|' -f2 "$tmp/table" | tr ' ' '\n' | grep '^--' | sort -u)
# The global options, from spillctl --help.
globals="$("$spillctl" --help | sed -n '/^Global options/,$p' | grep -o -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ')"
case " $globals " in *" --redis "*" --version "*) ;; *) fail "spillctl --help lists no global options: $globals" ;; esac

while IFS='|' read -r path opts; do
    # shellcheck disable=SC2086
    set -- $path
    words=("$@")
    # --help and help COMMAND
    run "${words[@]}" --help
    [ "$rc" = 0 ] || fail "$path --help: exit $rc"
    [ -z "$err" ] || fail "$path --help wrote to stderr: $err"
    echo "$out" | grep -q "^Usage: spillctl $path" || fail "$path --help has no 'Usage: spillctl $path' line"
    echo "$out" | grep -q "^Examples:" || fail "$path --help has no Examples"
    echo "$out" | grep -A1 "^Examples:" | tail -1 | grep -q "spillctl\|source" ||
        fail "$path --help: Examples has no example"
    help_out=$out
    run help "${words[@]}"
    [ "$rc" = 0 ] && [ "$out" = "$help_out" ] || fail "help $path differs from $path --help (exit $rc)"
    run "${words[@]}" -h
    [ "$rc" = 0 ] && [ "$out" = "$help_out" ] || fail "$path -h differs from $path --help (exit $rc)"
    # Every option of the table is in the help, and the help names no
    # option spillctl lacks (others' options may be referred to).
    for o in $opts; do
        case $o in --*) echo "$help_out" | grep -q -- "$o\b" || fail "$path --help does not list $o" ;; esac
    done
    for o in $(echo "$help_out" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
        case " $opts $globals $(echo $all_opts) " in *" $o "*) ;; *) fail "$path --help names $o, which spillctl does not have" ;; esac
    done
    # An unknown option.
    run "${words[@]}" --no-such-option-at-all
    [ "$rc" = 2 ] || fail "$path --no-such-option-at-all: exit $rc, expected 2"
    echo "$err" | grep -q -- "unknown option --no-such-option-at-all" || fail "$path: unknown option not named: $err"
    # A misspelt option: the first long option with its second letter dropped.
    first=$(echo "$opts" | tr ' ' '\n' | grep '^--..' | head -1)
    if [ -n "$first" ]; then
        typo="--${first:2:1}${first:4}"
        run "${words[@]}" "$typo"
        [ "$rc" = 2 ] || fail "$path $typo: exit $rc, expected 2"
        echo "$err" | grep -q -- "did you mean $first?" || fail "$path $typo: no 'did you mean $first?': $err"
    fi
    # A misplaced option: one another command has and this one lacks.
    other=$(comm -23 <(echo "$all_opts") <(echo "$opts" | tr ' ' '\n' | sort -u) | head -1)
    if [ -n "$other" ]; then
        run "${words[@]}" "$other" x
        [ "$rc" = 2 ] || fail "$path $other: exit $rc, expected 2"
        echo "$err" | grep -q -- "$other is not an option of this command; it belongs to \"spillctl " ||
            fail "$path $other: not said to be misplaced: $err"
    fi
    # Durations: every option the help shows with DURATION.
    for o in $(echo "$help_out" | grep -o -- '--[a-z][a-z0-9-]* DURATION' | cut -d' ' -f1 | sort -u); do
        run "${words[@]}" "$o" 10x
        [ "$rc" = 2 ] || fail "$path $o 10x: exit $rc, expected 2"
        echo "$err" | grep -q -- "$o: expected a duration such as 90s, 10m or 1h30m" ||
            fail "$path $o 10x: message: $err"
        # Zero in either form: refused alike (a zero duration means nothing).
        for z in 0 0s; do
            run "${words[@]}" "$o" "$z" --redis redis://127.0.0.1:1
            [ "$rc" = 2 ] || fail "$path $o $z: exit $rc, expected 2"
            echo "$err" | grep -q -- "$o: expected a duration .*, above 0, got \"$z\"" ||
                fail "$path $o $z: message: $err"
        done
        run "${words[@]}" "$o=1h30m" --redis redis://127.0.0.1:1
        echo "$err" | grep -q "expected a duration\|unknown option" && fail "$path $o=1h30m refused: $err"
    done
done <"$tmp/table"

# Groups: --help on stdout, exit 0; no command: usage on stderr, exit 2.
for g in cluster replicate "replicate store" hub drill report; do
    # shellcheck disable=SC2086
    run $g --help
    [ "$rc" = 0 ] && [ -z "$err" ] || fail "$g --help: exit $rc, stderr: $err"
    echo "$out" | grep -q "^Commands:" || fail "$g --help lists no commands"
    echo "$out" | grep -q "^Examples:" || fail "$g --help has no Examples"
    # shellcheck disable=SC2086
    run help $g
    [ "$rc" = 0 ] && echo "$out" | grep -q "^Usage: spillctl $g COMMAND" || fail "help $g: exit $rc: $out"
    # shellcheck disable=SC2086
    run $g
    [ "$rc" = 2 ] && [ -z "$out" ] || fail "$g with no command: exit $rc, expected 2 and nothing on stdout"
done
run --help
[ "$rc" = 0 ] && echo "$out" | grep -q "^Commands:" || fail "--help: exit $rc"
run
[ "$rc" = 2 ] || fail "no command: exit $rc, expected 2"
run --version
[ "$rc" = 0 ] && echo "$out" | grep -Eq '^spillctl [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version: exit $rc: $out $err"
version_line=$out
run version
[ "$out" = "$version_line" ] || fail "version and --version differ"
run version -o json
[ "$rc" = 0 ] && echo "$out" | python3 -c 'import json,sys; v=json.load(sys.stdin)["version"]; assert v' ||
    fail "version -o json: exit $rc: $out"
run version -o wide
[ "$rc" = 2 ] || fail "version -o wide: exit $rc, expected 2"
run clustr list
[ "$rc" = 2 ] && echo "$err" | grep -q 'did you mean "cluster"?' || fail "clustr: exit $rc: $err"
run cluster lst
[ "$rc" = 2 ] && echo "$err" | grep -q 'did you mean "cluster list"?' || fail "cluster lst: exit $rc: $err"
# The narrow member role's namespaces: each a namespace name, once.
run cluster add x --namespaces team-a,Team_B
[ "$rc" = 2 ] && echo "$err" | grep -q -- '--namespaces: expected a namespace name (1 to 63 of a-z, 0-9 and .-., starting and ending with a letter or digit), got "Team_B"' ||
    fail "cluster add --namespaces team-a,Team_B: exit $rc: $err"
run cluster add x --namespaces a,a
[ "$rc" = 2 ] && echo "$err" | grep -q -- '--namespaces: namespace "a" is listed twice' ||
    fail "cluster add --namespaces a,a: exit $rc: $err"
run status -o 'jsonpath={..x}'
[ "$rc" = 2 ] && echo "$err" | grep -q 'recursive descent' || fail "status -o jsonpath={..x}: exit $rc: $err"
run status -l 'colour=red'
[ "$rc" = 2 ] && echo "$err" | grep -q 'KEY one of team' || fail "status -l colour=red: exit $rc: $err"
run status -l 'state!running'
[ "$rc" = 2 ] && echo "$err" | grep -q 'expected KEY=VALUE' || fail "status -l state!running: exit $rc: $err"
run logs onlyone
[ "$rc" = 2 ] && echo "$err" | grep -q 'expected CLUSTER/NAMESPACE/JOB' || fail "logs onlyone: exit $rc: $err"
run completion fish
[ "$rc" = 2 ] && echo "$err" | grep -q 'expected bash or zsh' || fail "completion fish: exit $rc: $err"
# A missing Redis is a usage error (2); an unreachable one a failure (1).
run status
[ "$rc" = 2 ] || fail "status with no Redis: exit $rc, expected 2"
run status --redis redis://127.0.0.1:1
[ "$rc" = 1 ] || fail "status with Redis unreachable: exit $rc, expected 1"

# Edges (issue 39): one prefix per message; --seed digits only; a trace
# no policy can place is an error; cluster add --dry-run offline.
run cluster add x --dry-run --role cloud
[ "$rc" = 2 ] && [ "$err" = "spillctl cluster add x: region is missing" ] ||
    fail "cluster add x without a region: exit $rc: $err"
printf 'role: cloud\nregion: us-east-1\npools:\n- name: spot\n  capacityType: spot\n  gpuProduct: A100\n' >"$tmp/spec.yaml"
printf 'role: cloud\n' >"$tmp/noregion.yaml"
run cluster add x --dry-run --spec "$tmp/noregion.yaml"
[ "$rc" = 2 ] && [ "$err" = "spillctl cluster add x: cluster spec \"$tmp/noregion.yaml\": region is missing" ] ||
    fail "cluster add --spec without a region: exit $rc: $err"
run cluster add x --dry-run --spec "$tmp/spec.yaml"
[ "$rc" = 0 ] && [ -z "$err" ] && echo "$out" | grep -q '^cluster x: role cloud, region us-east-1, 1 pool; nothing contacted or stored' ||
    fail "cluster add --dry-run with a good spec: exit $rc: $out $err"
clusters=$(dirname "$0")/../../../docs/examples/lab-clusters.json
printf 'submit,gpus,duration,team\n0,4,3600,ml\n' >"$tmp/one.csv"
for s in -1 +1 " 1"; do
    run simulate --trace "$tmp/one.csv" --clusters "$clusters" --seed "$s"
    [ "$rc" = 2 ] && echo "$err" | grep -q -- "--seed: expected a non-negative integer, got \"$s\"" ||
        fail "simulate --seed '$s': exit $rc: $err"
done
run simulate --trace "$tmp/one.csv" --clusters "$clusters" --seed 18446744073709551615 --policy burst-now
[ "$rc" = 0 ] || fail "simulate --seed 2^64-1: exit $rc: $err"
printf 'submit,gpus,duration,team\n0,400,3600,ml\n5,500,3600,ml\n' >"$tmp/huge.csv"
run simulate --trace "$tmp/huge.csv" --clusters "$clusters"
[ "$rc" = 1 ] && echo "$err" | grep -q "huge.csv: every policy rejected all 2 jobs" ||
    fail "simulate, every job rejected: exit $rc: $err"

# The completion script, run by bash: it completes commands, subcommands,
# a command's options and files after a FILE option.
complete_words() {
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _spillctl; echo "${COMPREPLY[*]}"' \
        _ "$tmp/comp" "$@"
}
[ "$(complete_words spillctl clu)" = "cluster" ] || fail "completion: spillctl clu -> $(complete_words spillctl clu)"
[ "$(complete_words spillctl cluster l)" = "list" ] || fail "completion: cluster l -> $(complete_words spillctl cluster l)"
[ "$(complete_words spillctl replicate store r)" = "remove" ] || fail "completion: replicate store r"
complete_words spillctl drill hub-loss --sig | grep -qx -- "--signal" || fail "completion: drill hub-loss --sig"
complete_words spillctl cluster add x --kubeconfig "$tmp/com" | grep -q "$tmp/comp" || fail "completion: --kubeconfig FILE"
[ "$(complete_words spillctl --redis redis://x cluster li)" = "list" ] || fail "completion: after a global option"
"$spillctl" completion zsh | head -5 | grep -q bashcompinit || fail "completion zsh does not load bashcompinit"
checks=$((checks + 7))

echo "$checks checks over $n commands, $fails failed"
[ "$fails" = 0 ]
