//===- Passes.h - kfuse's graph passes --------------------------*- C++ -*-===//

#ifndef KFUSE_TRANSFORMS_PASSES_H
#define KFUSE_TRANSFORMS_PASSES_H

#include "ir/KFDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace kfuse::kf {

#define GEN_PASS_DECL
#include "transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "transforms/Passes.h.inc"

/// The attribute kf-online-softmax leaves on a product that looks like
/// attention but was not rewritten: the reason, for --explain-fusion.
inline constexpr llvm::StringLiteral kOnlineSoftmaxRefusal =
    "kf.online_softmax";

/// kf-runtime-extents' argument attribute (the dims of a function argument
/// whose size is a run-time value) and its module attribute (why it could
/// not keep them so).
inline constexpr llvm::StringLiteral kRuntimeDims = "kf.runtime_dims";
inline constexpr llvm::StringLiteral kRuntimeRefusal = "kf.runtime_refusal";

/// One producer-consumer edge as kf-fuse judged it.
struct FusionDecision {
  mlir::Operation *producer;
  mlir::Operation *consumer;
  bool fused;
  std::string reason;
};

/// The partition kf-fuse makes of a function's body: a kernel id per op
/// (splat constants have none), and the decision on every edge between
/// ops. `fused` false puts every op in its own kernel.
struct Partition {
  llvm::DenseMap<mlir::Operation *, int> kernelOf;
  std::vector<FusionDecision> decisions;
  /// Views (reshapes, transposes, slices) read by several kernels, each of
  /// which could compute the view in its loads.
  std::vector<mlir::Operation *> sharedViews;
};
/// The partition of `body`; where several kernels read one view in place,
/// each first gets its own copy of the view (the body changes), rather
/// than a kernel of its own copying the view to memory for all.
Partition partitionForFusion(mlir::Block &body, bool fused);

/// Into how many chunks of at least `minChunk` to split `n` (rows or a row)
/// so that `blocks` blocks become `wanted`: the smallest divisor of `n`
/// that gets there, else the largest that keeps such chunks (1 if none).
/// kf-split-reduction's rows and kf-fuse-column-sums' columns.
int64_t splitDivisor(int64_t n, int64_t minChunk, int64_t blocks,
                     int64_t wanted);

/// Applies `patterns` to `op` greedily and nothing else (no folding, no
/// constant CSE, no region simplification): for the passes that rewrite
/// one thing and leave the graph otherwise as it was.
mlir::LogicalResult applyOnlyPatterns(mlir::Operation *op,
                                      mlir::RewritePatternSet &&patterns);

} // namespace kfuse::kf

#endif // KFUSE_TRANSFORMS_PASSES_H
