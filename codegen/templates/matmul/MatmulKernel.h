//===- MatmulKernel.h - the tensor-core matmul template's class -*- C++ -*-===//
//
// Internal to kf-lower-to-gpu: the template of MatmulKernel.cpp, whose
// warp-specialised TMA pipeline lives in MatmulTmaPipeline.cpp and whose
// epilogue and output copies live in MatmulEpilogue.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_MATMULKERNEL_H
#define KFUSE_CODEGEN_MATMULKERNEL_H

#include "ir/KFDialect.h"
#include "codegen/templates/KernelTemplates.h"
#include "analysis/MatmulTiling.h"

#include <array>

namespace kfuse::kf::detail {

using llvm::ArrayRef;
using mlir::LogicalResult;
using mlir::SmallVector;
using mlir::SmallVectorImpl;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

/// One operand as the copies see it: a row-major [rows, cols] matrix per
/// batch in global memory, rows `stride` elements apart (kf-pad may have
/// padded them, with zeros), staged as a SharedTile at `offset` of a stage.
struct StagedOperand {
  Value memref;
  SharedTile tile;
  int64_t offset, rows, cols, stride, batchStride;
  /// Rows run along M/N and columns along K (as mma wants them).
  bool kContiguous;
};

/// Where an output tile lies, as locate() computes it from a tile index:
/// its batch, first row and column.
struct TileOrigin {
  Value batch, m0, n0;
  /// Split-K: the first K column of this tile's chunk, and the index of
  /// its partial product among the output's [splits * batch] matrices.
  Value kBase, outBatch;
  /// With interleaved rows: the tile's group of rows (m0 then counts rows
  /// of the group).
  Value rowGroup;
};

class TensorCoreMatmul : IndexArithmetic {
public:
  TensorCoreMatmul(KernelEmitter &e, MatmulOp matmul);
  LogicalResult emit();

private:
  /// Refuses a config whose `row_groups` and `row_align` would not align
  /// the output's rows (or that the template cannot interleave).
  LogicalResult checkRowInterleave();
  /// Pipeline `tma`: warps 0-7 multiply, one thread of warps 8-11 copies (see
  /// the file comment); the block loops over output tiles.
  LogicalResult emitWarpSpecialized();
  void initBarriers();
  /// The multiplying warps' K loop for the tile whose first K step is
  /// global step `first` (steps count on across the block's tiles).
  /// `beforeDrain`, where given, runs before the wait for the last
  /// products.
  Value consumeSteps(Value first, llvm::function_ref<void()> beforeDrain);
  /// Loads the epilogue's inputs (a bias, a residual) for the tile while
  /// its last products are in flight.
  LogicalResult prefetchEpilogueInputs();
  SmallVector<Value> inputsAtOutputIndex();
  /// The copying thread's K loop for the same tile.
  void produceSteps(Value first);
  /// The TMA copies of `op`'s tile at (row0, col0) into the stage at byte
  /// `stageBytes`, completing on mbarrier `full`.
  void copyWithTma(unsigned which, Value row0, Value col0, Value stageBytes,
                   Value full);
  /// The mbarriers of stage `stage`: its tiles landed (full), its products
  /// are done (empty). Shared-memory pointers.
  Value fullBarrier(Value stage);
  Value emptyBarrier(Value stage);
  Value sharedPointer(Value byteOffset);
  /// The parity of the phase of a stage's barriers that global K step `g`
  /// waits for.
  Value phaseOf(Value g);
  /// A barrier of the threads that multiply (all threads without `tma`).
  void syncConsumers();

