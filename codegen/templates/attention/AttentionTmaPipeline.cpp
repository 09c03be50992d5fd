//===- AttentionTmaPipeline.cpp - warp-specialised attention --------------===//
//
// Config `tma` (kf-promote-shared): warpgroups 0 and 1 take 64 query rows
// each and only multiply and run the softmax; one thread of warpgroup 2
// copies the block's Q tile once and then, per key tile j, K_j and V_{j-1}
// (the order the products read them in) with the TMA into `stages` stages,
// zero-filled past the sequence and the head dim by the tensor maps. Per
// stage mbarriers hand K and V over on their own: full when the bytes
// landed, empty when both multiplying warpgroups' products that read them
// are done. Nobody waits at a block barrier in the key loop. Where the
// kernel computes q (RoPE from tables), the multiplying warpgroups write
// Q's tile themselves and meet at a named barrier the copier never joins.
//
// The two multiplying warpgroups run free of each other. Making them issue
// their products in turns (FlashAttention 3's ping-pong, two named
// barriers: one's softmax under the other's products) measured slower on
// the H200 with 64-key tiles: 385 against 470 TFLOP/s at B4 H16 S4096
// D128, 260 against 311 at S2048 D64; 128-key tiles, 313 and 333.
//
//===----------------------------------------------------------------------===//

#include "codegen/emitter/AsyncCopy.h"
#include "codegen/emitter/Wgmma.h"
#include "codegen/templates/attention/AttentionKernel.h"
#include "analysis/MatmulTiling.h"
#include "analysis/KernelAnalysis.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

/// Warpgroups 0 and 1.
static constexpr int64_t kMultiplyingThreads = 256;

LogicalResult FlashAttention::emitWarpSpecialized() {
  initBarriers();
  auto [unmasked, last] = keyTileRanges();
  return async::splitRoles(
      b, l, tid, kMultiplyingThreads,
      [&] {
        produceTiles(last);
        return success();
      },
      [&] { return consumeTiles(unmasked, last); });
}

/// Q's barrier first, then per stage K full, V full, K empty, V empty.
Value FlashAttention::barrier(Barrier kind, Value tile) {
  Value at = idx(barrierOffset);
  if (kind != Barrier::QFull)
    at = add(
        at,
        mul(add(idx((int64_t(kind) - 1) * stages + 1), rem(tile, stages)), 8));
  return async::sharedPointer(b, l, add(sharedBase, at));
}

Value FlashAttention::phaseOf(Value tile) {
  return arith::IndexCastOp::create(b, l, b.getI32Type(),
                                    rem(div(tile, stages), 2));
}

/// Full barriers complete on the copying thread's arrival (announcing the
/// bytes) and the bytes; empty ones on the first thread of each
/// multiplying warpgroup, as CUTLASS does, once wgmma.wait_group says the
/// warpgroup's products are done.
void FlashAttention::initBarriers() {
  async::initBarriers(b, l, tid, [&] {
    async::initBarrier(b, l, barrier(Barrier::QFull), 1);
    for (int64_t s = 0; s < stages; ++s) {
      async::initBarrier(b, l, barrier(Barrier::KFull, idx(s)), 1);
      async::initBarrier(b, l, barrier(Barrier::VFull, idx(s)), 1);
      async::initBarrier(b, l, barrier(Barrier::KEmpty, idx(s)),
                         kMultiplyingThreads / 128);
      async::initBarrier(b, l, barrier(Barrier::VEmpty, idx(s)),
                         kMultiplyingThreads / 128);
    }
  });
}

