//===- PromoteShared.cpp - kf-promote-shared: stage matmul tiles ----------===//
//
// Analyse: the tensor-core matmul kernels (an `mma_tiling`) and their
// block tiles, the FlashAttention kernels (a `flash_tiling`), and the row
// kernels that pass over rows too long for registers (a `row_tiling`).
// Decide: both operand tiles go through shared memory, rows padded by
// sharedRowPad(), in pipelineStages() stages of asynchronous copies, or
// warp-specialised around the TMA; a row that fits is read once into
// shared memory. Rewrite: record the kernel's `pipeline` (or the row
// tiling's `inShared`) and the launch's shared memory, which
// kf-lower-to-gpu and the runtime read.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "analysis/MatmulTiling.h"
#include "analysis/KernelAnalysis.h"
#include "transforms/Passes.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFPROMOTESHAREDPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Whether the TMA can copy the rows of attention operand `operand`: rows
/// start 16 bytes apart.
bool copiesWithTma(KernelOp kernel, Value operand) {
  // Its tensor maps describe whole arguments, not views of them.
  auto arg = dyn_cast<BlockArgument>(operand);
  return arg && rowStrideOf(kernel.getInputs()[arg.getArgNumber()]) % 8 == 0;
}

/// FlashAttention keeps the block's Q tile and two stages of K and V
/// tiles (copies of the next while this one is multiplied); with a bias or
/// mask read from memory, two stages of its [block_q, block_k] tiles too
/// (rows padded by 8 elements: the reads of a warp's scores then fall on
/// distinct banks). Read at each score from global memory instead, a
/// bf16 bias took 0.48 ms at B4 H16 S2048 D64 on the H200 (SDPA 0.28).
/// With `tma`, where no input is staged, head dims are 128 or more and the
/// TMA can copy the rows of q, k and v, a third warpgroup copies them
/// (`tma`, `block` = 384; see AttentionTmaPipeline.cpp), two mbarriers a
/// stage of K and of V and one for Q past the tiles; a q computed in the
/// kernel (RoPE) the multiplying warpgroups write into Q's tile themselves
/// (AttentionTmaPipeline.cpp). H200, same run, B4
/// H16 S4096 D128: 447 -> 469 TFLOP/s, causal 392 -> 415. At head dim 64
/// the copying warpgroup's registers leave one block an SM where the
/// cp.async kernel (128 registers a thread) fits two: 384 -> 311 at S2048.
/// Without a mask or bias, that kernel asks for its two blocks an SM
/// (`minBlocksPerSM`): one block's Q copies and epilogue then overlap the
/// other's products, which causal blocks (half the key tiles on average)
/// need most. The driver's JIT had given it 156 registers, one block an
/// SM; H100, causal GQA 32/4 S2048 D64: 0.281 -> 0.221 ms (SDPA 0.184),
/// non-causal 0.353 -> 0.351.
void promoteAttention(KernelOp kernel, FlashTilingAttr tiling, bool tma) {
  int64_t blockQ = tiling.getBlockQ(), blockK = tiling.getBlockK(),
          headDim = tiling.getHeadDim(), valueDim = tiling.getValueDim(),
          stages = 2;
  int64_t bytes = 2 * (blockQ * headDim + stages * blockK * (headDim + valueDim));
  LaunchAttr launch = kernel.getLaunchAttr();
  int64_t block = launch.getBlock();
  AttentionOp op = attentionOf(kernel);
  bool stageScoresInput = bool(stagedScoresInput(kernel));
  bool warpSpecialized = false;
  if (stageScoresInput) {
    bytes += 2 * stages * blockQ * (blockK + 8);
  } else if (tma && headDim >= 128 &&
             (attentionComputesQuery(kernel) ||
              copiesWithTma(kernel, op.getQ())) &&
             copiesWithTma(kernel, op.getK()) &&
             copiesWithTma(kernel, op.getV())) {
    warpSpecialized = true;
    block = 3 * 128;
    bytes += 8 * (1 + 4 * stages);
  }
  // A mask or bias computed at each score takes registers past the 128
  // that two blocks leave (ptxas: spills of up to 488 bytes).
  bool twoBlocks = !warpSpecialized && !op.getMask() && !op.getBias() &&
                   headDim <= 64 && valueDim <= 64;
  MLIRContext *ctx = kernel.getContext();
  kernel.setPipelineAttr(
      FlashPipelineAttr::get(ctx, stages, warpSpecialized, stageScoresInput));
  kernel.setLaunchAttr(LaunchAttr::get(ctx, launch.getGrid(), block,
                                       launch.getItems(), bytes,
                                       twoBlocks ? 2 : 0));
}

