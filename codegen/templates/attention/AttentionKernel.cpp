//===- AttentionKernel.cpp - kf-lower-to-gpu's FlashAttention template ----===//
//
// A block of two warpgroups takes `block_q` (128) query rows of one head,
// 64 a warpgroup, and streams the head's keys and values through shared
// memory `block_k` (64) at a time: the copies of K for the next tile and
// of V for this one (cp.async, zero-filled past the sequence and the head
// dim) fly while the products run. (With config `tma` a third warpgroup
// copies them instead: AttentionTmaPipeline.cpp.) Per key tile j a warpgroup issues
//   S_j = Q K_j^T            wgmma m64n64k16, Q from registers (head dims
//                            up to 128) or shared memory, K from shared,
//   O += P_{j-1} V_{j-1}     wgmma m64nDk16, P from registers (the
//                            accumulator layout of S is the A-fragment
//                            layout of P), V M/N-major from shared memory,
// then, once S_j is done, computes the online softmax of S_j (running row
// max m and sum l in registers) while the second product runs, and last
// rescales O by exp(m_old - m_new). The scores and probabilities never
// leave registers. fp32 throughout, exp2 (ex2.approx.ftz) with the scale
// folded in. The epilogue divides by l (0 for a row with nothing to
// attend) and stores through the kernel's epilogue.
//
// A bias or mask operand is computed at each score, from a tile of its
// input staged in shared memory with K (`stage_scores_input`) or read from
// global memory. Causal blocks stop at the diagonal; only tiles that cross
// it (and the last, partial tile of the keys) pay for masking. Grouped-query
// attention reads K/V head h / (H / Hkv). Head dims are padded to multiples of
// 64 by the zero-fill of the copies.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/attention/AttentionKernel.h"
#include "codegen/emitter/AsyncCopy.h"
#include "codegen/emitter/Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

FlashAttention::FlashAttention(KernelEmitter &e, AttentionOp op)
    : IndexArithmetic(e), op(op) {
  ArrayRef<int64_t> qs = shapeOf(op.getQ()), ks = shapeOf(op.getK());
  heads = qs[1];
  kvHeads = ks[1];
  sq = qs[2];
  sk = ks[2];
  d = qs[3];
  dv = shapeOf(op.getV())[3];
  auto tiling = e.kernel().getTilingAs<FlashTilingAttr>();
  auto pipeline = e.kernel().getPipelineAs<FlashPipelineAttr>();
  dp = tiling.getHeadDim();
  dvp = tiling.getValueDim();
  blockK = tiling.getBlockK();
  // A warpgroup of 128 threads a 64 query rows.
  blockQ = tiling.getBlockQ();
  threads = blockQ * 2;
  stages = pipeline ? pipeline.getStages() : 0;
  warpSpecialized = pipeline && pipeline.getTma();
  qInRegisters = tiling.getQInRegisters();
  barrierOffset = 2 * (blockQ * dp + stages * blockK * (dp + dvp));
  qTiles = (sq + blockQ - 1) / blockQ;
  scaleLog2 = (op.getBias() ? 1.0 : op.getScale().convertToDouble()) * M_LOG2E;
  dtype = mlir::cast<RankedTensorType>(op.getQ().getType()).getElementType();
  resultStrides = attentionResultStrides(e.kernel());
  // Each of q, k and v is a kernel argument or a view of one.
  Value operands[] = {op.getQ(), op.getK(), op.getV()};
  Value *args[] = {&q, &k, &v};
  int64_t *strides[] = {&qStride, &kStride, &vStride};
  int64_t *cols[] = {&qCols, &kCols, &vCols};
  qComputed = attentionComputesQuery(e.kernel());
  for (int which = qComputed ? 1 : 0; which < 3; ++which) {
    std::optional<StridedView> view =
        attentionOperandView(e.kernel(), operands[which]);
    if (!view) {
      status = e.kernel().emitOpError("reads an attention operand that is "
                                      "no view of a kernel argument");
      view = StridedView{operands[which], 0, {0, 0, 1, 1}};
    }
    *args[which] = e.gpuFunc().getArgument(
        mlir::cast<BlockArgument>(view->root).getArgNumber());
    *strides[which] = *cols[which] = view->strides[2];
    if (!isa<BlockArgument>(operands[which])) {
      views[which] =
          HeadsView{view->offset, view->strides[0], view->strides[1]};
      *cols[which] = shapeOf(operands[which])[3];
    }
  }
  if (pipeline && pipeline.getStageScoresInput())
    stagedInput = stagedScoresInput(e.kernel());
  unsigned buffers = e.kernel().getInputs().size() + e.kernel().getNumResults();
  unsigned extents = 0;
  if (DenseI64ArrayAttr pairs = e.kernel().getRuntimeExtentsAttr()) {
    extents = pairs.size() / 2;
    int64_t index = e.kernel().runtimeExtentIndex(
        mlir::cast<BlockArgument>(op.getK()).getArgNumber(), 2);
    keysParam = index < 0 ? -1 : buffers + index;
    if (stagedInput || op.getMask() || op.getBias())
      status = e.kernel().emitOpError("takes its key length at run time and "
                                      "a mask or bias over the keys");
  }
  if (warpSpecialized) {
    // Tensor maps in attentionTmaOperands' order: q's only where copied.
    unsigned maps = buffers + extents;
    if (!qComputed)
      qMap = e.gpuFunc().getArgument(maps++);
    kMap = e.gpuFunc().getArgument(maps);
    vMap = e.gpuFunc().getArgument(maps + 1);
  }
}

