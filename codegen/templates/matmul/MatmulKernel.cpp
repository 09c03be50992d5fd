//===- MatmulKernel.cpp - kf-lower-to-gpu's tensor-core matmul template ---===//
//
// A block computes one [bm, bn] tile of the output (kf-tile's `tile_m`,
// `tile_n`), visiting tiles in groups of `group_m` tile rows so that
// neighbouring blocks share operand tiles in L2. Each K step of `tile_k`
// columns of A and rows of B is copied into shared memory with cp.async
// (16 bytes a copy, zero-filled past the edges of M, N and K), `stages`
// steps in flight (kf-promote-shared). Warps read their fragments with
// ldmatrix (transposing where the operand's layout is not the one
// mma.sync wants) and accumulate m16n8k16 bf16/f16 products in f32
// registers. The epilogue computes the kernel's fused elementwise ops on
// the accumulators in registers and stores the result, masked at the
// edges: nothing but the final result reaches memory.
//
// Shared-memory rows are padded by kSharedRowPad elements, which puts the
// eight 16-byte rows that one ldmatrix phase reads on distinct banks.
//
// With `wgmma` (sm_90a) the block is two warpgroups; each multiplies its
// 64 rows of A by the whole B tile with m64nNk16 wgmma instructions that
// read both operands from shared memory through matrix descriptors. The
// tiles are then stored in the 128-byte swizzled layouts those
// descriptors describe: K-major operands as rows of 64 elements, 16-byte
// chunk c of row r at chunk c ^ (r % 8); M/N-major ones as atoms of 8 K
// rows by 64 M/N elements, swizzled the same way. With `tma` as well, a
// third warpgroup copies the tiles instead (MatmulTmaPipeline.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/matmul/MatmulKernel.h"
#include "codegen/emitter/Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace kfuse::kf;

