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
# a suggestion; the edges issue 39 found against kubectl's habits (options
# before the command, -A, -o refused where it does not apply, set-based
# selectors, one wording of an unreachable Redis, KUBECONFIG and --context,
# exit 2 for a bad spec or clusters file, lint -f), with a redis-server of
# its own on a unix socket for the selectors and cluster list without a
# key; and the completion script itself in bash.
# Usage: cli_table.sh PATH/TO/spillctl
set -u
spillctl=$1
unset SPILLWAY_REDIS_URL SPILLWAY_SECRET_KEY_FILE SPILLWAY_SECRET_KEY SPILLWAY_LOG KUBECONFIG
tmp=$(mktemp -d)
redis_pid=
trap '[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
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

# kubectl's habits (issue 39). A command's own options before its name;
# -A; -n and -A together refused; an option the command lacks named.
run -n foo status
[ "$rc" = 2 ] && echo "$err" | grep -q '^spillctl status: no Redis' || fail "-n foo status: exit $rc: $err"
run -A status --redis redis://127.0.0.1:1
[ "$rc" = 1 ] && echo "$err" | grep -q '^spillctl status: redis ' || fail "-A status: exit $rc: $err"
run -n status -o json status --redis redis://127.0.0.1:1
[ "$rc" = 1 ] && echo "$err" | grep -q '^spillctl status: redis ' || fail "-n status status (a namespace named status): exit $rc: $err"
run -n foo -A status
[ "$rc" = 2 ] && echo "$err" | grep -q -- '-n and -A (--all-namespaces) exclude each other' || fail "-n foo -A status: exit $rc: $err"
run -n foo cluster list
[ "$rc" = 2 ] && echo "$err" | grep -q -- '^spillctl cluster list: -n is not an option of this command; it belongs to "spillctl status"' ||
    fail "-n foo cluster list: exit $rc: $err"
run -x status
[ "$rc" = 2 ] && echo "$err" | grep -q -- '^spillctl status: unknown option -x' || fail "-x status: exit $rc: $err"
# -o where it does not apply: refused before anything is read, naming what is accepted.
for c in "cluster show x --no-probe -o csv|expected table, json or yaml here" \
    "cluster show x -o wide|expected table, json or yaml here" \
    "explain a/b/c -o name|expected table, json or yaml here" \
    "hub status -o csv|expected table, wide, json or yaml here" \
    "report chargeback --from 2026-01-01 --to 2026-02-01 --from-hub --ondemand-price 3 -o yaml|expected table, json or csv here" \
    "drill hub-loss --dry-run -o csv|expected table, json or yaml here" \
    "completion bash -o json|this command prints no list and takes no -o" \
    "reseal --new-secret-key-file x -o json|this command prints no list and takes no -o" \
    "cluster add x --dry-run --role cloud --region r -o yaml|this command prints no list and takes no -o" \
    "replicate run x --once -o json|this command prints no list and takes no -o" \
    "lint -f x -o json|this command prints no list and takes no -o" \
    "simulate --trace x --clusters y -o csv|this command prints no list and takes no -o"; do
    # shellcheck disable=SC2086
    run ${c%%|*}
    [ "$rc" = 2 ] && echo "$err" | grep -q -- "-o [a-z]*: ${c#*|}" || fail "${c%%|*}: exit $rc: $err"
done
# Set-based selectors: accepted (then no Redis: 2 saying so), or refused
# with the whole term and what is expected.
for l in 'team in (a,b)' 'state notin (running,failed),team=ml' 'where' '!where' 'team==ml,cluster!=onprem'; do
    run status -l "$l"
    [ "$rc" = 2 ] && echo "$err" | grep -q '^spillctl status: no Redis' || fail "status -l '$l': exit $rc: $err"
done
run status -l 'colour in (red,blue)'
[ "$rc" = 2 ] && echo "$err" | grep -q -- '-l: "colour in (red,blue)": expected KEY=VALUE, .*KEY in (V1,V2,...), KEY notin (V1,...), KEY (set) or !KEY (not set), with KEY one of team, cluster, namespace, state, capacity, where, form' ||
    fail "status -l 'colour in (red,blue)': exit $rc: $err"
