//===- SpecializeShapes.h - bind a graph's symbolic dims --------*- C++ -*-===//

#ifndef KFUSE_IR_SPECIALIZESHAPES_H
#define KFUSE_IR_SPECIALIZESHAPES_H

#include "ir/ShapeInference.h"

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

/// The shape of `op`'s first result from its operands' shapes (`shapeOf`),
/// by the op's shape rule. The dynamic dims of an op that names its result
/// dims (iota, broadcast, reshape, random: `dim_symbols`) come from
/// `namedDim(dim, symbol)`. The same rule serves kf-specialize (sizes) and
/// the frontend adopting a parsed graph (symbol ids). Shape errors go to
/// `diag`; `namedDim` reports its own.
mlir::FailureOr<shapes::Shape> inferResultShape(
    mlir::Operation *op,
    llvm::function_ref<llvm::ArrayRef<int64_t>(mlir::Value)> shapeOf,
    llvm::function_ref<mlir::FailureOr<int64_t>(unsigned, llvm::StringRef)>
        namedDim,
    shapes::ShapeDiag &diag);

/// `type`'s shape with each dynamic dim i replaced by
/// namedDim(i, the name `symbols` gives it, or "").
mlir::FailureOr<shapes::Shape> resolveNamedDims(
    mlir::RankedTensorType type, mlir::ArrayAttr symbols,
    llvm::function_ref<mlir::FailureOr<int64_t>(unsigned, llvm::StringRef)>
        namedDim);

} // namespace kfuse::kf

#endif // KFUSE_IR_SPECIALIZESHAPES_H
