//===- LaunchGraph.h - a plan's kernels as one CUDA graph -------*- C++ -*-===//
//
// Launching kernel by kernel costs the host a few microseconds each, and a
// decode step of twenty small kernels then runs at the speed of the host.
// A LaunchGraph instantiates a plan's launches and copies once, as a chain
// of nodes in a CUDA graph (each launch after the memsets of the buffers
// it adds into), and enqueues a run with one cuGraphLaunch.
//
// Its temporaries lie in the stream's workspace arena (WorkspaceArenas),
// which moves only when it grows or a run goes to another stream. The
// caller's buffers may move from run to run: launch() compares every
// buffer's address with the one the nodes hold and updates, in place, only
// the nodes that use a buffer that moved (re-encoding their TMA tensor
// maps). (A memory-allocation node would fix the temporaries' addresses,
// but the process's first graph allocation costs 10-14 ms.)
//
// Launches of one executable graph are ordered behind each other by the
// driver: runs of one specialisation on two streams follow each other on
// the GPU (an executable graph runs one launch at a time).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_LAUNCHGRAPH_H
#define KFUSE_RUNTIME_LAUNCHGRAPH_H

#include "runtime/CudaDriver.h"
#include "runtime/Module.h"
#include "runtime/Plan.h"
#include "runtime/TensorMaps.h"
#include "runtime/Workspace.h"

#include <memory>
#include <vector>

namespace kfuse::runtime {

/// The most parameters a kfuse kernel takes (buffers and tensor maps).
constexpr size_t kMaxKernelParams = 256;

/// The values of every launch's extents (LaunchDesc::extents) for one
/// run, flat in launch order.
class ExtentValues {
public:
  explicit ExtentValues(const Plan &plan);
  ExtentValues() = default;
  /// Launch k's values (its extents' count of them).
  int64_t *of(size_t k) { return values.data() + offsets[k]; }
  const int64_t *of(size_t k) const { return values.data() + offsets[k]; }
  /// Sets each to the size of its dim in `inputShape(buffer)` (an array
  /// of that input's dims).
  template <typename ShapeOf> void fill(const Plan &plan, ShapeOf inputShape) {
    for (size_t k = 0; k < plan.launches.size(); ++k)
      for (size_t e = 0; e < plan.launches[k].extents.size(); ++e) {
        const ExtentDesc &x = plan.launches[k].extents[e];
        values[offsets[k] + e] = inputShape(x.buffer)[x.dim];
      }
  }
  bool operator==(const ExtentValues &o) const { return values == o.values; }
  bool empty() const { return values.empty(); }

private:
  std::vector<int64_t> values;
  std::vector<uint32_t> offsets;
};

/// Fills `params` (kMaxKernelParams entries) with `launch`'s parameters:
/// pointers into `table` (buffer addresses indexed as plan.buffers), to
/// its extents' values (`extents`), then its tensor maps, encoded in
/// `maps` for those addresses and extents.
Status kernelParams(Driver &driver, const Plan &plan, const LaunchDesc &launch,
                    CUdeviceptr *table, const int64_t *extents,
                    LaunchTensorMaps &maps, void **params);

class LaunchGraph {
public:
  /// Builds and instantiates the graph of `plan`'s launches and copies
  /// with the buffers at `table` (indexed as plan.buffers). Fails on
  /// drivers without graphs; the caller then launches kernel by kernel.
  static Expected<std::unique_ptr<LaunchGraph>>
  create(Driver &driver, const Plan &plan, const LoadedModule &module,
         const CUdeviceptr *table, const ExtentValues &extents);
  ~LaunchGraph();
  LaunchGraph(const LaunchGraph &) = delete;
  LaunchGraph &operator=(const LaunchGraph &) = delete;

  /// Enqueues one run on `stream` with the buffers at `table` and sizes
  /// `extents`, first updating the nodes whose buffers moved or whose
  /// sizes changed since the last run.
  Status launch(const CUdeviceptr *table, const ExtentValues &extents,
                CUstream stream);

  /// Nodes updated because a buffer moved, over the graph's life.
  uint64_t nodeUpdates() const { return updates; }

private:
  LaunchGraph(Driver &driver, const Plan &plan, const LoadedModule &module)
      : driver(driver), plan(plan), module(module) {}
  Status build();
  Status addKernel(size_t k, CUgraphNode &last);
  Status addCopy(size_t c, CUgraphNode &last);
  Status addZero(size_t z, CUgraphNode &last);
  CUDA_KERNEL_NODE_PARAMS kernelNodeParams(size_t k, void **params);
  CUDA_MEMCPY3D copyParams(size_t c) const;
  CUDA_MEMSET_NODE_PARAMS zeroParams(size_t z) const;
  Status refresh(const CUdeviceptr *newTable, const ExtentValues &sizes);

  Driver &driver;
  const Plan &plan;
  const LoadedModule &module;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  /// The buffer addresses the nodes hold, indexed as plan.buffers.
  std::vector<CUdeviceptr> table;
  /// The sizes the nodes hold.
  ExtentValues extents;
  std::vector<CUgraphNode> kernelNodes; ///< per launch; null for empty grids
  std::vector<CUgraphNode> copyNodes;   ///< per copy; null for empty copies
  std::vector<CUgraphNode> zeroNodes;   ///< per zero; null for empty buffers
  std::vector<LaunchTensorMaps> maps;   ///< per launch
  /// Per buffer: the launches, copies and zeroes that use it.
  std::vector<std::vector<uint32_t>> launchesOf, copiesOf, zeroesOf;
  /// Scratch for refresh(): which launches and copies to refresh.
  std::vector<char> staleLaunches, staleCopies;
  uint64_t updates = 0;
};

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_LAUNCHGRAPH_H
