//===- Rules.h - vector-Jacobian rules of the kf ops ------------*- C++ -*-===//
//
// Internal to autodiff/. A rule maps the cotangents of an op's results to
// those of its operands, building the backward with the frontend's own
// functions on the graph being differentiated (so shapes, symbols, dtype
// promotion and error messages are the frontend's). Rules live by family:
// ElementwiseRules.cpp, ShapeRules.cpp (movement, indexing, reductions),
// ContractionRules.cpp (matmul, softmax, attention); vjpOf dispatches.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_AUTODIFF_RULES_H
#define KFUSE_AUTODIFF_RULES_H

#include "frontend/GraphImpl.h"
#include "ir/KFDialect.h"

namespace kfuse::autodiff {

/// One per operand, in operand order; an invalid Tensor where no cotangent
/// flows (integer operands, indices, constants of the op).
using Cotangents = llvm::SmallVector<Tensor, 4>;

/// What a rule reads: the forward values, as Tensors of the graph the
/// backward is built in.
class RuleContext {
public:
  explicit RuleContext(detail::GraphImpl &graph) : graph(graph) {}
  Tensor primal(mlir::Value v) const { return graph.tensorOf(v); }
  detail::GraphImpl &graph;
};

/// The operands' cotangents given the results' (`results[i]` invalid where
/// result i has none). Fails, with the graph's status saying why, where a
/// frontend call fails.
mlir::FailureOr<Cotangents> vjpOf(mlir::Operation *op,
                                  llvm::ArrayRef<Tensor> results,
                                  const RuleContext &ctx);

// The families; each returns nullopt for an op not its own.
std::optional<Cotangents> elementwiseVJP(mlir::Operation *op, Tensor result,
                                         const RuleContext &ctx);
std::optional<Cotangents> shapeVJP(mlir::Operation *op, Tensor result,
                                   const RuleContext &ctx);
std::optional<Cotangents> contractionVJP(mlir::Operation *op,
                                         llvm::ArrayRef<Tensor> results,
                                         const RuleContext &ctx);

// Helpers shared by the families.

/// `t` as f32 (cotangents flow in f32).
Tensor toF32(Tensor t);
/// Zeros of `like`'s shape in f32.
Tensor zerosLike(Tensor like);
/// `ct` (of a broadcast result) summed down to `shape` (NumPy's
/// unbroadcasting: leading dims and dims of 1 that were stretched).
Tensor sumToShape(Tensor ct, const Shape &shape);
/// `t` reshaped to `shape` (itself where it has that shape).
Tensor reshapeTo(Tensor t, const Shape &shape);
/// `t` with a dim of 1 inserted before `axis`.
Tensor unsqueeze(Tensor t, int64_t axis);

} // namespace kfuse::autodiff

#endif // KFUSE_AUTODIFF_RULES_H
