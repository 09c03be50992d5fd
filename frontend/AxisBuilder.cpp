//===- AxisBuilder.cpp - argmax, argmin, cumsum and logsumexp -------------===//
//
// The frontend's ops along axes (kfuse/Graph.h): kf.arg_reduce, kf.cumsum
// and logsumexp, written from kf ops. Errors name the op, the dtype and the
// shape.
//
//===----------------------------------------------------------------------===//

#include "frontend/GraphImpl.h"
#include "ir/KFDialect.h"

#include <cmath>

using namespace mlir;
using kfuse::detail::GraphImpl;
namespace shapes = kfuse::kf::shapes;

namespace kfuse {

namespace {

/// The graph of `x` and its normalised axis, if x's dtype is one a line
/// is compared or summed in (floats, i32).
std::optional<std::pair<GraphImpl *, int64_t>>
checkLineOp(StringRef op, Tensor x, int64_t axis) {
  GraphImpl *g = GraphImpl::graphOf(op, {x});
  if (!g)
    return std::nullopt;
  DType dtype = g->dtypeOf(x);
  if (!isFloat(dtype) && dtype != DType::i32) {
    g->fail(op, std::string("takes floats or i32, got ") + dtypeName(dtype) +
                    " " + g->diag().str(g->shapeOf(x)));
    return std::nullopt;
  }
  std::optional<int64_t> a = g->normalizeAxis(op, axis, g->shapeOf(x).size());
  if (!a)
    return std::nullopt;
  return std::pair{g, *a};
}

Tensor argReduce(StringRef op, kf::ReduceKind kind, Tensor x, int64_t axis,
                 bool keepDims) {
  auto checked = checkLineOp(op, x, axis);
  if (!checked)
    return {};
  auto [g, a] = *checked;
  shapes::Shape in = g->shapeOf(x);
  if (in[a] == 0)
    return g->fail(op, "axis " + std::to_string(a) + " of " +
                           g->diag().str(in) +
                           " is empty: no position to return");
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape = shapes::inferReduce(in, {a}, keepDims, diag);
  if (failed(shape))
    return g->fail(op, diag.message());
  OpBuilder b = g->builder();
  Value v = kf::ArgReduceOp::create(
      b, g->loc(op), g->tensorType(*shape, DType::i64),
      kf::ReduceKindAttr::get(b.getContext(), kind), g->value(x),
      b.getI64IntegerAttr(a), b.getBoolAttr(keepDims));
  return g->wrap(v, *shape);
}

} // namespace

Tensor argmax(Tensor x, int64_t axis, bool keepDims) {
  return argReduce("argmax", kf::ReduceKind::max, x, axis, keepDims);
}

Tensor argmin(Tensor x, int64_t axis, bool keepDims) {
  return argReduce("argmin", kf::ReduceKind::min, x, axis, keepDims);
}

Tensor cumsum(Tensor x, int64_t axis) {
  auto checked = checkLineOp("cumsum", x, axis);
  if (!checked)
    return {};
  auto [g, a] = *checked;
  shapes::Shape in = g->shapeOf(x);
  OpBuilder b = g->builder();
  Value v = kf::CumsumOp::create(b, g->loc("cumsum"),
                                 g->tensorType(in, g->dtypeOf(x)), g->value(x),
                                 b.getI64IntegerAttr(a));
  return g->wrap(v, in);
}

Tensor logsumexp(Tensor x, std::vector<int64_t> axes, bool keepDims) {
  GraphImpl *g = GraphImpl::graphOf("logsumexp", {x});
  if (!g)
    return {};
  if (!isFloat(g->dtypeOf(x)))
    x = g->castTo(x, DType::f32);
  // exp(x - max) over the max's own row is what the row kernels compute
  // online (kf::shiftedExpSumOf): the shift stays a plain subtraction.
  Tensor max = stopGradient(reduceMax(x, axes, true));
  Tensor sum = reduceSum(exp(x - max), axes, keepDims);
  if (!sum.isValid())
    return {};
  Tensor shift = keepDims ? max : reshape(max, sum.shape());
  // A max of +-inf makes x - max NaN at the max (inf - inf); the log-sum
  // of such a row is that infinity (-inf for a row of -inf), as in torch.
  // The select is on the row's result: the online sum keeps its pattern.
  Tensor infinite = compare(Compare::eq, abs(shift),
                            scalarLike(shift, INFINITY));
  return where(infinite, shift, log(sum) + shift);
}

} // namespace kfuse
