//===- CodeGen.h - gpu.module to PTX ----------------------------*- C++ -*-===//
//
// The backend: the gpu.module, once in the LLVM and NVVM dialects, is
// translated to LLVM IR, linked with libdevice (for the math functions),
// optimised at O3 and compiled to PTX by LLVM's NVPTX backend.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_CODEGEN_H
#define KFUSE_COMPILER_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

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

struct BackendOutput {
  std::string llvmIR; ///< optimised LLVM IR, as text (when asked for)
  std::string ptx;
};
/// PTX, and with `printIR` the optimised LLVM IR, for the (LLVM-dialect)
/// gpu.module of `module`. (The IR's text is large: 1.8 MB for a bf16
/// 4096^3 matmul with a GELU epilogue, printed in 25 ms of its 300.)
llvm::Expected<BackendOutput> emitPTX(mlir::ModuleOp module,
                                      const Target &target, bool printIR);

} // namespace kfuse::codegen

#endif // KFUSE_COMPILER_CODEGEN_H
