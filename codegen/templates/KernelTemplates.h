//===- KernelTemplates.h - kf-lower-to-gpu's kernel templates ---*- C++ -*-===//
//
// One template per kernel kind, each looping over the kernel's work items
// as kf-tile recorded them and asking the KernelEmitter for the elements it
// needs; the helpers the templates share. Internal to kf-lower-to-gpu.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_KERNELTEMPLATES_H
#define KFUSE_CODEGEN_KERNELTEMPLATES_H

#include "codegen/emitter/KernelEmitter.h"
#include "analysis/KernelAnalysis.h"
#include "codegen/Passes.h"

namespace kfuse::kf {

/// The kernel's first result, as its body yields it.
mlir::Value rootValue(KernelOp kernel);
/// The kernel result that `value` is (the yield's operand number), if the
/// kernel yields it.
std::optional<unsigned> resultIndexOf(KernelOp kernel, mlir::Value value);

/// The kernel result that holds attention `op`'s log-sum-exp, if any.
std::optional<unsigned> lseResultOf(KernelOp kernel, AttentionOp op);
/// Combines an accumulator with a value, for sum, mean, max and min.
mlir::Value combine(KernelEmitter &e, ReduceKind kind, mlir::Value acc,
                    mlir::Value v);
/// The identity of a reduction of `kind` over values of `type`.
mlir::Value reductionInit(KernelEmitter &e, ReduceKind kind, mlir::Type type);
/// Stores every kernel result at linear index `at`, each computed there
/// from the body (from the values the template set with setElement: an
/// elementwise epilogue of them).
mlir::LogicalResult storeResultsAt(KernelEmitter &e, mlir::Value at);

/// The block's dynamic shared memory (the launch's `sharedBytes`) as
/// `elements` elements of `dtype`.
mlir::Value dynamicSharedView(mlir::OpBuilder &b, mlir::Location l,
                              int64_t elements, mlir::Type dtype);
/// A shared-memory buffer of `count` elements (f32 by default) for the
/// kernel.
mlir::Value workgroupBuffer(KernelEmitter &e, int64_t count,
                            mlir::Type element = {});

/// Index arithmetic for the templates that compute addresses (tensor-core
/// matmul, FlashAttention): one op each at the emitter's insertion point.
class IndexArithmetic {
protected:
  explicit IndexArithmetic(KernelEmitter &e)
      : e(e), b(e.builder()), l(e.loc()) {}
  mlir::Value idx(int64_t v) { return e.index(v); }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b, l, x, y);
  }
  mlir::Value mul(mlir::Value x, int64_t c) {
    return mlir::arith::MulIOp::create(b, l, x, idx(c));
  }
  mlir::Value div(mlir::Value x, int64_t c) {
    return mlir::arith::DivUIOp::create(b, l, x, idx(c));
  }
  mlir::Value rem(mlir::Value x, int64_t c) {
    return mlir::arith::RemUIOp::create(b, l, x, idx(c));
  }
  mlir::Value less(mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::ult,
                                       x, y);
  }
  mlir::Value minIndex(mlir::Value x, mlir::Value y) {
    return mlir::arith::MinUIOp::create(b, l, x, y);
  }

  KernelEmitter &e;
  mlir::OpBuilder &b;
  mlir::Location l;
};

/// Every result at every element, in 16-byte vectors (PointwiseKernels.cpp).
mlir::LogicalResult emitPointwise(KernelEmitter &e, int64_t items);

/// A pointwise kernel whose result kf-pad padded (its copy of a matmul or
/// attention operand): rows of the padded stride, zeros past their end
/// (PointwiseKernels.cpp).
mlir::LogicalResult emitPaddedRows(KernelEmitter &e, int64_t items);

/// One thread per output where no faster template applies
/// (PerOutputKernels.cpp): a reduction over any axes, a softmax along any
/// axis, a matmul, an attention.
mlir::LogicalResult emitReduction(KernelEmitter &e, int64_t items);
mlir::LogicalResult emitSoftmax(KernelEmitter &e, int64_t items);
/// One thread a line along an axis (LineKernels.cpp): `items` results of
/// an argmax/argmin, `items` lines of a running sum.
mlir::LogicalResult emitArgReduce(KernelEmitter &e, ArgReduceOp op,
                                  int64_t items);
mlir::LogicalResult emitCumsum(KernelEmitter &e, CumsumOp op, int64_t items);
/// An argmax/argmin along the last axis: a block a row (its row_tiling).
mlir::LogicalResult emitArgReduceRows(KernelEmitter &e, ArgReduceOp op,
                                      RowSpace rows);
/// A cumsum down columns: a block a 32-column tile (its column_scan_tiling).
mlir::LogicalResult emitColumnScan(KernelEmitter &e, CumsumOp op);
mlir::LogicalResult emitIndexAdd(KernelEmitter &e, IndexAddOp op,
                                 int64_t items);
/// A cumsum along the last axis: a block a row, scanned chunk by chunk.
mlir::LogicalResult emitCumsumRows(KernelEmitter &e, CumsumOp op,
                                   RowSpace rows);
mlir::LogicalResult emitMatmul(KernelEmitter &e, int64_t items);
mlir::LogicalResult emitAttention(KernelEmitter &e, int64_t items);

/// A kernel whose reductions and softmaxes run along the last axis of
/// [rows, length] data: one block per row (RowKernels.cpp).
mlir::LogicalResult emitRows(KernelEmitter &e, RowSpace space);

/// A reduction over the leading dims of [rows, columns] data, through
/// shared-memory partials (ColumnAndTransposeKernels.cpp).
mlir::LogicalResult emitColumns(KernelEmitter &e, RowSpace space);

/// A pointwise kernel around the transpose of the last two dims of an
/// input, through shared-memory tiles (ColumnAndTransposeKernels.cpp).
mlir::LogicalResult emitTiledTranspose(KernelEmitter &e,
                                       TransposeOp transpose);

/// A bf16/f16 matmul on tensor cores, with the kernel's elementwise ops as
/// its epilogue (MatmulKernel.cpp).
mlir::LogicalResult emitTensorCoreMatmul(KernelEmitter &e, MatmulOp matmul);

/// bf16/f16 attention on sm_90a: FlashAttention with wgmma, the scores in
/// registers (AttentionKernel.cpp).
mlir::LogicalResult emitFlashAttention(KernelEmitter &e, AttentionOp op);

/// FlashAttention's backward on sm_90a: dk and dv a block of keys, dq a
/// block of query rows, the probabilities recomputed in registers
/// (attention/AttentionGradKernel.cpp).
mlir::LogicalResult emitFlashAttentionGrad(KernelEmitter &e,
                                           AttentionGradOp op);

} // namespace kfuse::kf

#endif // KFUSE_CODEGEN_KERNELTEMPLATES_H