/// FlashAttention's backward: a block's own 128 rows of two operands (K and
/// V, or Q and dO) and two stages of the 64-row tiles of the other two (one
/// where two do not fit);
/// with dqAtomic, dS^T of a tile ([blockRows][blockCols], 16-bit) and the
/// tile's f32 share of dq ([blockCols][headDim]) too. With `tma`, where the
/// kernel is deterministic and the TMA can copy the rows of q, k, v and dO,
/// a third warpgroup copies them (block = 384; see
/// AttentionGradTmaPipeline.cpp) into three or four stages where they fit,
/// and each key tile's lse and delta too (attentionGradShared).
void promoteAttentionGrad(KernelOp kernel, FlashGradTilingAttr tiling,
                          bool tma) {
  AttentionGradOp op = attentionGradOf(kernel);
  // Its key blocks' copying thread stages each tile's lse and delta in
  // whole 16-byte pieces: query lengths of a multiple of 4.
  int64_t queries = mlir::cast<ShapedType>(op.getQ().getType()).getDimSize(2);
  bool warpSpecialized =
      tma && TargetAttr::of(kernel).getAligned() && !tiling.getDqAtomic() &&
      queries % 4 == 0 &&
      llvm::all_of(
          ValueRange{op.getQ(), op.getK(), op.getV(), op.getDout()},
          [&](Value x) { return copiesWithTma(kernel, x); });
  // Four stages where the tiles are narrow (head dims to 64, whose products
  // are short next to a tile's copy): B4 H16 S2048 d64 on an H100 took
  // 0.518 ms with three, 0.487 with four; at d128 four were slower (0.696
  // -> 0.722).
  // Past head dims of 128 (two 256-column operands owned, two streamed)
  // two stages may not fit: one, whose next copy waits for the last
  // tile's products.
  bool narrow = tiling.getHeadDim() <= 64 && tiling.getValueDim() <= 64;
  int64_t stages = 1;
  for (int64_t more = !warpSpecialized ? 2 : narrow ? 4 : 3; more > 1; --more)
    if (attentionGradShared(tiling, more, warpSpecialized).bytes <=
        kSharedPerSM) {
      stages = more;
      break;
    }
  LaunchAttr launch = kernel.getLaunchAttr();
  MLIRContext *ctx = kernel.getContext();
  kernel.setPipelineAttr(
      FlashGradPipelineAttr::get(ctx, stages, warpSpecialized));
  kernel.setLaunchAttr(LaunchAttr::get(
      ctx, launch.getGrid(), warpSpecialized ? 3 * 128 : launch.getBlock(),
      launch.getItems(),
      attentionGradShared(tiling, stages, warpSpecialized).bytes,
      /*minBlocksPerSM=*/0));
}

/// The most shared memory a row kernel stages its rows in: an H200 block
/// may have 227 KiB; a 64k-column bf16 row takes 128.
constexpr int64_t kMaxStagedRowBytes = 192 * 1024;

/// A row kernel that does not hold its rows in registers passes over each
/// row once a reduction (twice for a LayerNorm's mean and variance, then
/// once more for its output), each pass a read from global memory. Where
/// it passes more than once and the row's streamed inputs fit in shared
/// memory, the first pass copies them there and the others read them
/// back: blocks of 1024 threads, all of a thread's copies in flight at
/// once. H200, bf16 rows of 65536 columns re-read from global: softmax
/// 2.25x its HBM floor, LayerNorm 2.37x, RMSNorm 1.89x.
void promoteRows(KernelOp kernel, RowTilingAttr tiling) {
  std::optional<RowSpace> space = rowSpaceOf(kernel);
  int64_t vec = tiling.getVector();
  // Staged rows are whole vectors; a thread's shuffles span a whole block.
  if (!space || tiling.getInRegisters() || tiling.getRowsPerBlock() != 1 ||
      space->length % vec || loopedRowPasses(kernel, *space) < 2)
    return;
  SmallVector<BlockArgument> streamed = streamedRowInputs(kernel, *space);
  LaunchAttr launch = kernel.getLaunchAttr();
  constexpr int64_t threads = 1024;
  int64_t chunks =
      (launch.getBlock() * tiling.getChunks() + threads - 1) / threads;
  int64_t bytes = 0;
  for (BlockArgument arg : streamed)
    bytes += threads * chunks * vec *
             getElementTypeOrSelf(arg.getType()).getIntOrFloatBitWidth() / 8;
  if (streamed.empty() || bytes > kMaxStagedRowBytes)
    return;
  MLIRContext *ctx = kernel.getContext();
  kernel.setTilingAttr(RowTilingAttr::get(ctx, vec, chunks, false, true, 1, 1));
  kernel.setLaunchAttr(LaunchAttr::get(ctx, launch.getGrid(), threads,
                                       launch.getItems(), bytes,
                                       /*minBlocksPerSM=*/0));
}

