//===- KernelEmitter.h - scalar code for kf ops inside a gpu.func -*- C++ -*-===//
//
// Shared by the kernel templates of kf-lower-to-gpu. A template loops over
// its work items; whenever it needs the element of a tensor of the fused
// body at some index, it asks `elementAt`, which loads kernel inputs and
// recomputes pointwise producers (elementwise math, casts, broadcasts,
// transposes, reshapes, iota, constants) in registers. This is how a fused
// elementwise prologue or body costs no memory traffic.
//
// Kernel arguments are flat memrefs (one bare pointer each): an element is
// addressed by its row-major linear index. An ElementIndex carries that
// linear index and, when a template knows it, the row and column of a
// [rows..., N] space, so that broadcasts of row scalars ([rows..., 1]) and
// row vectors ([N]) map to the same SSA index every time: the element is
// then found in `computed` instead of being loaded or recomputed again.
//
// Values are computed in f32 for every float dtype, i32, i64 or i1; they are
// widened on load and rounded once on store.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_KERNELEMITTER_H
#define KFUSE_CODEGEN_KERNELEMITTER_H

#include "ir/KFDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <array>
#include <optional>
#include <tuple>

namespace kfuse::kf {

class KernelEmitter;

/// The index of one element of a tensor of shape `shape`.
class ElementIndex {
public:
  static ElementIndex linear(llvm::ArrayRef<int64_t> shape, mlir::Value linear);
  static ElementIndex multi(llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<mlir::Value> index);
  /// An element of a [rows..., rowLength] space known by row and column.
  static ElementIndex rowElement(llvm::ArrayRef<int64_t> shape,
                                 mlir::Value linear, mlir::Value row,
                                 mlir::Value column);

  llvm::ArrayRef<int64_t> shape() const { return dims; }
  mlir::Value getLinear(KernelEmitter &e);
  llvm::ArrayRef<mlir::Value> getMulti(KernelEmitter &e);
  mlir::Value row() const { return rowIndex; }
  mlir::Value column() const { return columnIndex; }

private:
  llvm::SmallVector<int64_t, 4> dims;
  mlir::Value linearIndex, rowIndex, columnIndex;
  llvm::SmallVector<mlir::Value, 4> multiIndex;
};

/// Where an element of a kernel buffer lies: its row-major linear index
/// and, where the template knows them, its row (over all leading dims) and
/// column. Buffers whose rows kf-pad padded are addressed by
/// row * stride + column; without a row and column the linear index is
/// divided by the row length to find them.
struct BufferIndex {
  BufferIndex(mlir::Value linear) : linear(linear) {}
  BufferIndex(mlir::Value linear, mlir::Value row, mlir::Value column)
      : linear(linear), row(row), column(column) {}
  mlir::Value linear, row, column;
};

class KernelEmitter {
public:
  /// `func` is the gpu.func being built: its arguments are one flat memref
  /// per kernel input, then one per kernel result (then, for a
  /// warp-specialised matmul, its TMA tensor maps).
  KernelEmitter(KernelOp kernel, mlir::gpu::GPUFuncOp func);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location loc() const { return location; }
  KernelOp kernel() const { return kernelOp; }
  mlir::gpu::GPUFuncOp gpuFunc() const { return func; }

