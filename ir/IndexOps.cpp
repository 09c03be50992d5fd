//===- IndexOps.cpp - verifiers and folders of the kf indexing ops ---------===//
//
// kf.slice, kf.concat, kf.pad, kf.gather, kf.take_along_axis and
// kf.random: ops whose result element is found by an index map (or, for
// kf.random, computed from its index), so the emitter computes them in the
// loads of whatever kernel reads them.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "ir/ShapeInference.h"
#include "ir/VerifierSupport.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;
namespace shapes = kfuse::kf::shapes;

/// The result dtype is the input's.
static LogicalResult verifyKeepsDtype(Operation *op, Value input) {
  return verifyDtype(op, "result",
                     tensorOf(op->getResult(0)).getElementType(),
                     tensorOf(input).getElementType());
}

LogicalResult SliceOp::verify() {
  if (failed(verifyKeepsDtype(*this, getInput())))
    return failure();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape =
      shapes::inferSlice(tensorOf(getInput()).getShape(), getStarts(),
                         getLimits(), getSteps(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, tensorOf(getResult()));
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  // A slice that keeps every element is its input.
  if (getInput().getType() == getResult().getType() &&
      llvm::all_of(getSteps(), [](int64_t step) { return step == 1; }))
    return getInput();
  // A slice of a slice is one slice: element i of dim d is inner element
  // start + i * step, which is input element
  // innerStart + (start + i * step) * innerStep.
  auto inner = getInput().getDefiningOp<SliceOp>();
  if (!inner)
    return {};
  ArrayRef<int64_t> size = getType().getShape();
  SmallVector<int64_t> starts, limits, steps;
  for (size_t d = 0; d < size.size(); ++d) {
    int64_t start = inner.getStarts()[d] + getStarts()[d] * inner.getSteps()[d];
    int64_t step = inner.getSteps()[d] * getSteps()[d];
    bool whole = getLimits()[d] == shapes::kSliceToEnd &&
                 inner.getLimits()[d] == shapes::kSliceToEnd && start == 0 &&
                 step == 1;
    if (!whole && ShapedType::isDynamic(size[d]))
      return {};
    starts.push_back(start);
    steps.push_back(step);
    limits.push_back(whole      ? shapes::kSliceToEnd
                     : size[d] ? start + (size[d] - 1) * step + 1
                               : start);
  }
  getInputMutable().assign(inner.getInput());
  setStarts(starts);
  setLimits(limits);
  setSteps(steps);
  return getResult();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one operand";
  SmallVector<ArrayRef<int64_t>> inputShapes;
  for (Value input : getInputs()) {
    if (failed(verifyKeepsDtype(*this, input)))
      return failure();
    inputShapes.push_back(tensorOf(input).getShape());
  }
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape =
      shapes::inferConcat(inputShapes, getAxis(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, tensorOf(getResult()));
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

LogicalResult PadOp::verify() {
  if (failed(verifyKeepsDtype(*this, getInput())))
    return failure();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape = shapes::inferPad(
      tensorOf(getInput()).getShape(), getLow(), getHigh(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, tensorOf(getResult()));
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  auto zero = [](int64_t width) { return width == 0; };
  if (llvm::all_of(getLow(), zero) && llvm::all_of(getHigh(), zero))
    return getInput();
  return {};
}

/// Indices of kf.gather and kf.take_along_axis are i32 or i64.
static LogicalResult verifyIndices(Operation *op, Value indices) {
  Type dtype = tensorOf(indices).getElementType();
  if (dtype.isInteger(32) || dtype.isInteger(64))
    return success();
  return op->emitOpError() << "indices must be i32 or i64, got "
                           << indices.getType();
}

LogicalResult GatherOp::verify() {
  if (failed(verifyKeepsDtype(*this, getInput())) ||
      failed(verifyIndices(*this, getIndices())))
    return failure();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape =
      shapes::inferGather(tensorOf(getInput()).getShape(),
                          tensorOf(getIndices()).getShape(), getAxis(), diag);
  if (failed(shape))
    return emitOpError() << diag.message() << " of " << getInput().getType();
  return verifyResultShape(*this, *shape, tensorOf(getResult()));
}

std::array<int64_t, 3> IndexAddOp::getScatterSpace() {
  ArrayRef<int64_t> updates = shapeOf(getUpdates());
  int64_t axis = getAxis(), rank = shapeOf(getIndices()).size();
  std::array<int64_t, 3> space{1, 1, 1};
  for (auto [d, n] : llvm::enumerate(updates))
    space[int64_t(d) < axis ? 0 : int64_t(d) < axis + rank ? 1 : 2] *= n;
  return space;
}

int64_t IndexAddOp::getTileCount(int64_t rows, int64_t columns) {
  auto [pre, count, post] = getScatterSpace();
  return pre * llvm::divideCeil(int64_t(getSize()), rows) *
         llvm::divideCeil(post, columns);
}

LogicalResult IndexAddOp::verify() {
  if (failed(verifyIndices(*this, getIndices())))
    return failure();
  RankedTensorType updates = tensorOf(getUpdates()), result = tensorOf(getResult());
  if (!updates.getElementType().isF32() || !result.getElementType().isF32())
    return emitOpError() << "adds f32 updates into an f32 result (cast "
                            "16-bit ones first), got "
                         << getUpdates().getType() << " -> "
                         << getResult().getType();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape = shapes::inferIndexAdd(
      updates.getShape(), tensorOf(getIndices()).getShape(), getAxis(),
      getSize(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, result);
}

LogicalResult TakeAlongAxisOp::verify() {
  if (failed(verifyKeepsDtype(*this, getInput())) ||
      failed(verifyIndices(*this, getIndices())))
    return failure();
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape = shapes::inferTakeAlongAxis(
      tensorOf(getInput()).getShape(), tensorOf(getIndices()).getShape(),
      getAxis(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, tensorOf(getResult()));
}

LogicalResult RandomOp::verify() {
  RankedTensorType seed = tensorOf(getSeed()), result = tensorOf(getResult());
  if (seed.getRank() != 0 || !seed.getElementType().isInteger(32))
    return emitOpError() << "seed must be a rank-0 i32 tensor, got " << seed;
  if (!isFloatDtype(result.getElementType()))
    return emitOpError() << "result must be f32, f16 or bf16, got " << result;
  if (getStream() < 0 || getStream() > UINT32_MAX)
    return emitOpError() << "stream " << getStream()
                         << " must be in [0, 2^32)";
  return verifyDimSymbols(*this, getDimSymbols(), result);
}
