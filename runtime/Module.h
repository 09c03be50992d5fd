//===- Module.h - a Plan's kernels loaded on the GPU ------------*- C++ -*-===//

#ifndef KFUSE_RUNTIME_MODULE_H
#define KFUSE_RUNTIME_MODULE_H

#include "kfuse/Compiler.h"
#include "runtime/CudaDriver.h"
#include "runtime/Plan.h"

#include <vector>

namespace kfuse::runtime {

struct LoadedModule {
  CUmodule module = nullptr;
  std::vector<CUfunction> functions; ///< one per Plan launch
};

/// Loads the plan's cubin, or JIT-links its PTX through the driver (then
/// fills plan.cubin and plan.ptxasLog, and sets `jitted`).
Expected<LoadedModule> loadPlan(Driver &driver, Plan &plan, bool &jitted);

/// One report per launch, with ptxas's registers, spills and shared memory
/// where the log has them.
std::vector<KernelReport> kernelReports(const Plan &plan);

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_MODULE_H
