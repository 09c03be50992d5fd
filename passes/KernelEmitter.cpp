//===- KernelEmitter.cpp - scalar code for kf ops inside a gpu.func -------===//

#include "passes/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;

KernelEmitter::KernelEmitter(KernelOp kernel, gpu::GPUFuncOp func)
    : kernelOp(kernel), func(func), b(func.getContext()),
      location(kernel.getLoc()) {
  b.setInsertionPointToStart(&func.getBody().front());
}

Type KernelEmitter::computeType(Type dtype) {
  if (isa<FloatType>(dtype))
    return Float32Type::get(dtype.getContext());
  return dtype;
}

Value KernelEmitter::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, location, value);
}

Value KernelEmitter::f32(double value) {
  return arith::ConstantOp::create(b, location, b.getF32FloatAttr(value));
}

SmallVector<Value> KernelEmitter::delinearize(Value linear,
                                              ArrayRef<int64_t> shape) {
  SmallVector<Value> out(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      out[d] = linear;
      break;
    }
    Value size = index(shape[d]);
    out[d] = arith::RemUIOp::create(b, location, linear, size);
    linear = arith::DivUIOp::create(b, location, linear, size);
  }
  return out;
}

Value KernelEmitter::linearize(ValueRange idx, ArrayRef<int64_t> shape) {
  Value linear = index(0);
  for (auto [i, v] : llvm::enumerate(idx)) {
    linear = arith::MulIOp::create(b, location, linear, index(shape[i]));
    linear = arith::AddIOp::create(b, location, linear, v);
  }
  return linear;
}