/// What kf-promote-shared decides for a tensor-core matmul: its launch
/// (refined from kf-tile's) and its pipeline.
struct MatmulShared {
  int64_t grid = 0, block = 0, items = 0, sharedBytes = 0, stages = 0;
  bool stageOutput = false, persistent = false, tma = false;
  int64_t mmaGroups = 1;
  RowInterleave rows;
  /// kf-tile's narrow edge tiles as the pipeline keeps them (mma_tiling's
  /// edgeN): widened to the interleaved rows' alignment, or 0 without the
  /// warp-specialised template.
  int64_t edgeN = 0;
};

/// wgmma tiles on Hopper: the two warpgroups only multiply, and one thread
/// of a third copies the operand tiles with the TMA, stages handed over
/// through mbarriers (MatmulTmaPipeline.cpp), so that no K step waits at a
/// block barrier. The output is staged past the stages, which the copies
/// refill while the epilogue runs; the block loops over tiles. Measured
/// on the H200 against cp.async with a block barrier a K step (same run):
/// 4096^3 0.1991 -> 0.1909 ms, 8192^3 1.784 -> 1.605 ms.
///
/// Output rows that are not whole 32-byte sectors (the lm-head's N =
/// 50257, or 4104 bf16 columns) are tiled in interleaved groups of rows,
/// so that every row segment of a tile starts on a 128-byte boundary
/// (`row_groups`, `row_align`; see RowInterleave) and leaves in 16-byte
/// vectors. H200, the lm-head's time over N = 50304's (the two timed in turns,
/// as `kfuse-bench matmul --workload pairs` does; two runs): 1.152 and 1.154
/// with the rows stored an element at a time, 1.058 twice with 16-byte
/// boundaries, 1.034 and 1.035 with 128-byte ones.
void specializeWarps(MatmulShared &d, const MatmulTile &tile,
                     const MatmulProblem &problem, int64_t outputWidth,
                     int64_t outputStride, int64_t sms) {
  int64_t staged =
      tile.bm * (stagedOutputCols(tile, true, outputWidth) + 8) * outputWidth;
  // Two mbarriers (8 bytes each) a stage.
  int64_t stage = stageBytes(tile, problem) + 16;
  d.stages =
      std::clamp<int64_t>((kSharedPerSM - staged) / stage, 2, kMaxTmaStages);
  RowInterleave rows;
  if (outputWidth)
    rows = chooseRowInterleave(problem, tile, outputStride, outputWidth);
  if (rows.active()) {
    auto [m, n] = matmulTileCounts(problem, tile, rows);
    d.items = m * n;
    d.rows = rows;
  }
  d.persistent = false;
  d.tma = true;
  d.block = tile.threads() + 128;
  // Two K steps of products in flight a warpgroup rather than one: with a
  // single group the tensor cores idle while each group drains before the
  // next is issued. H200, same run: 4096^3 0.1900 -> 0.1799 ms, 8192^3
  // 1.704 -> 1.627 ms. A third stage at least keeps a copy in flight.
  d.mmaGroups = std::min<int64_t>(2, d.stages - 1);
  d.grid = std::min(d.items, sms);
  d.sharedBytes = d.stages * stage + staged;
}

/// kf-tile's narrow edge tiles as pipeline `d` keeps them: the
/// warp-specialised template's only, and not where the kernel sums columns
/// (over whole tiles' columns); as wide as `d`'s interleaved rows align.
int64_t keptEdgeCols(KernelOp kernel, const MatmulTile &tile,
                     const MatmulProblem &problem, const MatmulShared &d) {
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  bool sumsColumns = llvm::any_of(
      yield.getValues(), [](Value v) { return bool(columnPartialsSource(v)); });
  if (!tile.edgeN || !d.tma || sumsColumns)
    return 0;
  return narrowEdgeCols(problem, tile, d.rows);
}

