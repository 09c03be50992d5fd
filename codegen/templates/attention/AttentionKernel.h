//===- AttentionKernel.h - the FlashAttention template's class --*- C++ -*-===//
//
// Internal to kf-lower-to-gpu: the template of AttentionKernel.cpp, whose
// warp-specialised TMA pipeline (config `tma`) lives in
// AttentionTmaPipeline.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_ATTENTIONKERNEL_H
#define KFUSE_CODEGEN_ATTENTIONKERNEL_H

#include "ir/KFDialect.h"
#include "codegen/templates/KernelTemplates.h"

namespace kfuse::kf::detail {

using llvm::ArrayRef;
using mlir::BlockArgument;
using mlir::LogicalResult;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

/// The running softmax state of the thread's two rows (lane / 4 and
/// lane / 4 + 8 of its warp's 16): max and sum; the accumulators; and the
/// previous key tile's probabilities (16-bit pairs), whose product with V
/// is pending.
struct RowState {
  SmallVector<Value, 2> max, sum;
  SmallVector<Value> acc, p;

  SmallVector<Value> flat() const {
    SmallVector<Value> all;
    for (ArrayRef<Value> part : {ArrayRef<Value>(max), ArrayRef<Value>(sum),
                                 ArrayRef<Value>(acc), ArrayRef<Value>(p)})
      all.append(part.begin(), part.end());
    return all;
  }
  static RowState unflat(ValueRange all, size_t accumulators) {
    RowState s;
    s.max = {all[0], all[1]};
    s.sum = {all[2], all[3]};
    s.acc.assign(all.begin() + 4, all.begin() + 4 + accumulators);
    s.p.assign(all.begin() + 4 + accumulators, all.end());
    return s;
  }
};

/// cp.async copies of operand tiles into the block's shared memory, every
/// thread of the block a share (both attention templates).
class TileCopier : IndexArithmetic {
public:
  TileCopier(KernelEmitter &e, Value shared, Value tid, int64_t threads)
      : IndexArithmetic(e), shared(shared), tid(tid), threads(threads) {}
  /// Copies `rows` rows of `cols` (padded) elements from global element
  /// `base` on (rows `stride` apart, `validRows` and `validCols` real, the
  /// rest zero-filled) into shared memory at element `sharedAt`, placed by
  /// `place(r, c)`. `colLimit`, when set, bounds the real columns at run
  /// time.
  void copy(Value memref, Value base, int64_t stride, int64_t rows,
            Value validRows, int64_t cols, int64_t validCols, Value sharedAt,
            llvm::function_ref<Value(Value, Value)> place,
            Value colLimit = {});

private:
  Value shared, tid;
  int64_t threads;
};

/// f32 values as wgmma A fragments: each pair (2i, 2i + 1) rounded to
/// `dtype` and packed in one 32-bit register (the accumulator layout of a
/// product is the A-fragment layout of the next).
SmallVector<Value> packHalfPairs(mlir::OpBuilder &b, mlir::Location l,
                                 ArrayRef<Value> p, Type dtype);

class FlashAttention : IndexArithmetic {
public:
  FlashAttention(KernelEmitter &e, AttentionOp op);
  LogicalResult emit();

private:
  // --- AttentionKernel.cpp: the block's work, and cp.async copies ---
  /// Without `tma`: every thread copies (cp.async) and multiplies, a block
  /// barrier a key tile.
  LogicalResult emitWithCopies();
  void setUp();
  std::pair<Value, Value> keyTileRanges();
  void locate(Value block);
  /// TileCopier::copy with the block's threads.
  void copyTile(Value memref, Value base, int64_t stride, int64_t rows,
                Value validRows, int64_t cols, int64_t validCols,
                Value sharedAt, llvm::function_ref<Value(Value, Value)> place,
                Value colLimit = {});
  void loadQ();
  /// With `qComputed`: Q's tile from its prologue, in place of loadQ.
  void computeQ();
  void loadK(Value tile);
  void loadV(Value tile);
  /// The [block_q, block_k] tile of the staged scores input for key tile
  /// `tile`, and where element (r, c) of a stage lies.
  void loadScoresInput(Value tile);
  Value scoresStage(Value tile);
  /// Element offsets of the K and V stages of key tile `tile`.
  Value kStage(Value tile);
  Value vStage(Value tile);
  Value vOffset(Value key, Value col);
  /// The copies of tile `tile`'s K (and V for the tile before) have landed
  /// for every thread; those of the next tiles are issued.
  void startCopies(Value tile);
  /// Zero running max and sum, accumulators and P.
  RowState initialState();
  /// The key tiles [first, last) with or without masking.
  RowState runTiles(Value first, Value last, RowState state, bool masked);
  /// Key tile `tile`; the `first` has no P V before it.
  RowState step(Value tile, RowState state, bool masked, bool first = false);
  /// The last P V, once the V tile before `last` has landed; waits for it.
  SmallVector<Value> finishValues(Value last, const RowState &state);
  /// The warp's A fragments of its 16 rows of Q (registers of 16-bit
  /// pairs, four per k16 step), read from shared memory once.
  SmallVector<Value> loadQFragments();
  /// The descriptors of K's k16 steps for the K tile at element `stage`.
  SmallVector<Value> scoreDescriptors(Value stage);
  /// The descriptors of V's k16 steps for the V tile at element `stage`.
  SmallVector<Value> valueDescriptors(Value stage);
  /// Issues S = Q K^T: the accumulators, in flight.
  SmallVector<Value> issueScores(ArrayRef<Value> descriptors);
  /// Issues O += P V.
  SmallVector<Value> issueValues(ArrayRef<Value> descriptors,
                                 const RowState &state);
  /// Masks `s` (causal, and keys past the end) and updates max and sum;
  /// returns each row's factor for the accumulators and puts P, packed as
  /// 16-bit pairs, in `state.p`.
  SmallVector<Value, 2> softmax(Value tile, SmallVector<Value> &s,
                                RowState &state, bool masked);
  /// O rescaled by the rows' factors, where a max moved.
  SmallVector<Value> rescaled(const RowState &state, ArrayRef<Value> factors);
  void mask(Value tile, SmallVector<Value> &s);
  /// Scales each score and adds the bias operand's element to it, and drops
  /// the scores the mask operand says not to attend. Rows and keys past
  /// the ends read the last ones (their scores are dropped or not stored).
  void applyScoreOperands(Value tile, SmallVector<Value> &s);
  /// The query row and key of accumulator i of key tile `tile`.
  std::pair<Value, Value> scorePosition(Value tile, int64_t i);
  Value treeReduce(SmallVector<Value> values,
                   llvm::function_ref<Value(Value, Value)> combine);
  SmallVector<Value> packPairs(ArrayRef<Value> p);
  Value quadReduce(Value v, bool max);
  Value exp2(Value x);
  LogicalResult store(const RowState &state);
  void storeLse(unsigned result, Value outRow, Value max, Value sum,
                Value empty);