namespace kfuse::kf::detail {

TensorCoreMatmul::TensorCoreMatmul(KernelEmitter &e, MatmulOp matmul)
    : IndexArithmetic(e), matmul(matmul),
      p(MatmulProblem::of(matmul)) {
  KernelOp k = e.kernel();
  t = matmulTileOf(k);
  t.groupM = std::max<int64_t>(t.groupM, 1);
  wholeTileN = t.bn;
  auto pipeline = k.getPipelineAs<MmaPipelineAttr>();
  stages = pipeline ? pipeline.getStages() : 0;
  tma = pipeline && pipeline.getTma();
  stageOutput = pipeline && pipeline.getStageOutput();
  persistent = pipeline && pipeline.getPersistent();
  mmaGroups = tma ? pipeline.getMmaGroups() : 1;
  kTiles = (p.kChunk + t.bk - 1) / t.bk;
  dtype = mlir::cast<RankedTensorType>(matmul.getA().getType()).getElementType();
  SharedTile ta = sharedTileA(t, p.transposeA), tb = sharedTileB(t, p.transposeB);
  stageElements = ta.elements() + tb.elements();
  rows = rowInterleaveOf(k);
  std::tie(mTiles, nTiles) = matmulTileCounts(p, t, rows);
  auto staged = [&](Value v, SharedTile tile, int64_t offset, int64_t rows,
                    int64_t cols, bool shared, bool kContiguous) {
    unsigned number =
        mlir::cast<BlockArgument>(matmulOperandSource(v)).getArgNumber();
    int64_t stride = e.paddedStride(number);
    stride = stride ? stride : cols;
    return StagedOperand{
        e.gpuFunc().getArgument(number), tile,       offset, rows, cols, stride,
        shared ? 0 : rows * stride,      kContiguous};
  };
  a = staged(matmul.getA(), ta, 0, p.transposeA ? p.k : p.m,
             p.transposeA ? p.m : p.k, false, !p.transposeA);
  bOp = staged(matmul.getB(), tb, ta.elements(), p.transposeB ? p.n : p.k,
               p.transposeB ? p.k : p.n, p.sharedB, p.transposeB);
  // Persistent kernels stage their output past the two stages the next
  // tile's first copies fill; with `tma` past all of them.
  outputOffset = persistent ? 2 * stageElements * t.elementBytes : 0;
  stagedCols = stagedOutputCols(
      t, tma,
      getElementTypeOrSelf(k.getResult(0).getType()).getIntOrFloatBitWidth() /
          8);
  if (tma) {
    tmaMaps = tmaOperands(k);
    outputOffset = stages * stageElements * t.elementBytes;
    barrierOffset = k.getLaunchAttr().getSharedBytes() - stages * 16;
  }
}

LogicalResult TensorCoreMatmul::emit() {
  if (!t.bm || !t.bn || !t.bk || !stages)
    return e.kernel().emitOpError(
        "has no tensor-core tiling: run kf-tile and kf-promote-shared");
  if ((rows.active() && failed(checkRowInterleave())) ||
      failed(findColumnSums()))
    return failure();
  if (t.edgeN && (!tma || !columnSums.empty()))
    return e.kernel().emitOpError("has edgeN = ")
           << t.edgeN
           << ": narrow edge tiles need the TMA pipeline and no column sums";
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  sharedBytes = gpu::DynamicSharedMemoryOp::create(
      b, l, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                            workgroup));
  shared = memref::ViewOp::create(
      b, l,
      MemRefType::get({stages * stageElements}, dtype, AffineMap(), workgroup),
      sharedBytes, idx(0), ValueRange{});
  if (t.wgmma)
    sharedBase = memref::ExtractAlignedPointerAsIndexOp::create(b, l, shared);
  locateWarp();
  if (tma)
    return emitWarpSpecialized();
  Value bid = gpu::BlockIdOp::create(b, l, gpu::Dimension::x);
  tileAt = locate(bid);
  prologue(tileAt);
  if (!persistent)
    return finish(steps());
  // Persistent: this block's tiles in turn. The first copies of the next
  // tile are in flight while this tile's epilogue runs (the staged output
  // lies past the two stages they fill).
  int64_t tiles = p.splits * p.batch * mTiles * nTiles;
  return e.forEachItem(tiles, true, [&](Value tile) -> LogicalResult {
    tileAt = locate(tile);
    SmallVector<Value> acc = steps();
    NVVM::WgmmaWaitGroupSyncOp::create(b, l, 0);
    gpu::BarrierOp::create(b, l);
    Value next = add(tile, gpu::GridDimOp::create(b, l, gpu::Dimension::x));
    auto more = scf::IfOp::create(b, l, less(next, idx(tiles)), false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(more.thenBlock());
      prologue(locate(next));
    }
    return finish(acc);
  });
}

/// Interleaved rows as chooseRowInterleave() makes them: whole groups of
/// rows, a shift of whole vectors' worth of rows apart, tiles and staged
/// columns of whole aligned runs, and the operands and output only the
/// interleaving copies and stores address.
LogicalResult TensorCoreMatmul::checkRowInterleave() {
  auto refuse = [&](StringRef why) {
    return e.kernel().emitOpError("has rowGroups = ")
           << rows.groups << ", rowAlign = " << rows.align << ": " << why;
  };
  if (!tma || !stageOutput)
    return refuse("needs the TMA pipeline and a staged output");
  if (p.batch != 1 || p.splits != 1 || p.transposeA || !p.transposeB)
    return refuse("needs one product of K-major operands");
  int64_t outputBytes = getElementTypeOrSelf(e.kernel().getResult(0).getType())
                            .getIntOrFloatBitWidth() /
                        8;
  if (p.m % rows.groups || rows.groups * p.n % rows.align ||
      t.bn % rows.align || stagedCols % rows.align ||
      rows.align * outputBytes % 16)
    return refuse("does not align the rows of this output and tile");
  return success();
}

/// The accumulators out of their struct (wgmma), then the epilogue.
LogicalResult TensorCoreMatmul::finish(SmallVector<Value> acc) {
  if (t.wgmma) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, l, 0);
    Value all = acc[0];
    acc.clear();
    for (int64_t i = 0; i < accumulators(); ++i)
      acc.push_back(LLVM::ExtractValueOp::create(b, l, all, i));
  }
  return storeTile(acc);
}