  /// The element of `tensor` (a value of the kernel body) at `index`.
  mlir::FailureOr<mlir::Value> elementAt(mlir::Value tensor,
                                         ElementIndex index);
  /// The elements of `tensor` at `lanes`: consecutive linear indices, the
  /// first (at `first`) a multiple of their count. Index maps that keep
  /// the lanes consecutive in their operand read them as one vector
  /// access (VectorReads.cpp); the rest are computed lane by lane.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  vectorAt(mlir::Value tensor, ElementIndex first,
           llvm::ArrayRef<mlir::Value> lanes);
  /// `first`, first + 1, ..., first + count - 1.
  llvm::SmallVector<mlir::Value> laneIndices(mlir::Value first, int64_t count);
  /// Records `value` as the element of `tensor` at linear index `linear`
  /// (templates do this for reductions they computed).
  void setElement(mlir::Value tensor, mlir::Value linear, mlir::Value value);
  /// The row max and sum of exponentials of a softmax, computed by a row
  /// template: elementAt then gives softmax elements from them. A sum of
  /// 2^(x log2 e + shift) (`shift` given) carries the rounding of
  /// shift = -max log2 e as a common factor, which cancels only if the
  /// elements are computed the same way, so they are.
  void setSoftmaxStats(SoftmaxOp op, mlir::Value max, mlir::Value sum,
                       mlir::Value shift = {}) {
    softmaxStats[op] = {max, sum, shift};
  }
  /// Stores `value` (in compute type) into result `result` at `at`.
  void storeResult(unsigned result, BufferIndex at, mlir::Value value);
  /// Adds f32 `value` into f32 result `result` at `at` with an atomic add
  /// (adds from other threads come in any order).
  void addToResult(unsigned result, BufferIndex at, mlir::Value value);
  /// `lanes` consecutive elements (at most 16 bytes) of `memref` (a gpu.func
  /// argument or a shared-memory view) from element `offset`, as one
  /// vector of its dtype.
  mlir::Value loadRaw(mlir::Value memref, mlir::Value offset, int64_t lanes);
  /// The lanes of `vector`, each in its compute type.
  llvm::SmallVector<mlir::Value> computeLanes(mlir::Value vector);
  /// Loads `linears.size()` consecutive elements of kernel input `arg`,
  /// starting at `first` (16-byte aligned), as one vector access, and
  /// records each lane as the element at its linear index.
  void loadLanes(mlir::BlockArgument arg, BufferIndex first,
                 llvm::ArrayRef<mlir::Value> linears);
  /// Loads `lanes` consecutive elements of kernel input `arg` from `first`
  /// (16-byte aligned) as one vector access, in compute type.
  llvm::SmallVector<mlir::Value> loadVector(mlir::BlockArgument arg,
                                            BufferIndex first, int64_t lanes);
  /// Stores consecutive `values` of result `result` from `first` on, as
  /// one vector access; with `evictFirst` marked as streamed past L2
  /// (`st.global.cs`, for whole 4-byte words).
  void storeLanes(unsigned result, BufferIndex first,
                  llvm::ArrayRef<mlir::Value> values, bool evictFirst = false);
  /// The element offset of `at` in gpu.func argument `argNumber`.
  mlir::Value offsetOf(unsigned argNumber, const BufferIndex &at);
  /// The row stride kf-pad gave gpu.func argument `argNumber`, or 0.
  int64_t paddedStride(unsigned argNumber) const {
    return padding[argNumber].stride;
  }

  /// for item in [first, items) step stride: body(item); first = global
  /// thread id, stride = all threads (or block id and grid size when
  /// `perBlock`).
  mlir::LogicalResult
  forEachItem(int64_t items, bool perBlock,
              llvm::function_ref<mlir::LogicalResult(mlir::Value)> body);
  /// scf.for over [0, count) with loop-carried `init`; body returns the
  /// next values.
  mlir::SmallVector<mlir::Value>
  loop(int64_t count, mlir::ValueRange init,
       llvm::function_ref<mlir::SmallVector<mlir::Value>(mlir::Value,
                                                         mlir::ValueRange)>
           body);
  /// Combines `value` across each aligned group of `threads` threads of
  /// the block (the whole block, or rows sharing it: lanes of a warp, or
  /// whole warps) with `combine`; every thread gets its group's result.
  /// Uses warp shuffles and `scratch` (32 floats or ints of workgroup
  /// memory).
  mlir::Value blockReduce(
      mlir::Value value, mlir::Value identity, mlir::Value scratch,
      int64_t threads,
      llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine);
  /// blockReduce of several values at once, `combine(i, x, y)` combining
  /// value i's: one round of barriers for all of them. `scratch` holds 32
  /// elements a value.
  mlir::SmallVector<mlir::Value> blockReduce(
      llvm::ArrayRef<mlir::Value> values,
      llvm::ArrayRef<mlir::Value> identities, mlir::Value scratch,
      int64_t threads,
      llvm::function_ref<mlir::Value(unsigned, mlir::Value, mlir::Value)>
          combine);