LogicalResult FlashAttention::emit() {
  if (!e.kernel().getPipelineAs<FlashPipelineAttr>())
    return e.kernel().emitOpError(
        "has no flash_pipeline: run kf-promote-shared first");
  setUp();
  return warpSpecialized ? emitWarpSpecialized() : emitWithCopies();
}

LogicalResult FlashAttention::emitWithCopies() {
  if (qComputed)
    computeQ();
  else
    loadQ();
  loadK(idx(0));
  loadScoresInput(idx(0));
  // The product with V "before" tile 0 (P = 0) reads V stage 1: zeros,
  // not whatever shared memory held.
  copyTile(v, idx(0), vStride, blockK, idx(0), dvp, vCols, vStage(idx(1)),
           [&](Value r, Value col) { return vOffset(r, col); });
  NVVM::CpAsyncCommitGroupOp::create(b, l);
  auto [unmasked, last] = keyTileRanges();
  // With `q_registers` Q stays in registers: S = Q K^T then reads only K
  // from shared memory, half the bytes of a product of two shared operands.
  if (qInRegisters) {
    NVVM::CpAsyncWaitGroupOp::create(b, l, 0);
    gpu::BarrierOp::create(b, l);
    qFragments = loadQFragments();
  }
  RowState state = runTiles(idx(0), unmasked, initialState(), false);
  state = runTiles(unmasked, last, state, true);
  state.acc = finishValues(last, state);
  if (failed(status))
    return failure();
  return store(state);
}

RowState FlashAttention::initialState() {
  RowState state;
  state.max.assign(2, e.f32(-INFINITY));
  state.sum.assign(2, e.f32(0));
  state.acc.assign(dvp / 2, e.f32(0));
  state.p.assign(blockK / 4, arith::ConstantOp::create(
                                  b, l, b.getI32IntegerAttr(0)));
  return state;
}

SmallVector<Value> FlashAttention::finishValues(Value last,
                                                const RowState &state) {
  Value prior = arith::SubIOp::create(b, l, last, idx(1));
  if (warpSpecialized) {
    async::waitParity(b, l, barrier(Barrier::VFull, prior), phaseOf(prior));
  } else {
    NVVM::CpAsyncWaitGroupOp::create(b, l, 0);
    wgmma::fenceSharedForAsyncProxy(b, l);
    gpu::BarrierOp::create(b, l);
  }
  SmallVector<Value> vDescriptors = valueDescriptors(vStage(prior));
  SmallVector<Value> acc = issueValues(vDescriptors, state);
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, 0);
  return acc;
}