/// Copies run `ahead` K steps before the products that read them: stages
/// - 1 with mma.sync (the barrier of step kt frees the stage step kt - 1
/// read), stages - 2 with wgmma, whose products of step kt - 1 may still
/// be in flight during step kt.
int64_t TensorCoreMatmul::ahead() const {
  return t.wgmma ? stages - 2 : stages - 1;
}

/// The copies of the first K steps of the current tile, into stages 0, 1..
void TensorCoreMatmul::prologue(const TileOrigin &origin) {
  for (int64_t s = 0; s < ahead(); ++s) {
    if (s < kTiles)
      loadStage(idx(s), idx(s), origin);
    NVVM::CpAsyncCommitGroupOp::create(b, l);
  }
}

SmallVector<Value> TensorCoreMatmul::steps() {
  int64_t ahead = this->ahead();
  auto step = [&](Value kt, ValueRange c, bool first) {
    // The copies of step kt have landed once at most ahead - 1 groups are
    // pending; the barrier also ends every warp's use of the stage the
    // next copies overwrite. wgmma reads shared memory through the async
    // proxy: the copies must be made visible to it first.
    NVVM::CpAsyncWaitGroupOp::create(b, l, ahead - 1);
    if (t.wgmma)
      wgmma::fenceSharedForAsyncProxy(b, l);
    gpu::BarrierOp::create(b, l);
    Value next = add(kt, idx(ahead));
    auto load = scf::IfOp::create(b, l, less(next, idx(kTiles)), false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(load.thenBlock());
      loadStage(next, rem(next, stages), tileAt);
    }
    NVVM::CpAsyncCommitGroupOp::create(b, l);
    if (t.wgmma)
      return SmallVector<Value>{multiplyWgmma(rem(kt, stages), c[0], first)};
    return multiply(rem(kt, stages), c);
  };
  if (!t.wgmma)
    return e.loop(kTiles, SmallVector<Value>(accumulators(), e.f32(0)),
                  [&](Value kt, ValueRange c) { return step(kt, c, false); });
  // wgmma: the first K step apart, its products not accumulated.
  SmallVector<Value> acc = step(idx(0), undefAccumulators(), true);
  return e.loop(kTiles - 1, acc, [&](Value kt, ValueRange c) {
    return step(add(kt, idx(1)), c, false);
  });
}

Value TensorCoreMatmul::undefAccumulators() {
  Type accType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(accumulators(), b.getF32Type()));
  return LLVM::UndefOp::create(b, l, accType);
}

TileOrigin TensorCoreMatmul::locate(Value tile) {
  TileOrigin o;
  int64_t cols = t.edgeN ? nTiles - 1 : nTiles;
  int64_t perSplit = p.batch * mTiles * cols;
  Value split = div(tile, perSplit);
  o.kBase = mul(split, p.kChunk);
  tile = rem(tile, perSplit);
  o.batch = div(tile, mTiles * cols);
  o.outBatch = add(mul(split, p.batch), o.batch);
  Value pid = rem(tile, mTiles * cols);
  int64_t inGroup = t.groupM * cols;
  Value firstM = mul(div(pid, inGroup), t.groupM);
  Value groupRows = arith::MinUIOp::create(
      b, l, arith::SubIOp::create(b, l, idx(mTiles), firstM), idx(t.groupM));
  Value inner = rem(pid, inGroup);
  placeRows(o, add(firstM, arith::RemUIOp::create(b, l, inner, groupRows)));
  placeColumns(o, arith::DivUIOp::create(b, l, inner, groupRows));
  return o;
}

TileOrigin TensorCoreMatmul::locateEdge(Value j) {
  TileOrigin o;
  o.kBase = idx(0);
  o.batch = div(j, mTiles);
  o.outBatch = o.batch;
  placeRows(o, rem(j, mTiles));
  placeColumns(o, idx(nTiles - 1));
  return o;
}

void TensorCoreMatmul::placeRows(TileOrigin &o, Value mTile) {
  if (rows.active()) {
    int64_t perGroup = mTiles / rows.groups;
    o.rowGroup = div(mTile, perGroup);
    mTile = rem(mTile, perGroup);
  }
  o.m0 = mul(mTile, t.bm);
}

