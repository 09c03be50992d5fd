//===- FastMath.cpp - f32 sine, cosine, sigmoid, tanh and exp2 for kernels ===//
//
// Sine and cosine: libdevice's sinf and cosf each reduce their argument by
// Cody-Waite with two float/int conversions (quarter-rate on sm_90), and the
// Payne-Hanek path for huge arguments sits inline. In memory-bound kernels that
// math is the bottleneck (sin(x)^2 + cos(x)^2 at 2^26 elements ran at 1.16x its
// HBM floor on the H200). Here the reduction rounds with the 1.5 * 2^23
// trick (FMA pipe) and reads the quadrant from the rounded value's low
// bits; a sine and a cosine of the same value share it (LLVM's GVN merges
// the identical reductions). Arguments of 105615 and more, infinities and
// NaN go to libdevice, which keeps its accuracy there.
//
// Sigmoid: 1 / (1 + 2^(-x log2 e)) with the product's rounding error
// carried into a first-order correction of 2^t, one MUFU.EX2 and one
// MUFU.RCP (libdevice's expf and a correctly rounded division cost about
// 18 instructions; a chain of ten elementwise ops with a tanh and a sigmoid
// was issue-bound at 1.22x its HBM floor on the H200). About 5 ulp.
//
// GELU for results rounded to 16 bits: Phi(-|x|) as 2^Q(|x|), Q a
// polynomial, branch-free, one MUFU.EX2: a bf16 GELU no longer makes the
// kernel issue-bound, and its error stays far below the result's
// rounding. Q has degree 7 for f16 results (4.2e-6 relative error on
// [0, 4], against their 2^-12 half ulp) and degree 5 for bf16 ones
// (3.7e-4, against 2^-9).
//
//===----------------------------------------------------------------------===//

#include "codegen/emitter/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;

namespace {

/// Where three float parts of pi/2 still reduce exactly enough (the bound
/// libdevice's fast path uses for the same split).
constexpr float kFastPathBound = 105615.0f;
/// 1.5 * 2^23: adding it rounds a float of magnitude < 2^22 to an integer
/// held in the low mantissa bits.
constexpr float kRoundingMagic = 12582912.0f;

/// pi/2 as three floats, each the rounding of what the previous ones miss
/// (computed exactly by scripts/fit-sincos.py): 72 bits of pi/2, enough for
/// the reduction to stay accurate up to kFastPathBound.
constexpr float kHalfPiHi = 0x1.921fb6p+0f;
constexpr float kHalfPiMid = -0x1.777a5cp-25f;
constexpr float kHalfPiLo = -0x1.ee59dap-50f;

Value f32Constant(OpBuilder &b, Location l, float v) {
  return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
}

class SinCosEmitter {
public:
  SinCosEmitter(OpBuilder &b, Location l) : b(b), l(l) {}

  /// sin(x) or cos(x): the fast path, or libdevice outside its range.
  Value emit(Value x, bool cosine) {
    Value fast = fastPath(x, cosine);
    Value inRange = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT,
                                          math::AbsFOp::create(b, l, x),
                                          f32(kFastPathBound));
    auto slow = scf::IfOp::create(b, l, TypeRange{b.getF32Type()}, inRange,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(slow.thenBlock());
      scf::YieldOp::create(b, l, fast);
      b.setInsertionPointToStart(slow.elseBlock());
      Value exact = cosine ? Value(math::CosOp::create(b, l, x))
                           : Value(math::SinOp::create(b, l, x));
      scf::YieldOp::create(b, l, exact);
    }
    return slow.getResult(0);
  }

private:
  Value f32(float v) { return f32Constant(b, l, v); }
  Value i32(int32_t v) {
    return arith::ConstantOp::create(b, l, b.getI32IntegerAttr(v));
  }
  Value fma(Value a, Value x, Value c) {
    return math::FmaOp::create(b, l, a, x, c);
  }
  /// c0 + r2 (c1 + r2 (c2 + ...)), by Horner's rule.
  Value horner(Value r2, ArrayRef<float> coefficients) {
    Value acc = f32(coefficients.back());
    for (float c : llvm::reverse(coefficients.drop_back()))
      acc = fma(acc, r2, f32(c));
    return acc;
  }

