//===- AttentionPatterns.cpp - canonical forms of kf.attention ------------===//
//
// Frontends spell two things about attention as tensors that the attention
// template can do without:
//
//  - A causal mask built from positions (HuggingFace's `kv_idx <= q_idx`,
//    as iotas compared under broadcasts), often and-ed with other terms.
//    As a tensor the mask is computed at every score, and the template
//    cannot skip the key blocks past the diagonal; as the `causal`
//    attribute it skips them, which halves the work. The other terms stay
//    the mask.
//  - Keys and values repeated for each query head of a group (`repeat_kv`:
//    a reshape to [B, Hkv, 1, S, D], a broadcast to [B, Hkv, G, S, D], a
//    reshape to [B, Hkv * G, S, D]). Grouped-query attention reads the
//    Hkv heads themselves.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// What an integer tensor holds at each position: its index along `axis`
/// plus `offset`, or (axis < 0) the constant `offset`.
struct AxisIndex {
  int64_t axis = -1;
  int64_t offset = 0;
};

/// Offsets beyond this are not followed (no overflow in the sums below).
constexpr int64_t kMaxOffset = int64_t(1) << 40;

FailureOr<AxisIndex> axisIndexOf(Value v, int depth = 0);

/// An index along a dim of size 1 is the constant 0.
FailureOr<AxisIndex> normalised(Value v, AxisIndex at) {
  if (at.axis >= 0 && shapeOf(v)[at.axis] == 1)
    at.axis = -1;
  if (std::abs(at.offset) > kMaxOffset)
    return failure();
  return at;
}

/// The non-unit dims of a shape, by position.
SmallVector<int64_t> nonUnitDims(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> dims;
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1)
      dims.push_back(d);
  return dims;
}

/// A reshape that only adds or drops dims of size 1 moves an axis to the
/// same non-unit dim of the result.
FailureOr<AxisIndex> throughReshape(ReshapeOp op, AxisIndex in) {
  if (in.axis < 0)
    return in;
  ArrayRef<int64_t> from = shapeOf(op.getInput()), to = shapeOf(op.getResult());
  SmallVector<int64_t> fromDims = nonUnitDims(from), toDims = nonUnitDims(to);
  if (fromDims.size() != toDims.size())
    return failure();
  for (auto [f, t] : llvm::zip(fromDims, toDims))
    if (from[f] != to[t])
      return failure();
  auto at = llvm::find(fromDims, in.axis);
  in.axis = toDims[at - fromDims.begin()];
  return in;
}

FailureOr<AxisIndex> sumOf(Value v, AxisIndex a, AxisIndex b, bool subtract) {
  if (subtract && b.axis >= 0)
    return failure();
  if (a.axis >= 0 && b.axis >= 0)
    return failure();
  AxisIndex sum{a.axis >= 0 ? a.axis : b.axis,
                subtract ? a.offset - b.offset : a.offset + b.offset};
  return normalised(v, sum);
}

bool isWideInteger(Value v) {
  Type t = cast<RankedTensorType>(v.getType()).getElementType();
  return t.isInteger(32) || t.isInteger(64);
}

FailureOr<AxisIndex> axisIndexOf(Value v, int depth) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (depth > 16 || !type || !type.hasStaticShape() || !isWideInteger(v))
    return failure();
  Operation *def = v.getDefiningOp();
  if (!def)
    return failure();
  if (auto iota = dyn_cast<IotaOp>(def))
    return normalised(v, {static_cast<int64_t>(iota.getDim()), 0});
  APInt splat;
  if (matchPattern(v, m_ConstantInt(&splat)))
    return normalised(v, {-1, splat.getSExtValue()});
  if (auto broadcast = dyn_cast<BroadcastOp>(def)) {
    FailureOr<AxisIndex> in = axisIndexOf(broadcast.getInput(), depth + 1);
    if (failed(in))
      return failure();
    if (in->axis >= 0)
      in->axis += type.getRank() - shapeOf(broadcast.getInput()).size();
    return normalised(v, *in);
  }
  if (auto reshape = dyn_cast<ReshapeOp>(def)) {
    FailureOr<AxisIndex> in = axisIndexOf(reshape.getInput(), depth + 1);
    if (failed(in))
      return failure();
    return throughReshape(reshape, *in);
  }
  if (auto cast = dyn_cast<CastOp>(def)) {
    if (!isWideInteger(cast.getInput()))
      return failure();
    return axisIndexOf(cast.getInput(), depth + 1);
  }
  if (isa<AddOp, SubOp>(def)) {
    FailureOr<AxisIndex> a = axisIndexOf(def->getOperand(0), depth + 1);
    FailureOr<AxisIndex> b = axisIndexOf(def->getOperand(1), depth + 1);
    if (failed(a) || failed(b))
      return failure();
    return sumOf(v, *a, *b, isa<SubOp>(def));
  }
  return failure();
}

