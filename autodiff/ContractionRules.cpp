//===- ContractionRules.cpp - vector-Jacobian rules of matmul, softmax, ---===//
//                            attention
//
// A matmul's cotangents are two matmuls; 16-bit operands get 16-bit
// cotangents (tensor cores, f32 accumulation), as PyTorch's backward does.
// Attention's backward is FlashAttention's kernel (kf.attention_grad) where
// it applies; elsewhere (a mask, a bias, the log-sum-exp's cotangent, f32)
// it recomputes the probabilities from q and k as whole matmuls over the
// S x S scores.
//
//===----------------------------------------------------------------------===//

#include "autodiff/Rules.h"

#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;

namespace kfuse::autodiff {
namespace {

MatmulOptions f32With(bool transposeA, bool transposeB) {
  return {transposeA, transposeB, DType::f32};
}

/// `t` with its last two dims swapped.
Tensor swapLast(Tensor t) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < t.rank(); ++i)
    perm.push_back(i);
  std::swap(perm[t.rank() - 1], perm[t.rank() - 2]);
  return transpose(t, perm);
}

/// dB of a matmul whose b is rank 2 and shared by a's batches: a's rows
/// (all batches) against g's, as one matmul when the rows can be counted,
/// else batch by batch and summed.
Tensor sharedOperandVJP(Tensor aLogical, Tensor g) {
  Shape shape = aLogical.shape();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size() && rows >= 0; ++i)
    rows = shape[i].isSymbolic() ? -1 : rows * shape[i].size();
  if (rows >= 0)
    return matmul(reshape(aLogical, {rows, shape.back()}),
                  reshape(g, {rows, g.shape().back()}), f32With(true, false));
  std::vector<int64_t> batch;
  for (int64_t i = 0; i + 2 < aLogical.rank(); ++i)
    batch.push_back(i);
  return reduceSum(matmul(aLogical, g, f32With(true, false)), batch);
}

Cotangents matmulVJP(kf::MatmulOp op, Tensor g, const RuleContext &ctx) {
  Tensor a = ctx.primal(op.getA()), b = ctx.primal(op.getB());
  bool tA = op.getTransposeA(), tB = op.getTransposeB();
  g = cast(g, a.dtype());
  // dA = g B^T, stored as a is (transposed when a is).
  Tensor da;
  if (!tA)
    da = matmul(g, b, f32With(false, !tB));
  else if (b.rank() == a.rank())
    da = matmul(b, g, f32With(tB, true));
  else
    da = swapLast(matmul(g, b, f32With(false, !tB)));
  // dB = A^T g, stored as b is.
  Tensor db;
  if (b.rank() != a.rank()) {
    db = sharedOperandVJP(tA ? swapLast(a) : a, g);
    db = tB ? swapLast(db) : db;
  } else if (!tB) {
    db = matmul(a, g, f32With(!tA, false));
  } else {
    db = matmul(g, a, f32With(true, tA));
  }
  return {da, db};
}

Cotangents softmaxVJP(kf::SoftmaxOp op, Tensor g, const RuleContext &ctx) {
  Tensor y = toF32(ctx.primal(op.getResult()));
  int64_t axis = op.getAxis();
  Tensor dot = broadcastTo(reduceSum(g * y, {axis}, true), y.shape());
  return {y * (g - dot)};
}

/// Attention's pieces: q, k and v with k and v repeated to q's heads
/// (grouped-query attention), and the recomputed probabilities.
struct AttentionPrimals {
  Tensor q, k, v, probs;
  Dim heads = 1, kvHeads = 1;
  bool grouped() const { return !(heads == kvHeads); }
};

/// `t` [B, Hkv, S, X] repeated to [B, H, S, X], each kv head serving H /
/// Hkv consecutive query heads; one kv head is broadcast (to symbolic
/// query heads too).
Tensor repeatHeads(Tensor t, const AttentionPrimals &p) {
  if (!p.grouped())
    return t;
  Shape s = t.shape();
  if (!p.kvHeads.isSymbolic() && p.kvHeads.size() == 1)
    return broadcastTo(t, {s[0], p.heads, s[2], s[3]});
  int64_t group = p.heads.size() / p.kvHeads.size();
  Tensor spread = broadcastTo(unsqueeze(t, 2), {s[0], s[1], group, s[2], s[3]});
  return reshape(spread, {s[0], p.heads, s[2], s[3]});
}