void KernelEmitter::forEachItem(int64_t items,
                                function_ref<LogicalResult(Value)> body,
                                LogicalResult &status) {
  Value tid = gpu::ThreadIdOp::create(b, location, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, location, gpu::Dimension::x);
  Value bdim = gpu::BlockDimOp::create(b, location, gpu::Dimension::x);
  Value gdim = gpu::GridDimOp::create(b, location, gpu::Dimension::x);
  Value first = arith::AddIOp::create(
      b, location, arith::MulIOp::create(b, location, bid, bdim), tid);
  Value stride = arith::MulIOp::create(b, location, bdim, gdim);
  auto loop = scf::ForOp::create(b, location, first, index(items), stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  status = body(loop.getInductionVar());
}

SmallVector<Value> KernelEmitter::loop(
    int64_t count, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, location, index(0), index(count),
                                 index(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    // The builder adds an empty scf.yield when there are no loop-carried
    // values; the body's own yield replaces it.
    if (!loop.getBody()->empty())
      loop.getBody()->getTerminator()->erase();
    b.setInsertionPointToEnd(loop.getBody());
    SmallVector<Value> next =
        body(loop.getInductionVar(), loop.getRegionIterArgs());
    scf::YieldOp::create(b, location, next);
  }
  return SmallVector<Value>(loop.getResults());
}

Value KernelEmitter::load(Value memref, ValueRange idx) {
  Value v = memref::LoadOp::create(b, location, memref, idx);
  Type dtype = cast<MemRefType>(memref.getType()).getElementType();
  if (isa<FloatType>(dtype) && !dtype.isF32())
    v = arith::ExtFOp::create(b, location, b.getF32Type(), v);
  return v;
}

void KernelEmitter::storeResult(unsigned result, ValueRange idx, Value v) {
  Value memref = func.getArgument(kernelOp.getInputs().size() + result);
  Type dtype = cast<MemRefType>(memref.getType()).getElementType();
  if (isa<FloatType>(dtype) && !dtype.isF32())
    v = arith::TruncFOp::create(b, location, dtype, v);
  memref::StoreOp::create(b, location, v, memref, idx);
}

FailureOr<Value> KernelEmitter::elementAt(Value tensor, ValueRange idx) {
  auto cached = computed.find(tensor);
  if (cached != computed.end() &&
      llvm::equal(cached->second.first, idx) &&
      cached->second.second.getParentRegion()->isAncestor(
          b.getInsertionBlock()->getParent()))
    return cached->second.second;

  FailureOr<Value> result;
  if (auto arg = dyn_cast<BlockArgument>(tensor)) {
    result = load(func.getArgument(arg.getArgNumber()), idx);
  } else {
    Operation *op = tensor.getDefiningOp();
    auto inType = [&](unsigned i) {
      return cast<RankedTensorType>(op->getOperand(i).getType());
    };
    result =
        TypeSwitch<Operation *, FailureOr<Value>>(op)
            .Case([&](ConstantOp c) { return constantAt(c, idx); })
            .Case([&](BroadcastOp bc) -> FailureOr<Value> {
              ArrayRef<int64_t> in = inType(0).getShape();
              size_t offset = idx.size() - in.size();
              SmallVector<Value> mapped;
              for (auto [d, size] : llvm::enumerate(in))
                mapped.push_back(size == 1 ? index(0) : idx[offset + d]);
              return elementAt(bc.getInput(), mapped);
            })
            .Case([&](TransposeOp t) -> FailureOr<Value> {
              SmallVector<Value> mapped(idx.size());
              for (auto [d, p] : llvm::enumerate(t.getPerm()))
                mapped[p] = idx[d];
              return elementAt(t.getInput(), mapped);
            })
            .Case([&](ReshapeOp r) -> FailureOr<Value> {
              Value linear = linearize(idx, r.getType().getShape());
              return elementAt(r.getInput(),
                               delinearize(linear, inType(0).getShape()));
            })
            .Case([&](IotaOp iota) -> FailureOr<Value> {
              Value i = arith::IndexCastOp::create(b, location, b.getI64Type(),
                                                   idx[iota.getDim()]);
              Type dtype = computeType(iota.getType().getElementType());
              if (isa<FloatType>(dtype))
                return Value(arith::SIToFPOp::create(b, location, dtype, i));
              return Value(arith::TruncIOp::create(b, location, dtype, i));
            })
            .Default([&](Operation *op) -> FailureOr<Value> {
              if (!op->hasTrait<OpTrait::kf::Elementwise>())
                return op->emitOpError("cannot be computed element by "
                                       "element inside a kernel");
              SmallVector<Value> operands;
              for (Value operand : op->getOperands()) {
                FailureOr<Value> v = elementAt(operand, idx);
                if (failed(v))
                  return failure();
                operands.push_back(*v);
              }
              return scalarOp(op, operands);
            });
  }
  if (succeeded(result))
    computed[tensor] = {SmallVector<Value, 4>(idx.begin(), idx.end()),
                        *result};
  return result;
}

FailureOr<Value> KernelEmitter::constantAt(ConstantOp op, ValueRange idx) {
  auto attr = cast<DenseElementsAttr>(op.getValue());
  Type dtype = attr.getElementType();
  if (!attr.isSplat())
    return op.emitOpError("a constant that is not a splat cannot be used "
                          "inside a kernel yet");
  if (isa<FloatType>(dtype))
    return f32(attr.getSplatValue<APFloat>().convertToDouble());
  APInt value = attr.getSplatValue<APInt>();
  return Value(arith::ConstantOp::create(
      b, location, b.getIntegerAttr(dtype, value.getSExtValue())));
}

/// dtype -> dtype conversion of a computed value (f32, i32 or i1), with the
/// rounding the reference evaluator gives a cast.
Value KernelEmitter::castScalar(Value v, Type from, Type to) {
  if (from == to)
    return v;
  Location l = location;
  if (to.isInteger(1)) {
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, v, f32(0));
    Value zero = arith::ConstantOp::create(b, l, b.getIntegerAttr(from, 0));
    return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, v, zero);
  }
  if (isa<FloatType>(to)) {
    if (from.isInteger(1))
      v = arith::UIToFPOp::create(b, l, b.getF32Type(), v);
    else if (from.isInteger(32))
      v = arith::SIToFPOp::create(b, l, b.getF32Type(), v);
    // Round to the narrower format and widen again: the value a stored
    // bf16/f16 would hold.
    if (!to.isF32())
      v = arith::ExtFOp::create(b, l, b.getF32Type(),
                                arith::TruncFOp::create(b, l, to, v)
                                    .getResult());
    return v;
  }
  // To i32.
  if (from.isInteger(1))
    return arith::ExtUIOp::create(b, l, to, v);
  // Float to i32 truncates and saturates; NaN gives 0.
  Value isNaN = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
  Value clamped = arith::MinimumFOp::create(
      b, l, arith::MaximumFOp::create(b, l, v, f32(-2147483648.0)),
      f32(2147483520.0));
  Value i = arith::FPToSIOp::create(b, l, to, clamped);
  auto i32 = [&](int64_t c) {
    return arith::ConstantOp::create(b, l, b.getIntegerAttr(to, c));
  };
  Value tooBig = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, v,
                                       f32(2147483648.0));
  i = arith::SelectOp::create(b, l, tooBig, i32(2147483647), i);
  return arith::SelectOp::create(b, l, isNaN, i32(0), i);
}

