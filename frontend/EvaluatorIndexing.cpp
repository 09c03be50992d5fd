//===- EvaluatorIndexing.cpp - the indexing ops in the reference evaluator -===//
//
// The semantics of kf.slice, kf.concat, kf.pad, kf.gather,
// kf.take_along_axis and kf.random (KFOps.td says them in words).
//
//===----------------------------------------------------------------------===//

#include "frontend/Interpreter.h"
#include "ir/Numerics.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kfuse::kf;

namespace kfuse::detail {

Buffer Interpreter::evalSlice(SliceOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput());
  SmallVector<int64_t, 4> strides = stridesOf(x.shape);
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t src = 0;
    for (size_t d = 0; d < index.size(); ++d)
      src += (starts[d] + index[d] * steps[d]) * strides[d];
    out.data[i] = x.data[src];
  });
  return out;
}

Buffer Interpreter::evalConcat(ConcatOp op) {
  Buffer out = like(op.getResult());
  int64_t axis = op.getAxis();
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t position = index[axis];
    for (Value input : op.getInputs()) {
      const Buffer &x = in(input);
      if (position >= x.shape[axis]) {
        position -= x.shape[axis];
        continue;
      }
      SmallVector<int64_t, 4> strides = stridesOf(x.shape);
      int64_t src = 0;
      for (size_t d = 0; d < index.size(); ++d)
        src += (int64_t(d) == axis ? position : index[d]) * strides[d];
      out.data[i] = x.data[src];
      return;
    }
  });
  return out;
}

Buffer Interpreter::evalPad(PadOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput());
  SmallVector<int64_t, 4> strides = stridesOf(x.shape);
  ArrayRef<int64_t> low = op.getLow();
  double value = op.getValue().convertToDouble();
  Type dtype = op.getType().getElementType();
  if (dtype.isInteger(1))
    value = value != 0;
  else if (dtype.isInteger())
    value = std::trunc(value);
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t src = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      int64_t at = index[d] - low[d];
      if (at < 0 || at >= x.shape[d]) {
        out.data[i] = value;
        return;
      }
      src += at * strides[d];
    }
    out.data[i] = x.data[src];
  });
  return out;
}

/// What kf.gather and kf.take_along_axis give for an index outside
/// [-n, n): NaN for floats, 0 (false) otherwise.
static double outOfRangeValue(Type dtype) {
  return isa<FloatType>(dtype) ? std::numeric_limits<double>::quiet_NaN()
                               : 0.0;
}

/// `index` along a dim of `n` elements, counting negative ones from the
/// end, or nullopt outside [-n, n).
static std::optional<int64_t> resolveIndex(double index, int64_t n) {
  auto i = static_cast<int64_t>(index);
  if (i < 0)
    i += n;
  if (i < 0 || i >= n)
    return std::nullopt;
  return i;
}

Buffer Interpreter::evalGather(GatherOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput()), &indices = in(op.getIndices());
  SmallVector<int64_t, 4> strides = stridesOf(x.shape);
  SmallVector<int64_t, 4> indexStrides = stridesOf(indices.shape);
  int64_t axis = op.getAxis(), indexRank = indices.shape.size();
  double fill = outOfRangeValue(op.getType().getElementType());
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t at = 0;
    for (int64_t d = 0; d < indexRank; ++d)
      at += index[axis + d] * indexStrides[d];
    std::optional<int64_t> picked = resolveIndex(indices.data[at], x.shape[axis]);
    if (!picked) {
      out.data[i] = fill;
      return;
    }
    int64_t src = *picked * strides[axis];
    for (int64_t d = 0; d < axis; ++d)
      src += index[d] * strides[d];
    for (int64_t d = axis + 1; d < int64_t(x.shape.size()); ++d)
      src += index[d - 1 + indexRank] * strides[d];
    out.data[i] = x.data[src];
  });
  return out;
}

Buffer Interpreter::evalIndexAdd(IndexAddOp op) {
  Buffer out = like(op.getResult());
  std::fill(out.data.begin(), out.data.end(), 0.0);
  const Buffer &updates = in(op.getUpdates()), &indices = in(op.getIndices());
  SmallVector<int64_t, 4> strides = stridesOf(out.shape);
  SmallVector<int64_t, 4> indexStrides = stridesOf(indices.shape);
  int64_t axis = op.getAxis(), indexRank = indices.shape.size();
  int64_t rank = out.shape.size();
  // In the updates' order: each result element's sum in index order.
  forEachIndex(updates.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t at = 0;
    for (int64_t d = 0; d < indexRank; ++d)
      at += index[axis + d] * indexStrides[d];
    std::optional<int64_t> row = resolveIndex(indices.data[at], op.getSize());
    if (!row)
      return;
    int64_t dst = *row * strides[axis];
    for (int64_t d = 0; d < axis; ++d)
      dst += index[d] * strides[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      dst += index[d - 1 + indexRank] * strides[d];
    out.data[dst] += updates.data[i];
  });
  return out;
}

Buffer Interpreter::evalTakeAlongAxis(TakeAlongAxisOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput()), &indices = in(op.getIndices());
  SmallVector<int64_t, 4> strides = stridesOf(x.shape);
  int64_t axis = op.getAxis();
  double fill = outOfRangeValue(op.getType().getElementType());
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    std::optional<int64_t> picked = resolveIndex(indices.data[i], x.shape[axis]);
    if (!picked) {
      out.data[i] = fill;
      return;
    }
    int64_t src = 0;
    for (size_t d = 0; d < index.size(); ++d)
      src += (int64_t(d) == axis ? *picked : index[d]) * strides[d];
    out.data[i] = x.data[src];
  });
  return out;
}

Buffer Interpreter::evalRandom(RandomOp op) {
  Buffer out = like(op.getResult());
  auto seed = static_cast<uint32_t>(static_cast<int64_t>(in(op.getSeed()).data[0]));
  auto stream = static_cast<uint32_t>(op.getStream());
  for (size_t i = 0; i < out.data.size(); ++i)
    out.data[i] = numerics::philoxUniform(seed, stream, i);
  return out;
}

} // namespace kfuse::detail
