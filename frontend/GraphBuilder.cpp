//===- GraphBuilder.cpp - the op functions of the C++ frontend ------------===//
//
// Each function checks its operands with the ops' shared shape rules,
// makes broadcasting and dtype promotion explicit (kf.broadcast, kf.cast)
// and appends one kf op. Errors name the op and the shapes involved.
//
//===----------------------------------------------------------------------===//

#include "frontend/GraphImpl.h"
#include "ir/KFDialect.h"

#include <cmath>

using namespace mlir;
using kfuse::detail::GraphImpl;
namespace shapes = kfuse::kf::shapes;

namespace kfuse {

GraphImpl *GraphImpl::graphOf(StringRef op,
                              std::initializer_list<Tensor> tensors) {
  GraphImpl *graph = nullptr;
  for (Tensor t : tensors) {
    if (!t.isValid())
      return nullptr;
    if (graph && GraphImpl::of(t) != graph) {
      graph->fail(op, "operands come from different graphs");
      return nullptr;
    }
    graph = GraphImpl::of(t);
  }
  return graph;
}

std::optional<int64_t> GraphImpl::normalizeAxis(StringRef op, int64_t axis,
                                                int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    fail(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
    return std::nullopt;
  }
  return a;
}

namespace {

/// The promotion order of Graph.h.
int rank(DType d) {
  switch (d) {
  case DType::i1:
    return 0;
  case DType::i32:
    return 1;
  case DType::i64:
    return 2;
  case DType::f16:
  case DType::bf16:
    return 3;
  case DType::f32:
    return 4;
  }
  return 0;
}

} // namespace

DType detail::promote(DType a, DType b) {
  if (a == b)
    return a;
  if (rank(a) == 3 && rank(b) == 3)
    return DType::f32; // f16 with bf16
  return rank(a) > rank(b) ? a : b;
}

namespace {

GraphImpl *graphOf(StringRef op, std::initializer_list<Tensor> tensors) {
  return GraphImpl::graphOf(op, tensors);
}

enum class Operands { Any, Numeric, Float, Bool };

/// The dtype an op computes in after promotion for its operand class.
DType computeType(DType d, Operands kind) {
  if (kind == Operands::Float && !isFloat(d))
    return DType::f32;
  if (kind == Operands::Numeric && d == DType::i1)
    return DType::i32;
  if (kind == Operands::Bool)
    return DType::i1;
  return d;
}

template <typename OpT> Tensor unary(StringRef name, Tensor x, Operands kind) {
  GraphImpl *g = graphOf(name, {x});
  if (!g)
    return {};
  x = g->castTo(x, computeType(g->dtypeOf(x), kind));
  if (!x.isValid())
    return {};
  OpBuilder b = g->builder();
  Value v = OpT::create(b, g->loc(name), g->value(x).getType(), g->value(x));
  return g->wrap(v, g->shapeOf(x));
}

/// Promotes and broadcasts `operands` to one dtype and shape, in place.
LogicalResult unify(GraphImpl &g, StringRef name, MutableArrayRef<Tensor> ts,
                    Operands kind) {
  DType dtype = g.dtypeOf(ts.front());
  shapes::Shape shape = g.shapeOf(ts.front());
  shapes::ShapeDiag diag = g.diag();
  for (Tensor t : ts.drop_front()) {
    dtype = detail::promote(dtype, g.dtypeOf(t));
    FailureOr<shapes::Shape> joined =
        shapes::broadcastShapes(shape, g.shapeOf(t), diag);
    if (failed(joined)) {
      g.fail(name, diag.message());
      return failure();
    }
    shape = *joined;
  }
  dtype = computeType(dtype, kind);
  for (Tensor &t : ts)
    t = g.broadcastTo(g.castTo(t, dtype), shape);
  // A conversion fails only by recording an error (a size that overflows).
  return success(llvm::all_of(ts, [](Tensor t) { return t.isValid(); }));
}

template <typename OpT>
Tensor binary(StringRef name, Tensor a, Tensor b, Operands kind) {
  GraphImpl *g = graphOf(name, {a, b});
  Tensor ops[] = {a, b};
  if (!g || failed(unify(*g, name, ops, kind)))
    return {};
  OpBuilder builder = g->builder();
  Value v = OpT::create(builder, g->loc(name), g->value(ops[0]).getType(),
                        g->value(ops[0]), g->value(ops[1]));
  return g->wrap(v, g->shapeOf(ops[0]));
}

Tensor reduce(StringRef name, kf::ReduceKind kind, Tensor x,
              std::vector<int64_t> axes, bool keepDims);

/// Several trailing dims of known sizes (`axes`, sorted) reduce as the one
/// row they are: x reshaped to [leading..., n], reduced along its last axis
/// by a row kernel, reshaped back. Otherwise a reduction of all of a
/// [8192, 1] tensor's dims ran in one thread. Nullopt where this does not
/// apply.
std::optional<Tensor> reduceTrailingAsRow(GraphImpl &g, StringRef name,
                                          kf::ReduceKind kind, Tensor x,
                                          ArrayRef<int64_t> axes,
                                          bool keepDims) {
  shapes::Shape in = g.shapeOf(x);
  int64_t rank = in.size(), first = rank - int64_t(axes.size());
  if (axes.size() < 2 || axes.front() != first ||
      llvm::any_of(axes, [&](int64_t a) { return shapes::isSymbolic(in[a]); }))
    return std::nullopt;
  shapes::Shape rows(in.begin(), in.begin() + first);
  int64_t n = 1;
  for (int64_t a : axes)
    n *= in[a];
  rows.push_back(n);
  Tensor reduced =
      reduce(name, kind, reshape(x, g.toDims(rows)), {first}, false);
  if (!keepDims || !reduced.isValid())
    return reduced;
  shapes::Shape kept(in.begin(), in.begin() + first);
  kept.append(axes.size(), 1);
  return reshape(reduced, g.toDims(kept));
}

Tensor reduce(StringRef name, kf::ReduceKind kind, Tensor x,
              std::vector<int64_t> axes, bool keepDims) {
  GraphImpl *g = graphOf(name, {x});
  if (!g)
    return {};
  int64_t r = g->shapeOf(x).size();
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  for (int64_t &axis : axes) {
    std::optional<int64_t> a = g->normalizeAxis(name, axis, r);
    if (!a)
      return {};
    axis = *a;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (g->dtypeOf(x) == DType::i64)
    return g->fail(name, "i64 tensors hold indices and are not reduced; "
                         "cast to i32 or a float first");
  x = g->castTo(x, computeType(g->dtypeOf(x), kind == kf::ReduceKind::mean
                                                  ? Operands::Float
                                                  : Operands::Numeric));
  if (!x.isValid())
    return {};
  if (std::optional<Tensor> row = reduceTrailingAsRow(*g, name, kind, x, axes,
                                                      keepDims))
    return *row;
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape =
      shapes::inferReduce(g->shapeOf(x), axes, keepDims, diag);
  if (failed(shape))
    return g->fail(name, diag.message());
  OpBuilder b = g->builder();
  Value v = kf::ReduceOp::create(
      b, g->loc(name), g->tensorType(*shape, g->dtypeOf(x)),
      kf::ReduceKindAttr::get(g->context.get(), kind), g->value(x),
      b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepDims));
  return g->wrap(v, *shape);
}

/// An integral scalar stays i32 next to an integer tensor; see Graph.h.
DType scalarType(DType tensor, double value) {
  if (isFloat(tensor))
    return tensor;
  bool integral = std::isfinite(value) && value == std::trunc(value) &&
                  std::fabs(value) <= 2147483647.0;
  return integral ? DType::i32 : DType::f32;
}

} // namespace

Tensor scalarLike(Tensor like, double value) {
  GraphImpl *g = graphOf("scalar", {like});
  if (!g)
    return {};
  return g->scalar(value, scalarType(g->dtypeOf(like), value));
}

Tensor neg(Tensor x) { return unary<kf::NegOp>("neg", x, Operands::Numeric); }
Tensor abs(Tensor x) { return unary<kf::AbsOp>("abs", x, Operands::Numeric); }
Tensor relu(Tensor x) { return unary<kf::ReluOp>("relu", x, Operands::Numeric); }
Tensor exp(Tensor x) { return unary<kf::ExpOp>("exp", x, Operands::Float); }
Tensor log(Tensor x) { return unary<kf::LogOp>("log", x, Operands::Float); }
Tensor sqrt(Tensor x) { return unary<kf::SqrtOp>("sqrt", x, Operands::Float); }
Tensor rsqrt(Tensor x) { return unary<kf::RsqrtOp>("rsqrt", x, Operands::Float); }
Tensor sin(Tensor x) { return unary<kf::SinOp>("sin", x, Operands::Float); }
Tensor cos(Tensor x) { return unary<kf::CosOp>("cos", x, Operands::Float); }
Tensor tanh(Tensor x) { return unary<kf::TanhOp>("tanh", x, Operands::Float); }
Tensor sigmoid(Tensor x) {
  return unary<kf::SigmoidOp>("sigmoid", x, Operands::Float);
}
Tensor erf(Tensor x) { return unary<kf::ErfOp>("erf", x, Operands::Float); }
Tensor gelu(Tensor x) { return unary<kf::GeluOp>("gelu", x, Operands::Float); }
Tensor silu(Tensor x) { return unary<kf::SiluOp>("silu", x, Operands::Float); }
Tensor reciprocal(Tensor x) {
  return unary<kf::ReciprocalOp>("reciprocal", x, Operands::Float);
}
Tensor floor(Tensor x) {
  return unary<kf::FloorOp>("floor", x, Operands::Float);
}
Tensor round(Tensor x) {
  return unary<kf::RoundOp>("round", x, Operands::Float);
}
Tensor logicalNot(Tensor x) {
  return unary<kf::NotOp>("logicalNot", x, Operands::Bool);
}
Tensor stopGradient(Tensor x) {
  return unary<kf::StopGradientOp>("stopGradient", x, Operands::Any);
}

Tensor add(Tensor a, Tensor b) {
  return binary<kf::AddOp>("add", a, b, Operands::Numeric);
}
Tensor sub(Tensor a, Tensor b) {
  return binary<kf::SubOp>("sub", a, b, Operands::Numeric);
}
Tensor mul(Tensor a, Tensor b) {
  return binary<kf::MulOp>("mul", a, b, Operands::Numeric);
}
Tensor div(Tensor a, Tensor b) {
  return binary<kf::DivOp>("div", a, b, Operands::Numeric);
}
Tensor maximum(Tensor a, Tensor b) {
  return binary<kf::MaxOp>("maximum", a, b, Operands::Numeric);
}
Tensor minimum(Tensor a, Tensor b) {
  return binary<kf::MinOp>("minimum", a, b, Operands::Numeric);
}
Tensor pow(Tensor a, Tensor b) {
  return binary<kf::PowOp>("pow", a, b, Operands::Float);
}
Tensor mod(Tensor a, Tensor b) {
  return binary<kf::ModOp>("mod", a, b, Operands::Numeric);
}
Tensor logicalAnd(Tensor a, Tensor b) {
  return binary<kf::AndOp>("logicalAnd", a, b, Operands::Bool);
}
Tensor logicalOr(Tensor a, Tensor b) {
  return binary<kf::OrOp>("logicalOr", a, b, Operands::Bool);
}
Tensor logicalXor(Tensor a, Tensor b) {
  return binary<kf::XorOp>("logicalXor", a, b, Operands::Bool);
}

Tensor compare(Compare predicate, Tensor a, Tensor b) {
  GraphImpl *g = graphOf("compare", {a, b});
  Tensor ops[] = {a, b};
  if (!g || failed(unify(*g, "compare", ops, Operands::Any)))
    return {};
  auto pred = static_cast<kf::ComparePredicate>(predicate);
  if (g->dtypeOf(ops[0]) == DType::i1 && predicate != Compare::eq &&
      predicate != Compare::ne)
    return g->fail("compare", std::string("i1 operands allow only eq and ne, "
                                          "got ") +
                                  kf::stringifyComparePredicate(pred).str());
  OpBuilder b2 = g->builder();
  Value v = kf::CompareOp::create(
      b2, g->loc("compare"), g->tensorType(g->shapeOf(ops[0]), DType::i1),
      kf::ComparePredicateAttr::get(g->context.get(), pred), g->value(ops[0]),
      g->value(ops[1]));
  return g->wrap(v, g->shapeOf(ops[0]));
}

Tensor where(Tensor cond, Tensor onTrue, Tensor onFalse) {
  GraphImpl *g = graphOf("where", {cond, onTrue, onFalse});
  if (!g)
    return {};
  if (g->dtypeOf(cond) != DType::i1)
    return g->fail("where", std::string("the condition must be i1, got ") +
                                dtypeName(g->dtypeOf(cond)));
  Tensor branches[] = {onTrue, onFalse};
  if (failed(unify(*g, "where", branches, Operands::Any)))
    return {};
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape =
      shapes::broadcastShapes(g->shapeOf(cond), g->shapeOf(branches[0]), diag);
  if (failed(shape))
    return g->fail("where", diag.message());
  cond = g->broadcastTo(cond, *shape);
  for (Tensor &t : branches)
    t = g->broadcastTo(t, *shape);
  if (!cond.isValid() || !branches[0].isValid() || !branches[1].isValid())
    return {};
  OpBuilder b = g->builder();
  Value v = kf::SelectOp::create(b, g->loc("where"),
                                 g->value(branches[0]).getType(),
                                 g->value(cond), g->value(branches[0]),
                                 g->value(branches[1]));
  return g->wrap(v, *shape);
}

Tensor cast(Tensor x, DType dtype) {
  GraphImpl *g = graphOf("cast", {x});
  return g ? g->castTo(x, dtype) : Tensor();
}

Tensor operator-(Tensor x) { return neg(x); }
Tensor operator+(Tensor a, Tensor b) { return add(a, b); }
Tensor operator-(Tensor a, Tensor b) { return sub(a, b); }
Tensor operator*(Tensor a, Tensor b) { return mul(a, b); }
Tensor operator/(Tensor a, Tensor b) { return div(a, b); }
Tensor operator+(Tensor a, double b) { return add(a, scalarLike(a, b)); }
Tensor operator-(Tensor a, double b) { return sub(a, scalarLike(a, b)); }
Tensor operator*(Tensor a, double b) { return mul(a, scalarLike(a, b)); }
Tensor operator/(Tensor a, double b) { return div(a, scalarLike(a, b)); }
Tensor operator+(double a, Tensor b) { return add(scalarLike(b, a), b); }
Tensor operator-(double a, Tensor b) { return sub(scalarLike(b, a), b); }
Tensor operator*(double a, Tensor b) { return mul(scalarLike(b, a), b); }
Tensor operator/(double a, Tensor b) { return div(scalarLike(b, a), b); }
Tensor operator<(Tensor a, Tensor b) { return compare(Compare::lt, a, b); }
Tensor operator<=(Tensor a, Tensor b) { return compare(Compare::le, a, b); }
Tensor operator>(Tensor a, Tensor b) { return compare(Compare::gt, a, b); }
Tensor operator>=(Tensor a, Tensor b) { return compare(Compare::ge, a, b); }

Tensor broadcastTo(Tensor x, const Shape &dims) {
  GraphImpl *g = graphOf("broadcastTo", {x});
  if (!g)
    return {};
  std::optional<shapes::Shape> shape = g->fromDims(dims);
  if (!shape)
    return g->fail("broadcastTo", "negative dim in " + shapeString(dims));
  shapes::ShapeDiag diag = g->diag();
  if (failed(shapes::checkBroadcastTo(g->shapeOf(x), *shape, diag)))
    return g->fail("broadcastTo", diag.message());
  return g->broadcastTo(x, *shape);
}

Tensor reshape(Tensor x, const Shape &dims) {
  GraphImpl *g = graphOf("reshape", {x});
  if (!g)
    return {};
  std::optional<shapes::Shape> shape = g->fromDims(dims);
  if (!shape)
    return g->fail("reshape", "negative dim in " + shapeString(dims));
  shapes::ShapeDiag diag = g->diag();
  if (failed(shapes::checkReshape(g->shapeOf(x), *shape, diag)))
    return g->fail("reshape", diag.message());
  OpBuilder b = g->builder();
  Value v = kf::ReshapeOp::create(b, g->loc("reshape"),
                                  g->tensorType(*shape, g->dtypeOf(x)),
                                  g->value(x), g->dimSymbols(*shape));
  return g->wrap(v, *shape);
}

Tensor transpose(Tensor x, const std::vector<int64_t> &perm) {
  GraphImpl *g = graphOf("transpose", {x});
  if (!g)
    return {};
  std::vector<int64_t> p = perm;
  int64_t r = g->shapeOf(x).size();
  for (int64_t &axis : p)
    axis = axis < 0 ? axis + r : axis;
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape =
      shapes::inferTranspose(g->shapeOf(x), p, diag);
  if (failed(shape))
    return g->fail("transpose", diag.message());
  // Moving only size-1 dims keeps every element at its row-major position:
  // a reshape, which kernels read in place (a transpose would read through
  // an index map, or take a tiled-transpose kernel of its own).
  const shapes::Shape &in = g->shapeOf(x);
  int64_t last = -1;
  bool inOrder = llvm::none_of(in, shapes::isSymbolic);
  for (int64_t axis : p) {
    if (!inOrder || in[axis] == 1)
      continue;
    inOrder = axis > last;
    last = axis;
  }
  if (inOrder)
    return reshape(x, g->toDims(*shape));
  OpBuilder b = g->builder();
  Value v = kf::TransposeOp::create(b, g->loc("transpose"),
                                    g->tensorType(*shape, g->dtypeOf(x)),
                                    g->value(x), b.getDenseI64ArrayAttr(p));
  return g->wrap(v, *shape);
}

Tensor iota(Graph &graph, const Shape &dims, int64_t dim, DType dtype) {
  if (!graph.status())
    return {};
  return graph.impl().iota(dims, dim, dtype);
}

Tensor detail::GraphImpl::iota(const Shape &dims, int64_t dim, DType dtype) {
  std::optional<shapes::Shape> shape = fromDims(dims);
  if (!shape)
    return fail("iota", "negative dim in " + shapeString(dims));
  if (dtype == DType::i1)
    return fail("iota", "dtype must be numeric, got i1");
  std::optional<int64_t> d = normalizeAxis("iota", dim, shape->size());
  if (!d)
    return {};
  OpBuilder b = builder();
  Value v = kf::IotaOp::create(b, loc("iota"), tensorType(*shape, dtype),
                               b.getI64IntegerAttr(*d), dimSymbols(*shape));
  return wrap(v, *shape);
}

Tensor reduceSum(Tensor x, std::vector<int64_t> axes, bool keepDims) {
  return reduce("reduceSum", kf::ReduceKind::sum, x, std::move(axes), keepDims);
}
Tensor reduceMax(Tensor x, std::vector<int64_t> axes, bool keepDims) {
  return reduce("reduceMax", kf::ReduceKind::max, x, std::move(axes), keepDims);
}
Tensor reduceMin(Tensor x, std::vector<int64_t> axes, bool keepDims) {
  return reduce("reduceMin", kf::ReduceKind::min, x, std::move(axes), keepDims);
}
Tensor reduceMean(Tensor x, std::vector<int64_t> axes, bool keepDims) {
  return reduce("reduceMean", kf::ReduceKind::mean, x, std::move(axes),
                keepDims);
}

Tensor matmul(Tensor a, Tensor b, const MatmulOptions &options) {
  GraphImpl *g = graphOf("matmul", {a, b});
  if (!g)
    return {};
  DType dtype = computeType(detail::promote(g->dtypeOf(a), g->dtypeOf(b)),
                            Operands::Float);
  a = g->castTo(a, dtype);
  b = g->castTo(b, dtype);
  if (!a.isValid() || !b.isValid())
    return {};
  DType out = options.resultType.value_or(dtype);
  if (out != dtype && out != DType::f32)
    return g->fail("matmul", std::string("result dtype must be ") +
                                 dtypeName(dtype) + " or f32, got " +
                                 dtypeName(out));
  shapes::ShapeDiag diag = g->diag();
  FailureOr<shapes::Shape> shape =
      shapes::inferMatmul(g->shapeOf(a), g->shapeOf(b), options.transposeA,
                          options.transposeB, diag);
  if (failed(shape))
    return g->fail("matmul", diag.message());
  OpBuilder builder = g->builder();
  Value v = kf::MatmulOp::create(
      builder, g->loc("matmul"), g->tensorType(*shape, out), g->value(a),
      g->value(b), builder.getBoolAttr(options.transposeA),
      builder.getBoolAttr(options.transposeB), /*k_chunk=*/IntegerAttr());
  return g->wrap(v, *shape);
}

Tensor softmax(Tensor x, int64_t axis) {
  GraphImpl *g = graphOf("softmax", {x});
  if (!g)
    return {};
  std::optional<int64_t> a =
      g->normalizeAxis("softmax", axis, g->shapeOf(x).size());
  if (!a)
    return {};
  x = g->castTo(x, computeType(g->dtypeOf(x), Operands::Float));
  if (!x.isValid())
    return {};
  OpBuilder b = g->builder();
  Value v = kf::SoftmaxOp::create(b, g->loc("softmax"),
                                  g->value(x).getType(), g->value(x), *a);
  return g->wrap(v, g->shapeOf(x));
}

namespace {

AttentionWithLse buildAttention(Tensor q, Tensor k, Tensor v,
                                const AttentionOptions &options, bool lse) {
  GraphImpl *g = graphOf("attention", {q, k, v});
  if (!g || (options.mask.isValid() && !graphOf("attention", {q, options.mask})) ||
      (options.bias.isValid() && !graphOf("attention", {q, options.bias})))
    return {};
  DType dtype = computeType(
      detail::promote(detail::promote(g->dtypeOf(q), g->dtypeOf(k)),
                      g->dtypeOf(v)),
      Operands::Float);
  q = g->castTo(q, dtype);
  k = g->castTo(k, dtype);
  v = g->castTo(v, dtype);
  if (!q.isValid() || !k.isValid() || !v.isValid())
    return {};
  shapes::ShapeDiag diag = g->diag();
  // Copies: broadcasting the mask or bias below adds shapes to the graph's
  // table, which would leave references into it dangling.
  shapes::Shape qShape = g->shapeOf(q), kShape = g->shapeOf(k),
                vShape = g->shapeOf(v);
  shapes::AttentionShapes in{qShape, kShape, vShape, std::nullopt,
                             std::nullopt};
  if (failed(shapes::inferAttention(in, diag)))
    return {g->fail("attention", diag.message()), {}};
  shapes::Shape scores = {in.q[0], in.q[1], in.q[2], in.k[2]};
  Tensor mask = options.mask, bias = options.bias;
  if (mask.isValid()) {
    if (g->dtypeOf(mask) != DType::i1)
      return {g->fail("attention", std::string("the mask must be i1, got ") +
                                       dtypeName(g->dtypeOf(mask))),
              {}};
    if (failed(shapes::checkBroadcastTo(g->shapeOf(mask), scores, diag)))
      return {g->fail("attention", "mask: " + diag.message()), {}};
    mask = g->broadcastTo(mask, scores);
  }
  if (bias.isValid()) {
    if (failed(shapes::checkBroadcastTo(g->shapeOf(bias), scores, diag)))
      return {g->fail("attention", "bias: " + diag.message()), {}};
    bias = g->broadcastTo(g->castTo(bias, dtype), scores);
  }
  if ((options.mask.isValid() && !mask.isValid()) ||
      (options.bias.isValid() && !bias.isValid()))
    return {};
  int64_t headDim = in.q[3];
  if (!options.scale && (shapes::isSymbolic(headDim) || headDim == 0))
    return {g->fail("attention", "the head dim is " + diag.dim(headDim) +
                                     "; give a scale explicitly"),
            {}};
  double scale = options.scale.value_or(1.0 / std::sqrt(double(headDim)));
  shapes::Shape shape = {in.q[0], in.q[1], in.q[2], in.v[3]};
  shapes::Shape rows = {in.q[0], in.q[1], in.q[2]};
  OpBuilder b = g->builder();
  auto op = kf::AttentionOp::create(
      b, g->loc("attention"), g->tensorType(shape, dtype),
      lse ? g->tensorType(rows, DType::f32) : Type(), g->value(q), g->value(k),
      g->value(v), mask.isValid() ? g->value(mask) : Value(),
      bias.isValid() ? g->value(bias) : Value(), b.getF64FloatAttr(scale),
      b.getBoolAttr(options.causal));
  AttentionWithLse results;
  results.out = g->wrap(op.getResult(), shape);
  if (lse)
    results.lse = g->wrap(op.getLse(), rows);
  return results;
}

} // namespace

Tensor attention(Tensor q, Tensor k, Tensor v,
                 const AttentionOptions &options) {
  return buildAttention(q, k, v, options, /*lse=*/false).out;
}

AttentionWithLse attentionWithLse(Tensor q, Tensor k, Tensor v,
                                  const AttentionOptions &options) {
  return buildAttention(q, k, v, options, /*lse=*/true);
}

} // namespace kfuse
