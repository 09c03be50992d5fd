//===- AttentionGradKernel.cpp - kf-lower-to-gpu's FlashAttention backward ===//
//
// kf.attention_grad on sm_90a, FlashAttention 2's backward without atomics:
// a block of two warpgroups owns 128 rows (64 a warpgroup) of two operands,
// copied into shared memory once, and streams 64-row tiles of the other two
// through two stages (one past head dims of 128; cp.async, a block barrier
// a tile):
//
//   key blocks own K and V rows of one kv head and stream Q_i and dO_i over
//   the query tiles of every head that shares it:
//     S^T = K Q_i^T    dP^T = V dO_i^T     wgmma, both operands shared
//     P^T = exp(scale S^T - lse)   dS^T = P^T (dP^T - delta)
//     dV += P^T dO_i   dK += dS^T Q_i      wgmma, P^T and dS^T in registers
//   query blocks own Q and dO rows of one head and stream K_j and V_j:
//     S = Q K_j^T      dP = dO V_j^T       P, dS as above    dQ += dS K_j
//
// Both are one loop: X = ownA tileA^T and Y = ownB tileB^T give P and dS;
// query blocks accumulate dS tileA, key blocks dS^T tileA and P^T tileB. A
// 64-row tile in the 128-byte swizzled K-major layout is the M/N-major
// layout of the same tile with its rows along K, so each streamed tile
// serves both of its products as copied (as in FlashAttention 3). The
// accumulator layout of X and Y is the A-fragment layout of the next
// product, so P and dS never leave registers. Every block writes only its
// own rows of dq, or of dk and dv: no atomics, and the result is the same
// from run to run. dk and dv are summed over the heads of a group in the
// loop.
//
// Past head dims of 128 a thread's registers do not hold dK's and dV's
// accumulators together (splitKeyBlocks): key blocks accumulate dK alone,
// and blocks of their own dV alone, which need neither dP nor dS (the
// exponentials are computed twice, the products of S^T once more). Two
// operands owned and two stages of 256-column tiles pass the shared
// memory: such kernels stream through one stage, the next tile's copy
// issued once the last tile's products are done.
//
// With dqAtomic there are no query blocks: the key blocks add dq up
// (AttentionGradAtomicDq.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/attention/AttentionGradKernel.h"

#include "analysis/MatmulTiling.h"
#include "codegen/emitter/AsyncCopy.h"
#include "codegen/emitter/Wgmma.h"
#include "codegen/templates/attention/AttentionKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

