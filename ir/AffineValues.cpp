//===- AffineValues.cpp - integer tensors as functions of position --------===//

#include "ir/AffineValues.h"

#include "ir/KFDialect.h"
#include "ir/PiecewisePatterns.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Coefficients and offsets are kept below this, so that the sums and
/// differences the analysis and its users form cannot overflow.
constexpr int64_t kLimit = int64_t(1) << 40;

/// Analyses deeper than this give up (index arithmetic is shallow; a
/// deep chain is not index arithmetic).
constexpr int kMaxDepth = 64;

AffineValue constantOf(int64_t rank, int64_t value) {
  return {SmallVector<int64_t>(rank, 0), value};
}

std::optional<AffineValue> scaled(AffineValue f, int64_t k) {
  for (int64_t &c : f.coeffs) {
    std::optional<int64_t> p = llvm::checkedMul(c, k);
    if (!p)
      return std::nullopt;
    c = *p;
  }
  std::optional<int64_t> p = llvm::checkedMul(f.offset, k);
  if (!p)
    return std::nullopt;
  f.offset = *p;
  return f;
}

FailureOr<AffineValue> orFailure(std::optional<AffineValue> f) {
  if (!f)
    return failure();
  return *f;
}

/// Row-major strides of a static shape.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// `in` (over `from`) read through a reshape to `to`: a reshape that only
/// adds or drops size-1 dims moves each coefficient to its dim; one of a
/// function of the row-major linear position a * l + b scales the result's
/// strides by a; otherwise the result is no affine function.
FailureOr<AffineValue> throughReshape(const AffineValue &in,
                                      ArrayRef<int64_t> from,
                                      ArrayRef<int64_t> to) {
  if (in.isConstant())
    return constantOf(to.size(), in.offset);
  auto nonUnit = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> dims;
    for (auto [d, size] : llvm::enumerate(shape))
      if (size != 1)
        dims.push_back(d);
    return dims;
  };
  SmallVector<int64_t> fromDims = nonUnit(from), toDims = nonUnit(to);
  AffineValue out = constantOf(to.size(), in.offset);
  bool sameDims = fromDims.size() == toDims.size() &&
                  llvm::all_of(llvm::zip(fromDims, toDims), [&](auto p) {
                    return from[std::get<0>(p)] == to[std::get<1>(p)];
                  });
  if (sameDims) {
    for (auto [f, t] : llvm::zip(fromDims, toDims))
      out.coeffs[t] = in.coeffs[f];
    return out;
  }
  SmallVector<int64_t> fromStrides = stridesOf(from);
  int64_t last = fromDims.back();
  if (in.coeffs[last] % fromStrides[last])
    return failure();
  int64_t a = in.coeffs[last] / fromStrides[last];
  for (int64_t d : fromDims)
    if (in.coeffs[d] != a * fromStrides[d])
      return failure();
  for (auto [d, stride] : llvm::enumerate(stridesOf(to))) {
    std::optional<int64_t> c = llvm::checkedMul(a, stride);
    if (!c)
      return failure();
    out.coeffs[d] = *c;
  }
  return out;
}

/// Concatenated pieces along `axis` are one affine function when each
/// piece, shifted to where it lies, is that function.
FailureOr<AffineValue> throughConcat(ConcatOp op, AffineValueAnalysis &values) {
  int64_t axis = op.getAxis();
  struct Piece {
    AffineValue value;
    int64_t start;
    ArrayRef<int64_t> shape;
  };
  SmallVector<Piece> pieces;
  int64_t start = 0;
  std::optional<AffineValue> whole;
  for (Value input : op.getInputs()) {
    FailureOr<AffineValue> f = values.valueOf(input);
    if (failed(f))
      return failure();
    pieces.push_back({*f, start, shapeOf(input)});
    // A piece longer than 1 along the axis gives the slope along it; with
    // none, equal pieces make a function constant along the axis.
    if (!whole && shapeOf(input)[axis] > 1) {
      std::optional<int64_t> shift = llvm::checkedMul(f->coeffs[axis], start);
      if (!shift)
        return failure();
      whole = *f;
      whole->offset -= *shift;
    }
    start += shapeOf(input)[axis];
  }
  if (!whole)
    whole = pieces.front().value;
  for (const Piece &piece : pieces) {
    AffineValue expected = *whole;
    expected.offset += whole->coeffs[axis] * piece.start; // <= the above
    for (auto [c, size] : llvm::zip_equal(expected.coeffs, piece.shape))
      if (size == 1)
        c = 0;
    if (!(piece.value == expected))
      return failure();
  }
  return *whole;
}

