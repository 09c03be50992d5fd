#!/usr/bin/env bash
# This session's second device call (not committed).
O=$OUT; export OUT=/tmp/logs; mkdir -p /tmp/logs
TAILN=6 bash scripts/gpu-steps.sh gpu-tests,replay
source scripts/gpu-unpack.sh > /dev/null 2>&1
for t in memcheck racecheck synccheck; do
  KFUSE_SANITIZE_SECONDS=200 bash scripts/gpu-sanitize.sh $t > /tmp/logs/san-$t.txt 2>&1 &
done
( "$bin/kfuse-cache-stress" --processes 16 --rounds 20 > /tmp/logs/cache-stress.log 2>&1; echo "cache stress: exit $?" >> /tmp/logs/cache-stress.log ) &
FUZZ_JOBS=13 FUZZ_TIME=150 FUZZ_SEED=1800000 TAILN=4 bash scripts/gpu-steps.sh fuzz-many
mv /tmp/logs/fuzz-many.log /tmp/logs/fuzz-fwd.log
FUZZ_JOBS=13 FUZZ_TIME=140 FUZZ_SEED=1900000 FUZZ_ARGS=--backward TAILN=4 bash scripts/gpu-steps.sh fuzz-many
wait
cat /tmp/logs/san-*.txt; tail -3 /tmp/logs/cache-stress.log
tar czf $O/logs.tgz -C /tmp logs