/// A [B, H, S, X] cotangent of repeated heads summed back to [B, Hkv, S, X].
Tensor sumHeads(Tensor t, const AttentionPrimals &p) {
  if (!p.grouped())
    return t;
  Shape s = t.shape();
  if (!p.kvHeads.isSymbolic() && p.kvHeads.size() == 1)
    return reduceSum(t, {1}, true);
  int64_t group = p.heads.size() / p.kvHeads.size();
  return reduceSum(reshape(t, {s[0], p.kvHeads, group, s[2], s[3]}), {2});
}

AttentionPrimals recompute(kf::AttentionOp op, const RuleContext &ctx) {
  AttentionPrimals p;
  p.q = ctx.primal(op.getQ());
  Tensor k = ctx.primal(op.getK());
  p.heads = p.q.shape()[1];
  p.kvHeads = k.shape()[1];
  bool oneKvHead = !p.kvHeads.isSymbolic() && p.kvHeads.size() == 1;
  if (p.grouped() && !oneKvHead &&
      (p.heads.isSymbolic() || p.kvHeads.isSymbolic())) {
    ctx.graph.fail("vjp", "attention's backward with " + p.heads.str() +
                              " query heads over " + p.kvHeads.str() +
                              " kv heads needs both counts known (or one "
                              "kv head)");
    return p;
  }
  p.k = repeatHeads(k, p);
  p.v = repeatHeads(ctx.primal(op.getV()), p);
  Tensor s = matmul(p.q, p.k, f32With(false, true)) * op.getScale().convertToDouble();
  if (op.getBias())
    s = s + toF32(ctx.primal(op.getBias()));
  Tensor minusInf = scalarLike(s, -std::numeric_limits<double>::infinity());
  if (op.getMask())
    s = where(ctx.primal(op.getMask()), s, minusInf);
  if (op.getCausal()) {
    Shape scores = {p.q.shape()[2], p.k.shape()[2]};
    Tensor row = ctx.graph.iota(scores, 0, DType::i32);
    Tensor col = ctx.graph.iota(scores, 1, DType::i32);
    s = where(col <= row, s, minusInf);
  }
  p.probs = softmax(s, -1);
  return p;
}

/// Whether kf.attention_grad (FlashAttention's backward kernel) computes
/// `op`'s cotangents from that of its result alone: 16-bit operands of
/// static shapes, head dims that are whole 16-byte rows of at most 256
/// (the kernel keeps a warpgroup's accumulators in registers), no mask or
/// bias, and no cotangent of the log-sum-exp.
bool flashBackwardApplies(kf::AttentionOp op, ArrayRef<Tensor> results) {
  if (op.getMask() || op.getBias() || !results[0].isValid() ||
      (results.size() > 1 && results[1].isValid()))
    return false;
  Type dtype = mlir::cast<RankedTensorType>(op.getQ().getType()).getElementType();
  if (!dtype.isF16() && !dtype.isBF16())
    return false;
  for (Value v : {op.getQ(), op.getK(), op.getV()}) {
    auto type = mlir::cast<RankedTensorType>(v.getType());
    int64_t head = type.getShape().back();
    if (!type.hasStaticShape() || head % 8 || head > 256 || head == 0)
      return false;
  }
  return true;
}

/// The forward's output and log-sum-exp: `op`'s, or, where it has no
/// log-sum-exp, those of an attention that computes both, which takes its
/// place in the forward (the old one is left without users).
AttentionWithLse forwardWithLse(kf::AttentionOp op, const RuleContext &ctx) {
  if (op.getLse())
    return {ctx.primal(op.getResult()), ctx.primal(op.getLse())};
  AttentionOptions options;
  options.scale = op.getScale().convertToDouble();
  options.causal = op.getCausal();
  AttentionWithLse both =
      attentionWithLse(ctx.primal(op.getQ()), ctx.primal(op.getK()),
                       ctx.primal(op.getV()), options);
  if (!both.out.isValid())
    return both;
  Operation *twin = ctx.graph.value(both.out).getDefiningOp();
  twin->moveBefore(op);
  op.getResult().replaceAllUsesWith(ctx.graph.value(both.out));
  return both;
}