void TensorCoreMatmul::placeColumns(TileOrigin &o, Value nTile) {
  o.n0 = mul(nTile, wholeTileN);
  // Group g's tiles start (g * N) % align columns left of the tile grid,
  // the first of them before column 0.
  if (rows.active())
    o.n0 = arith::SubIOp::create(
        b, l, o.n0, rem(mul(o.rowGroup, p.n % rows.align), rows.align));
}

Value TensorCoreMatmul::outputRow(Value r) {
  if (!rows.active())
    return add(tileAt.m0, r);
  return add(tileAt.rowGroup, mul(add(tileAt.m0, r), rows.groups));
}

/// The warp's place in a tile and the per-lane ldmatrix offsets.
void TensorCoreMatmul::locateWarp() {
  tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  lane = rem(tid, 32);
  Value warp = div(tid, 32);
  warpRow = mul(div(warp, t.warpsN), t.bm / t.warpsM);
  warpCol = mul(rem(warp, t.warpsN), t.bn / t.warpsN);

  // ldmatrix.x4: lanes 8i..8i+7 address the rows of 8x8 matrix i.
  Value l8 = rem(lane, 8), l16 = rem(lane, 16), hi = div(lane, 16),
        mid = rem(div(lane, 8), 2);
  auto offset = [&](Value row, Value col, const SharedTile &tile) {
    return add(mul(row, tile.stride()), col);
  };
  // A fragments: matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15),
  // (8-15, 8-15) of a 16x16 tile.
  // Along K, 8 columns are 16 bytes: 4 of TF32's 32-bit elements, whose
  // 16x8 A and 8x8 B fragments are those of a 16-bit operand twice as wide
  // (transposed operands are 16-bit only).
  int64_t k8 = t.chunkElements();
  laneA = p.transposeA ? offset(add(l8, mul(hi, 8)), mul(mid, 8), a.tile)
                       : offset(l16, mul(hi, k8), a.tile);
  // B fragments of two n8 tiles: (k 0-7, n 0-7), (8-15, 0-7), (0-7, 8-15),
  // (8-15, 8-15).
  laneB = p.transposeB ? offset(add(l8, mul(hi, 8)), mul(mid, k8), bOp.tile)
                       : offset(add(l8, mul(mid, 8)), mul(hi, 8), bOp.tile);
}

void TensorCoreMatmul::loadStage(Value kTile, Value stage,
                                 const TileOrigin &origin) {
  Value k0 = add(origin.kBase, mul(kTile, t.bk));
  Value base = mul(stage, stageElements);
  Value aBase = mul(origin.batch, a.batchStride);
  Value bBase = mul(origin.batch, bOp.batchStride);
  Value m0 = origin.m0, n0 = origin.n0;
  if (p.transposeA)
    copyTile(a, aBase, k0, m0, base);
  else
    copyTile(a, aBase, m0, k0, base);
  if (p.transposeB)
    copyTile(bOp, bBase, n0, k0, base);
  else
    copyTile(bOp, bBase, k0, n0, base);
}

