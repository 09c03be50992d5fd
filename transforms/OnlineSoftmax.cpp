//===- OnlineSoftmax.cpp - kf-online-softmax: attention from primitives ---===//
//
// Analyse: every kf.matmul whose left operand is a softmax of scores along
// their last axis, the scores being scale * Q K^T [+ bias] [masked to -inf].
// Decide: the spelling must mean what kf.attention means (a positive
// scale applied before the bias, a mask that only ever sets -inf, every
// intermediate used only on the way to the product). Rewrite: one
// kf.attention, whose kernel keeps the scores on chip (FlashAttention's
// online softmax), never writing the S x S matrix.
//
// A near-match that is not rewritten keeps the reason on the product as
// `kf.online_softmax`, which `kfusec --explain-fusion` prints.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "ir/ShapeInference.h"
#include "analysis/KernelAnalysis.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFONLINESOFTMAXPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// The operands of the kf.attention a match becomes, and the ops between
/// the scores and the product, which must serve nothing else.
struct AttentionMatch {
  Value q, k, v, mask, bias;
  double scale = 1;
  bool causal = false;
  /// K arrives as [..., D, Sk] and needs a transpose.
  bool kColumns = false;
  /// Softmax written as exp/max/sum/div, whose fully masked rows are NaN.
  bool primitiveSoftmax = false;
  SmallVector<Operation *> replaced;
};

using Refusal = std::string;