  /// The whole tiles block `bid` of `grid` computes, then its edge tiles
  /// (mma_tiling's edgeN): `body` with tileAt set and the tile's first
  /// global K step, the edge tiles' under asEdgeTile().
  LogicalResult forEachTile(Value bid, Value grid,
                            llvm::function_ref<LogicalResult(Value)> body);
  /// Emits `body` for the narrow edge tile: t.bn and the staged columns
  /// are the edge's while it runs (the copies then fill a stage with A's
  /// tile and the edge's rows of B only).
  LogicalResult asEdgeTile(llvm::function_ref<LogicalResult()> body);
  /// Whole tile `tile` (of the batch's tiles, of each K chunk's; all
  /// tiles without edge tiles), tile rows grouped for L2 reuse.
  TileOrigin locate(Value tile);
  /// Edge tile `j`: the j-th tile row's (of all batches) last tile.
  TileOrigin locateEdge(Value j);
  /// The first row (and with interleaved rows the row group) of tile row
  /// `mTile`, and the first column of tile column `nTile` (shifted with
  /// interleaved rows), of `o`'s batch.
  void placeRows(TileOrigin &o, Value mTile);
  void placeColumns(TileOrigin &o, Value nTile);
  /// The output row of the tile's local row `r`.
  Value outputRow(Value r);
  void locateWarp();
  /// K steps of copies in flight before the products that read them.
  int64_t ahead() const;
  /// The copies of the first K steps of the tile at `origin`.
  void prologue(const TileOrigin &origin);
  /// The K loop; the accumulators (one struct with wgmma).
  SmallVector<Value> steps();
  LogicalResult finish(SmallVector<Value> acc);
  /// A warpgroup's wgmma accumulator struct, undefined: the first K step's
  /// first wgmma does not add to it. Zeros moved into the accumulator
  /// registers instead made ptxas serialise the wgmmas (C7514) of kernels
  /// whose epilogue branches (partial tiles), the lm-head's among them.
  Value undefAccumulators();
  int64_t accumulators() const {
    return (t.bm / t.warpsM / 16) * (t.bn / t.warpsN / 8) * 4;
  }
  /// Issues the copies of K step `kTile` of the tile at `origin` into
  /// pipeline stage `stage`.
  void loadStage(Value kTile, Value stage, const TileOrigin &origin);
  void copyTile(const StagedOperand &op, Value batchBase, Value row0,
                Value col0, Value stageBase);
  /// Element offset in a stage of element (r, col) of `op`'s tile.
  Value sharedOffset(const StagedOperand &op, Value r, Value col);
  /// The products of one stage, added to `acc`.
  SmallVector<Value> multiply(Value stage, ValueRange acc);
  /// The same with wgmma: `acc` is the warpgroup's accumulator struct;
  /// the tile's `first` K step overwrites it.
  Value multiplyWgmma(Value stage, Value acc, bool first);
  /// ldmatrix.x4 at element `offset` of the shared buffer, as four
  /// 32-bit mma operands.
  SmallVector<Value> loadFragments(Value offset, bool transpose);
  /// d = a * b + c for one m16n8k16 tile; appends d's four values.
  void mma(ArrayRef<Value> a, ArrayRef<Value> b, ArrayRef<Value> c,
           SmallVectorImpl<Value> &out);
  // The epilogue and the output's way out (MatmulEpilogue.cpp).
  LogicalResult storeTile(ValueRange acc);
  /// Whether the staged epilogue is computed for every chunk before any is
  /// stored, branch-free.
  bool computesUpfront();
  /// An accumulator pair: tile-local row and column, and its first
  /// accumulator's index.
  struct PairSlot {
    Value r, c;
    int64_t at;
  };
  /// The pairs of n8 tiles [firstN8, endN8) of each warp.
  SmallVector<PairSlot> pairSlots(int64_t firstN8, int64_t endN8);
  /// The pairs through the epilogue, stored or staged.
  LogicalResult storePairs(ValueRange acc, int64_t firstN8, int64_t endN8,
                           bool staged);
  /// Whether the epilogue reads kernel inputs (a bias, a residual) besides
  /// the matmul's operands.
  bool epilogueReadsInputs();
  /// Where an output pair goes: tile-local (r, c), the row and column in
  /// the batch's [M, N], the row of the [batch * M, N] output and the
  /// linear index of (row, col). (The element after it has linear1, col1:
  /// the same SSA values the accumulators were recorded under.)
  struct OutputPair {
    Value r, c, row, col, col1, outRow, linear, linear1;
  };
  OutputPair outputPair(Value r, Value c);
  /// The OutputPairs of the pair slots whose inputs were prefetched, by
  /// their first accumulator.
  llvm::DenseMap<int64_t, OutputPair> prefetchedPairs;
  /// Where result `value` holds the pair's first or second element.
  ElementIndex pairIndex(Value value, const OutputPair &at, bool second);
  /// Stores every result's pair, or stages result `only`'s.
  LogicalResult storePair(Value r, Value c, Value v0, Value v1, bool staged,
                          unsigned only = 0);
  LogicalResult storeResultPair(unsigned result, Value value,
                                const OutputPair &at, Value tile);
  /// Where the pair at `slot` goes: as prefetchEpilogueInputs found it,
  /// else computed here.
  OutputPair pairAt(const PairSlot &slot);
  /// The staged pair at `slot` (going to `at`), computed without a branch
  /// (for epilogues that cannot read out of bounds), as a 2-vector of the
  /// output's dtype.
  mlir::FailureOr<Value> stagedPair(const PairSlot &slot, const OutputPair &at,
                                    ValueRange acc, Value value);
  /// The results that leave through the staged tile, one after another:
  /// all but the column partials.
  SmallVector<unsigned> stagedResults();
  /// The pair slots of the staged columns from `c0`.
  SmallVector<PairSlot> stagedChunk(int64_t c0);
  /// values[i][chunk]: result results[i]'s pairs of each staged chunk,
  /// computed up front (computesUpfront); the column sums added once,
  /// with the first result's.
  using StagedValues = SmallVector<SmallVector<SmallVector<Value>>>;
  LogicalResult computeStaged(ValueRange acc, ArrayRef<unsigned> results,
                              StagedValues &values);
  /// Result `value` at the pair's two elements.
  mlir::FailureOr<std::array<Value, 2>> resultPair(Value value,
                                                   const OutputPair &at);
  void writeStaged(ArrayRef<PairSlot> slots, ArrayRef<Value> pairs);
  Value outputTile();
  /// Copies the staged columns of `result` out.
  void copyOutput(unsigned result);
  /// With interleaved rows: the `vec`-element vector of the staged tile at
  /// `from`, row `row` and column `col` of the output, whole where it lies
  /// inside the row, else its elements that do.
  void copyAlignedVector(Value tile, Value out, Value from, Value linear,
                         Value row, Value col, int64_t vec);
  /// `v`, a vector of the output row from column `col`, with its lanes at
  /// columns >= N (never written by the epilogue) set to zero.
  Value zeroPastRow(Value v, Value col);

