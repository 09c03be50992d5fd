//===- ScalarOps.cpp - scalar code of kf's elementwise ops ----------------===//
//
// The KernelEmitter's scalar half: an elementwise op of computed operands
// (f32, i32, i64 or i1) as arith and math ops, with the reference
// evaluator's semantics: casts that round and saturate as it does, integer
// division and mod by 0, comparisons, the fast math of FastMath.cpp.
//
//===----------------------------------------------------------------------===//

#include "codegen/emitter/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;

/// dtype -> dtype conversion of a computed value (f32, i32, i64 or i1), with the
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
    else if (from.isInteger())
      v = arith::SIToFPOp::create(b, l, b.getF32Type(), v);
    // Round to the narrower format and widen again: the value a stored
    // bf16/f16 would hold.
    if (!to.isF32())
      v = arith::ExtFOp::create(b, l, b.getF32Type(),
                                arith::TruncFOp::create(b, l, to, v)
                                    .getResult());
    return v;
  }
  // To i32 or i64: i1 is 0 or 1, a narrower integer sign-extends, a wider
  // one wraps.
  unsigned bits = to.getIntOrFloatBitWidth();
  if (from.isInteger(1))
    return arith::ExtUIOp::create(b, l, to, v);
  if (from.isInteger())
    return from.getIntOrFloatBitWidth() < bits
               ? Value(arith::ExtSIOp::create(b, l, to, v))
               : Value(arith::TruncIOp::create(b, l, to, v));
  // Float to integer truncates and saturates; NaN gives 0. The upper clamp
  // is the largest f32 below 2^(bits - 1); from 2^(bits - 1) on, the max.
  double limit = std::ldexp(1.0, bits - 1);
  Value isNaN = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
  Value clamped = arith::MinimumFOp::create(
      b, l, arith::MaximumFOp::create(b, l, v, f32(-limit)),
      f32(std::nextafter(float(limit), 0.0f)));
  Value i = arith::FPToSIOp::create(b, l, to, clamped);
  Value tooBig =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, v, f32(limit));
  Value max = arith::ConstantOp::create(
      b, l, b.getIntegerAttr(to, APInt::getSignedMaxValue(bits)));
  i = arith::SelectOp::create(b, l, tooBig, max, i);
  return arith::SelectOp::create(b, l, isNaN, constant(to, 0), i);
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
  Type dtype = cast<RankedTensorType>(op->getOperand(0).getType())
                   .getElementType();
  if (op->getNumOperands() == 1 && !isa<CastOp>(op))
    return unaryScalarOp(op, dtype, x[0]);
  return binaryScalarOp(op, dtype, x);
}

Value KernelEmitter::zeroOf(Type dtype) {
  if (isa<FloatType>(dtype))
    return f32(0);
  return arith::ConstantOp::create(b, location,
                                   b.getIntegerAttr(computeType(dtype), 0));
}

/// An elementwise op of operands `x` whose float and integer forms are one
/// arith op each: `Float` on floats, else `Int`.
template <typename Float, typename Int>
static Value floatOrInt(OpBuilder &b, Location l, bool isFloat, ValueRange x) {
  if constexpr (Float::template hasTrait<OpTrait::OneOperand>())
    return isFloat ? Value(Float::create(b, l, x[0]))
                   : Value(Int::create(b, l, x[0]));
  else
    return isFloat ? Value(Float::create(b, l, x[0], x[1]))
                   : Value(Int::create(b, l, x[0], x[1]));
}