/// The dynamic shared memory and the thread's place in the block.
void FlashAttention::setUp() {
  int64_t elements = blockQ * dp + stages * blockK * (dp + dvp) +
                     (stagedInput ? stages * blockQ * (blockK + 8) : 0);
  shared = dynamicSharedView(b, l, elements, dtype);
  sharedBase = memref::ExtractAlignedPointerAsIndexOp::create(b, l, shared);
  tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  lane = rem(tid, 32);
  warpgroup = div(tid, 128);
  warpRow = add(mul(warpgroup, 64), mul(div(rem(tid, 128), 32), 16));
  keys = keysParam < 0 ? idx(sk)
                       : arith::IndexCastOp::create(
                             b, l, b.getIndexType(),
                             e.gpuFunc().getArgument(keysParam));
  locate(gpu::BlockIdOp::create(b, l, gpu::Dimension::x));
}

Value FlashAttention::keysFrom(Value k0) {
  return partialKeyTiles() ? arith::SubIOp::create(b, l, keys, k0) : Value();
}

Value FlashAttention::keyTileCount() {
  if (keysParam < 0)
    return idx((sk + blockK - 1) / blockK);
  return div(add(keys, idx(blockK - 1)), blockK);
}

/// Key tiles [0, unmasked) lie wholly below the diagonal and inside the
/// keys: no mask; [unmasked, last) (the diagonal, the partial last tile)
/// are masked; causal blocks stop at the diagonal.
std::pair<Value, Value> FlashAttention::keyTileRanges() {
  Value last = keyTileCount(),
        unmasked = keysParam < 0 ? idx(sk / blockK) : div(keys, blockK);
  if (op.getCausal()) {
    Value rowsEnd = minIndex(add(q0, idx(blockQ)), idx(sq));
    last = minIndex(last, div(add(rowsEnd, idx(blockK - 1)), blockK));
    unmasked = minIndex(unmasked, div(q0, blockK));
  }
  return {unmasked, last};
}

/// Blocks take the query tiles of a head in turn, the last first:
/// neighbouring blocks share the head's K and V in L2. Causal blocks take
/// the heads of a query tile in turn instead, the longest tiles (the last)
/// first, so that the short ones fill the grid's tail; a q computed from
/// position tables (RoPE) then reads the same rows of them in neighbouring
/// blocks. H100, two blocks an SM (D64), same call: causal GQA 32/4 S2048
/// 0.223 -> 0.201 ms, B2 H16 S4096 0.223 -> 0.183 (SDPA 0.184); D128 GQA
/// 32/4 0.309 -> 0.305. (H200, one block an SM at D64: RoPE on q 0.308 ->
/// 0.276, plain q unchanged.)
void FlashAttention::locate(Value block) {
  Value qTile = arith::SubIOp::create(b, l, idx(qTiles - 1), rem(block, qTiles));
  qSlice = div(block, qTiles);
  if (op.getCausal()) {
    ArrayRef<int64_t> shape = shapeOf(op.getQ());
    int64_t slices = shape[0] * shape[1];
    qTile = arith::SubIOp::create(b, l, idx(qTiles - 1), div(block, slices));
    qSlice = rem(block, slices);
  }
  batch = div(qSlice, heads);
  head = rem(qSlice, heads);
  Value kvHead = div(head, heads / kvHeads);
  q0 = mul(qTile, blockQ);
  if (!qComputed)
    qBase = headBase(0, batch, head, qSlice, sq, qStride);
  kvSlice = add(mul(batch, kvHeads), kvHead);
  kBase = headBase(1, batch, kvHead, kvSlice, sk, kStride);
  vBase = headBase(2, batch, kvHead, kvSlice, sk, vStride);
}

Value FlashAttention::mergedPosition(Value row, Value col) {
  ArrayRef<int64_t> strides = *resultStrides;
  return add(add(add(mul(batch, strides[0]), mul(head, strides[1])),
                 mul(row, strides[2])),
             mul(col, strides[3]));
}

Value FlashAttention::headBase(int which, Value batch, Value head, Value slice,
                               int64_t rows, int64_t stride) {
  if (!views[which] && which > 0 && keysParam >= 0)
    return arith::MulIOp::create(b, l, slice, mul(keys, stride));
  if (!views[which])
    return mul(slice, rows * stride);
  const HeadsView &view = *views[which];
  return add(idx(view.offset),
             add(mul(batch, view.batchStride), mul(head, view.headStride)));
}

