//===- Workspace.h - the device memory of one run ---------------*- C++ -*-===//
//
// A run's temporaries (the buffers between its kernels) are its own: they
// come from kfuse's stream-ordered memory pool when the run is enqueued and
// go back to it, in stream order, after the run's last kernel. Two runs of
// one executable on two streams that overlap on the GPU so never share a
// temporary, and a process that runs a thousand shapes holds the largest
// workspace that was in flight at once, not one per shape.
//
// The same workspace holds the outputs that the caller placed over an
// input in a way the plan cannot compute in place (Plan::inPlace): such an
// output is computed into the workspace and copied to the caller's buffer
// once every kernel has read its inputs.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_WORKSPACE_H
#define KFUSE_RUNTIME_WORKSPACE_H

#include "runtime/CudaDriver.h"
#include "runtime/Plan.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace kfuse::runtime {

/// The process's pool on the driver's device. Freed blocks stay in the pool
/// (no release threshold), so a run allocates without a driver round trip
/// once the pool has grown to the largest workspaces in flight at once;
/// trim() gives them back.
class WorkspacePool {
public:
  /// Created on first use.
  static Expected<WorkspacePool *> get(Driver &driver);
  /// `bytes` for the work enqueued on `stream` after this call.
  Expected<CUdeviceptr> allocate(size_t bytes, CUstream stream);
  /// Gives `address` back once the work enqueued on `stream` so far is done.
  Status release(CUdeviceptr address, CUstream stream);

  /// Gives back to the device what the pool holds and no enqueued run
  /// uses, and likewise the memory of CUDA graphs' temporaries.
  Status trim();

  /// The pool's memory; reservedBytes also counts the memory of CUDA
  /// graphs' temporaries.
  struct Usage {
    uint64_t reservedBytes = 0; ///< taken from the device
    uint64_t usedBytes = 0;     ///< of those, in runs not yet released
  };
  Expected<Usage> usage();

private:
  explicit WorkspacePool(Driver &driver) : driver(driver) {}
  Driver &driver;
  CUmemoryPool pool = nullptr;
};

/// Where a plan's temporaries lie in a workspace: an offset per buffer (0
/// for the caller's), each 256-byte aligned; temporaries that are never in
/// use at the same step of the plan may share bytes.
struct WorkspaceLayout {
  std::vector<uint64_t> offsets;
  uint64_t bytes = 0;

  static WorkspaceLayout of(const Plan &plan);
  /// Reserves `size` more bytes; returns their offset.
  uint64_t append(uint64_t size);
};

/// The outputs of `plan` (buffer indices) that share memory with an input
/// other than as Plan::inPlace allows, addresses as in `table` (indexed as
/// plan.buffers). `inputBytes`, where given, holds the call's size of
/// each input (a dim taken at run time makes it smaller than the plan's).
/// `redirected` is cleared first and keeps its capacity.
void outputsOverInputs(const Plan &plan, const CUdeviceptr *table,
                       std::vector<uint32_t> &redirected,
                       const uint64_t *inputBytes = nullptr);

/// The first two outputs whose memory overlaps, if any.
std::optional<std::pair<uint32_t, uint32_t>>
overlappingOutputs(const Plan &plan, const CUdeviceptr *table);

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_WORKSPACE_H
