//===- SpecializeShapes.h - bind a graph's symbolic dims --------*- C++ -*-===//

#ifndef KFUSE_IR_SPECIALIZESHAPES_H
#define KFUSE_IR_SPECIALIZESHAPES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace kfuse::kf {

/// Binds the function's symbolic dims (from the argument shapes given, and
/// from `bindings`) and recomputes every result type. Reports errors
/// through the function's diagnostics.
mlir::LogicalResult
specializeShapes(mlir::func::FuncOp func,
                 llvm::ArrayRef<llvm::SmallVector<int64_t, 4>> argShapes,
                 const llvm::StringMap<int64_t> &bindings = {});

} // namespace kfuse::kf

#endif // KFUSE_IR_SPECIALIZESHAPES_H
