#!/usr/bin/env bash
# The tests under sanitizers, each in its own build directory (build-asan,
# build-tsan beside build/, or under $KFUSE_SANITIZE_DIR):
#  - AddressSanitizer + UndefinedBehaviorSanitizer: every unit test (the
#    bad-input corpus, truncation and mutation sweeps, run-argument checks
#    among them), the C API's test program and a hundred fuzzed graphs;
#  - ThreadSanitizer: the cache and concurrency tests, and the multi-process
#    cache stress.
# Any report fails the run. scripts/test.sh runs this after the main suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${KFUSE_SANITIZE_DIR:-$root}
"$root/scripts/setup.sh"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

configure() { # dir sanitizers
  if [ ! -f "$1/build.ninja" ]; then
    cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DKFUSE_SANITIZE="$2" > /dev/null
  fi
}

asan=$base/build-asan
configure "$asan" "address,undefined"
cmake --build "$asan" --target kfuse-unit-tests kfuse-fuzz kfuse-capi-test
# allow_user_poisoning=0: LLVM's allocators poison and unpoison their slabs
# only where compiled with ASan, and kfuse's instrumented code and Debian's
# uninstrumented LLVM libraries each carry copies of those inline functions;
# which copy the linker keeps changes with the objects linked, and a slab
# poisoned by one copy and handed out by the other reads as poisoned
# (inside MLIRContext's construction, in no kfuse code).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: unit tests"
"$asan/tests/unit/kfuse-unit-tests" --gtest_brief=1
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: the C API"
"$asan/tests/kfuse-capi-test"
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: 100 fuzzed graphs"
"$asan/compiler/kfuse-fuzz" --cpu --count 100 --seed 1 --time-limit 300

tsan=$base/build-tsan
configure "$tsan" "thread"
cmake --build "$tsan" --target kfuse-unit-tests kfuse-cache-stress
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp
echo "== ThreadSanitizer: cache and concurrency tests, kernels compiled in parallel"
"$tsan/tests/unit/kfuse-unit-tests" --gtest_brief=1 \
  --gtest_filter='MemoryCache.*:DiskCacheTest.*:Plan.*:Compiler.*'
echo "== ThreadSanitizer: cache stress"
"$tsan/tests/stress/kfuse-cache-stress" --processes 8 --rounds 10
echo "sanitize.sh: no sanitizer reports"
