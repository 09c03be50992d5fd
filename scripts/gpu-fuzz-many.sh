#!/usr/bin/env bash
# Runs kfuse-fuzz --gpu in JOBS processes at once for SECONDS each (the GPU
# machine's cores compile while its GPU runs the others' graphs), seeds
# SEED, SEED + 1000000, ...; prints each process's summary, the failures'
# first lines and the totals; a process's graphs past its time limit are
# not started, but a failure found is shrunk first (minutes, at worst). Extra arguments go to every process
# (--backward). Called by gpu-steps.sh's fuzz-many step, with $bin set.
# Usage: gpu-fuzz-many.sh JOBS SECONDS SEED [kfuse-fuzz args...]
set -uo pipefail
jobs=${1:?jobs} seconds=${2:?seconds} seed=${3:?seed}
shift 3
# Each process's output, and the shrunk reproducers of what failed, are kept
# under $OUT (which gpu-steps.sh brings back).
logs=${OUT:-$(mktemp -d)}/fuzz-many-$seed
mkdir -p "$logs/regressions"
for ((j = 0; j < jobs; ++j)); do
  "$bin/kfuse-fuzz" --gpu --count 100000000 --seed $((seed + j * 1000000)) \
    --time-limit "$seconds" --regressions "$logs/regressions" "$@" \
    > "$logs/$j.out" 2> "$logs/$j.err" &
done
wait
cat "$logs"/*.out | grep '^kfuse-fuzz:'
grep -h 'FAILED' "$logs"/*.err | head -20
cat "$logs"/*.out | awk '/^kfuse-fuzz:/ {
    for (i = 1; i <= NF; ++i) {
      if ($(i + 1) == "graphs") tried += $i
      if ($(i + 1) ~ /^passed/) passed += $i
      if ($(i + 1) == "degenerate") degenerate += $i
      if ($(i + 1) == "failed") failed += $i
    }
  }
  END { printf "fuzz-many: %d graphs, %d passed, %d degenerate, %d failed\n",
        tried, passed, degenerate, failed }'
