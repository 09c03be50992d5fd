#!/usr/bin/env bash
# The main job: build kfuse (its progress shown), then for each example
# graph print its kf IR (as written, and partitioned into fused kernels),
# the size and first lines of its PTX (--emit=ptx prints all of it), run
# the reference evaluator, and, where a GPU is present, run it fused and
# unfused and check both against the evaluator. Then the embedding example
# and a summary line per example.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFUSE_BUILD_DIR:-$root/build}
echo "=== building kfuse in $build (ccache; the first build takes a while)"
"$root/scripts/build.sh" | grep --line-buffered -E '^\[[0-9]+/[0-9]+\]' |
  awk '{ if (NR % 20 == 1) print "  " $1 " " $NF; fflush() }' || true
kfusec=$build/compiler/kfusec
summary=()

for example in "$root"/examples/*.mlir; do
  name=$(basename "$example")
  # The symbolic batch M, where the example has one.
  bind=(); grep -q '"M"' "$example" && bind=(--bind M=256)
  echo "=== $name: kf graph IR${bind[*]:+ (its symbolic M bound to 256)}"
  "$kfusec" "$example" --emit=graph "${bind[@]}"
  echo "=== $name: fused kernels"
  "$kfusec" "$example" --emit=fused "${bind[@]}"
  ptx=$("$kfusec" "$example" --emit=ptx "${bind[@]}")
  kernels=$(grep -c '^\.visible \.entry' <<< "$ptx" || true)
  echo "=== $name: PTX, $kernels kernels, $(wc -l <<< "$ptx") lines; the first:"
  grep -m 12 -E '^\.(version|target|visible)|^\s+(ld\.global|st\.global|fma|mma|wgmma|cp\.async)' <<< "$ptx" || true
  echo "=== $name: reference evaluator on random inputs"
  "$kfusec" "$example" --eval "${bind[@]}" --seed 1
  echo "=== $name: on the GPU against the evaluator"
  run=$("$kfusec" "$example" --run "${bind[@]}" --seed 1)
  echo "$run"
  summary+=("$name: $kernels fused kernels; $(tr '\n' ' ' <<< "$run" | cut -c1-150)")
  echo
done
echo "=== examples/embed.cpp"
"$build/examples/kfuse-example-embed"
echo
echo "=== summary"
printf '%s\n' "${summary[@]}"
