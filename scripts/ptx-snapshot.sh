#!/usr/bin/env bash
# Writes every stage (kf IR, gpu IR, LLVM IR, PTX) of ~800 compiles into DIR:
# the op cases of the PTX tests, 400 fuzzed graphs fused and unfused, and
# the embedding example. A refactor of the compiler that must not change
# code generation shows as an empty `diff -r BEFORE AFTER`; the same commit
# run twice shows that compiles are deterministic.
# Usage: scripts/ptx-snapshot.sh DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFUSE_BUILD_DIR:-$root/build}
out=${1:?usage: scripts/ptx-snapshot.sh DIR}
"$root/scripts/build.sh" > /dev/null
rm -rf "$out"
export KFUSE_DUMP_DIR=$out
"$build/tests/unit/kfuse-unit-tests" --gtest_filter='*PTX*:Compiler*' > /dev/null 2>&1 || true
"$build/compiler/kfuse-fuzz" --cpu --count 400 --seed 424242 > /dev/null
"$build/examples/kfuse-example-embed" > /dev/null 2>&1 || true
echo "ptx-snapshot: $(find "$out" -name kernels.ptx | wc -l) compiles in $out"
