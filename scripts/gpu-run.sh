#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .bundle/ carried:
# the GPU tests, the unit tests and the benchmark. Logs go to $OUT (or
# ./gpu-logs); a short table is printed last.
set -uo pipefail
source "$(dirname "$0")/gpu-unpack.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv \
  > "$out/gpu.txt" 2>&1
summary=()
run() {
  local name=$1; shift
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$name: exit $rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' "$out/$name.log" | tr '\n' ' ')")
  return 0
}
run gpu-tests "$bin/kfuse-gpu-tests" "$@"
run unit-tests "$bin/kfuse-unit-tests"
"$bin/kfuse-fuzz" --gpu --replay "$dest"/kfuse/fuzz-regressions/*.mlir \
  > "$out/fuzz-replay.log" 2>&1
# KFUSE_STRESS_ROUNDS: fewer rounds when device time is short (50: ~3 min).
"$bin/kfuse-cache-stress" --processes 16 --rounds "${KFUSE_STRESS_ROUNDS:-50}" \
  > "$out/cache-stress.log" 2>&1
echo "cache stress: exit $?" >> "$out/cache-stress.log"
for example in "$dest"/kfuse/examples/*.mlir; do
  bind=(); grep -q '"M"' "$example" && bind=(--bind M=512)
  echo "$(basename "$example"): $("$bin/kfusec" "$example" --run "${bind[@]}" --seed 3 | tr '\n' ';')"
done > "$out/examples.log" 2>&1
"$bin/kfusec" "$dest/kfuse/examples/layernorm.mlir" --profile > "$out/profile.log" 2>&1
"$bin/kfusec" "$dest/kfuse/examples/layernorm.mlir" --profile --unfused >> "$out/profile.log" 2>&1
"$bin/kfuse-bench" costs --json "$out/costs.json" > "$out/bench.log" 2>&1
echo "bench costs: exit $?" >> "$out/bench.log"
"$bin/kfuse-bench" memory --json "$out/memory.json" >> "$out/bench.log" 2>&1
echo "bench memory: exit $?" >> "$out/bench.log"
"$bin/kfuse-bench" matmul >> "$out/bench.log" 2>&1
echo "bench matmul: exit $?" >> "$out/bench.log"
"$bin/kfuse-bench" pad >> "$out/bench.log" 2>&1
echo "bench pad: exit $?" >> "$out/bench.log"
"$bin/kfuse-bench" attention --peers "$bin/peers.py" >> "$out/bench.log" 2>&1
echo "bench attention: exit $?" >> "$out/bench.log"
# The peers on the same GPU in the same run: PyTorch eager and torch.compile.
PYTHONUNBUFFERED=1 python3 "$bin/peers.py" --json "$out/peers.json" >> "$out/bench.log" 2>&1
echo "peers: exit $?" >> "$out/bench.log"
cat "$out/gpu.txt"
grep -E "FAILED|Failure" -A3 "$out/gpu-tests.log" | head -60
printf '%s\n' "${summary[@]}"
cat "$out/fuzz-replay.log" "$out/cache-stress.log"
cat "$out/examples.log"
cat "$out/profile.log"
cat "$out/bench.log"