/// The shared-memory pipeline of a tensor-core matmul kernel, with copies
/// of cp.async, or persistent, or warp-specialised around the TMA.
MatmulShared decideMatmul(KernelOp kernel, bool tma, int64_t sms) {
  MatmulTile tile = matmulTileOf(kernel);
  MatmulProblem problem = MatmulProblem::of(matmulOf(kernel));
  LaunchAttr launch = kernel.getLaunchAttr();
  MatmulShared d;
  d.grid = launch.getGrid();
  d.block = launch.getBlock();
  d.items = launch.getItems();
  d.stages = pipelineStages(tile, problem);
  d.sharedBytes = d.stages * stageBytes(tile, problem);
  int64_t outputWidth = 0; // bytes an element, when staged
  // The output tile leaves through shared memory in whole rows, 16
  // bytes a thread where rows allow: with wgmma (measured on the H200:
  // 4096^3 bf16 0.213 -> 0.200 ms, lm-head 1.54 -> 1.44 ms), and for
  // rows of an odd length, whose pairs cannot be stored from
  // registers, and for rows kf-pad padded (the copy writes the zeros
  // past each row's end). Float results only; besides the column
  // partials of kf-fuse-column-sums (which the epilogue stores from
  // registers), several results pass through the one staged tile in turn
  // where they are alike (a pre-activation the backward saves and its
  // activation).
  auto result = mlir::cast<RankedTensorType>(kernel.getResult(0).getType());
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  int64_t stride0 = paddedRowStride(kernel.getResult(0));
  bool oneTile = llvm::all_of(
      llvm::enumerate(yield.getValues()), [&](auto indexed) {
        auto [i, v] = indexed;
        return columnPartialsSource(v) ||
               (v.getType() == result &&
                paddedRowStride(kernel.getResult(i)) == stride0);
      });
  if ((tile.wgmma || problem.n % 2 || paddedRowStride(kernel.getResult(0))) &&
      isa<FloatType>(result.getElementType()) && oneTile) {
    d.stageOutput = true;
    outputWidth = result.getElementType().getIntOrFloatBitWidth() / 8;
    int64_t staged = tile.bm * (tile.bn + 8) * outputWidth;
    d.sharedBytes = std::max(d.sharedBytes, staged);
    // More tiles than SMs: one block an SM loops over tiles, the next
    // tile's first two stages filling while this one's output, staged
    // in the stages past them, is stored.
    // (Not for split-K's partial products: their tiles are meant to
    // fill every block slot, two blocks an SM where they fit.)
    if (tile.wgmma && d.stages == 4 && problem.splits == 1 &&
        2 * stageBytes(tile, problem) >= staged && d.items > sms) {
      d.persistent = true;
      d.grid = sms;
    }
  }
  // A's TMA boxes are a tile's rows: below that, most of each copy is
  // zero fill, and the M = 16 matmul took 0.030 ms against 0.022 with
  // cp.async (H200).
  if (tile.wgmma && tma && problem.m >= tile.bm)
    specializeWarps(d, tile, problem, outputWidth,
                    rowStrideOf(kernel.getResult(0)), sms);
  d.edgeN = keptEdgeCols(kernel, tile, problem, d);
  return d;
}

struct KFPromoteSharedPass
    : public kfuse::kf::impl::KFPromoteSharedPassBase<KFPromoteSharedPass> {
  using KFPromoteSharedPassBase::KFPromoteSharedPassBase;

  void runOnOperation() override {
    int64_t sms = TargetAttr::of(getOperation()).getMultiprocessors();
    getOperation().walk([&](KernelOp kernel) {
      if (auto flash = kernel.getTilingAs<FlashTilingAttr>())
        return promoteAttention(kernel, flash, tma);
      if (auto grad = kernel.getTilingAs<FlashGradTilingAttr>())
        return promoteAttentionGrad(kernel, grad, gradTma);
      if (auto rows = kernel.getTilingAs<RowTilingAttr>())
        return promoteRows(kernel, rows);
      if (!kernel.getTilingAs<MmaTilingAttr>())
        return;
      MatmulShared d = decideMatmul(kernel, tma, sms);
      MLIRContext *ctx = kernel.getContext();
      if (auto t = kernel.getTilingAs<MmaTilingAttr>(); t.getEdgeN() != d.edgeN)
        kernel.setTilingAttr(MmaTilingAttr::get(
            ctx, t.getTileM(), t.getTileN(), t.getTileK(), t.getWarpsM(),
            t.getWarpsN(), t.getGroupM(), t.getWgmma(), t.getTf32(), d.edgeN));
      kernel.setLaunchAttr(
          LaunchAttr::get(ctx, d.grid, d.block, d.items, d.sharedBytes,
                          /*minBlocksPerSM=*/0));
      kernel.setPipelineAttr(MmaPipelineAttr::get(
          ctx, d.stages, d.stageOutput, d.persistent, d.tma, d.mmaGroups,
          d.rows.groups, d.rows.align));
    });
  }
};

} // namespace