  Value fastPath(Value x, bool cosine) {
    // x = j pi/2 + r, |r| <= pi/4 (a little more where x 2/pi is near a
    // half-integer; the polynomials hold there too).
    Value shifted =
        fma(x, f32(static_cast<float>(M_2_PI)), f32(kRoundingMagic));
    Value j = arith::SubFOp::create(b, l, shifted, f32(kRoundingMagic));
    Value r = fma(j, f32(-kHalfPiHi), x);
    r = fma(j, f32(-kHalfPiMid), r);
    r = fma(j, f32(-kHalfPiLo), r);
    Value r2 = arith::MulFOp::create(b, l, r, r);
    // Near-minimax polynomials for sin r and cos r on |r| <= 1.02 pi/4,
    // fitted by scripts/fit-sincos.py (under 0.9 ulp evaluated in f32).
    Value sinR =
        fma(arith::MulFOp::create(
                b, l,
                horner(r2, {-0.16666653752326965f, 0.008332064375281334f,
                            -0.00019502152281347662f}),
                r2),
            r, r);
    Value cosR =
        fma(horner(r2, {-0.5f, 0.04166664183139801f, -0.001388718606904149f,
                        2.4418292014161125e-05f}),
            r2, f32(1.0f));
    // sin(j pi/2 + r) is sin r, cos r, -sin r, -cos r for j mod 4 = 0..3;
    // cos(x) = sin(x + pi/2).
    Value quadrant = arith::BitcastOp::create(b, l, b.getI32Type(), shifted);
    if (cosine)
      quadrant = arith::AddIOp::create(b, l, quadrant, i32(1));
    Value odd = arith::CmpIOp::create(
        b, l, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, l, quadrant, i32(1)), i32(0));
    Value value = arith::SelectOp::create(b, l, odd, cosR, sinR);
    // Quadrants 2 and 3 flip the sign bit.
    Value sign = arith::ShLIOp::create(
        b, l, arith::AndIOp::create(b, l, quadrant, i32(2)), i32(30));
    Value bits = arith::XOrIOp::create(
        b, l, arith::BitcastOp::create(b, l, b.getI32Type(), value), sign);
    return arith::BitcastOp::create(b, l, b.getF32Type(), bits);
  }

  OpBuilder &b;
  Location l;
};

} // namespace

Value kfuse::kf::emitSinCos(OpBuilder &b, Location l, Value x, bool cosine) {
  return SinCosEmitter(b, l).emit(x, cosine);
}

