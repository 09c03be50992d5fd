#!/usr/bin/env bash
# Runs on the GPU machine, with .bundle/ carried (or from gpu-steps.sh's
# fuzz-many step, with $bin set): kfuse-fuzz --gpu (fused and unfused run
# against the evaluator) in PROCESSES processes at once for SECONDS each,
# seeds SEED, SEED + 1000000, ... (the machine's cores compile while the
# GPU runs the others' graphs). Extra arguments go to every process
# (--backward: each graph's joint vjp graph instead). Prints each process's
# summary, the failures' first lines and the totals; each process's log and
# the shrunk reproducers of what failed stay in $OUT/fuzz-SEED/. A process
# starts no graph past its time limit, but shrinks a failure it found first.
# Usage: scripts/gpu-fuzz.sh [processes] [seconds] [first seed] [args...]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-12} seconds=${2:-300} seed=${3:-100000}
shift $(( $# < 3 ? $# : 3 ))
if [ -z "${bin:-}" ]; then
  source "$root/scripts/gpu-unpack.sh"
fi
logs=${OUT:-$root/gpu-logs}/fuzz-$seed
mkdir -p "$logs/regressions"
for ((j = 0; j < jobs; ++j)); do
  "$bin/kfuse-fuzz" --gpu --count 100000000 --seed $((seed + j * 1000000)) \
    --time-limit "$seconds" --regressions "$logs/regressions" "$@" \
    > "$logs/$j.out" 2> "$logs/$j.err" &
done
wait
cat "$logs"/*.out | grep '^kfuse-fuzz:'
grep -h 'FAILED\|crashed checking' "$logs"/*.err | head -20
cat "$logs"/*.out | awk '/^kfuse-fuzz:/ {
    for (i = 1; i <= NF; ++i) {
      if ($(i + 1) == "graphs") tried += $i
      if ($(i + 1) ~ /^passed/) passed += $i
      if ($(i + 1) == "degenerate") degenerate += $i
      if ($(i + 1) == "failed") failed += $i
    }
  }
  END { printf "gpu-fuzz: %d graphs, %d passed, %d degenerate, %d failed\n",
        tried, passed, degenerate, failed }'
