#!/usr/bin/env bash
# The lab's Redis refuses commands without the password and answers with it.
source "$(dirname "$0")/common.sh"
rest=${SW_LAB_REDIS_URL#redis://:}
password=${rest%%@*}
hostport=${rest#*@}
hostport=${hostport%%/*}
host=${hostport%:*}
port=${hostport##*:}
out=$(redis-cli -h "$host" -p "$port" ping 2>&1 || true)
grep -q NOAUTH <<<"$out" || fail "without a password Redis answered '$out', expected a NOAUTH error"
out=$(redis-cli -h "$host" -p "$port" -a wrong-password --no-auth-warning ping 2>&1 || true)
echo "$out" | grep -Eq "WRONGPASS|invalid password" || fail "with a wrong password Redis answered '$out'"
out=$(redis-cli -h "$host" -p "$port" -a "$password" --no-auth-warning ping)
[ "$out" = PONG ] || fail "with the password Redis answered '$out', expected PONG"
aof=$(redis-cli -h "$host" -p "$port" -a "$password" --no-auth-warning config get appendonly | tail -1)
[ "$aof" = yes ] || fail "expected appendonly yes, got '$aof'"
pass "redis: NOAUTH without password, PONG with it, AOF on"