FlashAttentionGrad::FlashAttentionGrad(KernelEmitter &e, AttentionGradOp op)
    : IndexArithmetic(e), op(op) {
  ArrayRef<int64_t> qs = shapeOf(op.getQ()), ks = shapeOf(op.getK());
  heads = qs[1];
  kvHeads = ks[1];
  group = heads / kvHeads;
  sq = qs[2];
  sk = ks[2];
  d = qs[3];
  dv = shapeOf(op.getV())[3];
  auto tiling = e.kernel().getTilingAs<FlashGradTilingAttr>();
  dp = tiling.getHeadDim();
  dvp = tiling.getValueDim();
  kvBlocks = tiling.getKvBlocks();
  dqAtomic = tiling.getDqAtomic();
  splitKeyBlocks = tiling.getSplitKeyBlocks();
  if (std::optional<unsigned> result = resultIndexOf(e.kernel(), op.getDq()))
    dqArgument = e.kernel().getNumOperands() + *result;
  bulkDq =
      dqAtomic && dqArgument && d % 4 == 0 && !e.paddedStride(*dqArgument);
  scale = op.getScale().convertToDouble();
  dtype = mlir::cast<RankedTensorType>(op.getQ().getType()).getElementType();
  auto pipeline = e.kernel().getPipelineAs<FlashGradPipelineAttr>();
  stages = pipeline ? pipeline.getStages() : 2;
  warpSpecialized = pipeline && pipeline.getTma();
  AttentionGradShared layout =
      attentionGradShared(tiling, stages, warpSpecialized);
  barrierOffset = layout.barriers;
  statsOffset = layout.stats;
  // q, k, v and dout: kernel arguments or views of them; lse and delta:
  // kernel arguments.
  Value operands[] = {op.getQ(), op.getK(), op.getV(), op.getDout()};
  OperandRows *rows[] = {&q, &k, &v, &dout};
  for (auto [operand, to] : llvm::zip(operands, rows)) {
    ArrayRef<int64_t> shape = shapeOf(operand);
    *to = OperandRows{Value(), shape[1], shape[2], shape[3], std::nullopt};
    std::optional<StridedView> view;
    if (!isa<BlockArgument>(operand)) {
      view = attentionOperandView(e.kernel(), operand);
      if (!view || !isCopyableRowView(*view)) {
        status = e.kernel().emitOpError(
            "computes an operand of its attention_grad, which the template "
            "copies from memory (as rows of a kernel argument or a view of "
            "one)");
        return;
      }
      to->view = view;
    }
    to->memref = e.gpuFunc().getArgument(
        mlir::cast<BlockArgument>(view ? view->root : operand).getArgNumber());
  }
  Value stats[] = {op.getLse(), op.getDelta()};
  Value *args[] = {&lse, &delta};
  for (auto [operand, arg] : llvm::zip(stats, args)) {
    auto block = dyn_cast<BlockArgument>(operand);
    if (!block) {
      status = e.kernel().emitOpError(
          "computes the lse or delta of its attention_grad, which the "
          "template loads from memory");
      return;
    }
    *arg = e.gpuFunc().getArgument(block.getArgNumber());
  }
  if (warpSpecialized) {
    // The tensor maps follow the buffers (kf-grid-constants), in
    // attentionGradTmaOperands' order.
    unsigned maps = e.kernel().getInputs().size() + e.kernel().getNumResults();
    for (auto [i, operand] : llvm::enumerate(rows))
      operand->map = e.gpuFunc().getArgument(maps + i);
  }
  if (warpSpecialized && (sq % 4 || dqAtomic))
    status = e.kernel().emitOpError(
        "has a TMA pipeline for an attention_grad with " + Twine(sq) +
        " queries or dqAtomic: it stages lse and delta in whole 16-byte "
        "pieces and is deterministic");
  if (d % 8 || dv % 8 || !(dtype.isF16() || dtype.isBF16()))
    status = e.kernel().emitOpError("attention_grad's template takes f16 or "
                                    "bf16 rows of whole 16-byte chunks");
}

LogicalResult FlashAttentionGrad::emit() {
  if (failed(status))
    return failure();
  setUp();
  if (!warpSpecialized)
    return emitBlocks();
  clearStats();
  initBarriers();
  // The roles split first: each computes its block's work itself, so that
  // nothing is live across setmaxnreg (ptxas spills what is).
  return async::splitRoles(
      b, l, tid, kThreads,
      [&] {
        role = Role::Copy;
        return emitBlocks();
      },
      [&] {
        role = Role::Compute;
        return emitBlocks();
      },
      async::kWideRegisterSplit);
}

LogicalResult FlashAttentionGrad::emitBlocks() {
  Value block = gpu::BlockIdOp::create(b, l, gpu::Dimension::x);
  if (dqAtomic) {
    if (failed(emitKeyBlock(block)))
      return failure();
    return status;
  }
  std::pair<bool, bool> both[] = {{true, true}},
                        apart[] = {{true, false}, {false, true}};
  if (failed(emitBlocksFrom(block,
                            splitKeyBlocks ? ArrayRef(apart) : ArrayRef(both))))
    return failure();
  return status;
}