  // Column sums over each 16 rows (kf-fuse-column-sums), in
  // MatmulColumnSums.cpp.
  /// A result of column partials: the value it sums, this thread's sums of
  /// the pair of columns it is at (`pending`), and the sums over the warp's
  /// rows that it stores: of its lane group's n8 tiles (lanes 4g to 4g + 3
  /// keep tiles g, g + 8, ...), two columns each, of each m16 tile.
  struct ColumnSum {
    unsigned result;
    Value source;
    std::array<Value, 2> pending;
    SmallVector<Value> kept;
  };
  SmallVector<ColumnSum> columnSums;
  /// n8 tiles a lane group keeps the sums of, per m16 tile.
  int64_t keptTiles() const { return (t.bn / t.warpsN / 8 + 7) / 8; }
  void resetColumnSums();
  /// Adds `pair` to `sum`'s pending sums; after the slot's second row
  /// (h = 1), sums them over the warp's rows and keeps them.
  void accumulate(ColumnSum &sum, const PairSlot &slot,
                  std::array<Value, 2> pair);
  /// The kernel's column-partials results; refuses those the template
  /// cannot sum (interleaved rows, split K).
  LogicalResult findColumnSums();
  /// Adds the summed values' pair at `slot` (going to `at`) to the sums,
  /// zero past the output's rows.
  LogicalResult addToColumnSums(const PairSlot &slot, const OutputPair &at);
  /// The same for every pair, each computed only where it lies inside the
  /// output (epilogues that read inputs and have edges).
  LogicalResult sumColumnsGuarded(ValueRange acc);
  /// Sums each column over the warp's 16 rows and stores the sums.
  void storeColumnSums();

  MatmulOp matmul;
  MatmulProblem p;
  MatmulTile t;
  /// The whole tiles' width (t.bn outside asEdgeTile), and whether the
  /// edge tile is being emitted.
  int64_t wholeTileN;
  bool edgeTile = false;
  RowInterleave rows;
  int64_t stages, stageElements, mTiles, nTiles, kTiles;
  /// The pipeline's flags (kf-promote-shared).
  bool tma, stageOutput, persistent;
  /// wgmma groups (K steps) a warpgroup keeps in flight: `mma_groups` with
  /// the TMA pipeline, else 1.
  int64_t mmaGroups;
  SmallVector<TmaOperand, 3> tmaMaps;
  /// Byte offsets in shared memory of the staged output and the mbarriers.
  int64_t outputOffset, barrierOffset;
  /// Columns of the output tile staged at a time (stagedOutputCols), and
  /// the first of those being staged.
  int64_t stagedCols, stagedFirstCol = 0;
  Type dtype;
  StagedOperand a, bOp;
  Value sharedBytes, shared, sharedBase, tid, lane, warpRow, warpCol;
  /// The output tile being multiplied and stored.
  TileOrigin tileAt;
  /// Per-lane element offsets of the ldmatrix rows, inside a stage.
  Value laneA, laneB;
};

} // namespace kfuse::kf::detail

#endif // KFUSE_CODEGEN_MATMULKERNEL_H