  /// Row-major index of `linear` in `shape`, and back.
  mlir::SmallVector<mlir::Value> delinearize(mlir::Value linear,
                                             llvm::ArrayRef<int64_t> shape);
  mlir::Value linearize(mlir::ValueRange index, llvm::ArrayRef<int64_t> shape);

  mlir::Value index(int64_t value);
  mlir::Value f32(double value);
  mlir::Value constant(mlir::Type type, double value);
  /// The type values of dtype `type` are computed in: f32, i32 or i1.
  static mlir::Type computeType(mlir::Type dtype);

private:
  /// Loads the element at `offset` of gpu.func argument `argNumber`.
  mlir::Value load(unsigned argNumber, mlir::Value offset);
  mlir::FailureOr<mlir::Value> compute(mlir::Value tensor, ElementIndex &idx);
  mlir::FailureOr<mlir::Value> broadcastAt(BroadcastOp op, ElementIndex &idx);
  /// A softmax's element from its row's max and sum (softmaxStats).
  mlir::FailureOr<mlir::Value> softmaxAt(SoftmaxOp op, ElementIndex &idx);
  mlir::Value iotaAt(IotaOp op, ElementIndex &idx);
  /// The index into a reshape's operand of its element `idx`.
  ElementIndex reshapedIndex(ReshapeOp op, ElementIndex &idx);
  // The indexing ops as index maps (IndexMaps.cpp).
  mlir::FailureOr<mlir::Value> sliceAt(SliceOp op, ElementIndex &idx);
  mlir::FailureOr<mlir::Value> padAt(PadOp op, ElementIndex &idx);
  mlir::FailureOr<mlir::Value> concatAt(ConcatOp op, ElementIndex &idx);
  /// kf.gather or kf.take_along_axis: `input` at `picked` along `axis`,
  /// the other dims from `inputIndex`.
  mlir::FailureOr<mlir::Value> pickAt(mlir::Value input, mlir::Value picked,
                                      int64_t axis,
                                      llvm::SmallVector<mlir::Value> inputIndex);
  /// The index gather `op` picks for result position `out`, and the input
  /// position around it (its axis entry left null for the pick).
  mlir::FailureOr<std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>>
  gatherSource(GatherOp op, llvm::ArrayRef<mlir::Value> out);
  mlir::FailureOr<mlir::Value> gatherAt(GatherOp op, ElementIndex &idx);
  mlir::FailureOr<mlir::Value> takeAlongAxisAt(TakeAlongAxisOp op,
                                               ElementIndex &idx);
  mlir::FailureOr<mlir::Value> randomAt(RandomOp op, ElementIndex &idx);
  /// The position in slice `op`'s input of `position` in its result.
  llvm::SmallVector<mlir::Value> sliceSource(SliceOp op,
                                             llvm::ArrayRef<mlir::Value> position);
  /// The value of pad's border, in compute type.
  mlir::Value padFill(PadOp op);
  /// Maps `position` (of pad's result) into its input in place, clamped to
  /// a valid element; returns whether it was inside (null: no border).
  mlir::Value clampIntoPad(PadOp op, llvm::MutableArrayRef<mlir::Value> position);
  /// `read` of the part of concat `op` holding `position` (of its result),
  /// given the position within the part: a branch a part, each yielding
  /// `types`.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> forEachConcatPart(
      ConcatOp op, llvm::ArrayRef<mlir::Value> position, mlir::TypeRange types,
      llvm::function_ref<mlir::FailureOr<llvm::SmallVector<mlir::Value>>(
          mlir::Value, llvm::ArrayRef<mlir::Value>)>
          read);
  /// A picked index into a dim of `n`: wrapped if in [-n, 0), clamped to 0
  /// if outside [-n, n); with whether it was inside.
  std::pair<mlir::Value, mlir::Value> normalizePick(mlir::Value picked,
                                                    int64_t n);
  /// What a gather reads outside its input: NaN, or 0 for integers.
  mlir::Value pickFill(mlir::Value input);
  // Vectors of consecutive elements (VectorReads.cpp).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  computeVector(mlir::Value tensor, ElementIndex &first,
                llvm::ArrayRef<mlir::Value> lanes);
  /// vectorAt of `count` elements of `tensor` from multi-index `first`.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  vectorFrom(mlir::Value tensor, llvm::ArrayRef<mlir::Value> first,
             int64_t count);
  /// The elements at `lanes` one at a time (`first` says whether they are
  /// row elements).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  lanesOneByOne(mlir::Value tensor, ElementIndex &first,
                llvm::ArrayRef<mlir::Value> lanes);
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  broadcastVector(BroadcastOp op, ElementIndex &first,
                  llvm::ArrayRef<mlir::Value> lanes);
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  sliceVector(SliceOp op, ElementIndex &first,
              llvm::ArrayRef<mlir::Value> lanes);
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  padVector(PadOp op, ElementIndex &first, llvm::ArrayRef<mlir::Value> lanes);
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  concatVector(ConcatOp op, ElementIndex &first,
               llvm::ArrayRef<mlir::Value> lanes);
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  gatherVector(GatherOp op, ElementIndex &first,
               llvm::ArrayRef<mlir::Value> lanes);

  /// The four Philox4x32-10 words of kf.random `op`'s counter `block`.
  std::array<mlir::Value, 4> philoxBlock(RandomOp op, mlir::Value block);
  /// The elementwise `op` on scalars of its compute type: the one-operand
  /// ops, then those of two or three.
  mlir::FailureOr<mlir::Value> scalarOp(mlir::Operation *op,
                                        mlir::ValueRange operands);
  mlir::FailureOr<mlir::Value> unaryScalarOp(mlir::Operation *op,
                                             mlir::Type dtype, mlir::Value x);
  mlir::FailureOr<mlir::Value>
  binaryScalarOp(mlir::Operation *op, mlir::Type dtype, mlir::ValueRange x);
  /// kf.pow on float scalars: products for the exponents 1 to 4.
  mlir::Value power(mlir::Value base, mlir::Value exponent);
  /// kf.mod on scalars of `dtype`.
  mlir::Value flooredMod(mlir::Type dtype, mlir::Value lhs, mlir::Value rhs);
  /// kf.compare of integer scalars.
  mlir::Value compareIntegers(ComparePredicate predicate, mlir::Value lhs,
                              mlir::Value rhs);
  /// 0 of the compute type of `dtype`.
  mlir::Value zeroOf(mlir::Type dtype);
  mlir::Value castScalar(mlir::Value v, mlir::Type from, mlir::Type to);
  mlir::FailureOr<mlir::Value> constantAt(ConstantOp op);
  /// Combines `value` across aligned groups of `lanes` lanes of a warp.
  mlir::Value warpReduce(
      mlir::Value value,
      llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine,
      int64_t lanes = 32);

  KernelOp kernelOp;
  mlir::gpu::GPUFuncOp func;
  /// Per gpu.func argument: its row length and padded row stride (0 when
  /// dense).
  struct RowPadding {
    int64_t length = 0, stride = 0;
  };
  llvm::SmallVector<RowPadding> padding;
  /// Every result is a 16-bit float: f32 math whose error stays far below
  /// their rounding may be cheaper (emitExpForHalfResults).
  bool halfResults = false;
  mlir::OpBuilder b;
  mlir::Location location;
  /// Elements already computed, by (tensor, linear index): a thread reuses
  /// an element it has (fused DAGs with shared operands; rows kept in
  /// registers across the passes of a normalization).
  llvm::DenseMap<std::pair<mlir::Value, mlir::Value>, mlir::Value> computed;
  struct SoftmaxStats {
    mlir::Value max, sum, shift;
  };
  llvm::DenseMap<mlir::Operation *, SoftmaxStats> softmaxStats;
  /// The i64 positions iotaAt made along static dims of at most 2^31, by
  /// that bound: an equality with one is an i32 compare (compareIntegers).
  llvm::DenseMap<mlir::Value, int64_t> i64Positions;
  /// Philox blocks computed, by (kf.random, a vector's first index, block
  /// within the vector).
  llvm::DenseMap<std::tuple<mlir::Operation *, mlir::Value, int64_t>,
                 std::array<mlir::Value, 4>>
      philoxBlocks;
};

