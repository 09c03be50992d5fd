#!/usr/bin/env bash
# The main job: build kfuse, then for each example graph print its kf IR
# (as written, and partitioned into fused kernels) and its PTX, run the
# reference evaluator, and, where a GPU is present, run it fused and
# unfused and check both against the evaluator. Then the embedding example.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFUSE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" > /dev/null
kfusec=$build/compiler/kfusec

for example in "$root"/examples/*.mlir; do
  name=$(basename "$example")
  echo "=== $name: kf graph IR (symbolic M bound to 256)"
  "$kfusec" "$example" --emit=graph --bind M=256
  echo "=== $name: fused kernels"
  "$kfusec" "$example" --emit=fused --bind M=256
  echo "=== $name: PTX"
  "$kfusec" "$example" --emit=ptx --bind M=256
  echo "=== $name: reference evaluator on random inputs"
  "$kfusec" "$example" --eval --bind M=256 --seed 1
  echo "=== $name: on the GPU against the evaluator"
  "$kfusec" "$example" --run --bind M=256 --seed 1
  echo
done
echo "=== examples/embed.cpp"
"$build/examples/kfuse-example-embed"