run status -l 'team in (a,b'
[ "$rc" = 2 ] && echo "$err" | grep -q -- '-l: "team in (a,b": unbalanced parentheses' || fail "status -l 'team in (a,b': exit $rc: $err"
run status -l 'team in a'
[ "$rc" = 2 ] && echo "$err" | grep -q -- 'expected the values in parentheses' || fail "status -l 'team in a': exit $rc: $err"
# An unreachable Redis is said in the same words by every command, and a
# unix socket's path gets no port.
for c in "cluster list|--no-probe" "cluster remove|x" "cluster show|x --no-probe" "status|" "explain|a/b/c" \
    "hub status|" "logs|a/b/c" "drill history|" "replicate list|" "replicate store list|" "replicate sign|" \
    "report chargeback|--from 2026-01-01 --to 2026-02-01 --from-hub --ondemand-price 3"; do
    # shellcheck disable=SC2086
    run ${c%%|*} ${c#*|} --redis "unix://$tmp/no.sock"
    [ "$rc" = 1 ] && [ "$err" = "spillctl ${c%%|*}: redis unix://$tmp/no.sock?db=0: cannot connect to $tmp/no.sock: No such file or directory" ] ||
        fail "${c%%|*} with Redis unreachable: exit $rc: $err"
done
# KUBECONFIG, a list merged as kubectl merges it, and --context, read by
# cluster add (--dry-run: the kubeconfig is read, nothing contacted).
printf 'kind: Config\ncurrent-context: one\ncontexts:\n- name: one\n  context: {cluster: c1, user: u}\n- name: two\n  context: {cluster: c2, user: u}\n' >"$tmp/kc-a"
printf 'kind: Config\ncurrent-context: two\nclusters:\n- name: c1\n  cluster: {server: "https://127.0.0.1:9"}\n- name: c2\n  cluster: {server: "https://127.0.0.1:10"}\nusers:\n- name: u\n  user: {token: t}\n' >"$tmp/kc-b"
KUBECONFIG="$tmp/missing:$tmp/kc-a::$tmp/kc-b" run cluster add x --dry-run --role cloud --region r
[ "$rc" = 0 ] && echo "$out" | grep -qx "kubeconfig \"$tmp/kc-a\": context one, server https://127.0.0.1:9" ||
    fail "KUBECONFIG a:b: exit $rc: $out $err"
KUBECONFIG="$tmp/kc-a:$tmp/kc-b" run cluster add x --dry-run --role cloud --region r --context two
[ "$rc" = 0 ] && echo "$out" | grep -qx "kubeconfig \"$tmp/kc-a\": context two, server https://127.0.0.1:10" ||
    fail "KUBECONFIG a:b --context two: exit $rc: $out $err"
KUBECONFIG="$tmp/kc-a:$tmp/kc-b" run cluster add x --dry-run --role cloud --region r --context three
[ "$rc" = 2 ] && [ "$err" = "spillctl cluster add x: kubeconfig \"$tmp/kc-a:$tmp/kc-b\": context \"three\": in the \"contexts\" of no file" ] ||
    fail "KUBECONFIG --context three: exit $rc: $err"
run cluster add x --dry-run --role cloud --region r --kubeconfig "$tmp/kc-a"
[ "$rc" = 2 ] && echo "$err" | grep -q "kubeconfig \"$tmp/kc-a\": context \"one\": cluster \"c1\": no such cluster" ||
    fail "--kubeconfig wins over KUBECONFIG, read alone: exit $rc: $err"
run cluster add x --dry-run --role cloud --region r --context two
[ "$rc" = 2 ] && echo "$err" | grep -q -- '--context needs a kubeconfig (--kubeconfig FILE or KUBECONFIG)' ||
    fail "--context without a kubeconfig: exit $rc: $err"
# A spec file that does not parse is bad usage (2), as a bad flag is; so
# is simulate's clusters file, which refuses what it does not know.
printf 'role: cloud\nregion: [\n' >"$tmp/broken.yaml"
run cluster add x --dry-run --spec "$tmp/broken.yaml"
[ "$rc" = 2 ] && echo "$err" | grep -q "cluster spec \"$tmp/broken.yaml\": line" || fail "cluster add --spec broken: exit $rc: $err"
run cluster add x --dry-run --role clod --region r
[ "$rc" = 2 ] || fail "cluster add --role clod: exit $rc"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["qoutas"]=[]; json.dump(d, open(sys.argv[2], "w"))' "$clusters" "$tmp/qoutas.json"
run simulate --trace "$tmp/one.csv" --clusters "$tmp/qoutas.json"
[ "$rc" = 2 ] && [ "$err" = "spillctl simulate: $tmp/qoutas.json: field \"qoutas\": unknown (expected pools, links, quotas, budgets, job_defaults, origin)" ] ||
    fail "simulate, clusters file with qoutas: exit $rc: $err"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["pools"][0]["gpuz"]=1; json.dump(d, open(sys.argv[2], "w"))' "$clusters" "$tmp/gpuz.json"
run simulate --trace "$tmp/one.csv" --clusters "$tmp/gpuz.json"
[ "$rc" = 2 ] && echo "$err" | grep -q "$tmp/gpuz.json: pools\[0\]: field \"gpuz\": unknown (expected name, " || fail "simulate, a pool with gpuz: exit $rc: $err"
run simulate --trace "$tmp/none.csv" --clusters "$clusters"
[ "$rc" = 2 ] || fail "simulate, a trace that does not exist: exit $rc, expected 2"

# lint: a Job's spillway settings checked offline by the hub's parsers,
# every problem a line naming file, line, Job and field.
cat >"$tmp/jobs.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: research
  annotations:
    spillway.io/burst: auto
    spillway.io/max-price: abc
    spillway.io/team: Team_A
spec:
  template:
    spec:
      containers:
      - name: t
        resources: {limits: {nvidia.com/gpu: 4}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: nogpu
  annotations: {spillway.io/burst: auto}
spec:
  template: {spec: {containers: [{name: t}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: delegated}
spec:
  managedBy: spillway.io/hub
  template: {spec: {containers: [{name: t}]}}
YAML
run lint -f "$tmp/jobs.yaml"
[ "$rc" = 1 ] || fail "lint, bad Jobs: exit $rc, expected 1: $out $err"
for want in "$tmp/jobs.yaml:8: Job research/train: annotation \"spillway.io/max-price\": value \"abc\": expected a price" \
    "$tmp/jobs.yaml:9: Job research/train: annotation \"spillway.io/team\": value \"Team_A\": expected a DNS-1123 label" \
    "$tmp/jobs.yaml:17: skipped: a ConfigMap is not a Job" \
    "$tmp/jobs.yaml:21: Job nogpu: field \"spec.template.spec.containers\[\].resources\": asks for no GPU" \
    "$tmp/jobs.yaml:33: Job delegated: field \"spec.managedBy\": \"spillway.io/hub\" hands the Job to spillway, but without" \
    "^3 Jobs checked: 3 with problems (4 problems), 0 not spillway's; 1 other object skipped$"; do
    echo "$out" | grep -q -- "$want" || fail "lint: no line '$want' in: $out"
done
printf '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","annotations":{"spillway.io/burst":"cloud-first","spillway.io/expected-runtime":"2h"}},"spec":{"parallelism":2,"template":{"spec":{"containers":[{"name":"a","resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}}}' >"$tmp/job.json"
rc=0
"$spillctl" lint -f - <"$tmp/job.json" >"$tmp/out" 2>"$tmp/err" || rc=$?
checks=$((checks + 1))
[ "$rc" = 0 ] && grep -q '^(stdin):1: Job j: ok (spillway.io/burst=cloud-first)$' "$tmp/out" || fail "lint -f - (JSON): exit $rc: $(cat "$tmp/out" "$tmp/err")"
printf 'kind: [\n' >"$tmp/notyaml"
run lint -f "$tmp/notyaml"
[ "$rc" = 2 ] && echo "$err" | grep -q "^spillctl lint: $tmp/notyaml: line 2 column 1: " || fail "lint, not YAML: exit $rc: $err"
run lint
[ "$rc" = 2 ] && echo "$err" | grep -q -- '-f FILE is required' || fail "lint without -f: exit $rc: $err"

# With a Redis of its own (a unix socket in $tmp): the selectors select,
# and cluster list needs no sealing key (it lists without probing, and says so).
if ! command -v redis-server >/dev/null; then
    fail "redis-server is not installed (scripts/install-deps.sh installs it)"
else
    redis-server --port 0 --unixsocket "$tmp/r.sock" --save '' --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 50); do [ -S "$tmp/r.sock" ] && break; sleep 0.1; done
    rec() { # KEY TEAM STATE WHERE
        redis-cli -s "$tmp/r.sock" SADD spillway:jobs "$1" >/dev/null
        redis-cli -s "$tmp/r.sock" SET "spillway:job:$1" "{\"key\":\"$1\",\"cluster\":\"onprem\",\"namespace\":\"$(echo "$1" | cut -d/ -f2)\",\"name\":\"${1##*/}\",\"team\":\"$2\",\"state\":\"$3\",\"targetCluster\":\"$4\"}" >/dev/null
    }
    rec onprem/a/j1 ml running cloud-spot
    rec onprem/b/j2 cv failed ""
    rec onprem/b/j3 "" observed ""
    sel() { "$spillctl" --redis "unix://$tmp/r.sock" status -o name "$@" 2>"$tmp/err" | tr '\n' ' '; }
    checks=$((checks + 7))
    [ "$(sel -l 'team in (ml,cv)')" = "onprem/a/j1 onprem/b/j2 " ] || fail "-l 'team in (ml,cv)': $(sel -l 'team in (ml,cv)') $(cat "$tmp/err")"
    [ "$(sel -l 'state notin (running,failed)')" = "onprem/b/j3 " ] || fail "-l 'state notin (...)': $(sel -l 'state notin (running,failed)')"
    [ "$(sel -l 'team')" = "onprem/a/j1 onprem/b/j2 " ] || fail "-l team: $(sel -l team)"
    [ "$(sel -l '!where')" = "onprem/b/j2 onprem/b/j3 " ] || fail "-l '!where': $(sel -l '!where')"
    [ "$(sel -l 'team in (ml,cv),state!=failed')" = "onprem/a/j1 " ] || fail "-l 'team in (ml,cv),state!=failed'"
    [ "$(sel -A -l team)" = "onprem/a/j1 onprem/b/j2 " ] || fail "-A -l team: $(sel -A -l team)"
    [ "$("$spillctl" --redis "unix://$tmp/r.sock" -n b status -o name | tr '\n' ' ')" = "onprem/b/j2 onprem/b/j3 " ] || fail "-n b status"
    redis-cli -s "$tmp/r.sock" SADD spillway:clusters edge >/dev/null
    run --redis "unix://$tmp/r.sock" cluster list -o name
    [ "$rc" = 0 ] && echo "$err" | grep -q '^spillctl cluster list: not probing the clusters: no secret key' ||
        fail "cluster list without a key: exit $rc: $out $err"
    run --redis "unix://$tmp/r.sock" cluster list --secret-key-file "$tmp/no-key"
    [ "$rc" = 1 ] && echo "$err" | grep -q "secret key file \"$tmp/no-key\"" || fail "cluster list, a key file that is not there: exit $rc: $err"
fi

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
[ "$(complete_words spillctl -n foo sta)" = "status" ] || fail "completion: after a command's option before it"
complete_words spillctl lint -f "$tmp/jobs.y" | grep -q "$tmp/jobs.yaml" || fail "completion: lint -f FILE"
"$spillctl" completion zsh | head -5 | grep -q bashcompinit || fail "completion zsh does not load bashcompinit"
checks=$((checks + 9))

echo "$checks checks over $n commands, $fails failed"
[ "$fails" = 0 ]
