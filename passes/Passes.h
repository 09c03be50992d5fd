//===- Passes.h - kfuse passes ----------------------------------*- C++ -*-===//

#ifndef KFUSE_PASSES_PASSES_H
#define KFUSE_PASSES_PASSES_H

#include "ir/KFDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

/// The attribute kf-online-softmax leaves on a product that looks like
/// attention but was not rewritten: the reason, for --explain-fusion.
inline constexpr llvm::StringLiteral kOnlineSoftmaxRefusal =
    "kf.online_softmax";

/// The attribute kf-pad leaves on a kf.kernel whose results' rows it
/// padded: one row stride (elements) per result, 0 for a dense result.
inline constexpr llvm::StringLiteral kPaddedRows = "padded_rows";

/// The gpu.func attribute that counts its last arguments that are TMA
/// tensor maps, which kf-grid-constants turns into by-value grid constants
/// of kTensorMapBytes bytes (a CUtensorMap).
inline constexpr llvm::StringLiteral kTensorMapArgs = "kf.tensor_maps";
constexpr unsigned kTensorMapBytes = 128;

/// The row stride kf-pad chose for `value` (a kf.kernel result): its buffer
/// holds rows of that many elements, the row's elements first and zeros
/// after them. 0 when the buffer is dense.
int64_t paddedRowStride(mlir::Value value);

/// Elements between consecutive rows of `value`'s buffer: the padded
/// stride, else its last dim.
int64_t rowStrideOf(mlir::Value value);

/// The kernel template that computes `op` on its own.
KernelKind kernelKindOf(mlir::Operation *op);

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
};
Partition partitionForFusion(mlir::Block &body, bool fused);

/// The [rows, length] space of a kernel whose reductions and softmaxes all
/// work along the last axis of tensors of one row length: such a kernel
/// runs one thread block per row and keeps the row on chip.
struct RowSpace {
  int64_t rows;
  int64_t length;
};
std::optional<RowSpace> rowSpaceOf(KernelOp kernel);

/// A reduction kernel that reduces the leading dims of its input
/// ([rows..., columns...] to [columns...]): [rows, columns].
std::optional<RowSpace> columnSpaceOf(KernelOp kernel);

/// The transpose of the last two dims of a kernel input, in a pointwise
/// kernel over the transposed shape: staged through shared-memory tiles.
TransposeOp tiledTransposeOf(KernelOp kernel);

/// The attention op of an attention kernel.
AttentionOp attentionOf(KernelOp kernel);

/// Why an attention kernel cannot run the FlashAttention template
/// (bf16/f16, aligned, wgmma, head dims up to 256 in rows of whole 4-byte
/// words: odd ones padded by kf-pad), or nothing. `assumed` gives row
/// strides for kernel arguments in place of what kf-pad decided.
std::optional<std::string> flashAttentionRefusal(
    KernelOp kernel, bool aligned, bool wgmma,
    llvm::ArrayRef<std::pair<mlir::Value, int64_t>> assumed = {});

/// The input of an attention kernel that the FlashAttention template
/// stages in shared memory next to K and V, a tile per key tile: the input
/// of q's dtype over the scores' shape [B, H, Sq, Sk] (Sk a multiple of 8,
/// so rows are whole 16-byte chunks) that the bias or mask is computed
/// from, if there is one such input.
mlir::BlockArgument stagedScoresInput(KernelOp kernel);

/// Work items of a kernel (elements, rows or outputs, by kind): what
/// kf-tile sizes the grid for and kf-lower-to-gpu loops over.
int64_t kernelWorkItems(KernelOp kernel);

} // namespace kfuse::kf

#endif // KFUSE_PASSES_PASSES_H
