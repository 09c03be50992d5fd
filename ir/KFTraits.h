//===- KFTraits.h - verifier traits of the kf ops ---------------*- C++ -*-===//
//
// Native op traits named in KFOps.td. Their messages print the operands'
// types, so a user sees which shapes or dtypes disagree.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_IR_KFTRAITS_H
#define KFUSE_IR_KFTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace kfuse::kf::detail {
mlir::LogicalResult verifySameOperandsAndResult(mlir::Operation *op);
mlir::LogicalResult verifyOperandDtypes(mlir::Operation *op, bool floatOnly);
mlir::LogicalResult verifyBoolOperands(mlir::Operation *op);
} // namespace kfuse::kf::detail

namespace mlir::OpTrait::kf {

/// Every operand and the result have one shape and dtype.
template <typename ConcreteType>
class SameOperandsAndResult
    : public TraitBase<ConcreteType, SameOperandsAndResult> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return ::kfuse::kf::detail::verifySameOperandsAndResult(op);
  }
};

/// Operands are f32, f16 or bf16.
template <typename ConcreteType>
class FloatOperands : public TraitBase<ConcreteType, FloatOperands> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return ::kfuse::kf::detail::verifyOperandDtypes(op, /*floatOnly=*/true);
  }
};

/// Operands are floats, i32 or i64 (not i1).
template <typename ConcreteType>
class NumericOperands : public TraitBase<ConcreteType, NumericOperands> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return ::kfuse::kf::detail::verifyOperandDtypes(op, /*floatOnly=*/false);
  }
};

/// Operands are i1.
template <typename ConcreteType>
class BoolOperands : public TraitBase<ConcreteType, BoolOperands> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return ::kfuse::kf::detail::verifyBoolOperands(op);
  }
};

/// Computed element by element over operands of one shape.
template <typename ConcreteType>
class Elementwise : public TraitBase<ConcreteType, Elementwise> {};

} // namespace mlir::OpTrait::kf

#endif // KFUSE_IR_KFTRAITS_H
