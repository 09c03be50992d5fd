//===- Workspace.h - the device memory of one run ---------------*- C++ -*-===//
//
// A run's temporaries (the buffers between its kernels) lie in a workspace
// that no run overlapping it on the GPU shares. On an ordinary stream it is
// that stream's arena (WorkspaceArenas): runs on one stream follow each
// other, so each reuses the buffer the one before used. On a stream being
// captured into the caller's CUDA graph it is a memory node of that graph,
// which allocates and frees it itself. Either
// way a process that runs a thousand shapes holds the largest workspace of
// each stream, not one per shape.
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
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace kfuse::runtime {

/// `bytes` for a run on `stream`, a stream being captured into the
/// caller's CUDA graph: a memory-allocation node of that graph, whose
/// memory the graph holds from its allocation to freeCaptured's node.
Expected<CUdeviceptr> allocateCaptured(Driver &driver, size_t bytes,
                                       CUstream stream);
Status freeCaptured(Driver &driver, CUdeviceptr address, CUstream stream);

/// What kfuse holds for workspaces: the streams' arenas and the memory
/// of captured graphs' temporaries (the driver's, shared by every graph).
struct WorkspaceUsage {
  uint64_t reservedBytes = 0; ///< taken from the device
  uint64_t usedBytes = 0;     ///< of the graphs', mapped to graphs now
};
Expected<WorkspaceUsage> workspaceUsage(Driver &driver);
/// Gives the arenas back (waiting for their last runs) and the graphs'
/// memory that no graph holds.
Status trimWorkspaces(Driver &driver);

/// The workspaces of runs on ordinary streams: a buffer a stream, from
/// cuMemAlloc, grown to the largest workspace run there. A stream-ordered
/// pool would serve as well but for its first allocation in a process,
/// 10-14 ms on the H200 against under 1 ms for cuMemAlloc: most of a whole
/// block's first run from the disk cache. Each run waits for an event recorded
/// after the arena's previous run, which costs nothing on a live stream
/// and orders a new stream that the driver gave a destroyed one's handle
/// behind that stream's last run.
class WorkspaceArenas {
public:
  /// The process's, on the driver's device.
  static WorkspaceArenas &get(Driver &driver);
  explicit WorkspaceArenas(Driver &driver) : driver(driver) {}

  /// The most streams with an arena at once: a process that runs on more
  /// streams frees the least recently used one's (after its last run)
  /// when it needs another.
  static constexpr size_t kMaxArenas = 8;
  /// Arenas grow in whole steps of this many bytes (cuMemAlloc's own
  /// granularity), so that slowly growing shapes do not move them each
  /// run.
  static constexpr uint64_t kGranule = uint64_t(2) << 20;

  /// Runs `enqueue(address)` with `bytes` at `address` for the work it
  /// enqueues on `stream`, after the stream arena's earlier runs.
  using Enqueue = std::function<Status(CUdeviceptr)>;
  Status run(size_t bytes, CUstream stream, const Enqueue &enqueue);

  /// Frees every arena once its last run is done.
  Status trim();
  /// The bytes the arenas hold.
  uint64_t reservedBytes();

private:
  struct Arena {
    CUstream stream = nullptr;
    CUdeviceptr address = 0;
    uint64_t bytes = 0;
    CUevent done = nullptr; ///< recorded after each run; null before one
    uint64_t lastUse = 0;
  };
  /// The stream's arena, made (evicting the least recently used one
  /// beyond kMaxArenas) where it has none.
  Expected<Arena *> arenaOf(CUstream stream);
  /// At least `bytes` in `arena`, moving it once its last run is done.
  Status grow(Arena &arena, uint64_t bytes);
  /// Waits for the arena's last run and frees its memory.
  Status free(Arena &arena);
  /// free(), and its event destroyed.
  Status discard(Arena &arena);

  Driver &driver;
  std::mutex mutex; ///< held from a run's start to its end event
  std::vector<Arena> arenas;
  uint64_t uses = 0;
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
