//===- CodeGen.h - gpu.module to PTX ----------------------------*- C++ -*-===//
//
// The backend: the gpu.module is split into one gpu.module a kernel, which
// the LLVM lowering takes to the LLVM and NVVM dialects in parallel; each
// is then translated to LLVM IR, linked with libdevice (for the math
// functions), optimised at O3 and compiled to PTX by LLVM's NVPTX backend,
// also in parallel, and the kernels' PTX joined in their order.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_CODEGEN_H
#define KFUSE_COMPILER_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::gpu {
class GPUModuleOp;
} // namespace mlir::gpu

namespace kfuse::codegen {

struct Target {
  /// "sm_90", "sm_80", ...
  std::string arch = "sm_90";
  /// PTX ISA feature, "+ptx80".
  std::string ptxFeature = "+ptx80";
};

/// Registers every dialect the compiler uses, with the interfaces that
/// convert them to the LLVM dialect (gpu-to-nvvm collects its patterns
/// from them).
void registerDialects(mlir::DialectRegistry &registry);

/// Registers what translation to LLVM IR needs in `context`.
void registerTranslations(mlir::MLIRContext &context);

/// Where one kernel's backend time went (milliseconds, on its thread).
struct KernelTimes {
  std::string kernel;
  double translate = 0; ///< LLVM dialect to LLVM IR, and through bitcode
  double optimize = 0;  ///< libdevice linked, O3
  double codegen = 0;   ///< the NVPTX backend
};

struct BackendOutput {
  std::string llvmIR; ///< optimised LLVM IR, as text (when asked for)
  std::string ptx;
  std::vector<KernelTimes> times; ///< in kernel order
};
/// A new module holding a gpu.module for each kernel of `kernels`, in
/// their order (`<module>_<kernel>`, with every symbol that is not a
/// kernel: helpers the kernel may call), or `kernels` whole where it has
/// none. The passes after it and the backend work on each part apart, on
/// the context's threads: the kernels of one graph compile concurrently.
mlir::OwningOpRef<mlir::ModuleOp> splitByKernel(mlir::gpu::GPUModuleOp kernels);

/// PTX, and with `printIR` the optimised LLVM IR, for the gpu.modules of
/// `parts` (splitByKernel's, in the LLVM dialect), joined in their order
/// into one PTX module. (The IR's text is large: 1.8 MB for a bf16 4096^3
/// matmul with a GELU epilogue, printed in 25 ms of its 300.)
llvm::Expected<BackendOutput> emitPTX(mlir::ModuleOp parts,
                                      const Target &target, bool printIR);

} // namespace kfuse::codegen

#endif // KFUSE_COMPILER_CODEGEN_H