FailureOr<Value> KernelEmitter::unaryScalarOp(Operation *op, Type dtype,
                                              Value x) {
  Location l = location;
  bool isFloat = isa<FloatType>(dtype);
  return TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](NegOp) -> Value {
        if (isFloat)
          return arith::NegFOp::create(b, l, x);
        if (x.getType().isInteger(32))
          return emitNegateI32(b, l, x);
        return arith::SubIOp::create(b, l, zeroOf(dtype), x);
      })
      .Case([&](AbsOp) -> Value {
        // math.absi of i64 has no NVVM lowering: max(x, -x) there.
        if (dtype.isInteger(64))
          return arith::MaxSIOp::create(
              b, l, x, arith::SubIOp::create(b, l, zeroOf(dtype), x));
        return floatOrInt<math::AbsFOp, math::AbsIOp>(b, l, isFloat, x);
      })
      .Case([&](ReluOp) -> Value {
        return isFloat
                   ? Value(arith::MaximumFOp::create(b, l, x, zeroOf(dtype)))
                   : Value(arith::MaxSIOp::create(b, l, x, zeroOf(dtype)));
      })
      .Case([&](ExpOp) -> Value {
        return halfResults ? emitExpForHalfResults(b, l, x)
                           : Value(math::ExpOp::create(b, l, x));
      })
      .Case([&](LogOp) -> Value { return math::LogOp::create(b, l, x); })
      .Case([&](SqrtOp) -> Value { return math::SqrtOp::create(b, l, x); })
      .Case([&](RsqrtOp) -> Value { return math::RsqrtOp::create(b, l, x); })
      .Case(
          [&](SinOp) -> Value { return emitSinCos(b, l, x, /*cosine=*/false); })
      .Case(
          [&](CosOp) -> Value { return emitSinCos(b, l, x, /*cosine=*/true); })
      .Case([&](TanhOp) -> Value { return emitTanh(b, l, x, dtype); })
      .Case([&](ErfOp) -> Value { return math::ErfOp::create(b, l, x); })
      .Case([&](SigmoidOp) -> Value { return emitSigmoid(b, l, x); })
      .Case([&](SiluOp) -> Value {
        return arith::MulFOp::create(b, l, x, emitSigmoid(b, l, x));
      })
      .Case([&](GeluOp) -> Value { return emitGelu(b, l, x, dtype); })
      .Case([&](ReciprocalOp) -> Value {
        return arith::DivFOp::create(b, l, f32(1), x);
      })
      .Case([&](FloorOp) -> Value { return math::FloorOp::create(b, l, x); })
      .Case([&](RoundOp) -> Value {
        return math::RoundEvenOp::create(b, l, x);
      })
      .Case([&](NotOp) -> Value {
        return arith::XOrIOp::create(b, l, x, constant(b.getI1Type(), 1));
      })
      .Default([](Operation *op) -> FailureOr<Value> {
        return op->emitOpError("has no scalar lowering");
      });
}

/// x^2 and x^3 (GELU's tanh form, RMSNorm's x.pow(2)) are products, as in
/// PyTorch: powf of any exponent is some 80 instructions with branches,
/// which in a matmul's epilogue cost 15x the matmul (GPT-2's MLP on the
/// H200). Products round once per multiply, within powf's own 2 ulp; NaN,
/// infinities and signs come out as powf gives them.
Value KernelEmitter::power(Value base, Value exponent) {
  APFloat value(0.0f);
  if (!matchPattern(exponent, m_ConstantFloat(&value)))
    return math::PowFOp::create(b, location, base, exponent);
  bool exact = false;
  llvm::APSInt integer(64, /*isUnsigned=*/false);
  value.convertToInteger(integer, APFloat::rmTowardZero, &exact);
  if (!exact || integer < 1 || integer > 4)
    return math::PowFOp::create(b, location, base, exponent);
  auto times = [&](Value a, Value c) -> Value {
    return arith::MulFOp::create(b, location, a, c);
  };
  switch (integer.getExtValue()) {
  case 1:
    return base;
  case 2:
    return times(base, base);
  case 3:
    return times(times(base, base), base);
  default: {
    Value square = times(base, base);
    return times(square, square);
  }
  }
}

/// lhs mod rhs with the sign of rhs: the remainder of a truncating
/// division, plus rhs where it is nonzero and its sign differs from rhs's.
/// Integers: x mod 0 = 0 (the GPU's remainder by 0 is undefined).
Value KernelEmitter::flooredMod(Type dtype, Value lhs, Value rhs) {
  Location l = location;
  bool isFloat = isa<FloatType>(dtype);
  Value zero = zeroOf(dtype);
  Value byZero, r;
  if (isFloat) {
    r = arith::RemFOp::create(b, l, lhs, rhs);
  } else {
    byZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, rhs, zero);
    Value safe = arith::SelectOp::create(b, l, byZero,
                                         constant(computeType(dtype), 1), rhs);
    r = arith::RemSIOp::create(b, l, lhs, safe);
  }
  auto negative = [&](Value v) -> Value {
    return isFloat ? Value(arith::CmpFOp::create(
                         b, l, arith::CmpFPredicate::OLT, v, zero))
                   : Value(arith::CmpIOp::create(
                         b, l, arith::CmpIPredicate::slt, v, zero));
  };
  Value nonzero =
      isFloat ? Value(arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, r,
                                            zero))
              : Value(arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, r,
                                            zero));
  Value differ = arith::XOrIOp::create(b, l, negative(r), negative(rhs));
  Value adjust = arith::AndIOp::create(b, l, nonzero, differ);
  Value moved = floatOrInt<arith::AddFOp, arith::AddIOp>(b, l, isFloat,
                                                         ValueRange{r, rhs});
  Value result = arith::SelectOp::create(b, l, adjust, moved, r);
  return byZero ? Value(arith::SelectOp::create(b, l, byZero, zero, result))
                : result;
}

