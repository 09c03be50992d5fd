//===- SeparateRowSums.cpp - kf-separate-row-sums: sums that need no sum --===//
//
// A row kernel reduces each reduction of its rows in a block-wide round of
// shuffles and barriers, and a sum whose input needs another sum's result
// waits for that round first. A LayerNorm's backward from the autodiff
// has such a chain: the mean's gradient sums terms scaled by a row scalar
// computed from the variance's gradient sum. Sums are linear, so the
// chain is cut where its link is a row scalar times a term.
//
// Analyse: expand a sum's (or mean's) input through add, sub, neg and
// products by row constants into terms (sign, factors, value). Decide:
// rewrite where the terms' values need a shorter chain of reductions than
// the input does. Rewrite: a reduction of each distinct value, the terms
// combined per row; kf-lower-to-gpu's row template then reduces the
// independent sums in one round.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFSEPARATEROWSUMSPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Terms an expansion may reach (repeats counted), and distinct values
/// the rewrite may reduce: more, and the extra sums cost more than the
/// round they save.
constexpr size_t kMaxTerms = 8;
constexpr size_t kMaxValues = 4;

/// sign * factors... * value, each factor constant along the reduced axes.
struct Term {
  Value value;
  SmallVector<Value> factors;
  bool negated = false;
};

/// The longest chain of reductions `v` needs through what a row kernel
/// holds together: elementwise ops, broadcasts and reshapes.
int64_t reductionChain(Value v, DenseMap<Value, int64_t> &memo) {
  auto known = memo.find(v);
  if (known != memo.end())
    return known->second;
  Operation *def = v.getDefiningOp();
  int64_t chain = 0;
  if (def && (def->hasTrait<OpTrait::kf::Elementwise>() ||
              isa<BroadcastOp, ReshapeOp, ReduceOp>(def))) {
    for (Value operand : def->getOperands())
      chain = std::max(chain, reductionChain(operand, memo));
    chain += isa<ReduceOp>(def);
  }
  memo[v] = chain;
  return chain;
}

/// A reduction's input as a sum of terms, expanded only where the chain
/// of reductions is as long as the input's: a part that needs a shorter
/// chain is a term as it is.
class Expansion {
public:
  explicit Expansion(ReduceOp reduce)
      : input(reduce.getInput()), axes(reduce.getAxes()),
        chain(reductionChain(input, memo)) {}

  /// The chain of reductions the input needs.
  int64_t inputChain() const { return chain; }
  /// The chain of reductions `v` needs.
  int64_t chainOf(Value v) { return reductionChain(v, memo); }

  /// The terms of the input; failure past kMaxTerms.
  FailureOr<SmallVector<Term>> terms() {
    SmallVector<Term> out;
    if (failed(expand(input, Term(), out)))
      return failure();
    return out;
  }

  /// Whether `v` is the same at every position of the reduced axes: a
  /// broadcast along them (its operand's aligned dims 1 there, or absent),
  /// a splat constant, or a product of such.
  bool isRowConstant(Value v) const {
    if (auto broadcast = v.getDefiningOp<BroadcastOp>()) {
      ArrayRef<int64_t> in = shapeOf(broadcast.getInput());
      int64_t missing = shapeOf(v).size() - in.size();
      return llvm::all_of(axes, [&](int64_t axis) {
        return axis < missing || in[axis - missing] == 1;
      });
    }
    if (auto constant = v.getDefiningOp<ConstantOp>())
      return isa<SplatElementsAttr>(constant.getValue());
    if (auto mul = v.getDefiningOp<MulOp>())
      return isRowConstant(mul.getLhs()) && isRowConstant(mul.getRhs());
    return false;
  }

private:
  LogicalResult expand(Value v, Term term, SmallVector<Term> &out) {
    if (out.size() >= kMaxTerms)
      return failure();
    Operation *def = chainOf(v) < chain ? nullptr : v.getDefiningOp();
    if (auto add = dyn_cast_or_null<AddOp>(def))
      return success(succeeded(expand(add.getLhs(), term, out)) &&
                     succeeded(expand(add.getRhs(), term, out)));
    if (auto sub = dyn_cast_or_null<SubOp>(def)) {
      if (failed(expand(sub.getLhs(), term, out)))
        return failure();
      term.negated = !term.negated;
      return expand(sub.getRhs(), term, out);
    }
    if (auto neg = dyn_cast_or_null<NegOp>(def)) {
      term.negated = !term.negated;
      return expand(neg.getInput(), term, out);
    }
    if (auto mul = dyn_cast_or_null<MulOp>(def)) {
      for (auto [factor, rest] : {std::pair{mul.getLhs(), mul.getRhs()},
                                  std::pair{mul.getRhs(), mul.getLhs()}})
        if (isRowConstant(factor)) {
          term.factors.push_back(factor);
          return expand(rest, term, out);
        }
    }
    term.value = v;
    out.push_back(term);
    return success();
  }

