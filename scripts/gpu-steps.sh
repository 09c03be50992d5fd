#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root with .bundle/ carried
# (scripts/gpu-bundle.sh): named steps, each under its own time limit, its
# log in $OUT (or ./gpu-logs) and its last TAILN lines (default 25) printed,
# so that one device call does a session's GPU work without losing it all
# to one step that runs long.
#   bash scripts/gpu-steps.sh pytest,gpu-tests,capi,replay,fuzz,memory,hf
# (`checks`: gpu-tests in SHARDS processes, pytest and hf-coverage at once)
# Environment: GTEST (a --gtest_filter), PYTEST_MAXFAIL, FUZZ_TIME / FUZZ_SEED (fuzz-many:
# FUZZ_JOBS processes, FUZZ_ARGS such as --backward), PYTEST_ARGS,
# BENCH_ARGS, BLOCKS_ARGS / BLOCKS_LIMIT, SWEEP_ARGS / SWEEP_LIMIT, TRAINING_ARGS / TRAINING_LIMIT, HF_ARGS / HF_LIMIT (bench/hf_models.py, bench/hf_coverage.py), TORCH_FUZZ_COUNT / TORCH_FUZZ_DTYPE,
# CMD / CMD_LIMIT (any command, with $bin and $dest exported), NPROC (distributed),
# AB_VARIANTS / AB_ARGS / AB_ROUNDS / AB_GREP / AB_COL / AB_LIMIT (ab: scripts/gpu-ab.py),
# VARIANTS / VARIANTS_LIMIT / SHARDS (variants: GPU tests under several environments).
set -uo pipefail
source "$(dirname "$0")/gpu-unpack.sh"
export KFUSE_LIBRARY=$dest/kfuse/lib/libkfuse.so
export PYTHONPATH=$root/python
TAILN=${TAILN:-25}
export bin dest
step() { # name timeout cmd...
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout "$t" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc $(( $(date +%s) - s ))s"
  tail -n "$TAILN" "$out/$name.log"
}
# The correctness checks at once, the GPU tests in SHARDS processes (their
# compiles are most of their time, and the machine has 16 cores): no
# timing in any of them. Each shard's, pytest's and hf_coverage's log.
# The test that watches the device's free memory runs alone afterwards
# (the other processes' allocations would show in it).
alone=Workspace.DeviceMemoryStaysBoundedOverAHundredShapes
checks() {
  local s=$(date +%s) n=${SHARDS:-4} names=() pids=()
  for ((i = 0; i < n; i++)); do
    GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i timeout 300 \
      "$bin/kfuse-gpu-tests" --gtest_brief=1 \
      --gtest_filter="${GTEST:-*}-$alone" \
      > "$out/gpu-tests-$i.log" 2>&1 &
    names+=("gpu-tests-$i"); pids+=($!)
  done
  timeout 300 python3 -m pytest -q -p no:cacheprovider \
    --maxfail="${PYTEST_MAXFAIL:-10}" python/tests ${PYTEST_ARGS:-} \
    > "$out/pytest.log" 2>&1 &
  names+=(pytest); pids+=($!)
  timeout "${HF_LIMIT:-400}" python3 bench/hf_coverage.py ${HF_ARGS:-} \
    > "$out/hf-coverage.log" 2>&1 &
  names+=(hf-coverage); pids+=($!)
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    echo "=== ${names[$i]}: rc=$?"
  done
  timeout 120 "$bin/kfuse-gpu-tests" --gtest_brief=1 --gtest_filter="$alone" \
    >> "$out/gpu-tests-0.log" 2>&1
  echo "=== $alone: rc=$?"
  echo "=== checks: $(( $(date +%s) - s ))s"
  grep -h -E "tests? from .* ran|^\[  PASSED|^\[  SKIPPED \] [0-9]|^\[  FAILED" \
    "$out"/gpu-tests-*.log
  tail -n 3 "$out/pytest.log"
  tail -n "$TAILN" "$out/hf-coverage.log"
}
# GPU tests under several environments at once (temporary switches of
# patches measured side by side), each in SHARDS processes with a cache
# directory of its own: VARIANTS='name@K=V,K2=V2@gtest-filter;name2@@filter'
# (an empty environment is the default). Each variant's results and
# failures; the logs, concatenated, in variants.log.
variants() {
  local s=$(date +%s) n=${SHARDS:-3} logs=()
  IFS=';' read -ra specs <<< "${VARIANTS:?VARIANTS names the variants}"
  for spec in "${specs[@]}"; do
    IFS='@' read -r name assignments filter <<< "$spec"
    IFS=',' read -ra env <<< "$assignments"
    for ((i = 0; i < n; i++)); do
      env "${env[@]}" KFUSE_CACHE_DIR="/tmp/variants-$name-$i" \
        GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i timeout "${VARIANTS_LIMIT:-300}" \
        "$bin/kfuse-gpu-tests" --gtest_brief=1 --gtest_filter="${filter:-*}" \
        > "/tmp/variants-$name-$i.log" 2>&1 &
      logs+=("/tmp/variants-$name-$i.log")
    done
  done
  wait
  echo "=== variants: $(( $(date +%s) - s ))s"
  for log in "${logs[@]}"; do
    echo "== $(basename "$log" .log): $(tail -n 1 "$log")"
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure$|Which is|relative error|Killed" \
      "$log" | head -n 12
  done
  cat "${logs[@]}" > "$out/variants.log"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
IFS=, read -ra steps <<< "$1"
for s in "${steps[@]}"; do
  case $s in
    gpu-tests) step gpu-tests 300 "$bin/kfuse-gpu-tests" ${GTEST:+--gtest_filter=$GTEST} ;;
    unit) step unit 300 "$bin/kfuse-unit-tests" ;;
    capi) step capi 60 "$bin/kfuse-capi-test" ;;
    replay) step replay 120 bash -c "\"$bin/kfuse-fuzz\" --gpu --replay \"$dest\"/kfuse/fuzz-regressions/*.mlir" ;;
    fuzz) step fuzz 200 "$bin/kfuse-fuzz" --gpu --count 100000 --seed "${FUZZ_SEED:-500000}" --time-limit "${FUZZ_TIME:-90}" ;;
    fuzz-many) step fuzz-many $(( ${FUZZ_TIME:-300} + 120 )) \
        "$root/scripts/gpu-fuzz.sh" "${FUZZ_JOBS:-12}" "${FUZZ_TIME:-300}" \
        "${FUZZ_SEED:-500000}" ${FUZZ_ARGS:-} ;;
    # Past the first failure (session 47's -x hid every test after it).
    pytest) step pytest 300 python3 -m pytest -q -p no:cacheprovider \
              --maxfail="${PYTEST_MAXFAIL:-10}" python/tests ${PYTEST_ARGS:-} ;;
    memory) step memory 200 "$bin/kfuse-bench" memory ;;
    matmul) step matmul 200 "$bin/kfuse-bench" matmul ;;
    attention) step attention 200 "$bin/kfuse-bench" attention --peers "$bin/peers.py" ;;
    training) step training "${TRAINING_LIMIT:-400}" "$bin/kfuse-bench" training --peers "$bin/peers.py" ${TRAINING_ARGS:-} ;;
    sweep) step sweep "${SWEEP_LIMIT:-540}" "$bin/kfuse-bench" sweep --peers "$bin/peers.py" --json "$out/sweep.json" ${SWEEP_ARGS:-} ;;
    blocks) step blocks "${BLOCKS_LIMIT:-480}" "$bin/kfuse-bench" blocks --peers "$bin/peers.py" ${BLOCKS_ARGS:-} ;;
    costs) step costs 400 "$bin/kfuse-bench" costs ;;
    decode) step decode 200 "$bin/kfuse-bench" decode ;;
    decode-loop) step decode-loop 300 "$bin/kfuse-bench" decode-loop ;;
    bench) step bench 300 "$bin/kfuse-bench" ${BENCH_ARGS:-memory} ;;
    pycall) step pycall 120 python3 bench/python_call.py ;;
    hf) step hf "${HF_LIMIT:-400}" python3 bench/hf_models.py ${HF_ARGS:-} ;;
    hf-coverage) step hf-coverage "${HF_LIMIT:-400}" python3 bench/hf_coverage.py ${HF_ARGS:-} ;;
    torch-fuzz) step torch-fuzz 300 python3 -m kfuse.torch_fuzz --mode kfuse \
                  --count "${TORCH_FUZZ_COUNT:-300}" \
                  --dtype "${TORCH_FUZZ_DTYPE:-float32}" ;;
    # Dynamo with dynamic=True: the backend gets symbolic dims.
    torch-fuzz-dynamic) step torch-fuzz-dynamic 300 python3 -m \
                  kfuse.torch_fuzz --mode dynamic \
                  --count "${TORCH_FUZZ_COUNT:-100}" ;;
    torch-fuzz-dynamo) step torch-fuzz-dynamo 300 python3 -m kfuse.torch_fuzz \
                  --mode dynamo --count "${TORCH_FUZZ_COUNT:-100}" ;;
    # Issue 33, on a machine of 2+ GPUs: twice, so that the second run's
    # ranks load every kernel from the cache the first run filled.
    distributed) step distributed 400 bash -c "for run in 1 2; do \
        torchrun --nproc_per_node=\${NPROC:-2} bench/distributed.py \
        --cache-dir /tmp/kfuse-distributed-cache || exit 1; done" ;;
    checks) checks ;;
    variants) variants ;;
    cmd) step cmd "${CMD_LIMIT:-300}" bash -c "$CMD" ;;
    # A/B of one kfuse-bench command over variants (scripts/gpu-ab.py).
    ab) step ab "${AB_STEP_LIMIT:-540}" env out="$out" python3 "$root/scripts/gpu-ab.py" ;;
    *) echo "unknown step $s" ;;
  esac
done