LogicalResult
FlashAttentionGrad::emitBlocksFrom(Value block,
                                   ArrayRef<std::pair<bool, bool>> kinds) {
  if (kinds.empty())
    return emitQueryBlock(block);
  auto which = scf::IfOp::create(b, l, less(block, idx(kvBlocks)), true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(which.thenBlock());
  if (failed(emitKeyBlock(block, kinds.front().first, kinds.front().second)))
    return failure();
  b.setInsertionPointToStart(which.elseBlock());
  return emitBlocksFrom(arith::SubIOp::create(b, l, block, idx(kvBlocks)),
                        kinds.drop_front());
}

void FlashAttentionGrad::setUp() {
  shared = dynamicSharedView(
      b, l,
      dqAtomic ? dqStagingAt() + 2 * kTile * dp
               : (kRows + stages * kTile) * (dp + dvp),
      dtype);
  sharedBase = memref::ExtractAlignedPointerAsIndexOp::create(b, l, shared);
  tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  lane = rem(tid, 32);
  warpgroup = div(tid, 128);
  warpRow = add(mul(warpgroup, 64), mul(div(rem(tid, 128), 32), 16));
}

Value FlashAttentionGrad::load(Value memref, Value offset) {
  return memref::LoadOp::create(b, l, memref, ValueRange{offset});
}

Value FlashAttentionGrad::select(Value keep, Value x) {
  return arith::SelectOp::create(b, l, keep, x, e.f32(0));
}

/// Shared memory: ownA [dp / 64][128][64], ownB [dvp / 64][128][64], then
/// `stages` stages of tileA [dp / 64][64][64] and tileB [dvp / 64][64][64] (the
/// head dims of k and v: q and dout have the same), then (dqAtomic) dS^T
/// [128][64] (two stages), or (`tma`) the mbarriers.
Value FlashAttentionGrad::stageA(Value stage) {
  return add(idx(kRows * (dp + dvp)), mul(stage, kTile * (dp + dvp)));
}

Value FlashAttentionGrad::stageB(Value stage) {
  return add(stageA(stage), idx(kTile * dp));
}

Value FlashAttentionGrad::stageOf(Value tile) {
  if (stages > 1)
    return rem(tile, stages);
  // Stage 0 throughout: the products' 64 descriptors (128 registers at
  // head dim 256) would be hoisted out of the loop, live throughout it.
  return wgmma::computedHere(b, l, idx(0));
}

Value FlashAttentionGrad::rowAt(const OperandRows &operand, Value dense,
                                Value slice, Value row) {
  if (!operand.view)
    return mul(dense, operand.cols);
  const StridedView &view = *operand.view;
  Value batch = mul(div(slice, operand.heads), view.strides[0]);
  Value head = mul(rem(slice, operand.heads), view.strides[1]);
  return add(add(idx(view.offset), add(batch, head)),
             mul(row, view.strides[2]));
}

void FlashAttentionGrad::copyOwn(const Roles &roles) {
  TileCopier copier(e, shared, tid, kThreads);
  const OperandRows &a = *roles.ownA, &bRows = *roles.ownB;
  Value valid = arith::SubIOp::create(b, l, idx(a.rows), roles.ownRow0);
  auto place = [&](Value r, Value col) {
    return add(mul(div(col, 64), kRows * 64),
               wgmma::swizzledOffset(b, l, r, rem(col, 64), true));
  };
  Value dense = add(mul(roles.ownSlice, a.rows), roles.ownRow0);
  copier.copy(a.memref, rowAt(a, dense, roles.ownSlice, roles.ownRow0),
              rowStride(a), kRows, valid, dp, a.cols, idx(0), place);
  copier.copy(bRows.memref, rowAt(bRows, dense, roles.ownSlice, roles.ownRow0),
              rowStride(bRows), kRows, valid, dvp, bRows.cols,
              idx(kRows * dp), place);
}

void FlashAttentionGrad::copyTile(const Roles &roles, Value slice, Value row0,
                                  Value stage) {
  TileCopier copier(e, shared, tid, kThreads);
  const OperandRows &a = *roles.tileA, &bRows = *roles.tileB;
  Value valid = arith::SubIOp::create(b, l, idx(a.rows), row0);
  auto place = [&](Value r, Value col) {
    return add(mul(div(col, 64), kTile * 64),
               wgmma::swizzledOffset(b, l, r, rem(col, 64), true));
  };
  Value dense = add(mul(slice, a.rows), row0);
  copier.copy(a.memref, rowAt(a, dense, slice, row0), rowStride(a), kTile,
              valid, dp, a.cols, stageA(stage), place);
  copier.copy(bRows.memref, rowAt(bRows, dense, slice, row0), rowStride(bRows),
              kTile, valid, dvp, bRows.cols, stageB(stage), place);
}

std::pair<Value, Value> FlashAttentionGrad::position(int64_t i) {
  Value row = add(add(warpRow, div(lane, 4)), idx(i % 4 >= 2 ? 8 : 0));
  Value col = add(mul(rem(lane, 4), 2), idx(8 * (i / 4) + i % 2));
  return {row, col};
}

Value FlashAttentionGrad::negShift(Value rowLse) {
  Value empty = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, rowLse,
                                      e.f32(-INFINITY));
  Value shift = arith::MulFOp::create(b, l, rowLse, e.f32(-M_LOG2E));
  return arith::SelectOp::create(b, l, empty, e.f32(-INFINITY), shift);
}