static arith::CmpFPredicate floatPredicate(ComparePredicate p) {
  switch (p) {
  case ComparePredicate::eq:
    return arith::CmpFPredicate::OEQ;
  case ComparePredicate::ne:
    return arith::CmpFPredicate::UNE;
  case ComparePredicate::lt:
    return arith::CmpFPredicate::OLT;
  case ComparePredicate::le:
    return arith::CmpFPredicate::OLE;
  case ComparePredicate::gt:
    return arith::CmpFPredicate::OGT;
  case ComparePredicate::ge:
    return arith::CmpFPredicate::OGE;
  }
  return arith::CmpFPredicate::OEQ;
}

static arith::CmpIPredicate intPredicate(ComparePredicate p) {
  switch (p) {
  case ComparePredicate::eq:
    return arith::CmpIPredicate::eq;
  case ComparePredicate::ne:
    return arith::CmpIPredicate::ne;
  case ComparePredicate::lt:
    return arith::CmpIPredicate::slt;
  case ComparePredicate::le:
    return arith::CmpIPredicate::sle;
  case ComparePredicate::gt:
    return arith::CmpIPredicate::sgt;
  case ComparePredicate::ge:
    return arith::CmpIPredicate::sge;
  }
  return arith::CmpIPredicate::eq;
}

