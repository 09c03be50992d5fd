//===- KFDialect.cpp - the kf dialect, its ops and verifiers --------------===//

#include "ir/KFDialect.h"
#include "ir/ShapeInference.h"
#include "ir/VerifierSupport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kfuse::kf;
namespace shapes = kfuse::kf::shapes;
using namespace kfuse::kf::detail;

#include "ir/KFOpsDialect.cpp.inc"
#include "ir/KFOpsEnums.cpp.inc"

void KFDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/KFOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *KFDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

//===----------------------------------------------------------------------===//
// Helpers shared by the verifiers
//===----------------------------------------------------------------------===//

static std::string typeStr(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

LogicalResult kfuse::kf::detail::verifySameOperandsAndResult(Operation *op) {
  static const char *const names[] = {"input", "lhs", "rhs"};
  Type expected = op->getResult(0).getType();
  if (llvm::all_of(op->getOperandTypes(),
                   [&](Type t) { return t == expected; }))
    return success();
  auto diag = op->emitOpError("operands and result must have one shape and "
                              "dtype:");
  for (auto [i, t] : llvm::enumerate(op->getOperandTypes()))
    diag << " " << names[op->getNumOperands() == 1 ? 0 : i + 1] << " is "
         << t << ",";
  return diag << " result is " << expected;
}

LogicalResult kfuse::kf::detail::verifyOperandDtypes(Operation *op,
                                                     bool floatOnly) {
  for (Type t : op->getOperandTypes()) {
    Type dtype = cast<RankedTensorType>(t).getElementType();
    if (isFloatDtype(dtype) ||
        (!floatOnly && (dtype.isInteger(32) || dtype.isInteger(64))))
      continue;
    return op->emitOpError() << "requires "
                             << (floatOnly ? "f32, f16 or bf16"
                                           : "f32, f16, bf16, i32 or i64")
                             << " operands, got " << t;
  }
  return success();
}

LogicalResult kfuse::kf::detail::verifyBoolOperands(Operation *op) {
  for (Type t : op->getOperandTypes())
    if (!cast<RankedTensorType>(t).getElementType().isInteger(1))
      return op->emitOpError() << "requires i1 operands, got " << t;
  return success();
}

//===----------------------------------------------------------------------===//
// Custom assembly: one type for elementwise ops whose types agree
//===----------------------------------------------------------------------===//

/// Parses `T` (every type is T) or `(T0, T1) -> T2` (types that disagree,
/// which only the verifier will reject with a message naming them).
static ParseResult parseElementwiseTypes(OpAsmParser &parser,
                                         MutableArrayRef<Type *> types) {
  if (succeeded(parser.parseOptionalLParen())) {
    for (size_t i = 0; i + 1 < types.size(); ++i)
      if ((i && parser.parseComma()) || parser.parseType(*types[i]))
        return failure();
    return failure(parser.parseRParen() || parser.parseArrow() ||
                   parser.parseType(*types.back()));
  }
  Type type;
  if (parser.parseType(type))
    return failure();
  for (Type *t : types)
    *t = type;
  return success();
}

static void printElementwiseTypes(OpAsmPrinter &printer,
                                  ArrayRef<Type> types) {
  if (llvm::all_equal(types)) {
    printer << types.front();
    return;
  }
  printer << '(';
  llvm::interleaveComma(types.drop_back(), printer);
  printer << ") -> " << types.back();
}

static ParseResult parseElementwiseTypes(OpAsmParser &parser, Type &input,
                                         Type &result) {
  Type *types[] = {&input, &result};
  return parseElementwiseTypes(parser, types);
}
static ParseResult parseElementwiseTypes(OpAsmParser &parser, Type &lhs,
                                         Type &rhs, Type &result) {
  Type *types[] = {&lhs, &rhs, &result};
  return parseElementwiseTypes(parser, types);
}
static void printElementwiseTypes(OpAsmPrinter &printer, Operation *,
                                  Type input, Type result) {
  printElementwiseTypes(printer, {input, result});
}
static void printElementwiseTypes(OpAsmPrinter &printer, Operation *, Type lhs,
                                  Type rhs, Type result) {
  printElementwiseTypes(printer, {lhs, rhs, result});
}

//===----------------------------------------------------------------------===//
// Elementwise ops with their own rules
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::verify() {
  if (getLhs().getType() != getRhs().getType())
    return emitOpError() << "operands must have one shape and dtype: lhs is "
                         << getLhs().getType() << ", rhs is "
                         << getRhs().getType();
  if (tensorOf(getLhs()).getElementType().isInteger(1) &&
      getPredicate() != ComparePredicate::eq &&
      getPredicate() != ComparePredicate::ne)
    return emitOpError() << "i1 operands allow only eq and ne, got "
                         << stringifyComparePredicate(getPredicate());
  if (getResult().getType() != tensorOf(getLhs()).clone(
                                   IntegerType::get(getContext(), 1)))
    return emitOpError() << "result must be i1 of the operands' shape: "
                         << "operands are " << getLhs().getType()
                         << ", result is " << getResult().getType();
  return success();
}

LogicalResult SelectOp::verify() {
  RankedTensorType cond = tensorOf(getCond()), lhs = tensorOf(getOnTrue());
  if (!cond.getElementType().isInteger(1))
    return emitOpError() << "condition must be i1, got " << cond;
  if (getOnTrue().getType() != getOnFalse().getType() ||
      getOnTrue().getType() != getResult().getType() ||
      cond.getShape() != lhs.getShape())
    return emitOpError() << "operands must have one shape (and both "
                            "branches one dtype): cond is "
                         << cond << ", on_true is " << getOnTrue().getType()
                         << ", on_false is " << getOnFalse().getType()
                         << ", result is " << getResult().getType();
  return success();
}

OpFoldResult SelectOp::fold(FoldAdaptor) {
  return getOnTrue() == getOnFalse() ? getOnTrue() : Value();
}

LogicalResult CastOp::verify() {
  if (tensorOf(getInput()).getShape() != tensorOf(getResult()).getShape())
    return emitOpError() << "cast keeps the shape: input is "
                         << getInput().getType() << ", result is "
                         << getResult().getType();
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  // x widened and narrowed back: a bf16 cotangent passed through f32.
  if (auto inner = getInput().getDefiningOp<CastOp>())
    if (inner.getInput().getType() == getResult().getType() &&
        holdsExactly(getElementTypeOrSelf(getInput().getType()),
                     getElementTypeOrSelf(getResult().getType())))
      return inner.getInput();
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult StopGradientOp::fold(FoldAdaptor) { return getInput(); }

LogicalResult IotaOp::verify() {
  RankedTensorType type = tensorOf(getResult());
  shapes::ShapeDiag diag;
  if (failed(shapes::checkAxis(type.getRank(), getDim(), diag)))
    return emitOpError() << diag.message() << " of " << type;
  if (type.getElementType().isInteger(1))
    return emitOpError() << "result must be numeric, got " << type;
  return verifyDimSymbols(*this, getDimSymbols(), type);
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// A splat constant reshaped or broadcast is a splat of the new type.
static OpFoldResult foldSplatTo(Attribute input, Type resultType) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(input);
  auto type = cast<RankedTensorType>(resultType);
  if (!splat || !type.hasStaticShape())
    return {};
  return SplatElementsAttr::get(type, splat.getSplatValue<Attribute>());
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (failed(verifyDtype(*this, "result", out.getElementType(),
                         in.getElementType())))
    return failure();
  shapes::ShapeDiag diag;
  if (failed(shapes::checkBroadcastTo(in.getShape(), out.getShape(), diag)))
    return emitOpError() << diag.message();
  return verifyDimSymbols(*this, getDimSymbols(), out);
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return foldSplatTo(adaptor.getInput(), getType());
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (failed(verifyDtype(*this, "result", out.getElementType(),
                         in.getElementType())))
    return failure();
  shapes::ShapeDiag diag;
  if (failed(shapes::checkReshape(in.getShape(), out.getShape(), diag)))
    return emitOpError() << diag.message();
  return verifyDimSymbols(*this, getDimSymbols(), out);
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    // reshape(reshape(x)) is one reshape of x.
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  return foldSplatTo(adaptor.getInput(), getType());
}

LogicalResult TransposeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (failed(verifyDtype(*this, "result", out.getElementType(),
                         in.getElementType())))
    return failure();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape =
      shapes::inferTranspose(in.getShape(), getPerm(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, out);
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto p) {
    return p.value() == static_cast<int64_t>(p.index());
  });
  if (identity)
    return getInput();
  return foldSplatTo(adaptor.getInput(), getType());
}

