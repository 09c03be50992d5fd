//===- MatmulTmaPipeline.cpp - the warp-specialised TMA matmul ------------===//
//
// Config `tma` (kf-promote-shared): the block's first two warpgroups only
// multiply; one thread of the third copies A's and B's tiles of each K step
// with the TMA, into the same swizzled layouts (a box of 64 columns is one
// 128-byte swizzle span). Per stage two mbarriers hand the stage over:
// full[s] completes when the copying thread has announced the stage's bytes
// and they have landed, empty[s] when both multiplying warpgroups are done
// with it, which is `mma_groups` K steps after their products were issued.
// Nobody waits at a block barrier in the K loop. The block loops
// over output tiles, its K steps counted on across them, so that the copies
// of the next tile land while this tile's epilogue runs (the output is
// staged past the stages). A narrow last column of tiles (mma_tiling's
// edgeN) comes after the whole tiles, on the blocks that have fewer of
// them; its copies take A's tile and the edge's rows of B only (a tensor
// map of its own where B is K-major), its products an m64nEk16 wgmma of the
// edge's width, its epilogue as wide.
//
//===----------------------------------------------------------------------===//

#include "codegen/emitter/AsyncCopy.h"
#include "codegen/templates/matmul/MatmulKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

LogicalResult TensorCoreMatmul::emitWarpSpecialized() {
  initBarriers();
  Value bid = gpu::BlockIdOp::create(b, l, gpu::Dimension::x);
  Value grid = gpu::GridDimOp::create(b, l, gpu::Dimension::x);
  // The copying warpgroup gives registers to the multiplying ones, which
  // hold 128 accumulators a thread.
  return async::splitRoles(
      b, l, tid, t.threads(),
      [&] {
        return forEachTile(bid, grid, [&](Value first) -> LogicalResult {
          produceSteps(first);
          return success();
        });
      },
      [&] {
        return forEachTile(bid, grid, [&](Value first) -> LogicalResult {
          LogicalResult prefetched = success();
          Value acc = consumeSteps(
              first, [&] { prefetched = prefetchEpilogueInputs(); });
          if (failed(prefetched))
            return failure();
          return finish({acc});
        });
      });
}

/// Block `bid` takes whole tiles bid, bid + grid, ...; then, where the
/// last column of tiles is narrow, edge tiles on the blocks that took one
/// whole tile fewer than others (all blocks where they took as many): of
/// `whole` tiles the first whole % grid blocks took one more, and the
/// others take edge tiles bid - whole % grid, + the number of them, ...
/// Both roles visit the same tiles in the same order; K steps count on
/// across them.
LogicalResult
TensorCoreMatmul::forEachTile(Value bid, Value grid,
                              function_ref<LogicalResult(Value)> body) {
  int64_t edges = t.edgeN ? p.batch * mTiles : 0;
  int64_t whole = p.splits * p.batch * mTiles * nTiles - edges;
  if (failed(e.forEachItem(whole, true, [&](Value tile) -> LogicalResult {
        tileAt = locate(tile);
        // The K steps of the tiles this block did before `tile`.
        Value done = arith::DivUIOp::create(
            b, l, arith::SubIOp::create(b, l, tile, bid), grid);
        return body(mul(done, kTiles));
      })))
    return failure();
  if (!edges)
    return success();
  Value wholeDone = arith::DivUIOp::create(
      b, l,
      arith::SubIOp::create(b, l, add(idx(whole), grid), add(bid, idx(1))),
      grid);
  Value extra = arith::RemUIOp::create(b, l, idx(whole), grid);
  Value light = arith::SubIOp::create(b, l, grid, extra);
  Value takes =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, bid, extra);
  Value first = arith::SelectOp::create(
      b, l, takes, arith::SubIOp::create(b, l, bid, extra), idx(edges));
  auto loop = scf::ForOp::create(b, l, first, idx(edges), light);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value j = loop.getInductionVar();
  tileAt = locateEdge(j);
  Value done =
      add(wholeDone, arith::DivUIOp::create(
                         b, l, arith::SubIOp::create(b, l, j, first), light));
  Value step = mul(done, kTiles);
  return asEdgeTile([&] { return body(step); });
}

LogicalResult TensorCoreMatmul::asEdgeTile(function_ref<LogicalResult()> body) {
  MatmulTile whole = t;
  int64_t wholeCols = stagedCols;
  t.bn = t.edgeN;
  stagedCols =
      stagedOutputCols(t, tma,
                       getElementTypeOrSelf(e.kernel().getResult(0).getType())
                               .getIntOrFloatBitWidth() /
                           8);
  edgeTile = true;
  LogicalResult done = body();
  t = whole;
  stagedCols = wholeCols;
  edgeTile = false;
  return done;
}

/// full[s] completes when the copying thread arrived (announcing the
/// stage's bytes) and the bytes landed; empty[s] when the first thread of
/// each multiplying warpgroup arrived, the warpgroup's products of the
/// stage done (wgmma.wait_group waits for the whole warpgroup's), as
/// CUTLASS does, rather than 256 shared-memory atomics a K step.
void TensorCoreMatmul::initBarriers() {
  async::initBarriers(b, l, tid, [&] {
    for (int64_t s = 0; s < stages; ++s) {
      async::initBarrier(b, l, fullBarrier(idx(s)), 1);
      async::initBarrier(b, l, emptyBarrier(idx(s)), t.threads() / 128);
    }
  });
}

