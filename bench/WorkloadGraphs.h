//===- WorkloadGraphs.h - the memory-bound workloads ------------*- C++ -*-===//
//
// The graphs of kfuse-bench's memory-bound workloads, at full size (larger
// than the L2 cache) for the benchmark and small for the GPU tests.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_BENCH_WORKLOADGRAPHS_H
#define KFUSE_BENCH_WORKLOADGRAPHS_H

#include "kfuse/kfuse.h"

#include <functional>
#include <string>
#include <vector>

namespace kfuse::bench {

struct Workload {
  std::string name;
  std::function<void(Graph &)> build;
  /// torch.compile time over floor on the H200 (gpu-machine.md), 0 if none.
  double torchCompileRatio;
};

std::vector<Workload> memoryBoundWorkloads(bool small);

} // namespace kfuse::bench

#endif // KFUSE_BENCH_WORKLOADGRAPHS_H
