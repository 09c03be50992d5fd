//===- ElementwiseRules.cpp - vector-Jacobian rules of pointwise ops ------===//
//
// The frontend has already broadcast and promoted every elementwise op's
// operands to the result's shape and dtype (explicit kf.broadcast and
// kf.cast ops, whose own rules sum and cast back), so these rules are
// pointwise products. Derivatives are written with the forward's result
// where that is cheaper (exp, tanh, sigmoid, sqrt, rsqrt, reciprocal).
//
//===----------------------------------------------------------------------===//

#include "autodiff/Rules.h"
#include "ir/KFTraits.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kfuse::autodiff {
namespace {

Tensor zeroWhereFalse(Tensor cond, Tensor g) {
  return where(cond, g, scalarLike(g, 0.0));
}

/// d/dx of a unary op at x with result y, times g.
std::optional<Tensor> unaryVJP(Operation *op, Tensor x, Tensor y, Tensor g) {
  using llvm::numbers::pi;
  return TypeSwitch<Operation *, std::optional<Tensor>>(op)
      .Case([&](kf::NegOp) { return -g; })
      .Case([&](kf::AbsOp) {
        Tensor zero = scalarLike(x, 0.0);
        return where(x > zero, g, zeroWhereFalse(x < zero, -g));
      })
      .Case([&](kf::ReluOp) { return zeroWhereFalse(x > scalarLike(x, 0.0), g); })
      .Case([&](kf::ExpOp) { return g * y; })
      .Case([&](kf::LogOp) { return g / x; })
      .Case([&](kf::SqrtOp) { return g * 0.5 / y; })
      .Case([&](kf::RsqrtOp) { return g * -0.5 * y * y * y; })
      .Case([&](kf::SinOp) { return g * cos(x); })
      .Case([&](kf::CosOp) { return -g * sin(x); })
      .Case([&](kf::TanhOp) { return g * (1.0 - y * y); })
      .Case([&](kf::SigmoidOp) { return g * y * (1.0 - y); })
      .Case([&](kf::ErfOp) { return g * (2.0 / std::sqrt(pi)) * exp(-(x * x)); })
      .Case([&](kf::GeluOp) {
        // Phi(x) + x phi(x), Phi the normal CDF and phi its density.
        Tensor cdf = 0.5 * (1.0 + erf(x * (1.0 / std::sqrt(2.0))));
        Tensor pdf = exp(-0.5 * (x * x)) * (1.0 / std::sqrt(2.0 * pi));
        return g * (cdf + x * pdf);
      })
      .Case([&](kf::SiluOp) {
        Tensor s = sigmoid(x);
        return g * (s * (1.0 + x * (1.0 - s)));
      })
      .Case([&](kf::ReciprocalOp) { return -g * y * y; })
      .Case([&](kf::CastOp) { return g; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The cotangents of a binary op's operands a, b with result y.
std::optional<Cotangents> binaryVJP(Operation *op, Tensor a, Tensor b,
                                    Tensor y, Tensor g) {
  // max/min: the operand chosen takes it all, equal operands half each.
  auto choose = [&](Compare wins) -> Cotangents {
    Tensor half = where(compare(Compare::eq, a, b), g * 0.5, g);
    Tensor zero = scalarLike(g, 0.0);
    Compare loses = wins == Compare::gt ? Compare::lt : Compare::gt;
    return {where(compare(loses, a, b), zero, half),
            where(compare(wins, a, b), zero, half)};
  };
  return TypeSwitch<Operation *, std::optional<Cotangents>>(op)
      .Case([&](kf::AddOp) { return Cotangents{g, g}; })
      .Case([&](kf::SubOp) { return Cotangents{g, -g}; })
      .Case([&](kf::MulOp) { return Cotangents{g * b, g * a}; })
      .Case([&](kf::DivOp) { return Cotangents{g / b, -g * y / b}; })
      .Case([&](kf::MaxOp) { return choose(Compare::gt); })
      .Case([&](kf::MinOp) { return choose(Compare::lt); })
      .Case([&](kf::PowOp) {
        // d/db is y log a; PyTorch's 0 where a = 0 (not 0 * -inf).
        Tensor zero = scalarLike(a, 0.0);
        return Cotangents{g * b * pow(a, b - 1.0),
                          where(compare(Compare::eq, a, zero),
                                scalarLike(g, 0.0), g * y * log(a))};
      })
      .Case([&](kf::ModOp) {
        // a mod b = a - b floor(a / b), floor's derivative 0 almost
        // everywhere.
        return Cotangents{g, -g * floor(a / b)};
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace

std::optional<Cotangents> elementwiseVJP(Operation *op, Tensor g,
                                         const RuleContext &ctx) {
  if (!op->hasTrait<OpTrait::kf::Elementwise>())
    return std::nullopt;
  // Constant almost everywhere, not differentiable, or told to pass
  // nothing back: nothing flows.
  if (isa<kf::FloorOp, kf::RoundOp, kf::CompareOp, kf::NotOp, kf::AndOp,
          kf::OrOp, kf::XorOp, kf::StopGradientOp>(op))
    return Cotangents(op->getNumOperands());
  // Derivatives computed in f32 from 16-bit values (exact widening).
  auto primal = [&](Value v) { return toF32(ctx.primal(v)); };
  Tensor y = primal(op->getResult(0));
  if (op->getNumOperands() == 1) {
    std::optional<Tensor> dx = unaryVJP(op, primal(op->getOperand(0)), y, g);
    if (!dx)
      return std::nullopt;
    return Cotangents{*dx};
  }
  if (auto select = dyn_cast<kf::SelectOp>(op)) {
    Tensor cond = ctx.primal(select.getCond());
    Tensor zero = scalarLike(g, 0.0);
    return Cotangents{Tensor(), where(cond, g, zero), where(cond, zero, g)};
  }
  if (op->getNumOperands() != 2)
    return std::nullopt;
  return binaryVJP(op, primal(op->getOperand(0)), primal(op->getOperand(1)),
                   y, g);
}

} // namespace kfuse::autodiff
