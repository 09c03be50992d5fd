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

/// The CUDA toolkit's ptxas: $KFUSE_PTXAS ("off" for none), else
/// $CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas; "" when none runs.
std::string findPtxas();

/// PTX -> cubin by the toolkit's ptxas at `ptxas` (-O3, for the PTX's
/// .target), into plan.cubin and plan.ptxasLog; false, the plan untouched,
/// when that fails.
bool assembleWithPtxas(const std::string &ptxas, Plan &plan);

/// Loads the plan's cubin, or compiles its PTX (then fills plan.cubin and
/// plan.ptxasLog, and sets `jitted`): warp-specialised kernels by the
/// toolkit's ptxas where there is one, else through the driver's JIT.
Expected<LoadedModule> loadPlan(Driver &driver, Plan &plan, bool &jitted);

/// One report per launch: the driver's figures where the module is loaded
/// (`module` may be null), and spill stores from the ptxas log.
std::vector<KernelReport> kernelReports(const Plan &plan,
                                        const LoadedModule *module);

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_MODULE_H