/// f32 sin(x) (or cos(x)) with a shared, conversion-free argument
/// reduction; libdevice for |x| >= 105615, infinities and NaN.
mlir::Value emitSinCos(mlir::OpBuilder &b, mlir::Location l, mlir::Value x,
                       bool cosine);
/// 2^x by one MUFU.EX2 (ex2.approx.ftz: about 2 ulp, results below 2^-126
/// flushed to 0). For sums of exponentials shifted by their max, where
/// such terms add nothing.
mlir::Value emitExp2Approx(mlir::OpBuilder &b, mlir::Location l, mlir::Value x);
/// -x of i32 `x` as ~x + 1 in inline PTX. ptxas 13.0 (and the JIT of
/// driver 580) fold a negation (neg.s32, sub.s32 0 - x, mul.lo.s32 by -1)
/// into the three-input VIMNMX3 of a chain of min.s32 / max.s32 and drop
/// it for one operand: the min of 24 negated elements came out as if
/// some were not negated (fuzz seeds 3800106, 4900113; on the H200, 80
/// to 90 of 100 random columns wrong at -O3 and through the JIT, none at
/// -O0). ~x + 1 is not taken for a negation there (0 of 100 wrong), and
/// as inline asm LLVM cannot canonicalise it back into one.
mlir::Value emitNegateI32(mlir::OpBuilder &b, mlir::Location l, mlir::Value x);
/// f32 1 / (1 + e^-x) from one MUFU.EX2 and one MUFU.RCP, about 5 ulp.
mlir::Value emitSigmoid(mlir::OpBuilder &b, mlir::Location l, mlir::Value x);
/// x Phi(x), Phi(-|x|) to 4.2e-6 relative for |x| <= 4 (plus the f32
/// roundings) for GELUs whose results are f16, to 3.7e-4 for bf16 ones.
mlir::Value emitGeluForHalfResults(mlir::OpBuilder &b, mlir::Location l,
                                   mlir::Value x, bool bf16);
/// e^x for a kernel whose results are rounded to 16 bits: one MUFU.EX2
/// of x log2 e, within |x| 2^-24 + 2^-22 relative (FastMath.cpp).
mlir::Value emitExpForHalfResults(mlir::OpBuilder &b, mlir::Location l,
                                  mlir::Value x);
/// The f32 GELU of an element of `dtype`: emitGeluForHalfResults for
/// 16-bit results, else x (1 + erf(x / sqrt 2)) / 2 with libdevice's erf.
/// tanh(x) of f32 `x` for a result of `dtype` (FastMath.cpp).
mlir::Value emitTanh(mlir::OpBuilder &b, mlir::Location l, mlir::Value x,
                     mlir::Type dtype);
mlir::Value emitGelu(mlir::OpBuilder &b, mlir::Location l, mlir::Value x,
                     mlir::Type dtype);

} // namespace kfuse::kf

#endif // KFUSE_CODEGEN_KERNELEMITTER_H