//===----------------------------------------------------------------------===//
// Reductions and contractions
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  Type dtype = in.getElementType();
  if (dtype.isInteger(1) || dtype.isInteger(64) ||
      (getKind() == ReduceKind::mean && !isFloatDtype(dtype)))
    return emitOpError() << stringifyReduceKind(getKind())
                         << " does not take " << in;
  if (failed(verifyDtype(*this, "result", out.getElementType(), dtype)))
    return failure();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape =
      shapes::inferReduce(in.getShape(), getAxes(), getKeepDims(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, out);
}

bool kfuse::kf::isReproducedExactly(Operation *op) {
  return isa<ConstantOp, IotaOp, BroadcastOp, ReshapeOp, TransposeOp, SliceOp,
             ConcatOp, PadOp, GatherOp, TakeAlongAxisOp, CastOp, NegOp,
             AbsOp, StopGradientOp>(op);
}

namespace {
/// kf.reduce over dims that all have size 1: each result element is the
/// one input element it reduces (a mean divides by 1), in the same dtype.
struct ReduceOfUnitDimsAsReshape : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> in = tensorOf(op.getInput()).getShape();
    if (!tensorOf(op.getResult()).hasStaticShape())
      return failure(); // a reshape to symbolic dims names them
    if (llvm::any_of(op.getAxes(), [&](int64_t a) { return in[a] != 1; }))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

/// kf.reduce over several trailing dims (all of them: a loss's mean) as a
/// reduction of the last dim of the input viewed as [leading..., product]
/// ([1, product] when every dim is reduced): row kernels reduce a last dim
/// across a block in a tree, where several dims would be summed one
/// element after another by one thread per result, slow and, for a quarter
/// of a million f32 values, 1e-4 off.
struct ReduceOfTrailingDimsAsLastDim : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType in = tensorOf(op.getInput());
    ArrayRef<int64_t> axes = op.getAxes();
    int64_t rank = in.getRank();
    if (axes.size() < 2 || !in.hasStaticShape() ||
        !tensorOf(op.getResult()).hasStaticShape() || in.getNumElements() == 0)
      return failure();
    int64_t first = rank - int64_t(axes.size());
    for (auto [i, axis] : llvm::enumerate(axes))
      if (axis != first + int64_t(i))
        return failure(); // not the trailing dims
    SmallVector<int64_t> rows(in.getShape().take_front(first));
    if (rows.empty())
      rows.push_back(1);
    SmallVector<int64_t> viewShape = rows, reducedShape = rows;
    viewShape.push_back(in.getNumElements() /
                        tensorOf(op.getResult()).getNumElements());
    reducedShape.push_back(1);
    Location loc = op.getLoc();
    Value view = ReshapeOp::create(
        rewriter, loc, in.clone(viewShape), op.getInput(), ArrayAttr());
    Value reduced = ReduceOp::create(
        rewriter, loc, tensorOf(op.getResult()).clone(reducedShape), op.getKind(), view,
        ArrayRef<int64_t>{int64_t(viewShape.size()) - 1}, /*keep_dims=*/true);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), reduced,
                                           ArrayAttr());
    return success();
  }
};
} // namespace

void ReduceOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<ReduceOfUnitDimsAsReshape, ReduceOfTrailingDimsAsLastDim>(
      context);
}

/// Matmul-like ops: float operands of one dtype; the result in that dtype
/// or f32 (the accumulator, not rounded).
static LogicalResult verifyContractionDtypes(Operation *op,
                                             ArrayRef<Value> operands,
                                             RankedTensorType result) {
  Type dtype = tensorOf(operands.front()).getElementType();
  for (Value v : operands)
    if (!isFloatDtype(tensorOf(v).getElementType()) ||
        tensorOf(v).getElementType() != dtype)
      return op->emitOpError()
             << "operands must share one float dtype, got "
             << typeStr(operands.front().getType()) << " and "
             << typeStr(v.getType());
  Type out = result.getElementType();
  if (out != dtype && !out.isF32())
    return op->emitOpError() << "result dtype " << out << " must be " << dtype
                             << " or f32";
  return success();
}

LogicalResult MatmulOp::verify() {
  RankedTensorType a = tensorOf(getA()), b = tensorOf(getB());
  if (failed(verifyContractionDtypes(*this, {getA(), getB()},
                                     tensorOf(getResult()))))
    return failure();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape =
      shapes::inferMatmul(a.getShape(), b.getShape(), getTransposeA(),
                          getTransposeB(), diag, getKChunk());
  if (failed(shape))
    return emitOpError() << diag.message();
  if (getKChunk() && !tensorOf(getResult()).getElementType().isF32())
    return emitOpError() << "split-K partial sums are f32, got "
                         << getResult().getType();
  return verifyResultShape(*this, *shape, tensorOf(getResult()));
}

namespace {
/// A matmul operand that is a transpose of another's last two dims is
/// that other read with the matmul's flag flipped: the template reads
/// either layout from memory, so the transpose's copy (a read and a write
/// of the operand) goes. f32 operands fold only into the K-major layout
/// (A as [M, K], B as [N, K]), the only one TF32 products read; the other
/// would take kf-pad's copy back, or stay on the CUDA cores.
struct TransposedOperandAsFlag : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  static Value swappedLastTwo(Value operand) {
    auto transpose = operand.getDefiningOp<TransposeOp>();
    if (!transpose)
      return {};
    int64_t rank = int64_t(transpose.getPerm().size());
    if (rank < 2)
      return {};
    SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(swap[rank - 2], swap[rank - 1]);
    return transpose.getPerm() == ArrayRef<int64_t>(swap) ? transpose.getInput()
                                                          : Value();
  }

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    bool f32 = tensorOf(op.getA()).getElementType().isF32();
    Value a = swappedLastTwo(op.getA()), b = swappedLastTwo(op.getB());
    // K-major after the fold: A not transposed, B transposed.
    if (f32 && !op.getTransposeA())
      a = {};
    if (f32 && op.getTransposeB())
      b = {};
    if (!a && !b)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      if (a) {
        op.getAMutable().assign(a);
        op.setTransposeA(!op.getTransposeA());
      }
      if (b) {
        op.getBMutable().assign(b);
        op.setTransposeB(!op.getTransposeB());
      }
    });
    return success();
  }
};
} // namespace

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<TransposedOperandAsFlag>(context);
}

