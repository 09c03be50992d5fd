#!/usr/bin/env bash
# Runs on the GPU machine, with .bundle/ carried: kfuse-fuzz on the GPU
# (fused and unfused run against the evaluator), four processes on disjoint
# seed ranges. Usage: scripts/gpu-fuzz.sh [graphs per process] [seconds]
# [first seed].
# Shrunk failures land in $OUT/regressions.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-logs}
count=${1:-1500}
limit=${2:-480}
base=${3:-100000}
mkdir -p "$out/regressions"
dest=$(mktemp -d)
tar -C "$dest" -xJf "$root/.bundle/kfuse.tar.xz"
export LD_LIBRARY_PATH="$dest/kfuse/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KFUSE_CACHE_DIR="$dest/cache"
for part in 0 1 2 3; do
  "$dest/kfuse/bin/kfuse-fuzz" --gpu --count "$count" \
    --seed $((base + part * 1000000)) --time-limit "$limit" \
    --regressions "$out/regressions" > "$out/fuzz-$part.log" 2>&1 &
done
wait
for part in 0 1 2 3; do
  grep -E "^seed|FAILED" "$out/fuzz-$part.log" | head -20
  tail -4 "$out/fuzz-$part.log"
done