void FlashAttention::produceTiles(Value last) {
  auto expect = [&](Value full, int64_t bytes) {
    NVVM::MBarrierArriveExpectTxOp::create(
        b, l, Type(), full, e.constant(b.getI32Type(), bytes),
        NVVM::MemScopeKind::CTA, false, Value());
  };
  if (!qComputed) {
    Value qFull = barrier(Barrier::QFull);
    expect(qFull, blockQ * dp * 2);
    // Q as loadQ places it: [dp / 64][block_q rows][64].
    for (int64_t c = 0; c < dp / 64; ++c)
      async::loadBox(
          b, l, qMap, {idx(c * 64), q0, qSlice},
          async::sharedPointer(b, l, add(sharedBase, idx(c * blockQ * 128))),
          qFull);
  }
  auto loop = scf::ForOp::create(b, l, idx(0), add(last, idx(1)), idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  auto key = scf::IfOp::create(b, l, less(j, last), false);
  b.setInsertionPointToStart(key.thenBlock());
  produceTile(false, j);
  b.setInsertionPointAfter(key);
  auto value = scf::IfOp::create(b, l, less(idx(0), j), false);
  b.setInsertionPointToStart(value.thenBlock());
  produceTile(true, arith::SubIOp::create(b, l, j, idx(1)));
}

/// K_j as loadK places it ([dp / 64][block_k keys][64]), or V_j as loadV
/// does ([block_k / 64][dvp / 64][64 keys][64]), one box a 64-column chunk.
void FlashAttention::produceTile(bool value, Value tile) {
  async::waitParity(b, l,
                    barrier(value ? Barrier::VEmpty : Barrier::KEmpty, tile),
                    arith::XOrIOp::create(b, l, phaseOf(tile),
                                          e.constant(b.getI32Type(), 1)));
  Value full = barrier(value ? Barrier::VFull : Barrier::KFull, tile);
  NVVM::MBarrierArriveExpectTxOp::create(
      b, l, Type(), full,
      e.constant(b.getI32Type(), blockK * (value ? dvp : dp) * 2),
      NVVM::MemScopeKind::CTA, false, Value());
  Value k0 = mul(tile, blockK);
  auto copy = [&](Value map, Value key, int64_t col, Value element) {
    async::loadBox(b, l, map, {idx(col), key, kvSlice},
                   async::sharedPointer(b, l, add(sharedBase, mul(element, 2))),
                   full);
  };
  if (!value) {
    for (int64_t c = 0; c < dp / 64; ++c)
      copy(kMap, k0, c * 64, add(kStage(tile), idx(c * blockK * 64)));
    return;
  }
  for (int64_t keys = 0; keys < blockK; keys += 64)
    for (int64_t c = 0; c < dvp / 64; ++c)
      copy(vMap, add(k0, idx(keys)), c * 64,
           add(vStage(tile), vOffset(idx(keys), idx(c * 64))));
}

LogicalResult FlashAttention::consumeTiles(Value unmasked, Value last) {
  if (qComputed) {
    computeQ();
    // Q K^T reads Q's tile through the async proxy unless Q stays in
    // registers; named barrier 1 holds the multiplying threads only.
    if (!qInRegisters)
      wgmma::fenceSharedForAsyncProxy(b, l);
    NVVM::BarrierOp::create(b, l, Type(), e.constant(b.getI32Type(), 1),
                            e.constant(b.getI32Type(), kMultiplyingThreads),
                            NVVM::BarrierReductionAttr(), Value());
  } else {
    async::waitParity(b, l, barrier(Barrier::QFull),
                      e.constant(b.getI32Type(), 0));
  }
  if (qInRegisters)
    qFragments = loadQFragments();
  // Tile 0 has no P V before it; it is masked where it must be and may be.
  RowState state = step(idx(0), initialState(), true, /*first=*/true);
  Value unmaskedFrom = arith::MaxUIOp::create(b, l, unmasked, idx(1));
  state = runTiles(idx(1), unmaskedFrom, state, false);
  state = runTiles(unmaskedFrom, last, state, true);
  state.acc = finishValues(last, state);
  if (failed(status))
    return failure();
  return store(state);
}

void FlashAttention::awaitTiles(Value tile, bool first) {
  async::waitParity(b, l, barrier(Barrier::KFull, tile), phaseOf(tile));
  if (first)
    return;
  Value prior = arith::SubIOp::create(b, l, tile, idx(1));
  async::waitParity(b, l, barrier(Barrier::VFull, prior), phaseOf(prior));
}

void FlashAttention::release(Value emptyBarrier) {
  auto signals =
      scf::IfOp::create(b, l,
                        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                              rem(tid, 128), idx(0)),
                        false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(signals.thenBlock());
  NVVM::MBarrierArriveOp::create(b, l, Type(), emptyBarrier, Value());
}
