//===- StridedViews.h - view chains as offsets and strides -----*- C++ -*-===//
//
// A chain of reshapes, transposes and slices moves no data: each element
// of its result is an element of the value the chain starts from, at an
// offset and strides of the result's position (where no reshape merges
// dims that are not contiguous). Kernels that address their operands by
// strides (the FlashAttention template's copies of q, k and v) read such a
// chain in place, and kf-fuse lets it join them rather than copy it.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_ANALYSIS_STRIDEDVIEWS_H
#define KFUSE_ANALYSIS_STRIDEDVIEWS_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace kfuse::kf {

/// Element i of a view is element offset + sum over d of strides[d] * i[d]
/// of `root`'s buffer.
struct StridedView {
  mlir::Value root;
  int64_t offset = 0;
  llvm::SmallVector<int64_t, 4> strides;
};

/// Whether `op` is a reshape, transpose or slice: an op a view reads
/// through.
bool isViewOp(mlir::Operation *op);

/// `v` as a view of the value its chain of view ops starts from, or of
/// `stopAt` where the chain passes it. The root's rows are `rootRowStride`
/// elements apart (0: dense). Nothing where a reshape merges dims that are
/// not contiguous, or a shape is dynamic.
std::optional<StridedView> stridedViewOf(mlir::Value v,
                                         int64_t rootRowStride = 0,
                                         mlir::Value stopAt = {});

/// Where each element of `v` lies in the dense buffer of `root`, a chain
/// of reshapes and transposes of `v` (each element of `root` one of
/// `v`'s): the strides of `v`'s dims there. Nothing for other chains.
std::optional<llvm::SmallVector<int64_t, 4>> stridesWithin(mlir::Value v,
                                                           mlir::Value root);

/// Whether a view is one the FlashAttention template's copies read in
/// place: contiguous along the last dim, and every row, head and batch
/// starting 16 bytes apart (offset and strides multiples of 8 elements).
bool isCopyableRowView(const StridedView &view);

} // namespace kfuse::kf

#endif // KFUSE_ANALYSIS_STRIDEDVIEWS_H
