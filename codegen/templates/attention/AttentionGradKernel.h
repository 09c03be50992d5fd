//===- AttentionGradKernel.h - FlashAttention backward's class -*- C++ -*-===//
//
// Internal to kf-lower-to-gpu: the template of AttentionGradKernel.cpp,
// whose warp-specialised TMA pipeline (pipeline `tma`) lives in
// AttentionGradTmaPipeline.cpp, and its key blocks' adds into dq
// (dqAtomic) in AttentionGradAtomicDq.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_ATTENTIONGRADKERNEL_H
#define KFUSE_CODEGEN_ATTENTIONGRADKERNEL_H

#include "analysis/StridedViews.h"
#include "codegen/templates/KernelTemplates.h"
#include "ir/KFDialect.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace kfuse::kf::detail {

using llvm::ArrayRef;
using llvm::function_ref;
using mlir::LogicalResult;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;
namespace NVVM = mlir::NVVM;

/// q, k, v or dout as the copies read it: `rows` rows a slice of `cols`
/// elements. Dense, slice s's row r starts at element (s rows + r) cols of
/// `memref`. Where the operand is a view of a kernel argument (q, k and v
/// split into heads out of one projection's [B, S, 3 H D]), it starts at
/// offset + (s / heads) batchStride + (s % heads) headStride + r rowStride.
struct OperandRows {
  Value memref;
  int64_t heads, rows, cols;
  std::optional<StridedView> view;
  /// Its TMA tensor map (pipeline `tma`): [slices][rows][cols] in boxes
  /// of 64 rows by 64 columns.
  Value map = {};
};

/// What a block owns and streams. Rows are of the operands' [slice, row]
/// view: q, dout, lse and delta by query head, k and v by kv head.
struct Roles {
  bool keys; ///< a key block (dk, dv), else a query block (dq)
  /// The owned operands (k, v or q, dout), their slice and first row.
  const OperandRows *ownA, *ownB;
  Value ownSlice, ownRow0;
  /// The streamed operands (q, dout or k, v).
  const OperandRows *tileA, *tileB;
  /// A key block's gradients: both, or (splitKeyBlocks) one of them.
  bool withDk = true, withDv = true;
  /// Whether the block computes dP and dS: all but dv's own blocks.
  bool needsDs() const { return !keys || withDk; }
};

class FlashAttentionGrad : IndexArithmetic {
public:
  FlashAttentionGrad(KernelEmitter &e, AttentionGradOp op);
  LogicalResult emit();

private:
  static constexpr int64_t kRows = 128, kTile = 64, kThreads = 256;

  void setUp();
  /// Key blocks, then query blocks (none with dqAtomic).
  LogicalResult emitBlocks();
  /// Blocks from `block` on: kvBlocks key blocks of each of `kinds`
  /// ({withDk, withDv}: both, or each alone), then the query blocks.
  LogicalResult emitBlocksFrom(Value block,
                               ArrayRef<std::pair<bool, bool>> kinds);
  LogicalResult emitKeyBlock(Value block, bool withDk = true,
                             bool withDv = true);
  LogicalResult emitQueryBlock(Value block);
  /// Which streamed tiles a block takes: `count` of them, tile t's rows of
  /// slice `sliceOf(t)` from row `rowOf(t)`.
  struct Tiles {
    Value count;
    function_ref<Value(Value)> sliceOf, rowOf;
  };
  /// The streamed loop of `roles` over `tiles` from accumulators `acc`
  /// (dq, or dk then dv); `finish` stores them.
  void runTiles(const Roles &roles, const Tiles &tiles, SmallVector<Value> acc,
                function_ref<void(ArrayRef<Value>)> finish);
  /// runTiles with cp.async copies by every thread, a block barrier a tile.
  SmallVector<Value> runTilesWithCopies(const Roles &roles, const Tiles &tiles,
                                        SmallVector<Value> acc);