Value TensorCoreMatmul::consumeSteps(Value first,
                                     function_ref<void()> beforeDrain) {
  Value signals = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                        rem(tid, 128), idx(0));
  auto release = [&](Value g) {
    auto ifOp = scf::IfOp::create(b, l, signals, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    NVVM::MBarrierArriveOp::create(b, l, Type(), emptyBarrier(rem(g, stages)),
                                   Value());
  };
  // Step kt of the tile (the first overwrites the accumulators).
  auto step = [&](Value kt, Value acc, bool firstStep) {
    Value g = add(first, kt);
    async::waitParity(b, l, fullBarrier(rem(g, stages)), phaseOf(g));
    // multiplyWgmma waits for the products of step g - mmaGroups: its
    // stage is free for the copies of step g - mmaGroups + stages.
    Value next = multiplyWgmma(rem(g, stages), acc, firstStep);
    if (firstStep)
      return next;
    auto done =
        scf::IfOp::create(b, l,
                          arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                                kt, idx(mmaGroups)),
                          false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(done.thenBlock());
    release(arith::SubIOp::create(b, l, g, idx(mmaGroups)));
    return next;
  };
  Value acc = step(idx(0), undefAccumulators(), true);
  acc = e.loop(kTiles - 1, {acc}, [&](Value kt, ValueRange c) {
    return SmallVector<Value>{step(add(kt, idx(1)), c[0], false)};
  })[0];
  if (beforeDrain)
    beforeDrain();
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, 0);
  for (int64_t kt = std::max<int64_t>(0, kTiles - mmaGroups); kt < kTiles; ++kt)
    release(add(first, idx(kt)));
  return acc;
}

void TensorCoreMatmul::produceSteps(Value first) {
  // Where a K step's tile starts in an operand as laid out in memory: at
  // row m0 (n0) and column k0, or the other way round where K runs along
  // the rows.
  auto origin = [](bool kRows, Value mn, Value k0) {
    return kRows ? std::pair(k0, mn) : std::pair(mn, k0);
  };
  e.loop(kTiles, {}, [&](Value kt, ValueRange) {
    Value g = add(first, kt), stage = rem(g, stages);
    Value phase =
        arith::XOrIOp::create(b, l, phaseOf(g), e.constant(b.getI32Type(), 1));
    async::waitParity(b, l, emptyBarrier(stage), phase);
    Value full = fullBarrier(stage);
    // An edge tile's stage holds A's tile and the edge's rows of B.
    int64_t copied = edgeTile ? a.tile.elements() + t.bn * t.bk : stageElements;
    NVVM::MBarrierArriveExpectTxOp::create(
        b, l, Type(), full, e.constant(b.getI32Type(), copied * t.elementBytes),
        NVVM::MemScopeKind::CTA, false, Value());
    Value k0 = add(tileAt.kBase, mul(kt, t.bk)),
          bytes = mul(stage, stageElements * t.elementBytes);
    auto [aRow, aCol] = origin(p.transposeA, tileAt.m0, k0);
    auto [bRow, bCol] = origin(!p.transposeB, tileAt.n0, k0);
    copyWithTma(0, aRow, aCol, bytes, full);
    copyWithTma(edgeTile && tmaMaps.size() > 2 ? 2 : 1, bRow, bCol,
                add(bytes, idx(bOp.offset * t.elementBytes)), full);
    return SmallVector<Value>{};
  });
}

void TensorCoreMatmul::copyWithTma(unsigned which, Value row0, Value col0,
                                   Value stageBytes, Value full) {
  const TmaOperand &op = tmaMaps[which];
  unsigned arg = e.kernel().getInputs().size() + e.kernel().getNumResults();
  Value map = e.gpuFunc().getArgument(arg + which);
  // An edge tile of an N-major B copies the boxes of its own columns.
  int64_t boxes =
      edgeTile && which == 1 && !p.transposeB ? t.bn / op.boxCols : op.boxes;
  for (int64_t j = 0; j < boxes; ++j) {
    SmallVector<Value> at = {add(col0, idx(j * op.boxCols)), row0};
    if (op.rowGroups > 1)
      at = {at[0], tileAt.rowGroup, row0};
    else if (op.rank == 3)
      at.push_back(tileAt.batch);
    async::loadBox(
        b, l, map, at,
        sharedPointer(add(stageBytes, idx(j * op.boxRows * kTmaBoxBytes))),
        full);
  }
}

Value TensorCoreMatmul::fullBarrier(Value stage) {
  return sharedPointer(add(idx(barrierOffset), mul(stage, 8)));
}

Value TensorCoreMatmul::emptyBarrier(Value stage) {
  return sharedPointer(add(idx(barrierOffset + stages * 8), mul(stage, 8)));
}

Value TensorCoreMatmul::sharedPointer(Value byteOffset) {
  return async::sharedPointer(b, l, add(sharedBase, byteOffset));
}

Value TensorCoreMatmul::phaseOf(Value g) {
  return arith::IndexCastOp::create(b, l, b.getI32Type(),
                                    rem(div(g, stages), 2));
}

void TensorCoreMatmul::syncConsumers() {
  if (!tma) {
    gpu::BarrierOp::create(b, l);
    return;
  }
  // Named barrier 1: the copying warpgroup never joins it.
  NVVM::BarrierOp::create(b, l, Type(), e.constant(b.getI32Type(), 1),
                          e.constant(b.getI32Type(), t.threads()),
                          NVVM::BarrierReductionAttr(), Value());
}