/// The value of a splat constant, seen through broadcasts.
std::optional<double> splatValue(Value v) {
  while (auto b = v.getDefiningOp<BroadcastOp>())
    v = b.getInput();
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

/// A float-to-float cast, which the rewrite computes in f32 instead.
Value throughCast(Value v, AttentionMatch &m) {
  if (auto cast = v.getDefiningOp<CastOp>())
    if (isa<FloatType>(mlir::cast<RankedTensorType>(cast.getInput().getType())
                           .getElementType())) {
      m.replaced.push_back(cast);
      return cast.getInput();
    }
  return v;
}

/// The reduced value of a per-row reduction broadcast back over the row:
/// broadcast(reduce keep_dims) or broadcast(reshape(reduce)).
ReduceOp rowReductionOf(Value v, ReduceKind kind, AttentionMatch &m) {
  auto broadcast = v.getDefiningOp<BroadcastOp>();
  if (!broadcast)
    return {};
  Value reduced = broadcast.getInput();
  SmallVector<Operation *> ops = {broadcast};
  if (auto reshape = reduced.getDefiningOp<ReshapeOp>()) {
    ops.push_back(reshape);
    reduced = reshape.getInput();
  }
  auto reduce = reduced.getDefiningOp<ReduceOp>();
  int64_t last = int64_t(shapeOf(v).size()) - 1;
  if (!reduce || reduce.getKind() != kind ||
      reduce.getAxes() != ArrayRef<int64_t>{last} ||
      shapeOf(reduce.getInput()) != shapeOf(v))
    return {};
  ops.push_back(reduce);
  m.replaced.append(ops);
  return reduce;
}

/// The scores a softmax along the last axis normalises: kf.softmax, or
/// exp(s - max(s)) / sum(exp(s - max(s))).
FailureOr<Value> softmaxInput(Value p, AttentionMatch &m, Refusal &why) {
  int64_t last = int64_t(shapeOf(p).size()) - 1;
  if (auto softmax = p.getDefiningOp<SoftmaxOp>()) {
    if (int64_t(softmax.getAxis()) != last) {
      why = "the softmax is not along the keys (the last axis)";
      return failure();
    }
    m.replaced.push_back(softmax);
    return softmax.getInput();
  }
  auto div = p.getDefiningOp<DivOp>();
  auto exp = div ? div.getLhs().getDefiningOp<ExpOp>() : ExpOp();
  auto shifted = exp ? exp.getInput().getDefiningOp<SubOp>() : SubOp();
  if (!shifted) {
    why = "the left operand is not a softmax (kf.softmax, or "
          "exp(s - max s) / sum exp(s - max s) over the last axis)";
    return failure();
  }
  m.replaced.append({div, exp, shifted});
  ReduceOp sum = rowReductionOf(div.getRhs(), ReduceKind::sum, m);
  if (!sum || sum.getInput() != exp.getResult()) {
    why = "the softmax's denominator is not the row sum of its numerator";
    return failure();
  }
  Value s = shifted.getLhs();
  ReduceOp max = rowReductionOf(shifted.getRhs(), ReduceKind::max, m);
  if (!max || max.getInput() != s) {
    why = "the softmax does not subtract the row max of its scores";
    return failure();
  }
  m.primitiveSoftmax = true;
  return s;
}

/// The dim (counted from the end of `shape`) that `v`'s elements count
/// along: an iota, seen through broadcasts.
std::optional<int64_t> iotaDimFromEnd(Value v) {
  while (auto b = v.getDefiningOp<BroadcastOp>())
    v = b.getInput();
  auto iota = v.getDefiningOp<IotaOp>();
  if (!iota)
    return std::nullopt;
  return int64_t(iota.getDim()) - int64_t(shapeOf(iota).size());
}

/// Whether `cond` (true = `keep`) is the causal mask row >= column, where
/// rows are dim -2 of the scores and columns dim -1.
bool isCausal(Value cond, bool keep) {
  while (auto b = cond.getDefiningOp<BroadcastOp>())
    cond = b.getInput();
  auto compare = cond.getDefiningOp<CompareOp>();
  if (!compare)
    return false;
  std::optional<int64_t> lhs = iotaDimFromEnd(compare.getLhs()),
                         rhs = iotaDimFromEnd(compare.getRhs());
  if (!lhs || !rhs)
    return false;
  bool rowCol = *lhs == -2 && *rhs == -1, colRow = *lhs == -1 && *rhs == -2;
  ComparePredicate p = compare.getPredicate();
  if (keep)
    return (rowCol && p == ComparePredicate::ge) ||
           (colRow && p == ComparePredicate::le);
  return (rowCol && p == ComparePredicate::lt) ||
         (colRow && p == ComparePredicate::gt);
}

LogicalResult matchProduct(MatmulOp qk, AttentionMatch &m, Refusal &why);

/// scale * s, s * scale or s / scale, with scale > 0 (a negative one would
/// turn the mask's -inf into +inf).
std::optional<std::pair<Value, double>> scaled(Value s) {
  Operation *op = s.getDefiningOp();
  if (auto mul = dyn_cast_or_null<MulOp>(op)) {
    if (std::optional<double> c = splatValue(mul.getRhs()))
      return std::pair{mul.getLhs(), *c};
    if (std::optional<double> c = splatValue(mul.getLhs()))
      return std::pair{mul.getRhs(), *c};
  }
  if (auto div = dyn_cast_or_null<DivOp>(op))
    if (std::optional<double> c = splatValue(div.getRhs()))
      return std::pair{div.getLhs(), 1 / *c};
  return std::nullopt;
}

/// A select of the scores against -inf: the causal mask or a mask operand.
/// Returns the scores it selects from.
FailureOr<Value> peelMask(SelectOp select, AttentionMatch &m, Refusal &why) {
  auto isNegInf = [](Value v) {
    std::optional<double> c = splatValue(v);
    return c && std::isinf(*c) && *c < 0;
  };
  bool keep = isNegInf(select.getOnFalse());
  if (!keep && !isNegInf(select.getOnTrue())) {
    why = "a select on the scores that does not mask to -inf";
    return failure();
  }
  if (m.mask || m.causal) {
    why = "more than one mask on the scores";
    return failure();
  }
  if (isCausal(select.getCond(), keep)) {
    m.causal = true;
  } else if (keep) {
    m.mask = select.getCond();
  } else {
    why = "a mask that is not causal and names the keys to drop";
    return failure();
  }
  m.replaced.push_back(select);
  return keep ? select.getOnTrue() : select.getOnFalse();
}

/// scores + bias (either side): returns the scores.
FailureOr<Value> peelBias(AddOp add, AttentionMatch &m, Refusal &why) {
  if (m.bias) {
    why = "more than one bias on the scores";
    return failure();
  }
  // Peeled outermost first: a scale already seen multiplies the bias.
  if (m.scale != 1) {
    why = "the scale multiplies the bias too (kf.attention scales the "
          "product only)";
    return failure();
  }
  // The scores are the side that leads to a matmul.
  auto fromProduct = [](Value x) {
    for (int depth = 0; depth < 8 && x.getDefiningOp(); ++depth) {
      if (x.getDefiningOp<MatmulOp>())
        return true;
      x = x.getDefiningOp()->getOperand(0);
    }
    return false;
  };
  bool lhsScores = fromProduct(add.getLhs());
  m.bias = lhsScores ? add.getRhs() : add.getLhs();
  m.replaced.push_back(add);
  return lhsScores ? add.getLhs() : add.getRhs();
}

/// Peels mask, bias and scale off the scores, outermost first, down to
/// the product Q K^T.
LogicalResult matchScores(Value s, AttentionMatch &m, Refusal &why) {
  for (;;) {
    s = throughCast(s, m);
    Operation *op = s.getDefiningOp();
    FailureOr<Value> inner = failure();
    if (auto qk = dyn_cast_or_null<MatmulOp>(op)) {
      m.replaced.push_back(qk);
      return matchProduct(qk, m, why);
    }
    if (auto select = dyn_cast_or_null<SelectOp>(op)) {
      inner = peelMask(select, m, why);
    } else if (auto scale = scaled(s)) {
      if (!(scale->second > 0) || std::isinf(scale->second)) {
        why = "the scale is not a positive finite constant";
        return failure();
      }
      m.scale *= scale->second;
      m.replaced.push_back(op);
      inner = scale->first;
    } else if (auto add = dyn_cast_or_null<AddOp>(op)) {
      inner = peelBias(add, m, why);
    } else {
      why = "the scores are not scale * Q K^T [+ bias] [masked]: found " +
            (op ? op->getName().getStringRef().str()
                : std::string("an input"));
      return failure();
    }
    if (failed(inner))
      return failure();
    s = *inner;
  }
}

/// K or V with its heads repeated for grouped-query attention:
/// reshape(broadcast(reshape(x: [B, Hkv, S, D]) -> [B, Hkv, 1, S, D])
/// -> [B, Hkv, G, S, D]) -> [B, Hkv * G, S, D]. Returns x, or `v`.
Value unrepeatedHeads(Value v, AttentionMatch &m) {
  auto outer = v.getDefiningOp<ReshapeOp>();
  auto broadcast = outer ? outer.getInput().getDefiningOp<BroadcastOp>()
                         : BroadcastOp();
  auto inner = broadcast ? broadcast.getInput().getDefiningOp<ReshapeOp>()
                         : ReshapeOp();
  if (!inner)
    return v;
  ArrayRef<int64_t> x = shapeOf(inner.getInput()), one = shapeOf(inner),
                    wide = shapeOf(broadcast);
  if (x.size() != 4 || one.size() != 5 || wide.size() != 5 ||
      one != ArrayRef<int64_t>{x[0], x[1], 1, x[2], x[3]} ||
      wide != ArrayRef<int64_t>{x[0], x[1], wide[2], x[2], x[3]})
    return v;
  return inner.getInput();
}

/// Q K^T: K^T by the matmul's flag or a transpose of K's last two dims;
/// a positive constant scale on Q or on K is folded into the scale.
LogicalResult matchProduct(MatmulOp qk, AttentionMatch &m, Refusal &why) {
  if (qk.getTransposeA()) {
    why = "Q is transposed in the product Q K^T";
    return failure();
  }
  Value q = qk.getA(), k = qk.getB();
  if (!qk.getTransposeB()) {
    auto transpose = k.getDefiningOp<TransposeOp>();
    int64_t rank = int64_t(shapeOf(k).size());
    auto swapLast = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(swapLast[rank - 1], swapLast[rank - 2]);
    if (transpose && transpose.getPerm() == ArrayRef<int64_t>(swapLast)) {
      k = transpose.getInput();
    } else {
      m.kColumns = true;
    }
  }
  for (Value *operand : {&q, &k})
    if (auto scale = scaled(*operand); scale && scale->second > 0 &&
                                       !std::isinf(scale->second)) {
      m.scale *= scale->second;
      *operand = scale->first;
    }
  m.q = q;
  m.k = m.kColumns ? k : unrepeatedHeads(k, m);
  return success();
}

/// Every op between the scores and the product serves only the match
/// (else the S x S matrix is needed anyway and the rewrite only adds work).
LogicalResult checkSoleUses(MatmulOp pv, AttentionMatch &m, Refusal &why) {
  llvm::SmallPtrSet<Operation *, 16> inside(m.replaced.begin(),
                                            m.replaced.end());
  inside.insert(pv);
  for (Operation *op : m.replaced)
    for (Operation *user : op->getUsers())
      if (!inside.contains(user)) {
        why = "the " + op->getName().getStringRef().str() +
              " of the scores is also used outside the attention";
        return failure();
      }
  return success();
}

/// The shapes and dtypes kf.attention demands, checked before building it.
LogicalResult checkOperands(MatmulOp pv, const AttentionMatch &m,
                            Refusal &why) {
  auto dtypeOf = [](Value x) {
    return mlir::cast<RankedTensorType>(x.getType()).getElementType();
  };
  Type dtype = dtypeOf(m.q);
  if (dtypeOf(m.k) != dtype || dtypeOf(m.v) != dtype ||
      !isa<FloatType>(dtype)) {
    why = "Q, K and V do not share one float dtype";
    return failure();
  }
  Type out = dtypeOf(pv.getResult());
  if (out != dtype && !out.isF32()) {
    why = "the result dtype is neither the operands' nor f32";
    return failure();
  }
  size_t rank = shapeOf(m.q).size();
  if (rank < 2 || rank > 4 || shapeOf(m.k).size() != rank ||
      shapeOf(m.v).size() != rank) {
    why = "Q, K and V are not all [batch, heads, seq, dim], [batch, seq, "
          "dim] or [seq, dim]";
    return failure();
  }
  if (m.primitiveSoftmax && m.mask) {
    why = "a mask with the exp/max/sum/div softmax: a fully masked row is "
          "NaN there but 0 in kf.attention (use kf.softmax)";
    return failure();
  }
  return success();
}

/// Matches matmul(softmax(scores), V). Fails with the reason when `pv`
/// is a near-match; `nearMatch` says whether it was one.
FailureOr<AttentionMatch> matchAttention(MatmulOp pv, bool &nearMatch,
                                         Refusal &why) {
  AttentionMatch m;
  Value p = throughCast(pv.getA(), m);
  nearMatch = p.getDefiningOp<SoftmaxOp>() || p.getDefiningOp<DivOp>();
  if (!nearMatch)
    return failure();
  if (pv.getTransposeA() || pv.getTransposeB()) {
    why = "the product with V is transposed";
    return failure();
  }
  FailureOr<Value> scores = softmaxInput(p, m, why);
  if (failed(scores) || failed(matchScores(*scores, m, why)))
    return failure();
  m.v = unrepeatedHeads(pv.getB(), m);
  if (failed(checkSoleUses(pv, m, why)) || failed(checkOperands(pv, m, why)))
    return failure();
  return m;
}

/// `x` as rank 4, leading dims of 1 added.
Value toRank4(OpBuilder &b, Location loc, Value x) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  if (type.getRank() == 4)
    return x;
  SmallVector<int64_t> shape(4 - type.getRank(), 1);
  llvm::append_range(shape, type.getShape());
  return ReshapeOp::create(b, loc, type.clone(shape), x, ArrayAttr());
}

