#!/usr/bin/env bash
# Builds kfuse here and packs what the GPU machine runs (it has no LLVM,
# MLIR or GoogleTest): libkfuse.so, the GPU and unit tests, the benchmark
# and the examples, stripped and xz-compressed into .bundle/kfuse.tar.xz.
# .bundle/ is git-ignored; name it in the device tool's `carry`, and run
# scripts/gpu-run.sh there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFUSE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" > /dev/null
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/kfuse/lib" "$stage/kfuse/bin"
cp -P "$build"/compiler/libkfuse.so* "$stage/kfuse/lib/"
cp "$build/tests/gpu/kfuse-gpu-tests" "$build/tests/unit/kfuse-unit-tests" \
   "$build/bench/kfuse-bench" "$build/examples/kfuse-example-embed" \
   "$build/compiler/kfusec" "$build/compiler/kfuse-fuzz" \
   "$build/tests/stress/kfuse-cache-stress" \
   "$build/tests/kfuse-capi-test" "$stage/kfuse/bin/"
strip --strip-unneeded "$stage"/kfuse/lib/libkfuse.so.*.* "$stage"/kfuse/bin/*
mkdir -p "$root/.bundle"
cp -r "$root/examples" "$stage/kfuse/examples"
cp -r "$root/tests/lit/fuzz" "$stage/kfuse/fuzz-regressions"
# The unit tests' data, where kfuse-unit-tests looks beside its bin/.
mkdir -p "$stage/kfuse/tests/lit"
cp -r "$root/tests/corpus" "$stage/kfuse/tests/corpus"
cp -r "$root/tests/lit/ops" "$stage/kfuse/tests/lit/ops"
cp "$root/bench/peers.py" "$stage/kfuse/bin/"
tar -C "$stage" -cf - kfuse | xz -T2 -6 > "$root/.bundle/kfuse.tar.xz"
ls -la "$root/.bundle/kfuse.tar.xz"
