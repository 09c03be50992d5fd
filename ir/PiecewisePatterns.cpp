//===- PiecewisePatterns.cpp - sums of pieces as concats, casts sunk ------===//
//
// Canonicalizations of tensors assembled from pieces, as gradients build
// them. The gradient of slicing a value into pieces (q, k and v out of one
// fused projection) pads each piece's gradient back to the whole and sums
// them: zeros added where every piece but one is zero. Written as the
// concatenation it is, the sum is an index map, not arithmetic. A cast of
// views of casts (a bf16 gradient widened to f32, moved into place, and
// rounded back to bf16 for the next matmul) sinks through the views to
// the casts under them, where the round trip folds away: the matmul then
// reads the bf16 values moved into place, not an f32 copy rounded again.
//
//===----------------------------------------------------------------------===//

#include "ir/PiecewisePatterns.h"

#include "ir/KFDialect.h"
#include "ir/VerifierSupport.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

namespace {

/// A zero-padded piece of a sum: `input` placed at [begin, begin + size)
/// along the one padded axis.
struct Piece {
  Value input;
  int64_t begin, size;
};

/// The axis along which `pad` pads with the additive identity, and only
/// that one: -0.0 for floats (x + -0.0 is x for every x, -0.0 included;
/// x + +0.0 turns -0.0 into +0.0), any zero for integers.
std::optional<int64_t> zeroPaddedAxis(PadOp pad) {
  double value = pad.getValue().convertToDouble();
  bool isFloat = isa<FloatType>(tensorOf(pad.getResult()).getElementType());
  if (value != 0.0 || (isFloat && !std::signbit(value)))
    return std::nullopt;
  std::optional<int64_t> axis;
  for (auto [d, low, high] :
       llvm::enumerate(pad.getLow(), pad.getHigh()))
    if (low || high) {
      if (axis)
        return std::nullopt;
      axis = d;
    }
  return axis;
}

/// Collects the zero pads along `axis` that `v` sums (through adds that
/// nothing else reads); false where it sums anything else.
bool collectPieces(Value v, std::optional<int64_t> &axis,
                   SmallVector<Piece> &pieces, bool root) {
  Operation *def = v.getDefiningOp();
  if (auto add = dyn_cast_or_null<AddOp>(def); add && (root || v.hasOneUse()))
    return collectPieces(add.getLhs(), axis, pieces, false) &&
           collectPieces(add.getRhs(), axis, pieces, false);
  auto pad = dyn_cast_or_null<PadOp>(def);
  std::optional<int64_t> padded = pad ? zeroPaddedAxis(pad) : std::nullopt;
  if (!padded || (axis && *axis != *padded))
    return false;
  axis = padded;
  pieces.push_back({pad.getInput(), pad.getLow()[*padded],
                    tensorOf(pad.getInput()).getDimSize(*padded)});
  return true;
}

/// add(pad(a), pad(b), ...) of zero pads of adjacent pieces along one axis
/// -> pad(concat(a, b, ...)), the pad dropped where the pieces cover the
/// axis: each element is its one piece's plus additive identities, exactly
/// (the gradient of slicing pads with -0.0 for that reason).
struct SumOfPadsAsConcat : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> axis;
    SmallVector<Piece> pieces;
    if (!collectPieces(add.getResult(), axis, pieces, true) ||
        pieces.size() < 2)
      return failure();
    llvm::stable_sort(pieces, [](const Piece &a, const Piece &b) {
      return a.begin < b.begin;
    });
    for (size_t i = 1; i < pieces.size(); ++i)
      if (pieces[i].begin != pieces[i - 1].begin + pieces[i - 1].size)
        return failure();
    RankedTensorType type = tensorOf(add.getResult());
    int64_t begin = pieces.front().begin,
            end = pieces.back().begin + pieces.back().size;
    SmallVector<Value> inputs;
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = end - begin;
    for (const Piece &piece : pieces)
      inputs.push_back(piece.input);
    Location loc = add.getLoc();
    Value joined =
        ConcatOp::create(rewriter, loc, type.clone(shape), inputs, *axis);
    if (begin > 0 || end < type.getDimSize(*axis)) {
      SmallVector<int64_t> low(type.getRank(), 0), high(type.getRank(), 0);
      low[*axis] = begin;
      high[*axis] = type.getDimSize(*axis) - end;
      joined = PadOp::create(rewriter, loc, type, joined,
                             rewriter.getDenseI64ArrayAttr(low),
                             rewriter.getDenseI64ArrayAttr(high),
                             rewriter.getF64FloatAttr(-0.0));
    }
    rewriter.replaceOp(add, joined);
    return success();
  }
};