void TileCopier::copy(Value memref, Value base, int64_t stride, int64_t rows,
                      Value validRows, int64_t cols, int64_t validCols,
                      Value sharedAt, function_ref<Value(Value, Value)> place,
                      Value colLimit) {
  // 16-byte copies where rows are whole 16-byte chunks, else 8 or 4 bytes
  // (cp.async.ca) into their part of a swizzled chunk.
  int64_t chunk = validCols % 8 == 0 ? 8 : validCols % 4 == 0 ? 4 : 2;
  int64_t perRow = cols / chunk, chunks = rows * perRow;
  for (int64_t first = 0; first < chunks; first += threads) {
    Value c = add(tid, idx(first));
    Value r = div(c, perRow), col = mul(rem(c, perRow), chunk);
    Value valid;
    if (validRows)
      valid = less(r, validRows);
    if (validCols < cols || colLimit) {
      Value inside = less(col, colLimit ? colLimit : idx(validCols));
      valid = valid ? arith::AndIOp::create(b, l, valid, inside) : inside;
    }
    Value src = add(base, add(mul(r, stride), col)), count;
    if (valid) {
      src = arith::SelectOp::create(b, l, valid, src, idx(0));
      count = arith::SelectOp::create(b, l, valid, idx(chunk), idx(0));
    }
    Value dst = add(sharedAt, place(r, col));
    if (chunk < 8)
      dst = add(dst, rem(col, 8));
    nvgpu::DeviceAsyncCopyOp::create(
        b, l, shared, ValueRange{dst}, memref, ValueRange{src},
        b.getIndexAttr(chunk), count, chunk == 8 ? b.getUnitAttr() : UnitAttr());
  }
}

void FlashAttention::copyTile(Value memref, Value base, int64_t stride,
                              int64_t rows, Value validRows, int64_t cols,
                              int64_t validCols, Value sharedAt,
                              function_ref<Value(Value, Value)> place,
                              Value colLimit) {
  TileCopier(e, shared, tid, threads)
      .copy(memref, base, stride, rows, validRows, cols, validCols, sharedAt,
            place, colLimit);
}

/// Q as K-major chunks of 64 head-dim columns: [dp / 64][128 rows][64].
void FlashAttention::loadQ() {
  Value valid = sq % blockQ ? arith::SubIOp::create(b, l, idx(sq), q0) : Value();
  copyTile(q, add(qBase, mul(q0, qStride)), qStride, blockQ, valid, dp, qCols,
           idx(0), [&](Value r, Value col) {
             return add(mul(div(col, 64), blockQ * 64),
                        wgmma::swizzledOffset(b, l, r, rem(col, 64), true));
           });
}

/// Q's tile from its prologue, each element once (rows past the end
/// repeat the last, whose scores are not stored; head-dim padding is
/// zero), placed as loadQ places it. Eight consecutive columns a thread at
/// a time (fewer where the head dim is not a multiple of 8): the index maps
/// of RoPE's halves keep them consecutive, so its reads are vector loads.
void FlashAttention::computeQ() {
  ArrayRef<int64_t> shape = shapeOf(op.getQ());
  int64_t lanes = d % 8 == 0 ? 8 : d % 4 == 0 ? 4 : d % 2 == 0 ? 2 : 1;
  int64_t groupsPerRow = dp / lanes;
  // dp is a multiple of 64 and threads = 2 blockQ: whole rounds.
  assert(blockQ * groupsPerRow % threads == 0);
  Value zero = arith::ConstantOp::create(b, l, b.getZeroAttr(dtype));
  for (int64_t first = 0; first < blockQ * groupsPerRow; first += threads) {
    Value group = add(tid, idx(first));
    Value r = div(group, groupsPerRow);
    Value tileCol = mul(rem(group, groupsPerRow), lanes);
    // Padding columns read column 0 and store zeros.
    Value inside = d < dp ? less(tileCol, idx(d)) : Value();
    Value col = inside ? arith::SelectOp::create(b, l, inside, tileCol, idx(0))
                       : tileCol;
    Value row = minIndex(add(q0, r), idx(sq - 1));
    Value linear =
        add(mul(add(mul(add(mul(batch, heads), head), sq), row), d), col);
    FailureOr<SmallVector<Value>> values =
        e.vectorAt(op.getQ(), ElementIndex::linear(shape, linear),
                   e.laneIndices(linear, lanes));
    if (failed(values)) {
      status = failure();
      return;
    }
    // The swizzle places 16-byte chunks; narrower groups start inside one.
    Value at = add(mul(div(tileCol, 64), blockQ * 64),
                   wgmma::swizzledOffset(b, l, r, rem(tileCol, 64), true));
    if (lanes < 8)
      at = add(at, rem(tileCol, 8));
    for (int64_t i = 0; i < lanes; ++i) {
      Value x = arith::TruncFOp::create(b, l, dtype, (*values)[i]);
      if (inside)
        x = arith::SelectOp::create(b, l, inside, x, zero);
      memref::StoreOp::create(b, l, x, shared, ValueRange{add(at, idx(i))});
    }
  }
}