/// An i64 equality with an iota's position p < bound <= 2^31 (a one-hot
/// of labels: label == column) is one of i32s: x itself where x < bound,
/// else -1, which no position is. The select is the same for a vector's
/// lanes where x is broadcast, and a lane's compare is one 32-bit ISETP
/// where an i64 one takes two.
Value KernelEmitter::compareIntegers(ComparePredicate predicate, Value lhs,
                                     Value rhs) {
  Location l = location;
  bool equality =
      predicate == ComparePredicate::eq || predicate == ComparePredicate::ne;
  if (equality && !i64Positions.count(rhs))
    std::swap(lhs, rhs);
  auto position = i64Positions.find(rhs);
  if (!equality || position == i64Positions.end())
    return arith::CmpIOp::create(b, l, intPredicate(predicate), lhs, rhs);
  Type i32 = b.getI32Type();
  Value inRange = arith::CmpIOp::create(
      b, l, arith::CmpIPredicate::ult, lhs,
      arith::ConstantOp::create(b, l, b.getI64IntegerAttr(position->second)));
  Value narrowed = arith::SelectOp::create(
      b, l, inRange, arith::TruncIOp::create(b, l, i32, lhs),
      arith::ConstantOp::create(b, l, b.getI32IntegerAttr(-1)));
  return arith::CmpIOp::create(b, l, intPredicate(predicate), narrowed,
                               arith::TruncIOp::create(b, l, i32, rhs));
}

/// A sum, difference or product: `Float` on floats, else `Int`. The graph's
/// float products and sums may fuse into FMAs (one rounding where two
/// were), as nvcc's and Triton's defaults let them: contract.
template <typename Float, typename Int>
static Value contractible(OpBuilder &b, Location l, bool isFloat,
                          ValueRange x) {
  if (isFloat)
    return Float::create(b, l, x[0], x[1],
                         arith::FastMathFlagsAttr::get(
                             b.getContext(), arith::FastMathFlags::contract));
  return Int::create(b, l, x[0], x[1]);
}

FailureOr<Value> KernelEmitter::binaryScalarOp(Operation *op, Type dtype,
                                               ValueRange x) {
  Location l = location;
  bool isFloat = isa<FloatType>(dtype);
  return TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](AddOp) {
        return contractible<arith::AddFOp, arith::AddIOp>(b, l, isFloat, x);
      })
      .Case([&](SubOp) {
        return contractible<arith::SubFOp, arith::SubIOp>(b, l, isFloat, x);
      })
      .Case([&](MulOp) {
        return contractible<arith::MulFOp, arith::MulIOp>(b, l, isFloat, x);
      })
      .Case([&](DivOp) -> Value {
        if (isFloat)
          return arith::DivFOp::create(b, l, x[0], x[1]);
        // i32: truncated, and x / 0 = 0 (division by zero is undefined on
        // the GPU, so divide by 1 and select).
        Value zero = zeroOf(dtype);
        Value isZero =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x[1], zero);
        Value one = arith::ConstantOp::create(
            b, l, b.getIntegerAttr(computeType(dtype), 1));
        Value safe = arith::SelectOp::create(b, l, isZero, one, x[1]);
        Value q = arith::DivSIOp::create(b, l, x[0], safe);
        return arith::SelectOp::create(b, l, isZero, zero, q);
      })
      .Case([&](MaxOp) {
        return floatOrInt<arith::MaximumFOp, arith::MaxSIOp>(b, l, isFloat, x);
      })
      .Case([&](MinOp) {
        return floatOrInt<arith::MinimumFOp, arith::MinSIOp>(b, l, isFloat, x);
      })
      .Case([&](PowOp) { return power(x[0], x[1]); })
      .Case([&](ModOp) { return flooredMod(dtype, x[0], x[1]); })
      .Case([&](AndOp) -> Value { return arith::AndIOp::create(b, l, x[0], x[1]); })
      .Case([&](OrOp) -> Value { return arith::OrIOp::create(b, l, x[0], x[1]); })
      .Case([&](XorOp) -> Value { return arith::XOrIOp::create(b, l, x[0], x[1]); })
      .Case([&](CompareOp c) -> Value {
        if (isFloat)
          return arith::CmpFOp::create(b, l, floatPredicate(c.getPredicate()),
                                       x[0], x[1]);
        return compareIntegers(c.getPredicate(), x[0], x[1]);
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