  // --- AttentionTmaPipeline.cpp: config `tma` ---
  /// Warpgroups 0 and 1 multiply, one thread of warpgroup 2 copies Q, K
  /// and V with the TMA (see the file comment).
  LogicalResult emitWarpSpecialized();
  /// The mbarriers: Q landed; per stage, K or V landed (full) and both
  /// multiplying warpgroups done with it (empty).
  enum class Barrier { QFull, KFull, VFull, KEmpty, VEmpty };
  Value barrier(Barrier kind, Value tile = {});
  /// The parity of the phase of tile `tile`'s stage barriers.
  Value phaseOf(Value tile);
  void initBarriers();
  /// The copying thread: Q, then K_j and V_{j-1} for j in [0, last].
  void produceTiles(Value last);
  void produceTile(bool value, Value tile);
  /// The multiplying warpgroups' key loop and store.
  LogicalResult consumeTiles(Value unmasked, Value last);
  /// Waits for K of `tile` and, unless `first`, V of the tile before.
  void awaitTiles(Value tile, bool first);
  /// The warpgroup's first thread arrives at `emptyBarrier`.
  void release(Value emptyBarrier);

  Value fmul(Value x, Value y) {
    return mlir::arith::MulFOp::create(b, l, x, y);
  }

  AttentionOp op;
  int64_t heads, kvHeads, sq, sk, d, dv, dp, dvp, qTiles, blockK, blockQ,
      threads, stages;
  /// Elements between the rows of q, k and v: d and dv, or the strides of
  /// kf-pad's copies of odd rows (zeros past each row's end), or those of
  /// the views (heads split by reshapes, transposes and slices) they are.
  int64_t qStride, kStride, vStride;
  /// The columns of their rows the copies read (zero-filling the rest of
  /// the padded head dim): the row stride of an argument, whose padded
  /// rows hold zeros past the end; the head dim of a view, whose rows run
  /// on into other heads.
  int64_t qCols, kCols, vCols;
  /// Of an operand that is a view: its offset and batch and head strides
  /// (views[0..2] for q, k, v); dense operands have none.
  struct HeadsView {
    int64_t offset, batchStride, headStride;
  };
  std::optional<HeadsView> views[3];
  /// attentionResultStrides: where the kernel's result holds each element
  /// of the attention's (heads merged by a view, or dense).
  std::optional<SmallVector<int64_t, 4>> resultStrides;
  /// The element offset in the kernel's result of (batch, head, row, col)
  /// by resultStrides.
  Value mergedPosition(Value row, Value col);
  /// The element offset of [batch, head] in operand `which` (0..2) of
  /// `heads` heads a batch, `rows` rows of `stride` a head.
  Value headBase(int which, Value batch, Value head, Value slice, int64_t rows,
                 int64_t stride);
  /// What the softmax multiplies scores by before exp2: scale * log2 e, or
  /// log2 e where a bias operand was added to the scaled scores.
  double scaleLog2;
  Type dtype;
  /// The pipeline's `tma`; the byte offset of the mbarriers past the tiles.
  bool warpSpecialized;
  /// q is computed in the kernel (attentionComputesQuery): its tile is
  /// filled by computeQ, not copied.
  bool qComputed = false;
  /// The tiling's `qInRegisters`: Q's fragments stay in registers.
  bool qInRegisters;
  int64_t barrierOffset;
  LogicalResult status = mlir::success();
  Value q, k, v, shared, sharedBase, tid, lane, warpgroup, warpRow;
  SmallVector<Value> qFragments;
  /// The input staged with K (stagedScoresInput), or null.
  BlockArgument stagedInput;
  /// This block's batch, head, first query row, the [batch, head] slices
  /// of q and of k/v, and the element offsets of its head in q/out and in
  /// k/v.
  Value batch, head, q0, qSlice, kvSlice, qBase, kBase, vBase;
  /// The TMA tensor maps of q, k and v (config `tma`).
  Value qMap, kMap, vMap;
  /// The key length: `sk`, or with `runtime_extents` the kernel's
  /// parameter (the call's size; sk is then the bucket's).
  Value keys;
  int64_t keysParam = -1; ///< that parameter's argument number, or -1
  /// Whether a key tile may run past the keys (and needs its copies
  /// bounded and its scores masked).
  bool partialKeyTiles() const { return keysParam >= 0 || sk % blockK; }
  /// The keys from `k0` to the end, for the copies of a tile that may run
  /// past it; null where none does.
  Value keysFrom(Value k0);
  /// Key tiles, the last one partial.
  Value keyTileCount();
};

} // namespace kfuse::kf::detail

#endif // KFUSE_CODEGEN_ATTENTIONKERNEL_H
