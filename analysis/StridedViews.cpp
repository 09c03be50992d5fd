//===- StridedViews.cpp - reshapes, transposes and slices as strides ------===//

#include "analysis/StridedViews.h"

#include "ir/KFDialect.h"

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// The strides of `to` for a reshape of `from` laid out with `strides`,
/// or nothing where it merges dims that are not contiguous. Dims are
/// matched in groups of equal element counts from the innermost; within a
/// group of the input, dims are contiguous, so the group is one run of
/// elements `base` apart that the output's dims of the group split anew.
std::optional<SmallVector<int64_t, 4>>
reshapedStrides(ArrayRef<int64_t> from, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> to) {
  SmallVector<int64_t, 4> out(to.size(), 1);
  int64_t outDim = static_cast<int64_t>(to.size()) - 1;
  int64_t inCount = 1, outCount = 1;
  int64_t base = from.empty() ? 1 : strides.back();
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
    inCount *= from[d];
    // The group goes on while the next outer dim continues this run.
    bool groupEnds =
        d == 0 || (from[d - 1] != 1 && strides[d - 1] != inCount * base);
    if (!groupEnds)
      continue;
    while (outDim >= 0 && (outCount < inCount || to[outDim] == 1)) {
      out[outDim] = outCount * base;
      outCount *= to[outDim];
      --outDim;
    }
    if (outCount != inCount)
      return std::nullopt;
    if (d > 0) {
      base = strides[d - 1];
      inCount = outCount = 1;
    }
  }
  // Size-1 dims the loop did not reach (all of a reshape of a scalar).
  for (; outDim >= 0; --outDim)
    if (to[outDim] != 1)
      return std::nullopt;
  return out;
}

/// Row-major strides of `shape`, rows `rowStride` apart (0: dense).
SmallVector<int64_t, 4> denseStrides(ArrayRef<int64_t> shape,
                                     int64_t rowStride = 0) {
  SmallVector<int64_t, 4> strides(shape.size(), 1);
  int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] =
        d == rank - 2 && rowStride ? rowStride : strides[d + 1] * shape[d + 1];
  return strides;
}

} // namespace

bool kfuse::kf::isViewOp(Operation *op) {
  return isa<ReshapeOp, TransposeOp, SliceOp>(op);
}

std::optional<StridedView>
kfuse::kf::stridedViewOf(Value v, int64_t rootRowStride, Value stopAt) {
  SmallVector<Operation *> chain; // from v back to the root
  Value root = v;
  while (root != stopAt && root.getDefiningOp() &&
         isViewOp(root.getDefiningOp())) {
    chain.push_back(root.getDefiningOp());
    root = root.getDefiningOp()->getOperand(0);
  }
  auto rootType = dyn_cast<RankedTensorType>(root.getType());
  if (!rootType || !rootType.hasStaticShape())
    return std::nullopt;
  StridedView view{root, 0, denseStrides(rootType.getShape(), rootRowStride)};
  for (Operation *op : llvm::reverse(chain)) {
    ArrayRef<int64_t> from = shapeOf(op->getOperand(0));
    ArrayRef<int64_t> to = shapeOf(op->getResult(0));
    if (ShapedType::isDynamicShape(to))
      return std::nullopt;
    if (auto slice = dyn_cast<SliceOp>(op)) {
      for (size_t d = 0; d < view.strides.size(); ++d) {
        view.offset += slice.getStarts()[d] * view.strides[d];
        view.strides[d] *= slice.getSteps()[d];
      }
    } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t, 4> strides;
      for (int64_t from : transpose.getPerm())
        strides.push_back(view.strides[from]);
      view.strides = strides;
    } else {
      std::optional<SmallVector<int64_t, 4>> strides =
          reshapedStrides(from, view.strides, to);
      if (!strides)
        return std::nullopt;
      view.strides = *strides;
    }
  }
  return view;
}

std::optional<SmallVector<int64_t, 4>> kfuse::kf::stridesWithin(Value v,
                                                                Value root) {
  auto rootType = dyn_cast<RankedTensorType>(root.getType());
  if (!rootType || !rootType.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t, 4> strides = denseStrides(rootType.getShape());
  // From the root back to v, each op's input read as a view of its result.
  for (Value at = root; at != v;) {
    Operation *op = at.getDefiningOp();
    if (!op || !isa<ReshapeOp, TransposeOp>(op))
      return std::nullopt;
    Value input = op->getOperand(0);
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t, 4> in(strides.size());
      for (auto [d, from] : llvm::enumerate(transpose.getPerm()))
        in[from] = strides[d];
      strides = in;
    } else {
      std::optional<SmallVector<int64_t, 4>> in =
          reshapedStrides(shapeOf(at), strides, shapeOf(input));
      if (!in)
        return std::nullopt;
      strides = *in;
    }
    at = input;
  }
  return strides;
}

bool kfuse::kf::isCopyableRowView(const StridedView &view) {
  if (view.strides.empty() || view.strides.back() != 1 || view.offset % 8)
    return false;
  return llvm::all_of(ArrayRef(view.strides).drop_back(),
                      [](int64_t s) { return s % 8 == 0; });
}
