//===- EvaluatorAxisOps.cpp - kf.arg_reduce and kf.cumsum, evaluated ------===//
//
// Both walk lines of the input along one axis (KFOps.td says what they
// compute): a line is the elements whose indices differ only at `axis`.
//
//===----------------------------------------------------------------------===//

#include "frontend/Interpreter.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;

namespace kfuse::detail {

namespace {

/// Calls fn(first, stride) for each line of `shape` along `axis`: the flat
/// index of its first element and the step between its elements.
template <typename Fn>
void forEachLine(ArrayRef<int64_t> shape, int64_t axis, Fn fn) {
  int64_t inner = stridesOf(shape)[axis], n = shape[axis];
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (total == 0)
    return;
  for (int64_t outer = 0; outer < total / (n * inner); ++outer)
    for (int64_t i = 0; i < inner; ++i)
      fn(outer * n * inner + i, inner);
}

} // namespace

Buffer Interpreter::evalArgReduce(ArgReduceOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput());
  int64_t axis = op.getAxis(), n = x.shape[axis];
  bool max = op.getKind() == ReduceKind::max;
  size_t next = 0; // lines come in the output's row-major order
  forEachLine(x.shape, axis, [&](int64_t first, int64_t stride) {
    int64_t best = 0;
    double bestValue = x.data[first];
    for (int64_t j = 1; j < n && !std::isnan(bestValue); ++j) {
      double v = x.data[first + j * stride];
      if (std::isnan(v) || (max ? v > bestValue : v < bestValue)) {
        best = j;
        bestValue = v;
      }
    }
    out.data[next++] = static_cast<double>(best);
  });
  return out;
}

Buffer Interpreter::evalCumsum(CumsumOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput());
  int64_t n = x.shape[op.getAxis()];
  forEachLine(x.shape, op.getAxis(), [&](int64_t first, int64_t stride) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      sum += x.data[first + j * stride];
      out.data[first + j * stride] = sum;
    }
  });
  return out;
}

} // namespace kfuse::detail