  Value input;
  SmallVector<int64_t> axes;
  DenseMap<Value, int64_t> memo;
  int64_t chain;
};

struct SeparateSums : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    auto in = mlir::cast<RankedTensorType>(op.getInput().getType());
    if ((op.getKind() != ReduceKind::sum &&
         op.getKind() != ReduceKind::mean) ||
        !in.getElementType().isF32() || !in.hasStaticShape())
      return failure();
    Expansion expansion(op);
    FailureOr<SmallVector<Term>> terms = expansion.terms();
    if (failed(terms) || terms->size() < 2)
      return failure();
    llvm::SetVector<Value> values;
    for (const Term &t : *terms)
      values.insert(t.value);
    int64_t separated = 0;
    for (Value v : values)
      separated = std::max(separated, expansion.chainOf(v));
    if (values.size() > kMaxValues || separated >= expansion.inputChain())
      return failure();
    rewriter.replaceOp(op, combine(rewriter, op, *terms, values.getArrayRef()));
    return success();
  }

  /// Sum of each term's sign * factors * reduction of its value, per row
  /// (the reduction's shape with its axes kept), then in `op`'s shape; a
  /// reduction of each of `values`, the terms' distinct values.
  static Value combine(PatternRewriter &r, ReduceOp op, ArrayRef<Term> terms,
                       ArrayRef<Value> values) {
    Location loc = op.getLoc();
    auto in = mlir::cast<RankedTensorType>(op.getInput().getType());
    SmallVector<int64_t> rowShape(in.getShape());
    for (int64_t axis : op.getAxes())
      rowShape[axis] = 1;
    auto rowType = in.clone(rowShape);
    DenseMap<Value, Value> reduced;
    for (Value v : values)
      reduced[v] = ReduceOp::create(r, loc, rowType, op.getKind(), v,
                                    op.getAxes(), /*keep_dims=*/true);
    Value total;
    for (const Term &t : terms) {
      Value v = reduced[t.value];
      for (Value factor : t.factors)
        v = MulOp::create(r, loc, rowType, perRow(r, factor, rowType), v);
      if (!total)
        total = t.negated ? NegOp::create(r, loc, rowType, v) : v;
      else if (t.negated)
        total = SubOp::create(r, loc, rowType, total, v);
      else
        total = AddOp::create(r, loc, rowType, total, v);
    }
    if (op.getKeepDims())
      return total;
    return ReshapeOp::create(r, loc, op.getType(), total, ArrayAttr());
  }

  /// A row constant's value per row, of `rowType`.
  static Value perRow(PatternRewriter &r, Value factor,
                      RankedTensorType rowType) {
    Location loc = factor.getLoc();
    if (auto broadcast = factor.getDefiningOp<BroadcastOp>()) {
      Value input = broadcast.getInput();
      if (input.getType() == rowType)
        return input;
      return BroadcastOp::create(r, loc, rowType, input, ArrayAttr());
    }
    if (auto constant = factor.getDefiningOp<ConstantOp>()) {
      auto splat = mlir::cast<SplatElementsAttr>(constant.getValue());
      return ConstantOp::create(r, loc, rowType,
                                splat.resizeSplat(rowType));
    }
    auto mul = factor.getDefiningOp<MulOp>();
    return MulOp::create(r, loc, rowType, perRow(r, mul.getLhs(), rowType),
                         perRow(r, mul.getRhs(), rowType));
  }
};

struct KFSeparateRowSumsPass
    : kfuse::kf::impl::KFSeparateRowSumsPassBase<KFSeparateRowSumsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SeparateSums>(&getContext());
    if (failed(applyOnlyPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
