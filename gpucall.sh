#!/usr/bin/env bash
# This session's third device call (not committed).
O=$OUT; export OUT=/tmp/logs; mkdir -p /tmp/logs
source scripts/gpu-unpack.sh > /dev/null 2>&1
( timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool racecheck --print-limit 20 "$bin/kfuse-gpu-tests" --gtest_filter='AllOps/GpuOps.*long_rows*:AllOps/GpuOps.*norm_flattened*:AllOps/GpuOps.*staged*:AllOps/GpuOps.*grouped*' > /tmp/logs/race.log 2>&1; echo "racecheck exit $?" >> /tmp/logs/race.log ) &
TAILN=3 bash scripts/gpu-steps.sh gpu-tests
wait
grep -E "PASSED|FAILED|RACECHECK SUMMARY|racecheck exit" /tmp/logs/race.log
for s in 3800106 7800327; do timeout 60 "$bin/kfuse-fuzz" --gpu --seed $s --count 1 2>&1 | tail -2; done
timeout 60 "$bin/kfuse-fuzz" --gpu --backward --seed 4900113 --count 1 2>&1 | tail -2
timeout 60 "$bin/kfuse-fuzz" --gpu --replay scratch-regress/*.mlir 2>&1 | tail -4
TRAINING_LIMIT=200 TAILN=12 bash scripts/gpu-steps.sh training
timeout 130 "$bin/kfuse-bench" memory > /tmp/logs/memory.log 2>&1; tail -20 /tmp/logs/memory.log
tar czf $O/logs.tgz -C /tmp logs
