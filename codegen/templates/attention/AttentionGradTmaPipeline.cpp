//===- AttentionGradTmaPipeline.cpp - warp-specialised attention backward -===//
//
// Pipeline `tma` of FlashAttention's backward (deterministic kernels):
// warpgroups 0 and 1 multiply, as AttentionGradKernel.cpp's loop does, and
// one thread of warpgroup 2 copies with the TMA: the block's own 128 rows
// of two operands once, then each streamed 64-row tile of the other two
// into `stages` stages, zero-filled past the sequence and the head dim by
// the tensor maps. Per stage mbarriers hand the tiles over: full when the
// bytes landed, empty when both computing warpgroups' products that read
// them are done. The computing warpgroups neither copy nor wait at a block
// barrier in the loop, as in FlashAttention 3's backward; the cp.async
// kernel copies with all 256 threads and meets at a barrier every tile.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/attention/AttentionGradKernel.h"

#include "codegen/emitter/AsyncCopy.h"
#include "codegen/emitter/Wgmma.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

/// The owned rows' barrier first, then per stage full, then per stage
/// empty.
Value FlashAttentionGrad::barrier(Barrier kind, Value stage) {
  Value at = idx(barrierOffset);
  if (kind != Barrier::OwnFull)
    at = add(
        at, mul(add(idx(1 + (kind == Barrier::Empty ? stages : 0)), stage), 8));
  return async::sharedPointer(b, l, add(sharedBase, at));
}

Value FlashAttentionGrad::phaseOf(Value tile) {
  return arith::IndexCastOp::create(b, l, b.getI32Type(),
                                    rem(div(tile, stages), 2));
}

/// Full barriers complete on the copying thread's arrival (announcing the
/// bytes) and the bytes; empty ones on the first thread of each computing
/// warpgroup, once its products that read the stage are done.
void FlashAttentionGrad::initBarriers() {
  async::initBarriers(b, l, tid, [&] {
    async::initBarrier(b, l, barrier(Barrier::OwnFull), 1);
    for (int64_t s = 0; s < stages; ++s) {
      async::initBarrier(b, l, barrier(Barrier::Full, idx(s)), 1);
      async::initBarrier(b, l, barrier(Barrier::Empty, idx(s)), kThreads / 128);
    }
  });
}

void FlashAttentionGrad::copyBoxes(const OperandRows &operand, Value slice,
                                   Value row0, int64_t rows, int64_t width,
                                   int64_t at, Value stageAt, Value full) {
  // [width / 64][rows][64] as copyOwn and copyTile place it: a box's 64
  // rows of 128 bytes are one swizzled 8 KB piece of a 64-column chunk.
  for (int64_t c = 0; c < width / 64; ++c)
    for (int64_t r = 0; r < rows; r += kTile) {
      Value element = add(stageAt, idx(at + c * rows * 64 + r * 64));
      async::loadBox(
          b, l, operand.map, {idx(c * 64), add(row0, idx(r)), slice},
          async::sharedPointer(b, l, add(sharedBase, mul(element, 2))), full);
    }
}

Value FlashAttentionGrad::statsAt(Value stage) {
  return add(sharedBase, add(idx(statsOffset), mul(stage, 8 * kTile)));
}

