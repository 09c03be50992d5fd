//===- ShapeRules.cpp - vector-Jacobian rules of movement and reductions --===//
//
// Movement ops move cotangents back: a broadcast sums, a reshape or
// transpose undoes itself, slice and pad and concat swap roles. The
// indexing ops' backward adds cotangents into the positions read, built
// as one-hot sums (compares against an iota), which fuse into a
// pointwise or reduction kernel; reductions broadcast back.
//
//===----------------------------------------------------------------------===//

#include "autodiff/Rules.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace shapes = kfuse::kf::shapes;

namespace kfuse::autodiff {

Tensor toF32(Tensor t) { return cast(t, DType::f32); }

Tensor zerosLike(Tensor like) {
  return broadcastTo(scalarLike(toF32(like), 0.0), like.shape());
}

Tensor reshapeTo(Tensor t, const Shape &shape) {
  return t.shape() == shape ? t : reshape(t, shape);
}

Tensor unsqueeze(Tensor t, int64_t axis) {
  Shape shape = t.shape();
  shape.insert(shape.begin() + axis, Dim(1));
  return reshape(t, shape);
}

Tensor sumToShape(Tensor ct, const Shape &shape) {
  Shape from = ct.shape();
  size_t lead = from.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (shape[i - lead] == Dim(1) && !(from[i] == Dim(1))))
      axes.push_back(static_cast<int64_t>(i));
  if (axes.empty())
    return reshapeTo(ct, shape);
  // Kept dims where the target keeps them (a row kernel reads a [rows, 1]
  // sum in place), dropped for the leading ones.
  bool keep = lead == 0;
  return reshapeTo(reduceSum(ct, axes, keep), shape);
}

