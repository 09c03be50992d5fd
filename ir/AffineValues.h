//===- AffineValues.h - integers as functions of position ------*- C++ -*-===//
//
// Index arithmetic that frontends trace into graphs (positions from
// aranges, shifted, sliced, concatenated, compared) often holds values that
// are an affine function of the element's position, and often a constant
// that the frontend could not see: HuggingFace's packed-sequence detection
// on position ids that are an arange is `diff(arange) != 1`, false
// everywhere, summed, gathered and compared into a mask term that is true
// everywhere. This analysis finds those values; the canonicalizer folds the
// constant ones and attention reads causality from the rest.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_IR_AFFINEVALUES_H
#define KFUSE_IR_AFFINEVALUES_H

#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace kfuse::kf {

/// What an integer or i1 (as 0 and 1) tensor of static shape holds at
/// position i: offset + sum over d of coeffs[d] * i[d]. Coefficients of
/// size-1 dims are 0, so two equal functions have equal fields.
struct AffineValue {
  llvm::SmallVector<int64_t> coeffs;
  int64_t offset = 0;

  bool isConstant() const {
    return llvm::all_of(coeffs, [](int64_t c) { return c == 0; });
  }
  bool operator==(const AffineValue &other) const {
    return coeffs == other.coeffs && offset == other.offset;
  }
  /// this - other, of one shape (no overflow: the analysis bounds both).
  AffineValue minus(const AffineValue &other) const {
    AffineValue d = *this;
    for (auto [c, o] : llvm::zip_equal(d.coeffs, other.coeffs))
      c -= o;
    d.offset -= other.offset;
    return d;
  }
};

/// The affine values of the integer tensors one query reaches, remembered
/// so that a value several ops read is analysed once.
class AffineValueAnalysis {
public:
  /// The affine function `v` holds, or failure if it holds none this
  /// analysis can prove (its ops, a float, a dynamic shape, or values
  /// beyond its dtype's range).
  mlir::FailureOr<AffineValue> valueOf(mlir::Value v);

  /// The smallest and largest value `f` takes over `shape`.
  static std::pair<int64_t, int64_t> range(const AffineValue &f,
                                           llvm::ArrayRef<int64_t> shape);

private:
  mlir::FailureOr<AffineValue> compute(mlir::Value v);
  mlir::FailureOr<AffineValue> checked(mlir::Value v, AffineValue f);

  llvm::DenseMap<mlir::Value, mlir::FailureOr<AffineValue>> known;
  int depth = 0;
};

} // namespace kfuse::kf

#endif // KFUSE_IR_AFFINEVALUES_H