/// Whether every value under `v` through reshapes, transposes and concats
/// is a cast from `dtype` that a cast back to `dtype` undoes exactly. The
/// views under `v` must have one use each (a tree, so that sinking a cast
/// copies each view once, not once a path through a shared one).
bool viewsOfRoundTrip(Value v, Type dtype, bool top = true) {
  Operation *def = v.getDefiningOp();
  if (auto cast = dyn_cast_or_null<CastOp>(def)) {
    Type from = getElementTypeOrSelf(cast.getInput().getType());
    return from == dtype &&
           holdsExactly(getElementTypeOrSelf(cast.getType()), from);
  }
  if (!top && !v.hasOneUse())
    return false;
  if (isa_and_nonnull<ReshapeOp, TransposeOp>(def))
    return viewsOfRoundTrip(def->getOperand(0), dtype, false);
  if (auto concat = dyn_cast_or_null<ConcatOp>(def))
    return llvm::all_of(concat.getInputs(), [&](Value input) {
      return viewsOfRoundTrip(input, dtype, false);
    });
  return false;
}

/// cast(view(x)) -> view(cast(x)) for reshapes, transposes and concats of
/// casts that the outer cast undoes: the new casts fold into the values
/// under them, and the views move those.
struct CastThroughViews : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp cast,
                                PatternRewriter &rewriter) const override {
    Operation *view = cast.getInput().getDefiningOp();
    Type dtype = getElementTypeOrSelf(cast.getType());
    if (!isa_and_nonnull<ReshapeOp, TransposeOp, ConcatOp>(view) ||
        !viewsOfRoundTrip(cast.getInput(), dtype))
      return failure();
    SmallVector<Value> inputs;
    for (Value input : view->getOperands())
      inputs.push_back(CastOp::create(rewriter, cast.getLoc(),
                                      tensorOf(input).clone(dtype), input));
    Operation *moved = rewriter.clone(*view);
    moved->setOperands(inputs);
    moved->getResult(0).setType(cast.getType());
    rewriter.replaceOp(cast, moved->getResults());
    return success();
  }
};

/// concat(a, concat(b, c)) along one axis -> concat(a, b, c) (sums of
/// pads become concats a pair at a time).
struct FlattenNestedConcats : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp concat,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> inputs;
    bool nested = false;
    for (Value input : concat.getInputs()) {
      auto inner = input.getDefiningOp<ConcatOp>();
      if (inner && inner.getAxis() == concat.getAxis() && input.hasOneUse()) {
        llvm::append_range(inputs, inner.getInputs());
        nested = true;
      } else {
        inputs.push_back(input);
      }
    }
    if (!nested)
      return failure();
    rewriter.replaceOpWithNewOp<ConcatOp>(concat, concat.getType(), inputs,
                                          concat.getAxis());
    return success();
  }
};