std::pair<Value, Value> FlashAttentionGrad::issueProducts(Value stage,
                                                          bool withY) {
  // Every descriptor before the first product: ptxas serialises wgmma
  // when other instructions define their inputs between it and the wait.
  auto descriptors = [&](int64_t ownAt, Value tileAt, int64_t width) {
    Value own = wgmma::descriptor(
        b, l, add(sharedBase, add(idx(2 * ownAt), mul(warpgroup, 64 * 128))),
        true);
    Value tile = wgmma::descriptor(b, l, add(sharedBase, mul(tileAt, 2)), true);
    SmallVector<std::pair<Value, Value>> steps;
    for (int64_t c = 0; c < width / 64; ++c)
      for (int64_t s = 0; s < 4; ++s)
        steps.push_back(
            {wgmma::offsetDescriptor(b, l, own, c * kRows * 128 + 32 * s),
             wgmma::offsetDescriptor(b, l, tile, c * kTile * 128 + 32 * s)});
    return steps;
  };
  auto x = descriptors(0, stageA(stage), dp);
  SmallVector<std::pair<Value, Value>> y;
  if (withY)
    y = descriptors(kRows * dp, stageB(stage), dvp);
  NVVM::WgmmaFenceAlignedOp::create(b, l);
  Value xAll = issueGroup(x, kTile, NVVM::MMALayout::row, NVVM::MMALayout::col);
  if (!withY)
    return {xAll, Value()};
  return {xAll,
          issueGroup(y, kTile, NVVM::MMALayout::row, NVVM::MMALayout::col)};
}

SmallVector<Value> FlashAttentionGrad::unpack(Value all) {
  SmallVector<Value> values;
  for (int64_t i = 0; i < kTile / 2; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, l, all, i));
  return values;
}

void FlashAttentionGrad::loadStats(const Roles &roles, Value slice,
                                   Value row0, bool shifts, RowStats &stats,
                                   Value stage) {
  // Query blocks: the thread's two rows; key blocks: its 16 columns.
  int64_t count = roles.keys ? 16 : 2;
  for (int64_t j = 0; j < count; ++j) {
    int64_t i = roles.keys ? j / 2 * 4 + j % 2 : 2 * j;
    auto [r, c] = position(i);
    Value value;
    if (stage && stagesStats(roles)) {
      // (Columns past the queries' end hold another tile's or clearStats'
      // finite values: their probabilities are masked to 0.)
      Value at = add(statsAt(stage),
                     add(mul(c, 4), idx(shifts ? 0 : 4 * kTile)));
      value = LLVM::LoadOp::create(b, l, b.getF32Type(),
                                   async::sharedPointer(b, l, at));
    } else {
      Value query = minIndex(
          roles.keys ? add(row0, c) : add(roles.ownRow0, r), idx(sq - 1));
      value = load(shifts ? lse : delta, add(mul(slice, sq), query));
    }
    if (shifts)
      stats.shift.push_back(negShift(value));
    else
      stats.delta.push_back(value);
  }
}