namespace {

int64_t dimSize(Tensor t, int64_t axis) { return t.shape()[axis].size(); }

/// dx of y = x[start:limit:step] along `axis` of a dim of `size`: the
/// cotangent spread `step` apart (a dim of `step` padded after each
/// element, merged), then padded to the dim. The pads are -0.0, the
/// additive identity: the gradients of several slices of one value sum
/// exactly to their concatenation (ir/PiecewisePatterns.cpp).
Tensor unslice(Tensor g, int64_t axis, int64_t start, int64_t step,
               int64_t size) {
  int64_t rank = g.rank(), n = dimSize(g, axis);
  if (step > 1) {
    std::vector<std::pair<int64_t, int64_t>> after(rank + 1, {0, 0});
    after[axis + 1] = {0, step - 1};
    Tensor spread = pad(unsqueeze(g, axis + 1), after, -0.0);
    Shape merged = g.shape();
    merged[axis] = Dim(n * step);
    g = reshape(spread, merged);
    if (start + n * step > size)
      g = slice(g, axis, 0, size - start);
  }
  std::vector<std::pair<int64_t, int64_t>> widths(rank, {0, 0});
  widths[axis] = {start, size - start - dimSize(g, axis)};
  return pad(g, widths, -0.0);
}

Cotangents sliceVJP(kf::SliceOp op, Tensor g, const RuleContext &ctx) {
  Tensor x = ctx.primal(op.getInput());
  for (auto [axis, start, step] :
       llvm::enumerate(op.getStarts(), op.getSteps())) {
    int64_t size = dimSize(x, axis);
    if (shapes::isSymbolic(size))
      continue; // kept whole
    if (start != 0 || step != 1 || dimSize(g, axis) != size)
      g = unslice(g, axis, start, step, size);
  }
  return {g};
}

Cotangents concatVJP(kf::ConcatOp op, Tensor g, const RuleContext &ctx) {
  Cotangents out;
  int64_t axis = op.getAxis(), offset = 0;
  for (Value input : op.getInputs()) {
    int64_t size = dimSize(ctx.primal(input), axis);
    out.push_back(slice(g, axis, offset, offset + size));
    offset += size;
  }
  return out;
}

Cotangents padVJP(kf::PadOp op, Tensor g, const RuleContext &ctx) {
  Tensor x = ctx.primal(op.getInput());
  for (auto [axis, low] : llvm::enumerate(op.getLow()))
    if (low != 0 || op.getHigh()[axis] != 0)
      g = slice(g, axis, low, low + dimSize(x, axis));
  return {g};
}

/// The rows j in [0, n) of an i64 iota along dim `at` of a rank-`rank`
/// shape (1 elsewhere), n being `x`'s dim `axis`, static or symbolic.
Tensor rowPositions(const RuleContext &ctx, Tensor x, int64_t axis,
                    int64_t rank, int64_t at) {
  Shape positions(rank, Dim(1));
  positions[at] = x.shape()[axis];
  return ctx.graph.iota(positions, at, DType::i64);
}

/// `indices` in [0, n) where they count from the end, as the forward
/// reads them (i64, so the compare with an iota is exact), n being `x`'s
/// dim `axis`. A symbolic n is counted: the largest of an iota along it,
/// + 1 (in f32, exact below 2^24 rows; integers are not reduced).
Tensor wrapIndices(const RuleContext &ctx, Tensor indices, Tensor x,
                   int64_t axis) {
  indices = cast(indices, DType::i64);
  Tensor zero = scalarLike(indices, 0);
  Dim rows = x.shape()[axis];
  Tensor n =
      rows.isSymbolic()
          ? reshape(cast(reduceMax(ctx.graph.iota({rows}, 0, DType::f32)) + 1.0,
                         DType::i64),
                    Shape(indices.rank(), Dim(1)))
          : scalarLike(indices, double(rows.size()));
  return where(indices < zero, indices + n, indices);
}

/// take_along_axis: dx[.., j, ..] = sum over i of [idx[.., i, ..] = j]
/// g[.., i, ..]: the pair (i, j) laid out along axis and axis + 1.
Cotangents takeAlongAxisVJP(kf::TakeAlongAxisOp op, Tensor g,
                            const RuleContext &ctx) {
  Tensor x = ctx.primal(op.getInput());
  int64_t axis = op.getAxis();
  Tensor idx = unsqueeze(wrapIndices(ctx, ctx.primal(op.getIndices()), x, axis),
                         axis + 1);
  Tensor j = rowPositions(ctx, x, axis, x.rank() + 1, axis + 1);
  Tensor hit = compare(Compare::eq, idx, j);
  Tensor picked = where(hit, unsqueeze(g, axis + 1), scalarLike(g, 0.0));
  return {reduceSum(picked, {axis}), Tensor()};
}

/// gather along `axis` (x is [pre..., n, post...], the result
/// [pre..., I..., post...]) when n is symbolic, which index_add cannot
/// take: dx[p, j, q] = sum over i of [idx[i] = j] g[p, i, q], the index
/// dims I laid out before j and summed, as compares against an iota
/// (n times index_add's work).
Tensor gatherVJPByCompare(Tensor x, Tensor indices, int64_t axis, Tensor g,
                          const RuleContext &ctx) {
  int64_t r = indices.rank(), post = x.rank() - axis - 1;
  Shape idxShape(axis, Dim(1));
  for (const Dim &d : indices.shape())
    idxShape.push_back(d);
  idxShape.insert(idxShape.end(), 1 + post, Dim(1));
  Tensor idx = reshape(wrapIndices(ctx, indices, x, axis), idxShape);
  Tensor j = rowPositions(ctx, x, axis, axis + r + 1 + post, axis + r);
  Tensor picked = where(compare(Compare::eq, idx, j), unsqueeze(g, axis + r),
                        scalarLike(g, 0.0));
  std::vector<int64_t> indexDims;
  for (int64_t d = axis; d < axis + r; ++d)
    indexDims.push_back(d);
  Tensor dx = indexDims.empty() ? reshape(picked, x.shape())
                                : reduceSum(picked, indexDims);
  return dx;
}

Cotangents gatherVJP(kf::GatherOp op, Tensor g, const RuleContext &ctx) {
  Tensor x = ctx.primal(op.getInput());
  int64_t axis = op.getAxis();
  Tensor indices = ctx.primal(op.getIndices());
  Dim n = x.shape()[axis];
  // gather's transpose: each cotangent row added into the row it was read
  // from, in index order (deterministic; out-of-range indices add nothing,
  // as gather read NaN there).
  if (!n.isSymbolic())
    return {indexAdd(g, indices, axis, n.size()), Tensor()};
  return {gatherVJPByCompare(x, indices, axis, g, ctx), Tensor()};
}

/// index_add: each update's cotangent is the result's at its row, zero
/// where its index added nothing (gather reads NaN there).
Cotangents indexAddVJP(kf::IndexAddOp op, Tensor g, const RuleContext &ctx) {
  Tensor indices = ctx.primal(op.getIndices());
  int64_t axis = op.getAxis(), n = op.getSize();
  Tensor picked = gather(g, indices, axis);
  Tensor wide = cast(indices, DType::i64);
  Tensor inside = logicalAnd(wide >= scalarLike(wide, double(-n)),
                             wide < scalarLike(wide, double(n)));
  Shape spread(picked.rank(), Dim(1));
  for (int64_t d = 0; d < indices.rank(); ++d)
    spread[axis + d] = indices.shape()[d];
  inside = broadcastTo(reshape(inside, spread), picked.shape());
  return {where(inside, picked, scalarLike(picked, 0.0)), Tensor()};
}

Cotangents reduceVJP(kf::ReduceOp op, Tensor g, const RuleContext &ctx) {
  Tensor x = ctx.primal(op.getInput());
  std::vector<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
  Shape kept = x.shape();
  for (int64_t a : axes)
    kept[a] = Dim(1);
  auto back = [&](Tensor t) {
    return broadcastTo(reshapeTo(t, kept), x.shape());
  };
  Tensor spread = back(g);
  switch (op.getKind()) {
  case kf::ReduceKind::sum:
    return {spread};
  case kf::ReduceKind::mean: {
    int64_t count = 1;
    for (int64_t a : axes)
      count = count < 0 || x.shape()[a].isSymbolic()
                  ? -1
                  : count * x.shape()[a].size();
    if (count >= 0)
      return {spread * (1.0 / static_cast<double>(count))};
    // A symbolic count: the sum of ones, which the kernel computes.
    Tensor ones = broadcastTo(scalarLike(spread, 1.0), x.shape());
    return {spread / broadcastTo(reduceSum(ones, axes, true), x.shape())};
  }
  case kf::ReduceKind::max:
  case kf::ReduceKind::min: {
    // Equal elements share the cotangent (PyTorch's amax/amin).
    Tensor hit = compare(Compare::eq, x, back(ctx.primal(op.getResult())));
    Tensor count = reduceSum(cast(hit, DType::f32), axes, true);
    return {where(hit, spread / broadcastTo(count, x.shape()),
                  scalarLike(spread, 0.0))};
  }
  }
  return {Tensor()};
}

Cotangents cumsumVJP(kf::CumsumOp op, Tensor g) {
  // The sum from i to the end: the total less the running sum before i.
  int64_t axis = op.getAxis();
  Tensor total = broadcastTo(reduceSum(g, {axis}, true), g.shape());
  return {total - cumsum(g, axis) + g};
}

Cotangents transposeVJP(kf::TransposeOp op, Tensor g) {
  std::vector<int64_t> inverse(op.getPerm().size());
  for (auto [i, p] : llvm::enumerate(op.getPerm()))
    inverse[p] = static_cast<int64_t>(i);
  return {transpose(g, inverse)};
}

} // namespace