/// Thread tid copies 16-byte chunks tid, tid + threads, ...; those past K
/// are zero-filled (a zero adds nothing to the products), those past M or
/// N not copied at all: they only feed outputs that are never stored, so
/// whatever the stage held there is harmless (M = 16 against 128-row
/// tiles: 7 of 8 of A's copies).
void TensorCoreMatmul::copyTile(const StagedOperand &op, Value batchBase,
                                Value row0, Value col0, Value stageBase) {
  int64_t vec = t.chunkElements();
  int64_t perRow = op.tile.cols / vec;
  int64_t chunks = op.tile.rows * perRow;
  for (int64_t first = 0; first < chunks; first += t.threads()) {
    Value c = add(tid, idx(first));
    Value r = div(c, perRow), col = mul(rem(c, perRow), vec);
    Value gr = add(row0, r), gc = add(col0, col);
    Value src = add(batchBase, add(mul(gr, op.stride), gc));
    // Tiles start at multiples of their size: only a dim the tile does not
    // divide has edges to test, and K where the last split-K chunk is
    // shorter than the others (its last steps lie past K).
    bool kTail = p.k % p.kChunk != 0;
    Value rowInside, colInside;
    if (op.rows % op.tile.rows || (kTail && !op.kContiguous))
      rowInside = less(gr, idx(op.rows));
    if (op.cols % op.tile.cols || (kTail && op.kContiguous))
      colInside = less(gc, idx(op.cols));
    Value insideK = op.kContiguous ? colInside : rowInside;
    Value insideMN = op.kContiguous ? rowInside : colInside;
    Value count;
    if (insideK) {
      src = arith::SelectOp::create(b, l, insideK, src, idx(0));
      count = arith::SelectOp::create(b, l, insideK, idx(vec), idx(0));
    }
    Value dst = add(stageBase, add(idx(op.offset), sharedOffset(op, r, col)));
    OpBuilder::InsertionGuard g(b);
    Value copies = insideMN;
    if (chunks % t.threads()) {
      Value inRange = less(c, idx(chunks));
      copies = copies ? arith::AndIOp::create(b, l, copies, inRange) : inRange;
    }
    if (copies) {
      auto copy = scf::IfOp::create(b, l, copies, false);
      b.setInsertionPointToStart(copy.thenBlock());
    }
    nvgpu::DeviceAsyncCopyOp::create(b, l, shared, ValueRange{dst}, op.memref,
                                     ValueRange{src}, b.getIndexAttr(vec),
                                     count, b.getUnitAttr());
  }
}

Value TensorCoreMatmul::sharedOffset(const StagedOperand &op, Value r,
                                     Value col) {
  if (!t.wgmma)
    return add(mul(r, op.tile.stride()), col);
  return wgmma::swizzledOffset(b, l, r, col, op.kContiguous, t.elementBytes);
}

/// Four 32-byte K steps (m64nNk16, or m64nNk8 in TF32) for the warpgroup's
/// 64 rows, left in flight while the next stage's copies land: then waits
/// until the products of at most `mmaGroups` K steps, this one's included,
/// are in flight.
Value TensorCoreMatmul::multiplyWgmma(Value stage, Value acc, bool first) {
  Value stageBytes =
      add(sharedBase, mul(stage, stageElements * t.elementBytes));
  // Warpgroup g's 64 rows of A: 64 rows of 128 bytes (K-major) or the g-th
  // atom column (M-major): 8192 bytes either way.
  Value warpgroup = div(tid, 128);
  Value aBytes = add(stageBytes, mul(warpgroup, 8192));
  Value bBytes = add(stageBytes, idx(bOp.offset * t.elementBytes));
  auto layout = [&](bool kContiguous, bool isA) {
    // A is "row" when K-major, B is "col" when K-major.
    return kContiguous == isA ? NVVM::MMALayout::row : NVVM::MMALayout::col;
  };
  auto shape = NVVM::MMAShapeAttr::get(b.getContext(), 64, t.bn, t.productK());
  NVVM::WGMMATypes type = dtype.isBF16()  ? NVVM::WGMMATypes::bf16
                          : dtype.isF16() ? NVVM::WGMMATypes::f16
                                          : NVVM::WGMMATypes::tf32;
  NVVM::WgmmaFenceAlignedOp::create(b, l);
  for (int64_t s = 0; s < t.bk / t.productK(); ++s) {
    // A product's K step is 32 bytes into a K-major row, two 8-row groups
    // down an M/N-major atom (16-bit operands only).
    auto step = [&](bool kContiguous) { return idx(kContiguous ? 32 * s : 2048 * s); };
    Value da = wgmma::descriptor(b, l, add(aBytes, step(a.kContiguous)),
                                 a.kContiguous);
    Value db = wgmma::descriptor(b, l, add(bBytes, step(bOp.kContiguous)),
                                 bOp.kContiguous);
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, l, acc.getType(), acc, da, db, shape, type, type,
        NVVM::WGMMATypes::f32,
        first && s == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
        NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
        layout(a.kContiguous, true), layout(bOp.kContiguous, false),
        /*satfinite=*/nullptr);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, l);
  NVVM::WgmmaWaitGroupSyncOp::create(b, l, mmaGroups);
  return acc;
}

