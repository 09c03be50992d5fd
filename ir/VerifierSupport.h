//===- VerifierSupport.h - helpers of the kf op verifiers -------*- C++ -*-===//
//
// Shared by the verifiers in KFDialect.cpp and IndexOps.cpp; internal to
// ir/.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_IR_VERIFIERSUPPORT_H
#define KFUSE_IR_VERIFIERSUPPORT_H

#include "ir/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace kfuse::kf::detail {

using namespace mlir;

inline RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

inline bool isFloatDtype(Type t) { return isa<FloatType>(t); }

/// Whether every value of `narrow` converts to `wide` exactly (so a cast
/// there and back is the identity).
inline bool holdsExactly(Type wide, Type narrow) {
  if (isa<FloatType>(wide) && isa<FloatType>(narrow))
    return wide.isF32() && !narrow.isF32();
  if (wide.isInteger() && narrow.isInteger())
    return wide.getIntOrFloatBitWidth() > narrow.getIntOrFloatBitWidth();
  return false;
}

/// Checks that `result` agrees with the shape the operands give.
inline LogicalResult verifyResultShape(Operation *op, ArrayRef<int64_t> shape,
                                       RankedTensorType result) {
  bool ok = shape.size() == static_cast<size_t>(result.getRank()) &&
            llvm::all_of(llvm::zip(shape, result.getShape()), [](auto p) {
              return shapes::dimsMatch(std::get<0>(p), std::get<1>(p));
            });
  if (ok)
    return success();
  shapes::ShapeDiag diag;
  return op->emitOpError() << "result is " << result
                           << " but the operands give the shape "
                           << diag.str(shape);
}

inline LogicalResult verifyDtype(Operation *op, StringRef what, Type actual,
                                 Type expected) {
  if (actual == expected)
    return success();
  return op->emitOpError() << what << " has dtype " << actual << ", expected "
                           << expected;
}

/// `dim_symbols`, where present, names exactly the result's dynamic dims.
inline LogicalResult verifyDimSymbols(Operation *op,
                                      std::optional<ArrayAttr> symbols,
                                      RankedTensorType type) {
  if (!symbols) {
    if (type.hasStaticShape())
      return success();
    return op->emitOpError() << "result " << type
                             << " has symbolic dims but no dim_symbols";
  }
  if (symbols->size() != static_cast<size_t>(type.getRank()))
    return op->emitOpError() << "dim_symbols has " << symbols->size()
                             << " entries for the rank-" << type.getRank()
                             << " result " << type;
  for (auto [i, attr] : llvm::enumerate(symbols->getAsValueRange<StringAttr>()))
    if (attr.empty() != !type.isDynamicDim(i))
      return op->emitOpError()
             << "dim_symbols entry " << i << " ('" << attr
             << "') must name a symbol exactly where " << type
             << " has a '?'";
  return success();
}

} // namespace kfuse::kf::detail

#endif // KFUSE_IR_VERIFIERSUPPORT_H
