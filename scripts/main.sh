#!/usr/bin/env bash
# The main job: build kfuse, then for each example graph print its kf IR
# and run the reference evaluator on random inputs; then run the embedded
# C++ example.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFUSE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" > /dev/null
kfusec=$build/compiler/kfusec

for example in "$root"/examples/*.mlir; do
  name=$(basename "$example")
  echo "=== $name: kf graph IR (M bound to 256 where symbolic)"
  "$kfusec" "$example" --emit=graph --bind M=256
  echo "=== $name: reference evaluator on random inputs"
  "$kfusec" "$example" --eval --bind M=256 --seed 1
  echo
done
echo "=== examples/embed.cpp"
"$build/examples/kfuse-example-embed"