  // --- AttentionGradTmaPipeline.cpp: pipeline `tma` ---
  /// The mbarriers: the owned rows landed; per stage, its tiles landed
  /// (full) and both computing warpgroups done with them (empty).
  enum class Barrier { OwnFull, Full, Empty };
  Value barrier(Barrier kind, Value stage = {});
  /// The parity of the phase of tile `tile`'s stage barriers.
  Value phaseOf(Value tile);
  void initBarriers();
  /// The copying thread: the owned rows, then every streamed tile.
  void produceTiles(const Roles &roles, const Tiles &tiles);
  /// The computing warpgroups' loop over the tiles; then `finish`.
  void consumeTiles(const Roles &roles, const Tiles &tiles,
                    SmallVector<Value> acc,
                    function_ref<void(ArrayRef<Value>)> finish);
  /// Copies `rows` (64 or 128) rows of `operand`'s slice `slice` from row
  /// `row0`, `width` columns, to shared memory at element `at` (as
  /// copyOwn and copyTile place them), counted on `full`.
  void copyBoxes(const OperandRows &operand, Value slice, Value row0,
                 int64_t rows, int64_t width, int64_t at, Value stageAt,
                 Value full);
  /// Whether the copying thread stages each query tile's lse and delta
  /// (key blocks of pipeline `tma`, whose sq is a multiple of 4: whole
  /// 16-byte pieces). Read from global memory, their 32 loads a tile a
  /// thread took key blocks past the registers ptxas gave them (spills, at
  /// any setmaxnreg).
  bool stagesStats(const Roles &roles) const {
    return warpSpecialized && roles.keys;
  }
  /// The shared byte address (an index) of stage `stage`'s lse, then 64
  /// floats on its delta.
  Value statsAt(Value stage);
  /// Zeroes every stage's statistics: the copies fill only a tile's
  /// queries, and P (dS - delta) must see finite numbers past them.
  void clearStats();
  /// The bytes of each of lse and delta of the tile's queries from row
  /// `row0` (an i32).
  Value statsBytes(Value row0);
  /// Copies them (slice `slice`) into stage `stage`, counted on `full`.
  void copyStats(Value slice, Value row0, Value bytes, Value stage, Value full);
  /// Element offset of row `row` of slice `slice` of `operand`; `dense`
  /// is slice rows + row, the row's index where the operand is dense.
  Value rowAt(const OperandRows &operand, Value dense, Value slice, Value row);
  /// The elements between the rows of `operand`.
  static int64_t rowStride(const OperandRows &operand) {
    return operand.view ? operand.view->strides[2] : operand.cols;
  }
  void copyOwn(const Roles &roles);
  void copyTile(const Roles &roles, Value slice, Value row0, Value stage);
  /// The stage of the computing warpgroups' tile `tile`.
  Value stageOf(Value tile);
  Value stageA(Value stage);
  Value stageB(Value stage);
  /// dqAtomic's dS^T tile, after the stages.
  int64_t dsAt() const { return (kRows + 2 * kTile) * (dp + dvp); }
  /// dqAtomic's f32 staging tile of dq ([kTile][d], dense: one bulk add
  /// takes it whole), after dS^T (in 16-bit elements, as the other
  /// offsets).
  int64_t dqStagingAt() const { return dsAt() + kRows * kTile; }
  /// Issues X = ownA tileA^T and (`withY`) Y = ownB tileB^T for the
  /// warpgroup's 64 rows, a wgmma group each; returns their accumulator
  /// structs (read only after waiting for their group).
  std::pair<Value, Value> issueProducts(Value stage, bool withY);
  SmallVector<Value> unpack(Value all);
  /// One wgmma group of m64nNk16 products summed over `steps` (A's and
  /// B's descriptors, both operands in shared memory, K-major where the
  /// layout is row for A or col for B); returns the accumulator struct.
  Value issueGroup(ArrayRef<std::pair<Value, Value>> steps, int64_t n,
                   NVVM::MMALayout layoutA, NVVM::MMALayout layoutB);
  /// The query rows' statistics in the order of a thread's accumulators:
  /// exp2's shift (-lse log2 e) and delta, two rows (query blocks) or the
  /// 16 columns of the tile (key blocks: the queries are the columns).
  struct RowStats {
    SmallVector<Value> shift, delta;
    Value shiftOf(const Roles &roles, int64_t i) const {
      return shift[roles.keys ? i / 4 * 2 + i % 2 : i % 4 / 2];
    }
    Value deltaOf(const Roles &roles, int64_t i) const {
      return delta[roles.keys ? i / 4 * 2 + i % 2 : i % 4 / 2];
    }
  };
  /// Loads the shifts (before P) or the deltas (after: fewer registers
  /// live while P is computed), from the stage `stage` where the copying
  /// thread staged them (stagesStats), else from global memory.
  void loadStats(const Roles &roles, Value slice, Value row0, bool shifts,
                 RowStats &stats, Value stage = {});
  /// Whether the tile from row `row0` holds positions to mask: rows past
  /// the end of the streamed operand, or (causal) a key after a query.
  Value tileNeedsMask(const Roles &roles, Value row0);
  /// P = exp(scale X - lse), 0 where masked (when `masked`).
  SmallVector<Value> probabilities(const Roles &roles, ArrayRef<Value> x,
                                   const RowStats &stats, Value row0,
                                   bool masked);
  /// One streamed tile (in `stage`, from row `row0`): the accumulators
  /// `state` (dq, or dk then dv) updated.
  /// `ownStats`: a query block's, read once; key blocks read each tile's.
  SmallVector<Value> step(const Roles &roles, SmallVector<Value> state,
                          Value stage, const std::optional<RowStats> &ownStats,
                          Value slice, Value row0);
  /// acc += a (16-bit pairs in registers) times the 64-row tile at element
  /// `tileAt`, read M/N-major (its rows along K), `width` columns.
  SmallVector<Value> accumulate(SmallVector<Value> acc, ArrayRef<Value> a,
                                Value tileAt, int64_t width);
  /// Row (of the warpgroup's 64) and column (of the tile's 64) of
  /// accumulator i of a 64-column product.
  std::pair<Value, Value> position(int64_t i);
  /// exp2's shift for a row's log-sum-exp (-inf for a row with nothing to
  /// attend, so that its probabilities are 0).
  Value negShift(Value lse);
  /// Stores accumulators `acc` (times `scale`) as rows from `row0` of
  /// result `value`, `cols` columns a row of `rows` of the slice.
  void store(Value value, ArrayRef<Value> acc, Value slice, Value row0,
             int64_t rows, int64_t cols, double scale);
  Value load(Value memref, Value offset);
  Value select(Value keep, Value x);