Value FlashAttention::kStage(Value tile) {
  return add(idx(blockQ * dp), mul(rem(tile, stages), blockK * dp));
}

Value FlashAttention::vStage(Value tile) {
  return add(idx(blockQ * dp + stages * blockK * dp),
             mul(rem(tile, stages), blockK * dvp));
}

/// K as K-major chunks [dp / 64][64 keys][64].
void FlashAttention::loadK(Value tile) {
  Value k0 = mul(tile, blockK);
  Value valid = keysFrom(k0);
  copyTile(k, add(kBase, mul(k0, kStride)), kStride, blockK, valid, dp, kCols,
           kStage(tile), [&](Value r, Value col) {
             return add(mul(div(col, 64), blockK * 64),
                        wgmma::swizzledOffset(b, l, r, rem(col, 64), true));
           });
}

Value FlashAttention::scoresStage(Value tile) {
  return add(idx(blockQ * dp + stages * blockK * (dp + dvp)),
             mul(rem(tile, stages), blockQ * (blockK + 8)));
}

/// Rows of the block's queries, columns of the tile's keys, zero past the
/// ends of both.
void FlashAttention::loadScoresInput(Value tile) {
  if (!stagedInput)
    return;
  Value k0 = mul(tile, blockK);
  Value rows = sq % blockQ ? arith::SubIOp::create(b, l, idx(sq), q0) : Value();
  Value keys = sk % blockK ? arith::SubIOp::create(b, l, idx(sk), k0) : Value();
  Value base = add(mul(add(mul(add(mul(batch, heads), head), sq), q0), sk), k0);
  copyTile(
      e.gpuFunc().getArgument(stagedInput.getArgNumber()), base, sk, blockQ,
      rows, blockK, blockK, scoresStage(tile),
      [&](Value r, Value col) { return add(mul(r, blockK + 8), col); }, keys);
}

/// Element (key, col) of a V tile: M/N-major (keys along K), blocks of 64
/// keys, each in atom columns of 64 value dims.
Value FlashAttention::vOffset(Value key, Value col) {
  return add(mul(div(key, 64), 64 * dvp),
             wgmma::swizzledOffset(b, l, rem(key, 64), col, false));
}

/// V tiles, in their stages.
void FlashAttention::loadV(Value tile) {
  Value k0 = mul(tile, blockK);
  Value valid = keysFrom(k0);
  copyTile(v, add(vBase, mul(k0, vStride)), vStride, blockK, valid, dvp, vCols,
           vStage(tile), [&](Value r, Value col) { return vOffset(r, col); });
}

RowState FlashAttention::runTiles(Value first, Value last, RowState state,
                                  bool masked) {
  auto loop = scf::ForOp::create(b, l, first, last, idx(1), state.flat());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  size_t accumulators = state.acc.size();
  RowState next = step(loop.getInductionVar(),
                       RowState::unflat(loop.getRegionIterArgs(), accumulators),
                       masked);
  scf::YieldOp::create(b, l, next.flat());
  b.setInsertionPointAfter(loop);
  return RowState::unflat(loop.getResults(), accumulators);
}

