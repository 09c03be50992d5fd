//===- AxisOps.cpp - verifiers of the ops along one axis ------------------===//
//
// kf.arg_reduce (argmax/argmin) and kf.cumsum: each result element depends
// on a whole line of the input along one axis, so they are roots of
// kernels of their own (one thread a line), fed by fused producers.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "ir/ShapeInference.h"
#include "ir/VerifierSupport.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;
namespace shapes = kfuse::kf::shapes;

/// Floats and i32: the dtypes a line's values are compared or summed in.
static LogicalResult verifyLineDtype(Operation *op, StringRef what,
                                     RankedTensorType in) {
  Type dtype = in.getElementType();
  if (isFloatDtype(dtype) || dtype.isInteger(32))
    return success();
  return op->emitOpError() << what << " takes floats or i32, got "
                           << in;
}

LogicalResult ArgReduceOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (getKind() != ReduceKind::max && getKind() != ReduceKind::min)
    return emitOpError() << "kind must be max or min, got "
                         << stringifyReduceKind(getKind());
  if (failed(verifyLineDtype(*this, "arg_reduce", in)) ||
      failed(verifyDtype(*this, "result", out.getElementType(),
                         IntegerType::get(getContext(), 64))))
    return failure();
  auto axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is out of range for " << in;
  if (in.getShape()[axis] == 0)
    return emitOpError() << "axis " << axis << " of " << in
                         << " is empty: no position to return";
  shapes::ShapeDiag diag;
  FailureOr<shapes::Shape> shape =
      shapes::inferReduce(in.getShape(), {axis}, getKeepDims(), diag);
  if (failed(shape))
    return emitOpError() << diag.message();
  return verifyResultShape(*this, *shape, out);
}

LogicalResult CumsumOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (failed(verifyLineDtype(*this, "cumsum", in)) ||
      failed(verifyDtype(*this, "result", out.getElementType(),
                         in.getElementType())))
    return failure();
  auto axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is out of range for " << in;
  return verifyResultShape(*this, shapes::Shape(in.getShape()), out);
}