void FlashAttentionGrad::clearStats() {
  int64_t floats = stages * 2 * kTile;
  for (int64_t first = 0; first < floats; first += 3 * 128) {
    Value at = add(idx(first), tid);
    auto inside = scf::IfOp::create(b, l, less(at, idx(floats)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    LLVM::StoreOp::create(
        b, l, e.f32(0),
        async::sharedPointer(b, l, add(statsAt(idx(0)), mul(at, 4))));
  }
  // Before the copies (the async proxy) write there; initBarriers' block
  // barrier orders the stores before them.
  wgmma::fenceSharedForAsyncProxy(b, l);
}

Value FlashAttentionGrad::statsBytes(Value row0) {
  // The tile's queries of the slice (sq - row0 is a multiple of 4: whole
  // 16-byte pieces); none past the slice, so none past the buffer.
  Value rows = minIndex(idx(kTile), arith::SubIOp::create(b, l, idx(sq), row0));
  return arith::IndexCastOp::create(b, l, b.getI32Type(), mul(rows, 4));
}

void FlashAttentionGrad::copyStats(Value slice, Value row0, Value bytes,
                                   Value stage, Value full) {
  Value first = add(mul(slice, sq), row0);
  Value stats[] = {lse, delta};
  for (auto [i, stat] : llvm::enumerate(stats))
    async::loadBulk(
        b, l,
        async::sharedPointer(b, l, add(statsAt(stage), idx(4 * kTile * i))),
        async::globalAddress(b, l, stat, first), bytes, full);
}

void FlashAttentionGrad::produceTiles(const Roles &roles, const Tiles &tiles) {
  auto expect = [&](Value full, Value bytes) {
    NVVM::MBarrierArriveExpectTxOp::create(
        b, l, Type(), full, bytes, NVVM::MemScopeKind::CTA, false, Value());
  };
  Value ownFull = barrier(Barrier::OwnFull);
  expect(ownFull, e.constant(b.getI32Type(), 2 * kRows * (dp + dvp)));
  copyBoxes(*roles.ownA, roles.ownSlice, roles.ownRow0, kRows, dp, 0, idx(0),
            ownFull);
  copyBoxes(*roles.ownB, roles.ownSlice, roles.ownRow0, kRows, dvp, kRows * dp,
            idx(0), ownFull);
  auto loop = scf::ForOp::create(b, l, idx(0), tiles.count, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar(), stage = rem(t, stages);
  // The stage's last tile is done with (the first time round, the phase
  // before the barrier's first completes at once).
  async::waitParity(
      b, l, barrier(Barrier::Empty, stage),
      arith::XOrIOp::create(b, l, phaseOf(t), e.constant(b.getI32Type(), 1)));
  Value full = barrier(Barrier::Full, stage);
  Value slice = tiles.sliceOf(t), row0 = tiles.rowOf(t);
  // The stage's bytes announced before its copies are issued.
  Value bytes = e.constant(b.getI32Type(), 2 * kTile * (dp + dvp));
  Value statBytes = stagesStats(roles) ? statsBytes(row0) : Value();
  if (statBytes)
    bytes = arith::AddIOp::create(
        b, l, bytes, arith::AddIOp::create(b, l, statBytes, statBytes));
  expect(full, bytes);
  if (statBytes)
    copyStats(slice, row0, statBytes, stage, full);
  copyBoxes(*roles.tileA, slice, row0, kTile, dp, 0, stageA(stage), full);
  copyBoxes(*roles.tileB, slice, row0, kTile, dvp, 0, stageB(stage), full);
}

void FlashAttentionGrad::consumeTiles(
    const Roles &roles, const Tiles &tiles, SmallVector<Value> acc,
    function_ref<void(ArrayRef<Value>)> finish) {
  async::waitParity(b, l, barrier(Barrier::OwnFull),
                    e.constant(b.getI32Type(), 0));
  // Query blocks read the statistics of their own rows, once.
  std::optional<RowStats> ownStats;
  if (!roles.keys) {
    ownStats.emplace();
    for (bool shifts : {true, false})
      loadStats(roles, roles.ownSlice, idx(0), shifts, *ownStats);
  }
  auto loop = scf::ForOp::create(b, l, idx(0), tiles.count, idx(1), acc);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value t = loop.getInductionVar(), stage = stageOf(t);
    async::waitParity(b, l, barrier(Barrier::Full, stage), phaseOf(t));
    SmallVector<Value> state =
        step(roles, SmallVector<Value>(loop.getRegionIterArgs()), stage,
             ownStats, tiles.sliceOf(t), tiles.rowOf(t));
    // step waited for all of the warpgroup's products: the stage is free.
    // (One thread a warpgroup releases it, as CUTLASS does: the other
    // warps' reads of the stage, the statistics included, feed the
    // warpgroup's products, which its wait covers.)
    auto signals =
        scf::IfOp::create(b, l,
                          arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                rem(tid, 128), idx(0)),
                          false);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(signals.thenBlock());
      NVVM::MBarrierArriveOp::create(b, l, Type(),
                                     barrier(Barrier::Empty, stage), Value());
    }
    scf::YieldOp::create(b, l, state);
  }
  finish(SmallVector<Value>(loop.getResults()));
}