/// The kf.attention for `m`, built before `pv`, or the reason it cannot
/// be built (the shapes do not agree: K and V of different heads, say).
FailureOr<Value> buildAttention(PatternRewriter &b, MatmulOp pv,
                                const AttentionMatch &m, Refusal &why) {
  auto padded = [](Value x) {
    ArrayRef<int64_t> s = x ? shapeOf(x) : ArrayRef<int64_t>();
    shapes::Shape out(x ? 4 - s.size() : 0, 1);
    out.append(s.begin(), s.end());
    return out;
  };
  // AttentionShapes refers to these.
  shapes::Shape q = padded(m.q), k = padded(m.k), v = padded(m.v),
                mask = padded(m.mask), bias = padded(m.bias);
  if (m.kColumns)
    std::swap(k[2], k[3]);
  shapes::AttentionShapes in{q, k, v, std::nullopt, std::nullopt};
  if (m.mask)
    in.mask = mask;
  if (m.bias)
    in.bias = bias;
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape = shapes::inferAttention(in, diag);
  if (failed(shape)) {
    why = diag.message();
    return failure();
  }
  Location loc = pv.getLoc();
  Value kIn = toRank4(b, loc, m.k);
  if (m.kColumns)
    kIn = TransposeOp::create(
        b, loc, mlir::cast<RankedTensorType>(kIn.getType()).clone(k), kIn,
        b.getDenseI64ArrayAttr({0, 1, 3, 2}));
  auto resultType = mlir::cast<RankedTensorType>(pv.getType());
  Value attention =
      AttentionOp::create(b, loc, resultType.clone(*shape), /*lse=*/Type(),
                          toRank4(b, loc, m.q), kIn, toRank4(b, loc, m.v),
                          m.mask ? toRank4(b, loc, m.mask) : Value(),
                          m.bias ? toRank4(b, loc, m.bias) : Value(),
                          b.getF64FloatAttr(m.scale), b.getBoolAttr(m.causal))
          .getResult();
  if (resultType.getRank() != 4)
    attention = ReshapeOp::create(b, loc, resultType, attention, ArrayAttr());
  return attention;
}