LogicalResult SoftmaxOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  if (!isFloatDtype(in.getElementType()))
    return emitOpError() << "requires a float operand, got " << in;
  if (in != getResult().getType())
    return emitOpError() << "result " << getResult().getType()
                         << " must match the input " << in;
  shapes::ShapeDiag diag;
  if (failed(shapes::checkAxis(in.getRank(), getAxis(), diag)))
    return emitOpError() << diag.message() << " of " << in;
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyContractionDtypes(*this, {getQ(), getK(), getV()},
                                     tensorOf(getResult()))))
    return failure();
  if (getMask() && !tensorOf(getMask()).getElementType().isInteger(1))
    return emitOpError() << "mask must be i1, got " << getMask().getType();
  if (getBias() && !isFloatDtype(tensorOf(getBias()).getElementType()))
    return emitOpError() << "bias must be a float tensor, got "
                         << getBias().getType();
  shapes::AttentionShapes in{tensorOf(getQ()).getShape(),
                             tensorOf(getK()).getShape(),
                             tensorOf(getV()).getShape(), std::nullopt,
                             std::nullopt};
  if (getMask())
    in.mask = tensorOf(getMask()).getShape();
  if (getBias())
    in.bias = tensorOf(getBias()).getShape();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape = shapes::inferAttention(in, diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  if (failed(verifyResultShape(*this, *shape, tensorOf(getResult()))))
    return failure();
  if (!getLse())
    return success();
  RankedTensorType lse = tensorOf(getLse());
  if (!lse.getElementType().isF32())
    return emitOpError() << "lse must be f32, got " << lse;
  auto rows = ArrayRef<int64_t>(*shape).drop_back();
  if (lse.getRank() != 3 ||
      !llvm::all_of(llvm::zip(rows, lse.getShape()), [](auto p) {
        return shapes::dimsMatch(std::get<0>(p), std::get<1>(p));
      }))
    return emitOpError() << "lse is " << lse << " but the query rows are "
                         << diag.str(rows);
  return success();
}

/// `value` is `shape` (symbolic dims match any), else an error naming it.
static LogicalResult verifyShapeOf(Operation *op, StringRef name, Value value,
                                   ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> actual = tensorOf(value).getShape();
  if (actual.size() == shape.size() &&
      llvm::all_of(llvm::zip(actual, shape), [](auto p) {
        return shapes::dimsMatch(std::get<0>(p), std::get<1>(p));
      }))
    return success();
  shapes::ShapeDiag diag;
  return op->emitOpError() << name << " is " << value.getType() << " but must be "
                           << diag.str(shape);
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyContractionDtypes(*this, {getQ(), getK(), getV(), getDout()},
                                     tensorOf(getDq()))))
    return failure();
  shapes::AttentionShapes in{tensorOf(getQ()).getShape(),
                             tensorOf(getK()).getShape(),
                             tensorOf(getV()).getShape(), std::nullopt,
                             std::nullopt};
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> out = shapes::inferAttention(in, diag);
  if (failed(out))
    return emitOpError() << diag.message();
  if (failed(verifyShapeOf(*this, "dout", getDout(), *out)))
    return failure();
  auto rows = ArrayRef<int64_t>(*out).drop_back();
  for (auto [name, value] : {std::pair{"lse", getLse()}, {"delta", getDelta()}}) {
    if (!tensorOf(value).getElementType().isF32())
      return emitOpError() << name << " must be f32, got " << value.getType();
    if (failed(verifyShapeOf(*this, name, value, rows)))
      return failure();
  }
  for (auto [name, grad, primal] :
       {std::tuple{"dq", getDq(), getQ()}, {"dk", getDk(), getK()},
        {"dv", getDv(), getV()}}) {
    if (!isFloatDtype(tensorOf(grad).getElementType()))
      return emitOpError() << name << " must be a float tensor, got "
                           << grad.getType();
    if (failed(verifyShapeOf(*this, name, grad, tensorOf(primal).getShape())))
      return failure();
  }
  return success();
}

#define GET_OP_CLASSES
#include "ir/KFOps.cpp.inc"