/// The i1 constant a comparison gives over every difference lhs - rhs in
/// [lo, hi], if one predicate outcome holds for all.
std::optional<int64_t> decide(ComparePredicate predicate, int64_t lo,
                              int64_t hi) {
  auto outcome = [](bool always, bool never) -> std::optional<int64_t> {
    if (always)
      return 1;
    if (never)
      return 0;
    return std::nullopt;
  };
  switch (predicate) {
  case ComparePredicate::eq:
    return outcome(lo == 0 && hi == 0, hi < 0 || lo > 0);
  case ComparePredicate::ne:
    return outcome(hi < 0 || lo > 0, lo == 0 && hi == 0);
  case ComparePredicate::lt:
    return outcome(hi < 0, lo >= 0);
  case ComparePredicate::le:
    return outcome(hi <= 0, lo > 0);
  case ComparePredicate::gt:
    return outcome(lo > 0, hi <= 0);
  case ComparePredicate::ge:
    return outcome(lo >= 0, hi < 0);
  }
  return std::nullopt;
}

FailureOr<AffineValue> ofCompare(CompareOp op, AffineValueAnalysis &values) {
  FailureOr<AffineValue> lhs = values.valueOf(op.getLhs());
  FailureOr<AffineValue> rhs = values.valueOf(op.getRhs());
  if (failed(lhs) || failed(rhs))
    return failure();
  auto [lo, hi] =
      AffineValueAnalysis::range(lhs->minus(*rhs), shapeOf(op.getLhs()));
  std::optional<int64_t> outcome = decide(op.getPredicate(), lo, hi);
  if (!outcome)
    return failure();
  return constantOf(shapeOf(op.getResult()).size(), *outcome);
}

/// A gather from a constant table gives the constant where every index is
/// in range, and everywhere when the constant is what an index out of
/// range gives (0, false).
template <typename GatherLike>
FailureOr<AffineValue> ofGather(GatherLike op, AffineValueAnalysis &values) {
  FailureOr<AffineValue> table = values.valueOf(op.getInput());
  if (failed(table) || !table->isConstant())
    return failure();
  int64_t rank = shapeOf(op.getResult()).size();
  if (table->offset == 0)
    return constantOf(rank, 0);
  FailureOr<AffineValue> indices = values.valueOf(op.getIndices());
  if (failed(indices))
    return failure();
  int64_t n = shapeOf(op.getInput())[op.getAxis()];
  auto [lo, hi] =
      AffineValueAnalysis::range(*indices, shapeOf(op.getIndices()));
  if (lo < -n || hi >= n)
    return failure();
  return constantOf(rank, table->offset);
}

FailureOr<AffineValue> ofLogic(Operation *op, AffineValueAnalysis &values) {
  SmallVector<int64_t> bits;
  for (Value operand : op->getOperands()) {
    FailureOr<AffineValue> f = values.valueOf(operand);
    if (succeeded(f) && f->isConstant())
      bits.push_back(f->offset);
    else
      bits.push_back(-1); // unknown
  }
  int64_t rank = shapeOf(op->getResult(0)).size();
  auto known = [&](int64_t b) { return b >= 0; };
  if (isa<NotOp>(op) && known(bits[0]))
    return constantOf(rank, 1 - bits[0]);
  // false and x, true or x; both known for the rest.
  if (isa<AndOp>(op) && llvm::is_contained(bits, 0))
    return constantOf(rank, 0);
  if (isa<OrOp>(op) && llvm::is_contained(bits, 1))
    return constantOf(rank, 1);
  if (bits.size() == 2 && known(bits[0]) && known(bits[1]))
    return constantOf(rank, isa<AndOp>(op)  ? bits[0] & bits[1]
                            : isa<OrOp>(op) ? bits[0] | bits[1]
                                            : bits[0] ^ bits[1]);
  return failure();
}