Value FlashAttentionGrad::tileNeedsMask(const Roles &roles, Value row0) {
  Value past = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt,
                                     add(row0, idx(kTile)), idx(roles.tileA->rows));
  if (!op.getCausal())
    return past;
  // Key blocks: a query of the tile before the block's last key; query
  // blocks: a key of the tile after the block's first query.
  Value crosses =
      roles.keys ? less(row0, add(roles.ownRow0, idx(kRows - 1)))
                 : arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt,
                                         add(row0, idx(kTile - 1)),
                                         roles.ownRow0);
  return arith::OrIOp::create(b, l, past, crosses);
}

SmallVector<Value> FlashAttentionGrad::probabilities(const Roles &roles,
                                                     ArrayRef<Value> x,
                                                     const RowStats &stats,
                                                     Value row0, bool masked) {
  Value c = e.f32(M_LOG2E * scale);
  SmallVector<Value> p;
  for (int64_t i = 0; i < kTile / 2; ++i) {
    Value pi = emitExp2Approx(
        b, l, math::FmaOp::create(b, l, x[i], c, stats.shiftOf(roles, i)));
    if (masked) {
      auto [r, col] = position(i);
      Value ownRow = add(roles.ownRow0, r), tileRow = add(row0, col);
      Value query = roles.keys ? tileRow : ownRow;
      Value key = roles.keys ? ownRow : tileRow;
      Value keep = roles.keys ? less(query, idx(sq)) : less(key, idx(sk));
      if (op.getCausal())
        keep = arith::AndIOp::create(
            b, l, keep,
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::ule, key, query));
      pi = select(keep, pi);
    }
    p.push_back(pi);
  }
  return p;
}

SmallVector<Value> FlashAttentionGrad::accumulate(SmallVector<Value> acc,
                                                  ArrayRef<Value> a,
                                                  Value tileAt, int64_t width) {
  assert(int64_t(acc.size()) == width / 2 && a.size() == kTile / 4);
  Value base = wgmma::descriptor(b, l, add(sharedBase, mul(tileAt, 2)), false);
  SmallVector<Value> steps;
  for (int64_t j = 0; j < kTile / 16; ++j)
    steps.push_back(wgmma::offsetDescriptor(b, l, base, 2048 * j));
  NVVM::WgmmaFenceAlignedOp::create(b, l);
  for (auto [j, desc] : llvm::enumerate(steps))
    acc = wgmma::multiplyRegisterA(b, l, acc, a.slice(4 * j, 4), desc,
                                   dtype.isBF16(), /*transposeB=*/true);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, l);
  return acc;
}

void FlashAttentionGrad::runTiles(
    const Roles &roles, const Tiles &tiles, SmallVector<Value> acc,
    function_ref<void(ArrayRef<Value>)> finish) {
  if (!warpSpecialized)
    return finish(runTilesWithCopies(roles, tiles, std::move(acc)));
  if (role == Role::Copy)
    return produceTiles(roles, tiles);
  consumeTiles(roles, tiles, std::move(acc), finish);
}