SmallVector<Value> TensorCoreMatmul::loadFragments(Value offset,
                                                   bool transpose) {
  auto type = VectorType::get({4, 4 / t.elementBytes}, dtype);
  Value frag = nvgpu::LdMatrixOp::create(b, l, type, shared, ValueRange{offset},
                                         transpose, 4);
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i) {
    Value pair = vector::ExtractOp::create(b, l, frag, ArrayRef<int64_t>{i});
    if (!dtype.isF16()) {
      // NVVM takes bf16 pairs and TF32 values as 32-bit registers.
      Value word = vector::BitCastOp::create(
          b, l, VectorType::get({1}, b.getI32Type()), pair);
      pair = vector::ExtractOp::create(b, l, word, ArrayRef<int64_t>{0});
    }
    regs.push_back(pair);
  }
  return regs;
}

void TensorCoreMatmul::mma(ArrayRef<Value> aRegs, ArrayRef<Value> bRegs,
                            ArrayRef<Value> c, SmallVectorImpl<Value> &out) {
  Type f32 = b.getF32Type();
  auto result = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                 {f32, f32, f32, f32});
  NVVM::MMATypes type = dtype.isBF16()  ? NVVM::MMATypes::bf16
                        : dtype.isF16() ? NVVM::MMATypes::f16
                                        : NVVM::MMATypes::tf32;
  Value d = NVVM::MmaOp::create(
      b, l, result, aRegs, bRegs, c, ArrayRef<int64_t>{16, 8, t.productK()},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, l, d, ArrayRef<int64_t>{i}));
}

SmallVector<Value> TensorCoreMatmul::multiply(Value stage, ValueRange acc) {
  int64_t tilesM = t.bm / t.warpsM / 16, tilesN = t.bn / t.warpsN / 8;
  Value base = mul(stage, stageElements);
  Value aWarp = add(base, add(laneA, p.transposeA ? warpRow
                                                  : mul(warpRow, a.tile.stride())));
  Value bWarp = add(base, add(idx(bOp.offset),
                              add(laneB, p.transposeB
                                             ? mul(warpCol, bOp.tile.stride())
                                             : warpCol)));
  SmallVector<Value> sums(acc.begin(), acc.end());
  for (int64_t kk = 0; kk < t.bk; kk += t.productK()) {
    SmallVector<SmallVector<Value>> aFrags, bFrags;
    for (int64_t mi = 0; mi < tilesM; ++mi) {
      int64_t at = p.transposeA ? kk * a.tile.stride() + mi * 16
                                : mi * 16 * a.tile.stride() + kk;
      aFrags.push_back(loadFragments(add(aWarp, idx(at)), p.transposeA));
    }
    for (int64_t nj = 0; nj < tilesN; nj += 2) {
      int64_t at = p.transposeB ? nj * 8 * bOp.tile.stride() + kk
                                : kk * bOp.tile.stride() + nj * 8;
      SmallVector<Value> regs = loadFragments(add(bWarp, idx(at)),
                                              !p.transposeB);
      bFrags.push_back({regs[0], regs[1]});
      bFrags.push_back({regs[2], regs[3]});
    }
    SmallVector<Value> next;
    for (int64_t mi = 0; mi < tilesM; ++mi)
      for (int64_t ni = 0; ni < tilesN; ++ni) {
        ArrayRef<Value> c = ArrayRef<Value>(sums).slice((mi * tilesN + ni) * 4, 4);
        mma(aFrags[mi], bFrags[ni], c, next);
      }
    sums = std::move(next);
  }
  return sums;
}

} // namespace kfuse::kf::detail

LogicalResult kfuse::kf::emitTensorCoreMatmul(KernelEmitter &e,
                                              MatmulOp matmul) {
  return detail::TensorCoreMatmul(e, matmul).emit();
}