/// Whether `term` (broadcastable to the [B, H, Sq, Sk] mask) is true
/// exactly where key <= query: a comparison of the key and the query
/// index, each plus a constant, that reduces to that.
bool isCausalTerm(Value term) {
  auto compare = term.getDefiningOp<CompareOp>();
  if (!compare)
    return false;
  FailureOr<AxisIndex> lhs = axisIndexOf(compare.getLhs());
  FailureOr<AxisIndex> rhs = axisIndexOf(compare.getRhs());
  if (failed(lhs) || failed(rhs))
    return false;
  // Axes in the mask's [B, H, Sq, Sk] coordinates.
  int64_t lead = 4 - static_cast<int64_t>(shapeOf(term).size());
  auto inMask = [&](AxisIndex a) { return a.axis < 0 ? -1 : a.axis + lead; };
  ComparePredicate predicate = compare.getPredicate();
  AxisIndex key = *lhs, query = *rhs;
  if (inMask(key) == 2 && inMask(query) == 3) {
    std::swap(key, query);
    switch (predicate) {
    case ComparePredicate::lt: predicate = ComparePredicate::gt; break;
    case ComparePredicate::le: predicate = ComparePredicate::ge; break;
    case ComparePredicate::gt: predicate = ComparePredicate::lt; break;
    case ComparePredicate::ge: predicate = ComparePredicate::le; break;
    default: break;
    }
  }
  if (inMask(key) != 3 || inMask(query) != 2)
    return false;
  // key + ck <= query + cq is key <= query + (cq - ck); < is one less.
  int64_t slack = query.offset - key.offset;
  return (predicate == ComparePredicate::le && slack == 0) ||
         (predicate == ComparePredicate::lt && slack == 1);
}

bool isAllTrue(Value term) {
  APInt splat;
  return matchPattern(term, m_ConstantInt(&splat)) && splat.isOne();
}

/// The conjuncts of an i1 value through broadcasts and `and`s, each
/// broadcastable to the value (broadcasts align trailing dims, so a term
/// of a broadcast operand is one of the result).
void collectConjuncts(Value mask, SmallVectorImpl<Value> &terms) {
  if (auto broadcast = mask.getDefiningOp<BroadcastOp>())
    return collectConjuncts(broadcast.getInput(), terms);
  if (auto both = mask.getDefiningOp<AndOp>()) {
    collectConjuncts(both.getLhs(), terms);
    return collectConjuncts(both.getRhs(), terms);
  }
  terms.push_back(mask);
}

/// The mask's causal terms become the `causal` attribute, its all-true
/// terms go, and the rest, broadcast and and-ed, stay the mask.
struct MaskTermsAsCausal : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value mask = op.getMask();
    if (!mask || !cast<RankedTensorType>(mask.getType()).hasStaticShape())
      return failure();
    SmallVector<Value> terms, rest;
    collectConjuncts(mask, terms);
    bool causal = op.getCausal();
    for (Value term : terms) {
      if (isCausalTerm(term))
        causal = true;
      else if (!isAllTrue(term))
        rest.push_back(term);
    }
    if (rest.size() == terms.size())
      return failure();
    auto maskType = cast<RankedTensorType>(mask.getType());
    Value kept;
    for (Value term : rest) {
      if (term.getType() != maskType)
        term = BroadcastOp::create(rewriter, op.getLoc(), maskType, term,
                                   ArrayAttr());
      kept = kept ? AndOp::create(rewriter, op.getLoc(), maskType, kept, term)
                      .getResult()
                : term;
    }
    rewriter.modifyOpInPlace(op, [&] {
      if (kept)
        op.getMaskMutable().assign(kept);
      else
        op.getMaskMutable().clear();
      op.setCausal(causal);
    });
    return success();
  }
};

/// `x` when `repeated` is x [B, Hkv, S, D] repeated for groups of heads:
/// reshape to [B, Hkv, 1, S, D], broadcast to [B, Hkv, G, S, D], reshape
/// to [B, Hkv * G, S, D].
Value unrepeated(Value repeated) {
  auto merge = repeated.getDefiningOp<ReshapeOp>();
  auto broadcast =
      merge ? merge.getInput().getDefiningOp<BroadcastOp>() : BroadcastOp();
  auto split =
      broadcast ? broadcast.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!split)
    return Value();
  Value x = split.getInput();
  ArrayRef<int64_t> in = shapeOf(x), grouped = shapeOf(broadcast.getResult());
  if (in.size() != 4 || grouped.size() != 5 ||
      ShapedType::isDynamicShape(grouped) || ShapedType::isDynamicShape(in))
    return Value();
  SmallVector<int64_t> unit = {in[0], in[1], 1, in[2], in[3]};
  SmallVector<int64_t> repeatedShape = {in[0], in[1], grouped[2], in[2],
                                        in[3]};
  bool matches = ArrayRef<int64_t>(unit) == shapeOf(split.getResult()) &&
                 ArrayRef<int64_t>(repeatedShape) == grouped &&
                 shapeOf(repeated)[1] == in[1] * grouped[2];
  return matches ? x : Value();
}

/// Keys and values repeated per query head of a group are read as their
/// kv heads (grouped-query attention).
struct RepeatedKVAsGrouped : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value k = unrepeated(op.getK()), v = unrepeated(op.getV());
    if (!k || !v || shapeOf(k)[1] != shapeOf(v)[1])
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getKMutable().assign(k);
      op.getVMutable().assign(v);
    });
    return success();
  }
};

} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<MaskTermsAsCausal, RepeatedKVAsGrouped>(context);
}