SmallVector<Value>
FlashAttentionGrad::runTilesWithCopies(const Roles &roles, const Tiles &tiles,
                                       SmallVector<Value> acc) {
  Value count = tiles.count;
  auto sliceOf = tiles.sliceOf, rowOf = tiles.rowOf;
  copyOwn(roles);
  auto any = scf::IfOp::create(b, l, less(idx(0), count), false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(any.thenBlock());
    copyTile(roles, sliceOf(idx(0)), rowOf(idx(0)), idx(0));
  }
  NVVM::CpAsyncCommitGroupOp::create(b, l);
  // Query blocks read the statistics of their own rows, once.
  std::optional<RowStats> ownStats;
  if (!roles.keys) {
    ownStats.emplace();
    for (bool shifts : {true, false})
      loadStats(roles, roles.ownSlice, idx(0), shifts, *ownStats);
  }
  auto loop = scf::ForOp::create(b, l, idx(0), count, idx(1), acc);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  // Tile t has landed for every thread, and every warpgroup is done with
  // tile t - 1, whose stage the copies of tile t + 1 then refill (with
  // one stage, once tile t's products are done too).
  NVVM::CpAsyncWaitGroupOp::create(b, l, 0);
  wgmma::fenceSharedForAsyncProxy(b, l);
  gpu::BarrierOp::create(b, l);
  Value next = add(t, idx(1));
  auto copyNext = [&] {
    auto more = scf::IfOp::create(b, l, less(next, count), false);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(more.thenBlock());
      copyTile(roles, sliceOf(next), rowOf(next), rem(next, stages));
    }
    NVVM::CpAsyncCommitGroupOp::create(b, l);
  };
  if (stages > 1)
    copyNext();
  Value stage = stageOf(t), slice = sliceOf(t), row0 = rowOf(t);
  SmallVector<Value> state =
      step(roles, SmallVector<Value>(loop.getRegionIterArgs()), stage,
           ownStats, slice, row0);
  if (stages == 1) {
    gpu::BarrierOp::create(b, l);
    copyNext();
  }
  scf::YieldOp::create(b, l, state);
  b.setInsertionPointAfter(loop);
  return SmallVector<Value>(loop.getResults());
}

/// One tile: X and Y issued together; P from X while Y computes (and, in
/// key blocks, dV += P^T dO_i while dS is computed); then the product of
/// dS. dV's own blocks issue X alone and stop after dV's product. Only
/// tiles that hold positions to mask pay for masking.
SmallVector<Value> FlashAttentionGrad::step(const Roles &roles,
                                            SmallVector<Value> state,
                                            Value stage,
                                            const std::optional<RowStats> &ownStats,
                                            Value slice, Value row0) {
  auto [xAll, yAll] = issueProducts(stage, roles.needsDs());
  RowStats stats = ownStats ? *ownStats : RowStats();
  if (!ownStats)
    loadStats(roles, slice, row0, /*shifts=*/true, stats, stage);
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, roles.needsDs() ? 1 : 0);
  SmallVector<Value> x = unpack(xAll);
  auto masked = scf::IfOp::create(
      b, l, SmallVector<Type>(kTile / 2, b.getF32Type()),
      tileNeedsMask(roles, row0), true);
  for (bool withMask : {true, false}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(withMask ? masked.thenBlock()
                                        : masked.elseBlock());
    scf::YieldOp::create(b, l,
                         probabilities(roles, x, stats, row0, withMask));
  }
  SmallVector<Value> p(masked.getResults());
  // The products read their A registers until the wait: the packed P and
  // dS stay live (in their registers) until then.
  SmallVector<Value> packed;
  bool dvProduct = roles.keys && roles.withDv;
  if (dvProduct) {
    packed = packHalfPairs(b, l, p, dtype);
    int64_t dkCount = roles.withDk ? dp / 2 : 0;
    SmallVector<Value> dvAcc(state.begin() + dkCount, state.end());
    dvAcc = accumulate(dvAcc, packed, stageB(stage), dvp);
    state.truncate(dkCount);
    state.append(dvAcc);
  }
  if (!roles.needsDs()) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, l, 0);
    wgmma::keepRegistersUntilHere(b, l, packed);
    return state;
  }
  // Y (and not the dV product issued after it) is done.
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, dvProduct ? 1 : 0);
  if (!ownStats)
    loadStats(roles, slice, row0, /*shifts=*/false, stats, stage);
  SmallVector<Value> y = unpack(yAll), ds;
  for (int64_t i = 0; i < kTile / 2; ++i)
    ds.push_back(arith::MulFOp::create(
        b, l, p[i], arith::SubFOp::create(b, l, y[i], stats.deltaOf(roles, i))));
  SmallVector<Value> dsPacked = packHalfPairs(b, l, ds, dtype);
  if (dqAtomic)
    storeTransposedDs(ds);
  SmallVector<Value> first(state.begin(), state.begin() + dp / 2);
  first = accumulate(first, dsPacked, stageA(stage), dp);
  std::copy(first.begin(), first.end(), state.begin());
  Value dqPart;
  if (dqAtomic) {
    // Both warpgroups' dS^T stored and visible to wgmma.
    wgmma::fenceSharedForAsyncProxy(b, l);
    // The staging tile is free again once the last tile's bulk add read it.
    if (bulkDq)
      onFirstThread([&] { async::waitBulkGroups(b, l, /*readOnly=*/true); });
    gpu::BarrierOp::create(b, l);
    dqPart = issueDqProduct();
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, 0);
  packed.append(dsPacked);
  wgmma::keepRegistersUntilHere(b, l, packed);
  if (dqAtomic) {
    SmallVector<Value> part;
    for (int64_t i = 0; i < dp / 4; ++i)
      part.push_back(LLVM::ExtractValueOp::create(b, l, dqPart, i));
    if (bulkDq)
      addDqInBulk(part, slice, row0);
    else
      addDq(part, slice, row0);
  }
  return state;
}

