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
// And an attention asked for again with its log-sum-exp (by a backward
// pass) is one attention.
//
//===----------------------------------------------------------------------===//

#include "ir/AffineValues.h"
#include "ir/KFDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Whether `term` (broadcastable to the [B, H, Sq, Sk] mask) is true
/// exactly where key <= query: a comparison whose operands differ by
/// +-(key - query) plus a constant that makes it that.
bool isCausalTerm(Value term) {
  auto compare = term.getDefiningOp<CompareOp>();
  if (!compare)
    return false;
  AffineValueAnalysis values;
  FailureOr<AffineValue> lhs = values.valueOf(compare.getLhs());
  FailureOr<AffineValue> rhs = values.valueOf(compare.getRhs());
  int64_t rank = shapeOf(term).size();
  if (failed(lhs) || failed(rhs) || rank < 2 || rank > 4)
    return false;
  AffineValue d = lhs->minus(*rhs);
  int64_t slope = d.coeffs[rank - 1]; // along the keys
  bool onlyKeyMinusQuery = std::abs(slope) == 1 &&
                           d.coeffs[rank - 2] == -slope &&
                           llvm::all_of(ArrayRef(d.coeffs).drop_back(2),
                                        [](int64_t c) { return c == 0; });
  if (!onlyKeyMinusQuery)
    return false;
  // As key - query + c <op> 0: flip the predicate with the sign.
  ComparePredicate predicate = compare.getPredicate();
  int64_t c = d.offset;
  if (slope < 0) {
    c = -c;
    switch (predicate) {
    case ComparePredicate::lt: predicate = ComparePredicate::gt; break;
    case ComparePredicate::le: predicate = ComparePredicate::ge; break;
    case ComparePredicate::gt: predicate = ComparePredicate::lt; break;
    case ComparePredicate::ge: predicate = ComparePredicate::le; break;
    default: break;
    }
  }
  // key - query <= -c is causal for c = 0; key - query < -c for c = -1.
  return (predicate == ComparePredicate::le && c == 0) ||
         (predicate == ComparePredicate::lt && c == -1);
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

/// An attention without its log-sum-exp and one with it over the same
/// operands (a backward pass asks for the forward's rows' statistics) are
/// one attention: a kernel that computes both, where the earlier of the
/// two stood.
struct OneAttentionWithItsLse : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLse())
      return failure();
    AttentionOp twin;
    for (Operation *user : op.getQ().getUsers()) {
      auto other = dyn_cast<AttentionOp>(user);
      if (other && other != op && other.getLse() &&
          other->getBlock() == op->getBlock() &&
          llvm::equal(other->getOperands(), op->getOperands()) &&
          other.getScaleAttr() == op.getScaleAttr() &&
          other.getCausal() == op.getCausal() &&
          other.getResult().getType() == op.getResult().getType()) {
        twin = other;
        break;
      }
    }
    if (!twin)
      return failure();
    AttentionOp first = op->isBeforeInBlock(twin) ? op : twin;
    rewriter.setInsertionPoint(first);
    auto merged = cast<AttentionOp>(rewriter.clone(*twin));
    rewriter.replaceOp(twin, merged->getResults());
    rewriter.replaceOp(op, merged.getResult());
    return success();
  }
};

} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<MaskTermsAsCausal, RepeatedKVAsGrouped, OneAttentionWithItsLse>(
      context);
}