FailureOr<Value> KernelEmitter::scalarOp(Operation *op, ValueRange x) {
  Location l = location;
  Type dtype = cast<RankedTensorType>(op->getOperand(0).getType())
                   .getElementType();
  bool isFloat = isa<FloatType>(dtype);
  Type type = computeType(dtype);
  auto zero = [&]() -> Value {
    return isFloat ? f32(0)
                   : Value(arith::ConstantOp::create(
                         b, l, b.getIntegerAttr(type, 0)));
  };
  auto sigmoid = [&](Value v) -> Value {
    Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, v));
    return arith::DivFOp::create(b, l, f32(1),
                                 arith::AddFOp::create(b, l, f32(1), e));
  };
  return TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](NegOp) -> Value {
        return isFloat ? Value(arith::NegFOp::create(b, l, x[0]))
                       : Value(arith::SubIOp::create(b, l, zero(), x[0]));
      })
      .Case([&](AbsOp) -> Value {
        return isFloat ? Value(math::AbsFOp::create(b, l, x[0]))
                       : Value(math::AbsIOp::create(b, l, x[0]));
      })
      .Case([&](ReluOp) -> Value {
        return isFloat ? Value(arith::MaximumFOp::create(b, l, x[0], zero()))
                       : Value(arith::MaxSIOp::create(b, l, x[0], zero()));
      })
      .Case([&](ExpOp) -> Value { return math::ExpOp::create(b, l, x[0]); })
      .Case([&](LogOp) -> Value { return math::LogOp::create(b, l, x[0]); })
      .Case([&](SqrtOp) -> Value { return math::SqrtOp::create(b, l, x[0]); })
      .Case([&](RsqrtOp) -> Value {
        return math::RsqrtOp::create(b, l, x[0]);
      })
      .Case([&](SinOp) -> Value { return math::SinOp::create(b, l, x[0]); })
      .Case([&](CosOp) -> Value { return math::CosOp::create(b, l, x[0]); })
      .Case([&](TanhOp) -> Value { return math::TanhOp::create(b, l, x[0]); })
      .Case([&](ErfOp) -> Value { return math::ErfOp::create(b, l, x[0]); })
      .Case([&](SigmoidOp) -> Value { return sigmoid(x[0]); })
      .Case([&](SiluOp) -> Value {
        return arith::MulFOp::create(b, l, x[0], sigmoid(x[0]));
      })
      .Case([&](GeluOp) -> Value {
        Value scaled = arith::MulFOp::create(b, l, x[0], f32(M_SQRT1_2));
        Value phi = arith::MulFOp::create(
            b, l, f32(0.5),
            arith::AddFOp::create(b, l, f32(1),
                                  math::ErfOp::create(b, l, scaled)));
        return arith::MulFOp::create(b, l, x[0], phi);
      })
      .Case([&](ReciprocalOp) -> Value {
        return arith::DivFOp::create(b, l, f32(1), x[0]);
      })
      .Case([&](AddOp) -> Value {
        return isFloat ? Value(arith::AddFOp::create(b, l, x[0], x[1]))
                       : Value(arith::AddIOp::create(b, l, x[0], x[1]));
      })
      .Case([&](SubOp) -> Value {
        return isFloat ? Value(arith::SubFOp::create(b, l, x[0], x[1]))
                       : Value(arith::SubIOp::create(b, l, x[0], x[1]));
      })
      .Case([&](MulOp) -> Value {
        return isFloat ? Value(arith::MulFOp::create(b, l, x[0], x[1]))
                       : Value(arith::MulIOp::create(b, l, x[0], x[1]));
      })
      .Case([&](DivOp) -> Value {
        if (isFloat)
          return arith::DivFOp::create(b, l, x[0], x[1]);
        // i32: truncated, and x / 0 = 0 (division by zero is undefined on
        // the GPU, so divide by 1 and select).
        Value isZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                             x[1], zero());
        Value one = arith::ConstantOp::create(b, l, b.getIntegerAttr(type, 1));
        Value safe = arith::SelectOp::create(b, l, isZero, one, x[1]);
        Value q = arith::DivSIOp::create(b, l, x[0], safe);
        return arith::SelectOp::create(b, l, isZero, zero(), q);
      })
      .Case([&](MaxOp) -> Value {
        return isFloat ? Value(arith::MaximumFOp::create(b, l, x[0], x[1]))
                       : Value(arith::MaxSIOp::create(b, l, x[0], x[1]));
      })
      .Case([&](MinOp) -> Value {
        return isFloat ? Value(arith::MinimumFOp::create(b, l, x[0], x[1]))
                       : Value(arith::MinSIOp::create(b, l, x[0], x[1]));
      })
      .Case([&](PowOp) -> Value {
        return math::PowFOp::create(b, l, x[0], x[1]);
      })
      .Case([&](CompareOp c) -> Value {
        if (isFloat)
          return arith::CmpFOp::create(b, l, floatPredicate(c.getPredicate()),
                                       x[0], x[1]);
        return arith::CmpIOp::create(b, l, intPredicate(c.getPredicate()),
                                     x[0], x[1]);
      })
      .Case([&](SelectOp) -> Value {
        return arith::SelectOp::create(b, l, x[0], x[1], x[2]);
      })
      .Case([&](CastOp c) -> Value {
        return castScalar(x[0], dtype, c.getType().getElementType());
      })
      .Default([](Operation *op) -> FailureOr<Value> {
        return op->emitOpError("has no scalar lowering");
      });
}