/// The copies of K_{j+1} and V_j start once every thread's copies of K_j
/// and V_{j-1} landed, into the stages the products do not read.
void FlashAttention::startCopies(Value tile) {
  NVVM::CpAsyncWaitGroupOp::create(b, l, 0);
  wgmma::fenceSharedForAsyncProxy(b, l);
  gpu::BarrierOp::create(b, l);
  // (Issued after the products instead, measured on the H200: 430 -> 370
  // TFLOP/s.)
  Value next = add(tile, idx(1));
  auto more = scf::IfOp::create(b, l, less(next, keyTileCount()), false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(more.thenBlock());
    loadK(next);
    loadScoresInput(next);
  }
  loadV(tile);
  NVVM::CpAsyncCommitGroupOp::create(b, l);
}

/// Key tile j, once K_j and V_{j-1} are in shared memory: S_j = Q K_j^T
/// and O += P_{j-1} V_{j-1} are issued together, and the softmax of S_j
/// runs while the second product computes (FlashAttention 3's overlap
/// within a warpgroup); O is rescaled once that is done.
RowState FlashAttention::step(Value tile, RowState state, bool masked,
                              bool first) {
  if (warpSpecialized)
    awaitTiles(tile, first);
  else
    startCopies(tile);
  // Every descriptor is computed before the products are issued: ptxas
  // serialises wgmma when other instructions define their inputs between
  // the first and the wait.
  SmallVector<Value> sDescriptors = scoreDescriptors(kStage(tile));
  Value prior = arith::SubIOp::create(b, l, tile, idx(1));
  SmallVector<Value> vDescriptors;
  if (!first)
    vDescriptors = valueDescriptors(vStage(prior));
  // O += P V is queued behind S. (Without the TMA, tile 0 adds P = 0 times
  // the zeros of V stage 1: no branch around the products.)
  SmallVector<Value> s = issueScores(sDescriptors);
  if (!first)
    state.acc = issueValues(vDescriptors, state);
  SmallVector<Value> pInFlight = state.p;
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, first ? 0 : 1);
  if (warpSpecialized)
    release(barrier(Barrier::KEmpty, tile));
  SmallVector<Value, 2> factors = softmax(tile, s, state, masked);
  if (first)
    return state;
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, 0);
  // The new P must not take the registers the product just read.
  wgmma::keepRegistersUntilHere(b, l, pInFlight);
  if (warpSpecialized)
    release(barrier(Barrier::VEmpty, prior));
  state.acc = rescaled(state, factors);
  return state;
}

/// Here rather than between the two products, where ptxas would make S
/// complete first (C7517: it injects a wait). Only when a max moved: late
/// in a row it rarely does, and this is a third of the softmax's work.
SmallVector<Value> FlashAttention::rescaled(const RowState &state,
                                            ArrayRef<Value> factors) {
  Value one = e.f32(1);
  Value moved = arith::OrIOp::create(
      b, l,
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, factors[0], one),
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, factors[1], one));
  auto ifMoved = scf::IfOp::create(b, l, TypeRange(ValueRange(state.acc)),
                                   moved, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifMoved.thenBlock());
  SmallVector<Value> scaled;
  for (int64_t i = 0; i < int64_t(state.acc.size()); ++i)
    scaled.push_back(fmul(state.acc[i], factors[i % 4 / 2]));
  scf::YieldOp::create(b, l, scaled);
  b.setInsertionPointToStart(ifMoved.elseBlock());
  scf::YieldOp::create(b, l, state.acc);
  return SmallVector<Value>(ifMoved.getResults());
}

