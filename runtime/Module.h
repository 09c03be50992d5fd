//===- Module.h - a Plan's kernels loaded on the GPU ------------*- C++ -*-===//

#ifndef KFUSE_RUNTIME_MODULE_H
#define KFUSE_RUNTIME_MODULE_H

#include "kfuse/Compiler.h"
#include "runtime/CudaDriver.h"
#include "runtime/Plan.h"

#include <vector>

namespace kfuse::runtime {

/// What the loaded code of one kernel uses, from the driver (the ptxas
/// log is missing when the driver's own JIT cache answers).
struct KernelResources {
  int registers = -1, localBytes = -1, sharedBytes = -1;
};

struct LoadedModule {
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;     ///< one per Plan launch
  std::vector<KernelResources> resources; ///< likewise
};

/// Loads the plan's cubin, or JIT-links its PTX through the driver (then
/// fills plan.cubin and plan.ptxasLog, and sets `jitted`).
Expected<LoadedModule> loadPlan(Driver &driver, Plan &plan, bool &jitted);

/// One report per launch: the driver's figures where the module is loaded
/// (`module` may be null), and spill stores from the ptxas log.
std::vector<KernelReport> kernelReports(const Plan &plan,
                                        const LoadedModule *module);

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_MODULE_H