  // --- AttentionGradAtomicDq.cpp: dqAtomic ---
  /// dS^T (the warpgroup's 64 keys by the tile's 64 queries, as
  /// accumulators) into shared memory, M-major for dQ's product.
  void storeTransposedDs(ArrayRef<Value> ds);
  /// Issues dS K for the warpgroup's half of the head dim (after
  /// both warpgroups stored dS^T); returns the accumulator struct.
  Value issueDqProduct();
  /// Adds the product's accumulators `part` into dq's rows of
  /// the tile (query slice `slice`, rows from `row0`), with atomics.
  void addDq(ArrayRef<Value> part, Value slice, Value row0);
  /// With bulkDq: stores `part` (scaled) into the staging tile;
  /// after a barrier thread 0 adds the tile's rows into dq in bulk.
  void addDqInBulk(ArrayRef<Value> part, Value slice, Value row0);
  /// Runs `body` on thread 0 of the block (the bulk add's issuer).
  void onFirstThread(function_ref<void()> body);

  AttentionGradOp op;
  int64_t heads, kvHeads, group, sq, sk, d, dv, dp, dvp, kvBlocks;
  bool dqAtomic, bulkDq, splitKeyBlocks;
  /// The pipeline's stages and `tma`; the byte offset of the mbarriers
  /// past the tiles.
  int64_t stages;
  bool warpSpecialized;
  /// With `tma`, the byte offset of the staged statistics past the
  /// mbarriers.
  int64_t statsOffset;
  /// With `tma`, whose part of the block is being emitted: the copying
  /// thread's or the computing warpgroups'.
  enum class Role { Copy, Compute } role = Role::Compute;
  int64_t barrierOffset;
  /// The gpu.func argument of dq where the kernel writes it.
  std::optional<unsigned> dqArgument;
  double scale;
  Type dtype;
  LogicalResult status = mlir::success();
  OperandRows q, k, v, dout;
  Value lse, delta, shared, sharedBase, tid, lane, warpgroup, warpRow;
};

} // namespace kfuse::kf::detail

#endif // KFUSE_CODEGEN_ATTENTIONGRADKERNEL_H