FailureOr<AffineValue> ofSum(Operation *op, AffineValueAnalysis &values) {
  FailureOr<AffineValue> a = values.valueOf(op->getOperand(0));
  FailureOr<AffineValue> b = values.valueOf(op->getOperand(1));
  if (failed(a) || failed(b))
    return failure();
  if (isa<SubOp>(op))
    return a->minus(*b);
  if (isa<AddOp>(op)) {
    AffineValue sum = *a; // both bounded by checked(): no overflow
    for (auto [c, o] : llvm::zip_equal(sum.coeffs, b->coeffs))
      c += o;
    sum.offset += b->offset;
    return sum;
  }
  // mul: one factor constant.
  std::optional<AffineValue> product = b->isConstant()   ? scaled(*a, b->offset)
                                       : a->isConstant() ? scaled(*b, a->offset)
                                                         : std::nullopt;
  return orFailure(product);
}

FailureOr<AffineValue> ofSelect(SelectOp op, AffineValueAnalysis &values) {
  FailureOr<AffineValue> cond = values.valueOf(op.getCond());
  if (succeeded(cond) && cond->isConstant())
    return values.valueOf(cond->offset ? op.getOnTrue() : op.getOnFalse());
  FailureOr<AffineValue> a = values.valueOf(op.getOnTrue());
  FailureOr<AffineValue> b = values.valueOf(op.getOnFalse());
  if (succeeded(a) && succeeded(b) && *a == *b)
    return *a;
  return failure();
}

FailureOr<AffineValue> ofShapeOp(Operation *def, AffineValueAnalysis &values) {
  FailureOr<AffineValue> in = values.valueOf(def->getOperand(0));
  if (failed(in))
    return failure();
  ArrayRef<int64_t> to = shapeOf(def->getResult(0));
  if (isa<BroadcastOp>(def)) {
    // Broadcasts align trailing dims; the new leading dims do not move it.
    AffineValue out = constantOf(to.size() - in->coeffs.size(), in->offset);
    out.coeffs.append(in->coeffs);
    return out;
  }
  if (isa<ReshapeOp>(def))
    return throughReshape(*in, shapeOf(def->getOperand(0)), to);
  if (auto transpose = dyn_cast<TransposeOp>(def)) {
    AffineValue out = constantOf(to.size(), in->offset);
    for (auto [d, from] : llvm::enumerate(transpose.getPerm()))
      out.coeffs[d] = in->coeffs[from];
    return out;
  }
  if (auto slice = dyn_cast<SliceOp>(def)) {
    // Element i of dim d is input element start + i * step.
    AffineValue out = *in;
    for (size_t d = 0; d < out.coeffs.size(); ++d) {
      std::optional<int64_t> shift =
          llvm::checkedMul(in->coeffs[d], slice.getStarts()[d]);
      std::optional<int64_t> slope =
          llvm::checkedMul(in->coeffs[d], slice.getSteps()[d]);
      if (!shift || !slope || std::abs(*shift) > kLimit)
        return failure();
      out.offset += *shift;
      out.coeffs[d] = *slope;
    }
    return out;
  }
  if (auto cumsum = dyn_cast<CumsumOp>(def)) {
    // The running sum of a constant c is c * (i + 1).
    if (!in->isConstant())
      return failure();
    AffineValue out = *in;
    out.coeffs[cumsum.getAxis()] = in->offset;
    return out;
  }
  return failure();
}

} // namespace

std::pair<int64_t, int64_t>
AffineValueAnalysis::range(const AffineValue &f, ArrayRef<int64_t> shape) {
  __int128 lo = f.offset, hi = f.offset;
  for (auto [c, size] : llvm::zip_equal(f.coeffs, shape)) {
    __int128 span = static_cast<__int128>(c) * (size - 1);
    (span > 0 ? hi : lo) += span;
  }
  auto clamped = [](__int128 x) {
    return static_cast<int64_t>(
        std::clamp<__int128>(x, std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()));
  };
  return {clamped(lo), clamped(hi)};
}