/// One f32 PTX instruction `op` of x, as inline asm (no side effects).
static Value unaryPtx(OpBuilder &b, Location l, StringRef op, Value x) {
  return LLVM::InlineAsmOp::create(
             b, l, b.getF32Type(), ValueRange{x}, (op + " $0, $1;").str(),
             "=f,f", /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(b.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
      .getResult(0);
}

Value kfuse::kf::emitExp2Approx(OpBuilder &b, Location l, Value x) {
  return unaryPtx(b, l, "ex2.approx.ftz.f32", x);
}

/// libdevice's expf reduces its argument exactly enough for f32 results:
/// nine instructions of the about twenty an element of a cross-entropy
/// backward (a bf16 gradient of exp(x - lse); 1.25x its HBM floor on the
/// H200, where a memory-bound kernel has about 25 to spend). Rounding x log2 e costs up to |x| 2^-24 relative (4e-6 at
/// the edge of the range), and ex2.approx 2^-22: far below a 16-bit
/// result's rounding (2^-9 for bf16, 2^-12 for f16). Without .ftz the
/// subnormal results stay (bf16 has f32's exponent range); +-inf and NaN
/// go through as expf's do.
Value kfuse::kf::emitExpForHalfResults(OpBuilder &b, Location l, Value x) {
  Value t = arith::MulFOp::create(b, l, x, f32Constant(b, l, float(M_LOG2E)));
  return unaryPtx(b, l, "ex2.approx.f32", t);
}

Value kfuse::kf::emitNegateI32(OpBuilder &b, Location l, Value x) {
  return LLVM::InlineAsmOp::create(
             b, l, b.getI32Type(), ValueRange{x},
             "not.b32 $0, $1;\n\tadd.s32 $0, $0, 1;", "=r,r",
             /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(b.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
      .getResult(0);
}

/// log2 e as a float and the float nearest what it misses.
constexpr float kLog2EHi = 0x1.715476p+0f;
constexpr float kLog2ELo = 0x1.4ae0cp-26f;

Value kfuse::kf::emitSigmoid(OpBuilder &b, Location l, Value x) {
  auto f32 = [&](float v) { return f32Constant(b, l, v); };
  // Beyond |x| = 88 the result is 1, or below 2^-126 (flushed to 0); the
  // clamp keeps 2^t finite for the correction. NaN stays NaN.
  Value clamped = arith::MaximumFOp::create(
      b, l, arith::MinimumFOp::create(b, l, x, f32(88.0f)), f32(-88.0f));
  // t + r = -x log2 e to about 2^-48 relative.
  Value t = arith::MulFOp::create(b, l, clamped, f32(-kLog2EHi));
  Value r = math::FmaOp::create(b, l, clamped, f32(-kLog2EHi),
                                arith::NegFOp::create(b, l, t));
  r = math::FmaOp::create(b, l, clamped, f32(-kLog2ELo), r);
  // 2^(t + r) = 2^t (1 + r ln 2) to first order.
  Value power = emitExp2Approx(b, l, t);
  Value e = math::FmaOp::create(
      b, l, power, arith::MulFOp::create(b, l, r, f32(float(M_LN2))), power);
  return unaryPtx(b, l, "rcp.approx.ftz.f32",
                  arith::AddFOp::create(b, l, f32(1.0f), e));
}

/// Q(a) ~ log2 Phi(-a) on [0, 6], a^0 first (scripts/fit-gelu.py 7): 2^Q
/// within 4.2e-6 relative of Phi(-a) on [0, 4]; Q keeps falling past 6,
/// to -132 at 13.
constexpr float kGeluLog2Tail[] = {
    -0x1.ffff62p-1f, -0x1.26b864p+0f,  -0x1.d577aep-2f, -0x1.ba0a8ap-5f,
    0x1.16c986p-7f,  -0x1.e7dda0p-11f, 0x1.025d66p-14f, -0x1.ec89b0p-20f};
/// The same to degree 5 (scripts/fit-gelu.py 5): within 3.7e-4; -137 at
/// 13. Two FMAs fewer an element: the epilogue of a 4096^3 bf16 matmul
/// with bias + GELU on the H200, its time over the plain matmul's (in
/// turns, two runs each): 1.054, 1.054 with degree 7; 1.049, 1.050.
constexpr float kGeluLog2TailBf16[] = {-0x1.0022dap+0f, -0x1.24f75ep+0f,
                                       -0x1.e42204p-2f, -0x1.5ee26ep-5f,
                                       0x1.24c97cp-8f,  -0x1.a6f562p-13f};

Value kfuse::kf::emitGeluForHalfResults(OpBuilder &b, Location l, Value x,
                                        bool bf16) {
  auto f32 = [&](float v) { return f32Constant(b, l, v); };
  // x Phi(x), with Phi(x) = 1 - Phi(-x) for x >= 0 and Phi(-a) = 2^Q(a),
  // a = |x|: Q's FMAs and one MUFU.EX2, where erf by Hastings' rational
  // took a MUFU.RCP as well (the bf16 GELU epilogue of a matmul waits on
  // the MUFU pipe while the tensor cores idle). Past a = 13, 2^Q flushes
  // to 0: the clamp keeps the polynomial in range. As in the reference,
  // -inf gives NaN (-inf x 0) and +inf gives +inf; NaN stays NaN
  // (minimumf propagates it, and NaN >= 0 is false).
  ArrayRef<float> coefficients = bf16 ? ArrayRef<float>(kGeluLog2TailBf16)
                                      : ArrayRef<float>(kGeluLog2Tail);
  Value a = arith::MinimumFOp::create(b, l, math::AbsFOp::create(b, l, x),
                                      f32(13.0f));
  Value q = f32(coefficients.back());
  for (float c : llvm::reverse(coefficients.drop_back()))
    q = math::FmaOp::create(b, l, q, a, f32(c));
  Value tail = emitExp2Approx(b, l, q);
  Value nonNegative =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, x, f32(0.0f));
  Value phi = arith::SelectOp::create(
      b, l, nonNegative, arith::SubFOp::create(b, l, f32(1.0f), tail), tail);
  return arith::MulFOp::create(b, l, x, phi);
}

Value kfuse::kf::emitTanh(OpBuilder &b, Location l, Value x, Type dtype) {
  // tanh.approx.f32 (one MUFU.TANH) is within 2^-10.99 relative: a
  // quarter of a bf16 result's rounding, so bf16 results take it (GELU's
  // tanh form in a matmul epilogue waited on libdevice's tanhf, an ex2
  // and a reciprocal); f16 and f32 results, which it would not round
  // exactly enough, keep libdevice. NaN stays NaN, +-inf gives +-1.
  if (dtype.isBF16())
    return unaryPtx(b, l, "tanh.approx.f32", x);
  return math::TanhOp::create(b, l, x);
}

Value kfuse::kf::emitGelu(OpBuilder &b, Location l, Value x, Type dtype) {
  // (1 + erf(x / sqrt 2)) / 2, as PyTorch computes it: below x = -5.9 it
  // cancels to 0 in f32 where the exact value is under 1e-8 x.
  // erfc(-x / sqrt 2) / 2 is exact there but made the memory-bound
  // gelu_bf16 workload 1.38x its floor instead of 1.10x on an H200. A
  // 16-bit GELU rounds its result to 8 or 11 bits: a cheaper Phi is exact
  // enough there (gelu bf16: 1.10x its HBM floor with libdevice's erff on
  // the H200).
  if (dtype.getIntOrFloatBitWidth() == 16)
    return emitGeluForHalfResults(b, l, x, dtype.isBF16());
  auto f32 = [&](float v) { return f32Constant(b, l, v); };
  Value erf =
      math::ErfOp::create(b, l, arith::MulFOp::create(b, l, x, f32(M_SQRT1_2)));
  Value phi = arith::MulFOp::create(
      b, l, f32(0.5f), arith::AddFOp::create(b, l, f32(1.0f), erf));
  return arith::MulFOp::create(b, l, x, phi);
}