SmallVector<Value> FlashAttention::loadQFragments() {
  // ldmatrix.x4: lanes 0-15 address rows 0-15 of the step's first 8
  // columns, lanes 16-31 the next 8 (mma's A fragment order).
  Value r = add(warpRow, rem(lane, 16)), half = div(lane, 16);
  SmallVector<Value> regs;
  auto pairType = VectorType::get({4, 2}, dtype);
  for (int64_t s = 0; s < dp / 16; ++s) {
    Value col = add(mul(half, 8), idx((s % 4) * 16));
    Value offset = add(idx((s / 4) * blockQ * 64),
                       wgmma::swizzledOffset(b, l, r, col, true));
    Value frag = nvgpu::LdMatrixOp::create(b, l, pairType, shared,
                                           ValueRange{offset}, false, 4);
    for (int64_t i = 0; i < 4; ++i) {
      Value pair = vector::ExtractOp::create(b, l, frag, ArrayRef<int64_t>{i});
      Value word = vector::BitCastOp::create(
          b, l, VectorType::get({1}, b.getI32Type()), pair);
      regs.push_back(vector::ExtractOp::create(b, l, word, ArrayRef<int64_t>{0}));
    }
  }
  return regs;
}

SmallVector<Value> FlashAttention::scoreDescriptors(Value stage) {
  Value base = wgmma::descriptor(b, l, add(sharedBase, mul(stage, 2)), true);
  SmallVector<Value> descriptors;
  for (int64_t c = 0; c < dp / 64; ++c)
    for (int64_t s = 0; s < 4; ++s)
      descriptors.push_back(
          wgmma::offsetDescriptor(b, l, base, c * blockK * 128 + 32 * s));
  return descriptors;
}

/// One k16 step per 16 keys: V's 8-key groups are 1024 bytes apart.
SmallVector<Value> FlashAttention::valueDescriptors(Value stage) {
  Value base = wgmma::descriptor(b, l, add(sharedBase, mul(stage, 2)), false);
  SmallVector<Value> descriptors;
  for (int64_t j = 0; j < blockK / 16; ++j)
    descriptors.push_back(wgmma::offsetDescriptor(
        b, l, base, (j / 4) * 64 * dvp * 2 + 2048 * (j % 4)));
  return descriptors;
}

/// S = Q K^T for the warpgroup's 64 rows and the tile's 64 keys: 32
/// accumulators a thread.
SmallVector<Value> FlashAttention::issueScores(ArrayRef<Value> descriptors) {
  SmallVector<Value> acc(blockK / 2, e.f32(0));
  NVVM::WgmmaFenceAlignedOp::create(b, l);
  if (!qFragments.empty()) {
    for (auto [i, desc] : llvm::enumerate(descriptors))
      acc = wgmma::multiplyRegisterA(
          b, l, acc, ArrayRef<Value>(qFragments).slice(4 * i, 4), desc,
          dtype.isBF16(), /*transposeB=*/false, /*accumulate=*/i > 0);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, l);
    return acc;
  }
  // Q from shared memory: the warpgroup's 64 rows of each 64-column chunk.
  auto accType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(blockK / 2, b.getF32Type()));
  Value all = LLVM::UndefOp::create(b, l, accType);
  auto shape = NVVM::MMAShapeAttr::get(b.getContext(), 64, blockK, 16);
  NVVM::WGMMATypes type =
      dtype.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  Value qBase = wgmma::descriptor(
      b, l, add(sharedBase, mul(warpgroup, 64 * 128)), true);
  for (auto [i, desc] : llvm::enumerate(descriptors)) {
    int64_t c = i / 4, s = i % 4;
    Value qDesc =
        wgmma::offsetDescriptor(b, l, qBase, c * blockQ * 128 + 32 * s);
    all = NVVM::WgmmaMmaAsyncOp::create(
        b, l, accType, all, qDesc, desc, shape, type, type,
        NVVM::WGMMATypes::f32,
        i == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
        NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
        NVVM::MMALayout::col, /*satfinite=*/nullptr);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, l);
  for (int64_t i = 0; i < blockK / 2; ++i)
    acc[i] = LLVM::ExtractValueOp::create(b, l, all, i);
  return acc;
}

SmallVector<Value> FlashAttention::issueValues(ArrayRef<Value> descriptors,
                                               const RowState &state) {
  SmallVector<Value> acc = state.acc;
  NVVM::WgmmaFenceAlignedOp::create(b, l);
  for (auto [j, desc] : llvm::enumerate(descriptors))
    acc = wgmma::multiplyRegisterA(b, l, acc,
                                   ArrayRef<Value>(state.p).slice(4 * j, 4),
                                   desc, dtype.isBF16(), true);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, l);
  return acc;
}

