//===- TensorMaps.h - the TMA tensor maps of one launch ---------*- C++ -*-===//
//
// A kernel that copies with the TMA takes a CUtensorMap per operand by
// value. The map holds the operand's address, so it is encoded at launch,
// and again only when a buffer moves: run() on the same tensors pays
// nothing more.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_TENSORMAPS_H
#define KFUSE_RUNTIME_TENSORMAPS_H

#include "runtime/CudaDriver.h"
#include "runtime/Plan.h"

#include <vector>

namespace kfuse::runtime {

class LaunchTensorMaps {
public:
  /// Encodes the maps of `launch` whose buffers (addresses in `table`,
  /// indexed as plan.buffers) moved, or whose rows (`extents`: the values
  /// of launch.extents) changed, since the last call.
  Status update(Driver &driver, const Plan &plan, const LaunchDesc &launch,
                const CUdeviceptr *table, const int64_t *extents);
  /// The kernel parameter of map `i`.
  void *param(size_t i) { return &maps[i]; }

private:
  std::vector<CUtensorMap> maps;
  std::vector<CUdeviceptr> encodedFor;
  std::vector<int64_t> encodedRows;
};

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_TENSORMAPS_H
