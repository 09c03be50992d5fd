//===- IndexingBuilder.cpp - slice, concat, pad, gather, rand -------------===//
//
// The frontend's indexing ops (kfuse/Graph.h). Like GraphBuilder.cpp, each
// checks its operands with the shared shape rules and records an error
// naming the op and the shapes; positions are normalised here (negative
// ones count from the end) so the IR holds only the canonical form.
//
//===----------------------------------------------------------------------===//

#include "frontend/GraphImpl.h"
#include "ir/KFDialect.h"

using namespace mlir;
using kfuse::detail::GraphImpl;
namespace shapes = kfuse::kf::shapes;

namespace kfuse {

Tensor slice(Tensor x, int64_t axis, int64_t start, std::optional<int64_t> stop,
             int64_t step) {
  GraphImpl *g = GraphImpl::graphOf("slice", {x});
  if (!g)
    return {};
  const shapes::Shape &in = g->shapeOf(x);
  std::optional<int64_t> a = g->normalizeAxis("slice", axis, in.size());
  if (!a)
    return {};
  int64_t rank = in.size();
  SmallVector<int64_t> starts(rank, 0), limits(rank, shapes::kSliceToEnd),
      steps(rank, 1);
  int64_t size = in[*a];
  // Python's negative positions, for a dim whose size is known.
  auto position = [&](int64_t p) {
    return p < 0 && !shapes::isSymbolic(size) ? p + size : p;
  };
  starts[*a] = position(start);
  if (stop)
    limits[*a] = position(*stop);
  steps[*a] = step;
  // x[0:n:1] of a dim of n is x: no op.
  if (starts[*a] == 0 && step == 1 &&
      (!stop || (!shapes::isSymbolic(size) && limits[*a] == size)))
    return x;
  if (starts[*a] < 0)
    return g->fail("slice", "start " + std::to_string(start) +
                                " is out of range for dim " +
                                std::to_string(*a) + " of " +
                                g->diag().str(in));
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape =
      shapes::inferSlice(in, starts, limits, steps, diag);
  if (failed(shape))
    return g->fail("slice", diag.message());
  OpBuilder b = g->builder();
  Value v = kf::SliceOp::create(
      b, g->loc("slice"), g->tensorType(*shape, g->dtypeOf(x)), g->value(x),
      b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(limits),
      b.getDenseI64ArrayAttr(steps));
  return g->wrap(v, *shape);
}

Tensor concat(const std::vector<Tensor> &tensors, int64_t axis) {
  if (tensors.empty())
    return {};
  GraphImpl *g = GraphImpl::graphOf("concat", {tensors.front()});
  if (!g)
    return {};
  DType dtype = g->dtypeOf(tensors.front());
  for (Tensor t : tensors) {
    if (!GraphImpl::graphOf("concat", {tensors.front(), t}))
      return {};
    dtype = detail::promote(dtype, g->dtypeOf(t));
  }
  std::optional<int64_t> a =
      g->normalizeAxis("concat", axis, g->shapeOf(tensors.front()).size());
  if (!a)
    return {};
  SmallVector<Value> values;
  // Copies: a cast adds a tensor, which may move the shapes held so far.
  SmallVector<shapes::Shape> inputShapes;
  for (Tensor t : tensors) {
    Tensor cast = g->castTo(t, dtype);
    if (!cast.isValid())
      return {};
    values.push_back(g->value(cast));
    inputShapes.push_back(g->shapeOf(cast));
  }
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape = shapes::inferConcat(
      SmallVector<ArrayRef<int64_t>>(inputShapes.begin(), inputShapes.end()),
      *a, diag);
  if (failed(shape))
    return g->fail("concat", diag.message());
  OpBuilder b = g->builder();
  Value v = kf::ConcatOp::create(b, g->loc("concat"),
                                 g->tensorType(*shape, dtype), values,
                                 b.getI64IntegerAttr(*a));
  return g->wrap(v, *shape);
}

Tensor pad(Tensor x, const std::vector<std::pair<int64_t, int64_t>> &widths,
           double value) {
  GraphImpl *g = GraphImpl::graphOf("pad", {x});
  if (!g)
    return {};
  SmallVector<int64_t> low, high;
  for (auto [before, after] : widths) {
    low.push_back(before);
    high.push_back(after);
  }
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape =
      shapes::inferPad(g->shapeOf(x), low, high, diag);
  if (failed(shape))
    return g->fail("pad", diag.message());
  OpBuilder b = g->builder();
  Value v = kf::PadOp::create(b, g->loc("pad"),
                              g->tensorType(*shape, g->dtypeOf(x)),
                              g->value(x), b.getDenseI64ArrayAttr(low),
                              b.getDenseI64ArrayAttr(high),
                              b.getF64FloatAttr(value));
  return g->wrap(v, *shape);
}

namespace {

/// Checks what gather and takeAlongAxis share: integer indices and the
/// axis. Returns the normalised axis.
std::optional<int64_t> checkIndexing(GraphImpl &g, StringRef op, Tensor x,
                                     Tensor indices, int64_t axis) {
  DType dtype = g.dtypeOf(indices);
  if (dtype != DType::i32 && dtype != DType::i64) {
    g.fail(op, std::string("indices must be i32 or i64, got ") +
                   dtypeName(dtype) + " " + g.diag().str(g.shapeOf(indices)));
    return std::nullopt;
  }
  return g.normalizeAxis(op, axis, g.shapeOf(x).size());
}

/// Builds kf.gather or kf.take_along_axis once the shape is known.
template <typename OpT>
Tensor buildIndexing(GraphImpl &g, StringRef op, Tensor x, Tensor indices,
                     int64_t axis, FailureOr<shapes::Shape> shape,
                     const shapes::ShapeDiag &diag) {
  if (failed(shape))
    return g.fail(op, diag.message());
  OpBuilder b = g.builder();
  Value v = OpT::create(b, g.loc(op), g.tensorType(*shape, g.dtypeOf(x)),
                        g.value(x), g.value(indices), b.getI64IntegerAttr(axis));
  return g.wrap(v, *shape);
}

} // namespace

Tensor gather(Tensor x, Tensor indices, int64_t axis) {
  GraphImpl *g = GraphImpl::graphOf("gather", {x, indices});
  if (!g)
    return {};
  std::optional<int64_t> a = checkIndexing(*g, "gather", x, indices, axis);
  if (!a)
    return {};
  shapes::ShapeDiag diag = g->diag();
  return buildIndexing<kf::GatherOp>(
      *g, "gather", x, indices, *a,
      shapes::inferGather(g->shapeOf(x), g->shapeOf(indices), *a, diag), diag);
}

Tensor indexAdd(Tensor updates, Tensor indices, int64_t axis, int64_t size) {
  GraphImpl *g = GraphImpl::graphOf("indexAdd", {updates, indices});
  if (!g)
    return {};
  DType dtype = g->dtypeOf(updates);
  if (!isFloat(dtype))
    return g->fail("indexAdd", std::string("updates must be f32, f16 or "
                                           "bf16, got ") +
                                   dtypeName(dtype));
  std::optional<int64_t> a =
      checkIndexing(*g, "indexAdd", updates, indices, axis);
  if (!a)
    return {};
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape = shapes::inferIndexAdd(
      g->shapeOf(updates), g->shapeOf(indices), *a, size, diag);
  if (failed(shape))
    return g->fail("indexAdd", diag.message());
  Tensor wide = dtype == DType::f32 ? updates : cast(updates, DType::f32);
  OpBuilder b = g->builder();
  Value v = kf::IndexAddOp::create(
      b, g->loc("indexAdd"), g->tensorType(*shape, DType::f32), g->value(wide),
      g->value(indices), b.getI64IntegerAttr(*a), b.getI64IntegerAttr(size));
  Tensor sum = g->wrap(v, *shape);
  return dtype == DType::f32 ? sum : cast(sum, dtype);
}

Tensor takeAlongAxis(Tensor x, Tensor indices, int64_t axis) {
  GraphImpl *g = GraphImpl::graphOf("takeAlongAxis", {x, indices});
  if (!g)
    return {};
  std::optional<int64_t> a =
      checkIndexing(*g, "takeAlongAxis", x, indices, axis);
  if (!a)
    return {};
  shapes::ShapeDiag diag = g->diag();
  return buildIndexing<kf::TakeAlongAxisOp>(
      *g, "takeAlongAxis", x, indices, *a,
      shapes::inferTakeAlongAxis(g->shapeOf(x), g->shapeOf(indices), *a, diag),
      diag);
}

Tensor rand(Tensor seed, const Shape &dims, DType dtype) {
  GraphImpl *g = GraphImpl::graphOf("rand", {seed});
  if (!g)
    return {};
  if (g->dtypeOf(seed) != DType::i32 || !g->shapeOf(seed).empty())
    return g->fail("rand", std::string("the seed must be a rank-0 i32 "
                                       "tensor, got ") +
                               dtypeName(g->dtypeOf(seed)) + " " +
                               g->diag().str(g->shapeOf(seed)));
  if (!isFloat(dtype))
    return g->fail("rand", std::string("dtype must be f32, f16 or bf16, got ") +
                               dtypeName(dtype));
  std::optional<shapes::Shape> shape = g->fromDims(dims);
  if (!shape)
    return g->fail("rand", "negative dim in " + shapeString(dims));
  OpBuilder b = g->builder();
  Value v = kf::RandomOp::create(b, g->loc("rand"), g->tensorType(*shape, dtype),
                                 g->value(seed),
                                 b.getI64IntegerAttr(g->randomStreams++),
                                 g->dimSymbols(*shape));
  return g->wrap(v, *shape);
}

Tensor dropout(Tensor x, Tensor seed, double p) {
  GraphImpl *g = GraphImpl::graphOf("dropout", {x, seed});
  if (!g)
    return {};
  if (!(p >= 0 && p < 1))
    return g->fail("dropout", "p = " + std::to_string(p) +
                                  " must be in [0, 1)");
  Tensor scaled = x * (1.0 / (1.0 - p));
  Tensor u = rand(seed, x.shape(), DType::f32);
  return where(u >= scalarLike(u, p), scaled, scalarLike(scaled, 0.0));
}

} // namespace kfuse
