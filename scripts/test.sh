#!/usr/bin/env bash
# The whole test suite: set-up, build, then ctest (the lit suite, the unit
# tests, the install test and the examples). GPU tests skip without a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFUSE_BUILD_DIR:-$root/build}
start=$(date +%s)
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
# The unit tests, the bad-input corpus and fuzzed graphs under ASan+UBSan;
# the cache and concurrency tests under TSan ($KFUSE_SKIP_SANITIZERS=1 skips).
if [ "${KFUSE_SKIP_SANITIZERS:-0}" != 1 ]; then
  "$root/scripts/sanitize.sh"
fi
echo "test.sh: build and tests took $(( $(date +%s) - start )) s"