FailureOr<AffineValue> AffineValueAnalysis::checked(Value v, AffineValue f) {
  auto type = cast<RankedTensorType>(v.getType());
  ArrayRef<int64_t> shape = type.getShape();
  __int128 lo = f.offset, hi = f.offset;
  for (auto [c, size] : llvm::zip_equal(f.coeffs, shape)) {
    if (size == 1)
      c = 0;
    if (std::abs(c) > kLimit)
      return failure();
    __int128 span = static_cast<__int128>(c) * (size - 1);
    (span > 0 ? hi : lo) += span;
  }
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  __int128 min = width == 1    ? 0
                 : width >= 64 ? -kLimit
                               : -(__int128(1) << (width - 1));
  __int128 max = width == 1    ? 1
                 : width >= 64 ? kLimit
                               : (__int128(1) << (width - 1)) - 1;
  if (lo < min || hi > max || std::abs(f.offset) > kLimit)
    return failure();
  return f;
}

FailureOr<AffineValue> AffineValueAnalysis::valueOf(Value v) {
  auto it = known.find(v);
  if (it != known.end())
    return it->second;
  if (depth >= kMaxDepth)
    return failure();
  ++depth;
  FailureOr<AffineValue> f = compute(v);
  --depth;
  if (succeeded(f))
    f = checked(v, *f);
  known.try_emplace(v, f);
  return f;
}

FailureOr<AffineValue> AffineValueAnalysis::compute(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isInteger() ||
      llvm::is_contained(type.getShape(), 0))
    return failure();
  Operation *def = v.getDefiningOp();
  if (!def)
    return failure();
  APInt splat;
  if (matchPattern(v, m_ConstantInt(&splat)))
    return constantOf(type.getRank(), splat.getBitWidth() == 1
                                          ? splat.getZExtValue()
                                          : splat.getSExtValue());
  if (auto iota = dyn_cast<IotaOp>(def)) {
    AffineValue f = constantOf(type.getRank(), 0);
    f.coeffs[iota.getDim()] = 1;
    return f;
  }
  if (isa<CastOp, NegOp>(def)) {
    FailureOr<AffineValue> in = valueOf(def->getOperand(0));
    if (failed(in) || isa<CastOp>(def))
      return in; // integer to integer: checked() refuses what changes
    return orFailure(scaled(*in, -1));
  }
  if (isa<BroadcastOp, ReshapeOp, TransposeOp, SliceOp, CumsumOp>(def))
    return ofShapeOp(def, *this);
  if (auto concat = dyn_cast<ConcatOp>(def))
    return throughConcat(concat, *this);
  if (isa<AddOp, SubOp, MulOp>(def))
    return ofSum(def, *this);
  if (auto compare = dyn_cast<CompareOp>(def))
    return ofCompare(compare, *this);
  if (auto select = dyn_cast<SelectOp>(def))
    return ofSelect(select, *this);
  if (isa<AndOp, OrOp, XorOp, NotOp>(def))
    return ofLogic(def, *this);
  if (auto gather = dyn_cast<GatherOp>(def))
    return ofGather(gather, *this);
  if (auto take = dyn_cast<TakeAlongAxisOp>(def))
    return ofGather(take, *this);
  return failure();
}

//===----------------------------------------------------------------------===//
// Canonicalization: integer values that are constants become constants
//===----------------------------------------------------------------------===//

namespace {

/// An integer or i1 kf op whose value the analysis proves constant is a
/// kf.constant (a splat, which later fuses as a scalar).
struct ProvenConstantAsConstant : RewritePattern {
  explicit ProvenConstantAsConstant(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<KFDialect>(op->getDialect()) || op->getNumResults() != 1 ||
        op->getNumRegions() != 0 || isa<ConstantOp>(op))
      return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isInteger())
      return failure();
    AffineValueAnalysis values;
    FailureOr<AffineValue> f = values.valueOf(op->getResult(0));
    if (failed(f) || !f->isConstant())
      return failure();
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    APInt value(width, f->offset, /*isSigned=*/width > 1);
    rewriter.replaceOpWithNewOp<ConstantOp>(
        op, type, DenseElementsAttr::get(type, value));
    return success();
  }
};

} // namespace

void KFDialect::getCanonicalizationPatterns(RewritePatternSet &patterns) const {
  patterns.add<ProvenConstantAsConstant>(getContext());
  populatePiecewisePatterns(patterns);
}
