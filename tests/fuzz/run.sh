#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time.
#   tests/fuzz/run.sh [SECONDS-PER-TARGET]   (default 60)
# The committed seed corpus is copied to tests/fuzz/corpus-run/ (ignored by
# git) so that what the fuzzer learns never changes the tree. A crash leaves
# its input in build-fuzz/ and makes the script fail.
set -euo pipefail
secs="${1:-60}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="$src/build-fuzz"
CC=clang cmake -S "$src" -B "$build" -G Ninja -DSW_FUZZ=ON -DSW_WERROR=ON >/dev/null
cmake --build "$build" -j2 --target fuzz_kubeconfig fuzz_watch fuzz_spec fuzz_exec fuzz_s3xml
status=0
for t in kubeconfig watch spec exec s3xml; do
  run="$src/tests/fuzz/corpus-run/$t"
  mkdir -p "$run"
  cp -n "$src/tests/fuzz/corpus/$t/"* "$run/" 2>/dev/null || true
  echo "== fuzz_$t for ${secs}s"
  if ! (cd "$build" && "./tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len=8192 \
        -print_final_stats=1 "$run" "$src/tests/fuzz/corpus/$t" 2>&1 | tail -n 25); then
    status=1
  fi
done
exit $status