Value FlashAttentionGrad::issueGroup(ArrayRef<std::pair<Value, Value>> steps,
                                     int64_t n, NVVM::MMALayout layoutA,
                                     NVVM::MMALayout layoutB) {
  MLIRContext *ctx = b.getContext();
  auto accType = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(n / 2, b.getF32Type()));
  auto shape = NVVM::MMAShapeAttr::get(ctx, 64, n, 16);
  NVVM::WGMMATypes type =
      dtype.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  Value all = LLVM::UndefOp::create(b, l, accType);
  for (auto [j, step] : llvm::enumerate(steps))
    all = NVVM::WgmmaMmaAsyncOp::create(
        b, l, accType, all, step.first, step.second, shape, type, type,
        NVVM::WGMMATypes::f32,
        j == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
        NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one, layoutA, layoutB,
        /*satfinite=*/nullptr);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, l);
  return all;
}

/// A block of 128 keys of one kv head: the query tiles of each head of its
/// group in turn (causal: from the tile of its first key on).
LogicalResult FlashAttentionGrad::emitKeyBlock(Value block, bool withDk,
                                               bool withDv) {
  int64_t keyBlocks = (sk + kRows - 1) / kRows;
  Roles roles{true, &k, &v, div(block, keyBlocks),
              mul(rem(block, keyBlocks), kRows), &q, &dout};
  roles.withDk = withDk;
  roles.withDv = withDv;
  int64_t queryTiles = (sq + kTile - 1) / kTile;
  Value first = op.getCausal() ? minIndex(div(roles.ownRow0, kTile), idx(queryTiles))
                               : idx(0);
  Value perHead = arith::SubIOp::create(b, l, idx(queryTiles), first);
  Value divisor = arith::MaxUIOp::create(b, l, perHead, idx(1));
  Value count = mul(perHead, group);
  Value batch = div(roles.ownSlice, kvHeads);
  Value kvHead = rem(roles.ownSlice, kvHeads);
  auto sliceOf = [&](Value t) {
    Value head = add(mul(kvHead, group), arith::DivUIOp::create(b, l, t, divisor));
    return add(mul(batch, heads), head);
  };
  // Adding into dq, the key blocks of a head start at different tiles.
  // Causal ones do already, each at its diagonal; rotating them measured
  // slower.
  Value shift =
      dqAtomic && !op.getCausal() ? div(roles.ownRow0, kRows) : Value();
  auto rowOf = [&](Value t) {
    Value tile = arith::RemUIOp::create(b, l, t, divisor);
    if (shift)
      tile = arith::RemUIOp::create(b, l, add(tile, shift), divisor);
    return mul(add(first, tile), kTile);
  };
  int64_t dkCount = withDk ? dp / 2 : 0;
  SmallVector<Value> acc(dkCount + (withDv ? dvp / 2 : 0), e.f32(0));
  runTiles(roles, {count, sliceOf, rowOf}, acc, [&](ArrayRef<Value> acc) {
    // The last bulk add has read its staging tile before the block exits.
    if (bulkDq)
      onFirstThread([&] { async::waitBulkGroups(b, l, /*readOnly=*/true); });
    if (withDk)
      store(op.getDk(), acc.take_front(dkCount), roles.ownSlice, roles.ownRow0,
            sk, d, scale);
    if (withDv)
      store(op.getDv(), acc.drop_front(dkCount), roles.ownSlice, roles.ownRow0,
            sk, dv, 1.0);
  });
  return success();
}

