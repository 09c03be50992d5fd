//===- Passes.h - kfuse passes ----------------------------------*- C++ -*-===//

#ifndef KFUSE_PASSES_PASSES_H
#define KFUSE_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::func {
class FuncOp;
}

namespace kfuse::kf {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Binds the function's symbolic dims (from the argument shapes given, and
/// from `bindings`) and recomputes every result type. Reports errors
/// through the function's diagnostics.
mlir::LogicalResult
specializeShapes(mlir::func::FuncOp func,
                 llvm::ArrayRef<llvm::SmallVector<int64_t, 4>> argShapes,
                 const llvm::StringMap<int64_t> &bindings = {});

} // namespace kfuse::kf

#endif // KFUSE_PASSES_PASSES_H