std::optional<Cotangents> shapeVJP(Operation *op, Tensor g,
                                   const RuleContext &ctx) {
  auto input = [&](Value v) { return ctx.primal(v).shape(); };
  return TypeSwitch<Operation *, std::optional<Cotangents>>(op)
      .Case([&](kf::BroadcastOp b) {
        return Cotangents{sumToShape(g, input(b.getInput()))};
      })
      .Case([&](kf::ReshapeOp r) {
        return Cotangents{reshapeTo(g, input(r.getInput()))};
      })
      .Case([&](kf::TransposeOp t) { return transposeVJP(t, g); })
      .Case([&](kf::SliceOp s) { return sliceVJP(s, g, ctx); })
      .Case([&](kf::ConcatOp c) { return concatVJP(c, g, ctx); })
      .Case([&](kf::PadOp p) { return padVJP(p, g, ctx); })
      .Case([&](kf::GatherOp gather) { return gatherVJP(gather, g, ctx); })
      .Case([&](kf::IndexAddOp a) { return indexAddVJP(a, g, ctx); })
      .Case([&](kf::TakeAlongAxisOp t) { return takeAlongAxisVJP(t, g, ctx); })
      .Case([&](kf::ReduceOp r) { return reduceVJP(r, g, ctx); })
      .Case([&](kf::CumsumOp c) { return cumsumVJP(c, g); })
      // Integer-valued or drawn: nothing flows back.
      .Case<kf::ArgReduceOp, kf::IotaOp, kf::ConstantOp, kf::RandomOp>(
          [&](Operation *) { return Cotangents(op->getNumOperands()); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace kfuse::autodiff
