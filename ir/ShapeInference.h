//===- ShapeInference.h - shape rules of the kf ops -------------*- C++ -*-===//
//
// One implementation of every op's shape rule, used by the op verifiers, the
// C++ frontend (which reports errors at the call that caused them) and
// kf-specialize (which recomputes result shapes once symbols are bound).
//
// A dim is a size >= 0, the unknown dim `kUnknown` (MLIR's `?`, compatible
// with anything), or a named symbol: any other negative value. Two symbols
// match only if they are the same symbol. The frontend gives each symbol
// name its own negative id, so `M` against `N` is caught before any call.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_IR_SHAPEINFERENCE_H
#define KFUSE_IR_SHAPEINFERENCE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "mlir/Support/LLVM.h"
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace kfuse::kf::shapes {

using Shape = llvm::SmallVector<int64_t, 4>;

/// MLIR's ShapedType::kDynamic: a dim whose size is not known yet.
constexpr int64_t kUnknown = INT64_MIN;

inline bool isSymbolic(int64_t dim) { return dim < 0; }
inline bool dimsMatch(int64_t a, int64_t b) {
  return a == b || a == kUnknown || b == kUnknown;
}

/// Collects the first shape error and formats dims for it.
class ShapeDiag {
public:
  using DimNamer = std::function<std::string(int64_t)>;
  ShapeDiag() = default;
  explicit ShapeDiag(DimNamer namer) : namer(std::move(namer)) {}

  mlir::LogicalResult fail(const llvm::Twine &message);
  /// "64x128", with symbols by name ("Mx128") and unknown dims as "?".
  std::string str(llvm::ArrayRef<int64_t> shape) const;
  std::string dim(int64_t d) const;
  const std::string &message() const { return error; }

private:
  DimNamer namer;
  std::string error;
};

/// NumPy broadcasting of two shapes (right-aligned; 1 stretches).
mlir::FailureOr<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                       llvm::ArrayRef<int64_t> b,
                                       ShapeDiag &diag);
/// Can `from` be broadcast to exactly `to`?
mlir::LogicalResult checkBroadcastTo(llvm::ArrayRef<int64_t> from,
                                     llvm::ArrayRef<int64_t> to,
                                     ShapeDiag &diag);
mlir::LogicalResult checkReshape(llvm::ArrayRef<int64_t> from,
                                 llvm::ArrayRef<int64_t> to, ShapeDiag &diag);
mlir::FailureOr<Shape> inferTranspose(llvm::ArrayRef<int64_t> input,
                                      llvm::ArrayRef<int64_t> perm,
                                      ShapeDiag &diag);
mlir::FailureOr<Shape> inferReduce(llvm::ArrayRef<int64_t> input,
                                   llvm::ArrayRef<int64_t> axes, bool keepDims,
                                   ShapeDiag &diag);
/// With `kChunk` (split-K partial sums), the number of K chunks leads.
mlir::FailureOr<Shape> inferMatmul(llvm::ArrayRef<int64_t> a,
                                   llvm::ArrayRef<int64_t> b, bool transposeA,
                                   bool transposeB, ShapeDiag &diag,
                                   std::optional<int64_t> kChunk = {});
mlir::LogicalResult checkAxis(int64_t rank, int64_t axis, ShapeDiag &diag);

struct AttentionShapes {
  llvm::ArrayRef<int64_t> q, k, v;
  std::optional<llvm::ArrayRef<int64_t>> mask, bias;
};
mlir::FailureOr<Shape> inferAttention(const AttentionShapes &shapes,
                                      ShapeDiag &diag);

/// A kf.slice limit meaning "to the end of the dim", the one limit a
/// symbolic dim takes (with start 0 and step 1: the dim kept whole).
constexpr int64_t kSliceToEnd = INT64_MAX;

/// kf.slice: per dim 0 <= start <= limit <= dim and step >= 1; a sliced
/// dim must be known.
mlir::FailureOr<Shape> inferSlice(llvm::ArrayRef<int64_t> input,
                                  llvm::ArrayRef<int64_t> starts,
                                  llvm::ArrayRef<int64_t> limits,
                                  llvm::ArrayRef<int64_t> steps,
                                  ShapeDiag &diag);
mlir::FailureOr<Shape>
inferConcat(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs, int64_t axis,
            ShapeDiag &diag);
mlir::FailureOr<Shape> inferPad(llvm::ArrayRef<int64_t> input,
                                llvm::ArrayRef<int64_t> low,
                                llvm::ArrayRef<int64_t> high, ShapeDiag &diag);
/// kf.gather (NumPy's take along `axis`).
mlir::FailureOr<Shape> inferGather(llvm::ArrayRef<int64_t> input,
                                   llvm::ArrayRef<int64_t> indices,
                                   int64_t axis, ShapeDiag &diag);
/// kf.index_add (gather's transpose): updates pre + indices + post into
/// pre + [size] + post.
mlir::FailureOr<Shape> inferIndexAdd(llvm::ArrayRef<int64_t> updates,
                                     llvm::ArrayRef<int64_t> indices,
                                     int64_t axis, int64_t size,
                                     ShapeDiag &diag);
mlir::FailureOr<Shape> inferTakeAlongAxis(llvm::ArrayRef<int64_t> input,
                                          llvm::ArrayRef<int64_t> indices,
                                          int64_t axis, ShapeDiag &diag);

/// Elements in `shape`, or nullopt if a dim is symbolic or the count
/// overflows int64.
std::optional<int64_t> elementCount(llvm::ArrayRef<int64_t> shape);

} // namespace kfuse::kf::shapes

#endif // KFUSE_IR_SHAPEINFERENCE_H