/// matmul(softmax(scale * Q K^T [+ bias] [masked]), V) in any of its
/// spellings becomes one kf.attention. A near-match that must not be
/// rewritten is marked with the reason (`kf.online_softmax`), once.
struct AttentionFromPrimitives : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    if (pv->hasAttr(kOnlineSoftmaxRefusal))
      return rewriter.notifyMatchFailure(pv, "already refused");
    bool nearMatch = false;
    Refusal why;
    FailureOr<AttentionMatch> m = matchAttention(pv, nearMatch, why);
    FailureOr<Value> attention = failure();
    if (succeeded(m)) {
      rewriter.setInsertionPoint(pv);
      attention = buildAttention(rewriter, pv, *m, why);
    }
    if (succeeded(attention)) {
      rewriter.replaceOp(pv, *attention);
      return success();
    }
    if (!nearMatch)
      return rewriter.notifyMatchFailure(pv, "not a product of a softmax");
    rewriter.modifyOpInPlace(pv, [&] {
      pv->setAttr(kOnlineSoftmaxRefusal,
                  rewriter.getStringAttr("not rewritten: " + why));
    });
    return success();
  }
};

struct KFOnlineSoftmaxPass
    : public kfuse::kf::impl::KFOnlineSoftmaxPassBase<KFOnlineSoftmaxPass> {
  using KFOnlineSoftmaxPassBase::KFOnlineSoftmaxPassBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AttentionFromPrimitives>(&getContext());
    // Only the rewrite and the removal of the score ops it leaves dead.
    if (failed(applyOnlyPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