/// cast(view(x)) -> view(cast(x)) for a reshape or transpose read only by
/// a cast to a narrower float: the values are the same, the view moves
/// narrower elements where a kernel copies it, and the cast can join x's
/// producer (a matmul's f32 result split into heads and rounded to bf16
/// is rounded in the matmul's epilogue, half the bytes written and read).
struct NarrowBeforeViews : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp cast,
                                PatternRewriter &rewriter) const override {
    Operation *view = cast.getInput().getDefiningOp();
    auto from = dyn_cast<FloatType>(getElementTypeOrSelf(cast.getInput()));
    auto to = dyn_cast<FloatType>(getElementTypeOrSelf(cast.getType()));
    if (!isa_and_nonnull<ReshapeOp, TransposeOp>(view) ||
        !cast.getInput().hasOneUse() || !from || !to ||
        to.getWidth() >= from.getWidth())
      return failure();
    Value input = view->getOperand(0);
    Value narrow = CastOp::create(rewriter, cast.getLoc(),
                                  tensorOf(input).clone(to), input);
    Operation *moved = rewriter.clone(*view);
    moved->setOperands(narrow);
    moved->getResult(0).setType(cast.getType());
    rewriter.replaceOp(cast, moved->getResults());
    return success();
  }
};

/// The dtype every leaf under view `v` (reshapes, transposes and concats,
/// each read once) is widened from exactly, by a cast to `dtype`; none if
/// some leaf is not such a cast.
std::optional<Type> widenedUnderViews(Value v, Type dtype, bool top = true) {
  Operation *def = v.getDefiningOp();
  if (auto cast = dyn_cast_or_null<CastOp>(def)) {
    Type from = getElementTypeOrSelf(cast.getInput().getType());
    if (top || from == dtype || !holdsExactly(dtype, from))
      return std::nullopt;
    return from;
  }
  if (!top && !v.hasOneUse())
    return std::nullopt;
  if (isa_and_nonnull<ReshapeOp, TransposeOp>(def))
    return widenedUnderViews(def->getOperand(0), dtype, false);
  auto concat = dyn_cast_or_null<ConcatOp>(def);
  if (!concat)
    return std::nullopt;
  std::optional<Type> from;
  for (Value input : concat.getInputs()) {
    std::optional<Type> leaf = widenedUnderViews(input, dtype, false);
    if (!leaf || (from && *from != *leaf))
      return std::nullopt;
    from = leaf;
  }
  return from;
}

/// `v`'s tree of views rebuilt over the casts' inputs, in dtype `from`.
Value viewsOfNarrow(PatternRewriter &rewriter, Value v, Type from) {
  Operation *def = v.getDefiningOp();
  if (auto cast = dyn_cast<CastOp>(def))
    return cast.getInput();
  SmallVector<Value> inputs;
  for (Value input : def->getOperands())
    inputs.push_back(viewsOfNarrow(rewriter, input, from));
  Operation *moved = rewriter.clone(*def);
  moved->setOperands(inputs);
  moved->getResult(0).setType(tensorOf(v).clone(from));
  return moved->getResult(0);
}

/// view(widen(x)) -> widen(view(x)) for a concat of views of exact
/// widening casts from one dtype (bf16 to f32): the narrow views are the
/// ones the graph often has already, which CSE then shares (dq, dk and dv
/// merged into one [B, S, 3 H D] projection gradient in bf16 for the
/// matmul and in f32 for the bias's column sum: one concat, written once,
/// and a sum over it), and a kernel copying the views moves half the
/// bytes. Concats only: a lone reshape or transpose of a cast is left as
/// the fusion rules expect it (a view of q, k or v).
struct WidenAfterViews : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp concat,
                                PatternRewriter &rewriter) const override {
    Type dtype = getElementTypeOrSelf(concat.getType());
    if (llvm::any_of(concat->getUsers(), [](Operation *user) {
          return isa<ReshapeOp, TransposeOp, ConcatOp>(user);
        }))
      return failure(); // the view above this one rewrites the tree
    std::optional<Type> from = widenedUnderViews(concat.getResult(), dtype);
    if (!from)
      return failure();
    Value narrow = viewsOfNarrow(rewriter, concat.getResult(), *from);
    rewriter.replaceOpWithNewOp<CastOp>(concat, concat.getType(), narrow);
    return success();
  }
};

} // namespace

void kfuse::kf::populatePiecewisePatterns(RewritePatternSet &patterns) {
  patterns.add<SumOfPadsAsConcat, CastThroughViews, NarrowBeforeViews,
               FlattenNestedConcats, WidenAfterViews>(patterns.getContext());
}
