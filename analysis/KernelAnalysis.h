//===- KernelAnalysis.h - what a kf.kernel computes and how -----*- C++ -*-===//
//
// Analyses of kf.kernel ops shared by the graph passes (transforms/), the
// lowering and its templates (codegen/) and the compiler: read-only
// questions about a kernel's body and the decisions recorded on it.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_ANALYSIS_KERNELANALYSIS_H
#define KFUSE_ANALYSIS_KERNELANALYSIS_H

#include "analysis/StridedViews.h"
#include "ir/KFDialect.h"

#include <optional>
#include <string>

namespace kfuse::kf {

/// The row stride kf-pad chose for `value` (a kf.kernel result): its buffer
/// holds rows of that many elements, the row's elements first and zeros
/// after them. 0 when the buffer is dense.
int64_t paddedRowStride(mlir::Value value);

/// Elements between consecutive rows of `value`'s buffer: the padded
/// stride, else its last dim.
int64_t rowStrideOf(mlir::Value value);

/// How a broadcast maps output elements to input elements when it does by
/// one division of the linear index: the input spans the output's trailing
/// dims (element linear % rest: a row vector, a bias) or its leading dims
/// (element linear / rest: a row scalar). `rest` is the product of the
/// output dims from the split on.
struct BroadcastSplit {
  enum Kind { trailing, leading } kind;
  int64_t rest;
};
std::optional<BroadcastSplit> splitBroadcast(BroadcastOp op);

/// An input of a pointwise kernel broadcast over the output's leading dims
/// (positions added to every sequence of a batch): the kernel reads each of
/// its elements `groups` times, once for each index of those dims, and in
/// the output's order those reads are `rest` output elements apart.
struct LeadingBroadcastReads {
  int64_t groups, rest;
};
/// The one of `kernel`'s such inputs with the most elements, if any.
std::optional<LeadingBroadcastReads> leadingBroadcastReadsOf(KernelOp kernel);

/// The kernel template that computes `op` on its own.
KernelKind kernelKindOf(mlir::Operation *op);

/// The [rows, length] space of a kernel whose reductions, softmaxes and
/// argmax/argmin all work along the last axis of tensors of one row
/// length: such a kernel runs one thread block per row and keeps the row
/// on chip.
struct RowSpace {
  int64_t rows;
  int64_t length;
};
std::optional<RowSpace> rowSpaceOf(KernelOp kernel);

/// A row kernel's sums of a row-shaped f32 value over its rows, one
/// partial sum a thread block: kf.reduce sum over axes 0 and 2 of the
/// value's reshape to [rows / (blocks * rowsPerBlock), blocks, rowsPerBlock,
/// length]. Block b takes rows b * rowsPerBlock ... at once, then the same
/// rows of every `blocks`-th group (a grid-stride loop over a grid of
/// `blocks`), and yields its sums as row b of the [blocks, length]
/// partials, which a reduction kernel adds up. kf-fuse-column-sums makes
/// them; rowSpaceOf looks past them.
struct BlockColumnPartials {
  mlir::Value source;
  int64_t blocks, rowsPerBlock;
};
std::optional<BlockColumnPartials> blockColumnPartialsOf(mlir::Value v);

/// Threads of a row kernel's block that sums column partials.
constexpr int64_t kColumnPartialBlockThreads = 512;

/// How a row kernel over `space` sums column partials, on `sms` SMs: each
/// of `blocks` blocks takes `rowsPerBlock` rows at once, `threads` threads
/// a row, each holding at most 8 columns (their running sums stay in
/// registers across the rows). None where the rows are shorter than a
/// warp's 8 columns a thread or longer than a block's, do not divide into
/// such blocks, or are too few for every block to take four groups of rows
/// (the partials would cost more than they save).
struct ColumnPartialLayout {
  int64_t threads, rowsPerBlock, blocks;
};
std::optional<ColumnPartialLayout> columnPartialLayout(RowSpace space,
                                                       int64_t sms);
/// The [rows, length] space of one op that a row kernel computes: a float
/// reduction or a softmax along the last axis.
std::optional<RowSpace> rowOpSpace(mlir::Operation *op);

/// The sum of a row's shifted exponentials that `max` (a row kernel's max
/// along the last axis, with kept dims) is the shift of: the reduce sum of
/// exp(x - broadcast(max)) over the same x, in the same kernel. A row
/// template computes the two in one online pass, as it does a softmax's
/// (a log-sum-exp, a cross-entropy). Null if there is none.
ReduceOp shiftedExpSumOf(ReduceOp max);

/// The row-shaped inputs of a row kernel that only elementwise ops and the
/// row's reductions and softmaxes read: the row template reads them a
/// vector at a time, at every pass over the row.
llvm::SmallVector<mlir::BlockArgument> streamedRowInputs(KernelOp kernel,
                                                         RowSpace space);

/// How many times a row template that does not hold the row in registers
/// passes over it: once a reduction (a max and the sum of exponentials it
/// shifts together), once a softmax, once more for row-shaped outputs.
int64_t loopedRowPasses(KernelOp kernel, RowSpace space);

/// The reduce each result of a reduction kernel is computed from: the
/// result itself, or the one reduce among the ops it is computed from, of
/// as many elements, which an elementwise epilogue follows (kf-split-k's
/// sums, a column sum with its cast). Empty unless every result has one.
llvm::SmallVector<ReduceOp> resultReducesOf(KernelOp kernel);

/// [rows, columns] of a float reduce over the leading dims of its input
/// into 32 columns or more (what the column template reduces).
std::optional<RowSpace> leadingDimsSpace(ReduceOp reduce);

/// A reduction kernel that reduces the leading dims of its input
/// ([rows..., columns...] to [columns...]): [rows, columns].
std::optional<RowSpace> columnSpaceOf(KernelOp kernel);

/// The transpose of the last two dims of a kernel input, in a pointwise
/// kernel over the transposed shape: staged through shared-memory tiles.
TransposeOp tiledTransposeOf(KernelOp kernel);

/// Work items of a kernel (elements, rows or outputs, by kind): what
/// kf-tile sizes the grid for and kf-lower-to-gpu loops over.
int64_t kernelWorkItems(KernelOp kernel);

/// The attention op of an attention kernel.
AttentionOp attentionOf(KernelOp kernel);

/// The kf.attention_grad of an attention_grad kernel.
AttentionGradOp attentionGradOf(KernelOp kernel);

/// How an attention kernel reads its q, k or v `operand`: the kernel
/// argument it is, or a view of (reshapes, transposes and slices in the
/// kernel), with the argument's row stride.
std::optional<StridedView> attentionOperandView(KernelOp kernel,
                                                mlir::Value operand);

/// Whether the FlashAttention template's copies can read attention operand
/// `operand` of `kernel`: a kernel argument, or a view of one whose rows
/// they can copy.
bool copiesAttentionOperand(KernelOp kernel, mlir::Value operand);

/// Whether the attention kernel `kernel` computes q (a prologue: RoPE, a
/// scale, casts), which the FlashAttention template does into its Q tile
/// once a block; k and v it only ever copies.
bool attentionComputesQuery(KernelOp kernel);

/// The strides, in an attention kernel's result buffer, of its attention
/// result's [B, H, Sq, Dv] dims: dense, or those of the reshapes and
/// transposes of it the kernel yields (heads merged: [B, Sq, H * Dv]).
std::optional<llvm::SmallVector<int64_t, 4>>
attentionResultStrides(KernelOp kernel);

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

} // namespace kfuse::kf

#endif // KFUSE_ANALYSIS_KERNELANALYSIS_H