/// ln(sum of e^score) = (max c + log2 sum) ln 2 (the row's max is in
/// score units, its sum of 2^(score c - max c)), from the row's first lane.
void FlashAttention::storeLse(unsigned result, Value outRow, Value max,
                              Value sum, Value empty) {
  auto first = scf::IfOp::create(b, l, less(rem(lane, 4), idx(1)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(first.thenBlock());
  Value log2Sum = arith::AddFOp::create(b, l, fmul(max, e.f32(scaleLog2)),
                                        math::Log2Op::create(b, l, sum));
  Value lse = arith::SelectOp::create(b, l, empty, e.f32(-INFINITY),
                                      fmul(log2Sum, e.f32(M_LN2)));
  e.storeResult(result, outRow, lse);
}

/// O / l through the kernel's epilogue, a pair of value dims at a time; the
/// rows' log-sum-exp where the kernel has it as a result.
LogicalResult FlashAttention::store(const RowState &state) {
  Value root = rootValue(e.kernel());
  std::optional<unsigned> lse = lseResultOf(e.kernel(), op);
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  // The kernel yields reshapes and transposes of the result (heads
  // merged): each element is stored where the view puts it.
  bool merged = root != op.getResult();
  if (merged && !resultStrides)
    return e.kernel().emitOpError("yields a view of its attention result "
                                  "that is not reshapes and transposes");
  for (int64_t h = 0; h < 2; ++h) {
    Value sum = quadReduce(state.sum[h], false);
    Value empty = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, sum,
                                        e.f32(0));
    Value inverse = arith::SelectOp::create(
        b, l, empty, e.f32(0), arith::DivFOp::create(b, l, e.f32(1), sum));
    Value row = add(add(add(q0, warpRow), div(lane, 4)), idx(8 * h));
    auto inside = scf::IfOp::create(b, l, less(row, idx(sq)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    Value outRow = add(mul(add(mul(batch, heads), head), sq), row);
    if (lse)
      storeLse(*lse, outRow, state.max[h], sum, empty);
    for (int64_t i = 0; i < int64_t(state.acc.size()); i += 4) {
      int64_t first = i + 2 * h;
      Value col = add(mul(rem(lane, 4), 2), idx(8 * (i / 4)));
      if (8 * (i / 4) >= dv) // padding
        break;
      OpBuilder::InsertionGuard columnGuard(b);
      if (8 * (i / 4) + 8 > dv) { // a part of the last 8 columns
        auto has = scf::IfOp::create(b, l, less(col, idx(dv)), false);
        b.setInsertionPointToStart(has.thenBlock());
      }
      Value value0 = fmul(state.acc[first], inverse);
      Value value1 = fmul(state.acc[first + 1], inverse);
      Value linear =
          merged ? mergedPosition(row, col) : add(mul(outRow, dv), col);
      Value linear1 = add(linear, idx(1));
      FailureOr<Value> x0 = value0, x1 = value1;
      if (!merged) { // through the epilogue, if the kernel has one
        e.setElement(op.getResult(), linear, value0);
        e.setElement(op.getResult(), linear1, value1);
        x0 = e.elementAt(root, ElementIndex::linear(outShape, linear));
        x1 = e.elementAt(root, ElementIndex::linear(outShape, linear1));
      }
      if (failed(x0) || failed(x1))
        return failure();
      if (dv % 2 == 0) {
        e.storeLanes(0, linear, {*x0, *x1});
        continue;
      }
      // Rows of odd length: pairs are not aligned, and the last pair of a
      // row has one element.
      e.storeResult(0, linear, *x0);
      auto hasSecond =
          scf::IfOp::create(b, l, less(add(col, idx(1)), idx(dv)), false);
      b.setInsertionPointToStart(hasSecond.thenBlock());
      e.storeResult(0, linear1, *x1);
    }
  }
  return success();
}

LogicalResult kfuse::kf::emitFlashAttention(KernelEmitter &e, AttentionOp op) {
  return FlashAttention(e, op).emit();
}