/// The backward as one kf.attention_grad, which reads q, k, v, the
/// forward's log-sum-exp and each row's dout . out, and writes the
/// gradients in q's dtype.
Cotangents flashAttentionVJP(kf::AttentionOp op, Tensor dOut,
                             const RuleContext &ctx) {
  Tensor q = ctx.primal(op.getQ()), k = ctx.primal(op.getK()),
         v = ctx.primal(op.getV());
  AttentionWithLse forward = forwardWithLse(op, ctx);
  dOut = cast(dOut, q.dtype());
  detail::GraphImpl &g = ctx.graph;
  if (!g.status || !forward.lse.isValid())
    return {};
  Tensor delta = reduceSum(toF32(dOut) * toF32(forward.out), {-1});
  kf::shapes::Shape qShape = g.shapeOf(q), kShape = g.shapeOf(k),
                    vShape = g.shapeOf(v);
  // In the operands' dtype, as PyTorch's: the kernel accumulates in f32 and
  // rounds once, and a consumer (a projection's matmul) casts to it anyway.
  DType dtype = q.dtype();
  OpBuilder b = g.builder();
  auto grad = kf::AttentionGradOp::create(
      b, g.loc("attention_grad"), g.tensorType(qShape, dtype),
      g.tensorType(kShape, dtype), g.tensorType(vShape, dtype),
      g.value(q), g.value(k), g.value(v), g.value(dOut), g.value(forward.lse),
      g.value(delta), op.getScaleAttr(), op.getCausalAttr());
  return {g.wrap(grad.getDq(), qShape), g.wrap(grad.getDk(), kShape),
          g.wrap(grad.getDv(), vShape)};
}

Cotangents attentionVJP(kf::AttentionOp op, ArrayRef<Tensor> results,
                        const RuleContext &ctx) {
  if (flashBackwardApplies(op, results))
    return flashAttentionVJP(op, results[0], ctx);
  AttentionPrimals p = recompute(op, ctx);
  if (!ctx.graph.status)
    return {};
  DType dtype = p.q.dtype();
  double scale = op.getScale().convertToDouble();
  Tensor dOut = results[0], dLse = results.size() > 1 ? results[1] : Tensor();
  Tensor dv, dScores;
  if (dOut.isValid()) {
    dOut = cast(dOut, dtype);
    dv = matmul(cast(p.probs, dtype), dOut, f32With(true, false));
    Tensor dProbs = matmul(dOut, p.v, f32With(false, true));
    Tensor dot = broadcastTo(reduceSum(dProbs * p.probs, {-1}, true),
                             p.probs.shape());
    dScores = p.probs * (dProbs - dot);
  }
  if (dLse.isValid()) {
    // d lse / d scores is the probabilities.
    Tensor fromLse = p.probs * unsqueeze(dLse, 3);
    dScores = dScores.isValid() ? dScores + fromLse : fromLse;
  }
  Tensor dsc = cast(dScores, dtype);
  Tensor dq = matmul(dsc, p.k, f32With(false, false)) * scale;
  Tensor dk = matmul(dsc, p.q, f32With(true, false)) * scale;
  Cotangents out = {dq, sumHeads(dk, p),
                    dv.isValid() ? sumHeads(dv, p)
                                 : zerosLike(ctx.primal(op.getV()))};
  if (op.getMask())
    out.push_back(Tensor());
  if (op.getBias())
    out.push_back(dScores);
  return out;
}

} // namespace

std::optional<Cotangents> contractionVJP(Operation *op,
                                         ArrayRef<Tensor> results,
                                         const RuleContext &ctx) {
  return TypeSwitch<Operation *, std::optional<Cotangents>>(op)
      .Case([&](kf::MatmulOp m) { return matmulVJP(m, results[0], ctx); })
      .Case([&](kf::SoftmaxOp s) { return softmaxVJP(s, results[0], ctx); })
      .Case([&](kf::AttentionOp a) { return attentionVJP(a, results, ctx); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace kfuse::autodiff