/// A block of 128 query rows of one head: the key tiles of its kv head
/// (causal: up to the diagonal).
LogicalResult FlashAttentionGrad::emitQueryBlock(Value block) {
  int64_t queryBlocks = (sq + kRows - 1) / kRows;
  Roles roles{false, &q, &dout, div(block, queryBlocks),
              mul(rem(block, queryBlocks), kRows), &k, &v};
  int64_t keyTiles = (sk + kTile - 1) / kTile;
  Value count = idx(keyTiles);
  if (op.getCausal()) {
    Value rowsEnd = minIndex(add(roles.ownRow0, idx(kRows)), idx(sq));
    count = minIndex(count, div(add(rowsEnd, idx(kTile - 1)), kTile));
  }
  Value batch = div(roles.ownSlice, heads);
  Value kvSlice = add(mul(batch, kvHeads), div(rem(roles.ownSlice, heads), group));
  auto sliceOf = [&](Value) { return kvSlice; };
  auto rowOf = [&](Value t) { return mul(t, kTile); };
  SmallVector<Value> acc(dp / 2, e.f32(0));
  runTiles(roles, {count, sliceOf, rowOf}, acc, [&](ArrayRef<Value> acc) {
    store(op.getDq(), acc, roles.ownSlice, roles.ownRow0, sq, d, scale);
  });
  return success();
}

void FlashAttentionGrad::store(Value value, ArrayRef<Value> acc, Value slice,
                               Value row0, int64_t rows, int64_t cols,
                               double factor) {
  std::optional<unsigned> result = resultIndexOf(e.kernel(), value);
  if (!result)
    return;
  Value scaleBy = e.f32(factor);
  for (int64_t i = 0; i < int64_t(acc.size()); i += 2) {
    auto [r, c] = position(i);
    if (8 * (i / 4) >= cols) // padding columns
      break;
    Value row = add(row0, r);
    auto inside = scf::IfOp::create(b, l, less(row, idx(rows)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    Value at = add(mul(add(mul(slice, rows), row), cols), c);
    SmallVector<Value> pair;
    for (int64_t j = 0; j < 2; ++j)
      pair.push_back(factor == 1.0 ? acc[i + j]
                                   : arith::MulFOp::create(b, l, acc[i + j],
                                                           scaleBy));
    e.storeLanes(*result, at, pair);
  }
}

LogicalResult kfuse::kf::emitFlashAttentionGrad(KernelEmitter &e,
                                                AttentionGradOp op) {
  return FlashAttentionGrad(e, op).emit();
}
