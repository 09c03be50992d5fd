#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .bundle/ carried
# (scripts/gpu-bundle.sh): the GPU tests under compute-sanitizer's memcheck,
# racecheck and synccheck (or the tools named as arguments), each within
# its own time limit ($KFUSE_SANITIZE_SECONDS, 170 s). Logs go to $OUT (or
# ./gpu-logs); one summary line a tool is printed last. Every tool must
# report 0 errors (racecheck: 0 hazards).
#
# What runs, and why not everything under every tool:
#  - memcheck: the whole GPU suite but the tests that would take it past
#    its limit (2^31 elements, the range sweeps of 2^24 points, the large
#    pointwise layouts, a hundred compiled shapes) and GpuFault, whose
#    out-of-bounds store is the point of the test. Every template runs.
#  - racecheck and synccheck: the tests of the templates that share memory
#    between threads or wait at barriers: every op (rows, column
#    reductions, tiled transposes), padded rows, the sm_90 matmuls (the
#    warp-specialised TMA pipeline, cp.async for small M, split-K) and a
#    few sm_80 ones (mma.sync), FlashAttention (its warp-specialised TMA
#    pipeline), the memory-bound workloads, and two streams at once.
set -uo pipefail
source "$(dirname "$0")/gpu-unpack.sh"
tests=$bin/kfuse-gpu-tests
limit=${KFUSE_SANITIZE_SECONDS:-170}
sanitizer=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}

declare -A filter=(
  [memcheck]="*-GpuFault.*:Gpu.MoreThan2To31Elements:Gpu.*AcrossTheRange:LargePointwise.*:Workspace.DeviceMemoryStaysBoundedOverAHundredShapes"
  [racecheck]="AllOps/GpuOps.*:Shapes/Matmul.*_sm_90:Shapes/Matmul.*/persistent_bf16_sm_80:Shapes/Matmul.*/k_tail_bf16_sm_80:Shapes/Matmul.*/batched_bf16_sm_80:Shapes/Attention.*:Graphs/PaddedRows.*:MemoryBound/Workloads.*:Graphs/TwoStreams.*:Templates/OutputOverInput.*"
)
filter[synccheck]=${filter[racecheck]}

summary=()
for tool in "${@:-memcheck racecheck synccheck}"; do
  for t in $tool; do
    log="$out/sanitize-$t.log"
    timeout "$limit" "$sanitizer" --tool "$t" --print-limit 20 \
      --error-exitcode 99 "$tests" --gtest_filter="${filter[$t]}" \
      > "$log" 2>&1
    rc=$?
    tests_line=$(grep -E '^\[  (PASSED|FAILED) +\]' "$log" | tr '\n' ' ')
    reports=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)
    [ $rc -eq 124 ] && reports="$reports (stopped at the ${limit} s limit)"
    summary+=("$t: exit $rc; ${tests_line:-no gtest summary}; ${reports:-no sanitizer summary}")
  done
done
printf '%s\n' "${summary[@]}"
