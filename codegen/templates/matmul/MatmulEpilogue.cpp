//===- MatmulEpilogue.cpp - the tensor-core matmul template's output ------===//
//
// The epilogue of MatmulKernel.cpp's template: the kernel's elementwise ops
// computed on the accumulators in registers, and the result's way out.
// Without `stage_output` each thread stores its accumulator pairs. With
// it, the results pass through a tile staged in shared memory and leave it
// in whole rows, `stagedCols` columns at a time.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/matmul/MatmulKernel.h"

#include <numeric>

using namespace mlir;
using namespace kfuse::kf;

namespace kfuse::kf::detail {

/// Accumulator (mi, ni) holds rows lane/4 and lane/4 + 8 of its 16x8 tile,
/// two adjacent columns each. With `stage_output` the results go through
/// shared memory (the pipeline's, once every warp is done with it) and
/// leave it in whole rows, so that stores to unaligned rows coalesce.
LogicalResult TensorCoreMatmul::storeTile(ValueRange acc) {
  int64_t tilesN = t.bn / t.warpsN / 8;
  resetColumnSums();
  if (!stageOutput) {
    if (failed(sumColumnsGuarded(acc)))
      return failure();
    storeColumnSums();
    return storePairs(acc, 0, tilesN, false);
  }
  bool upfront = computesUpfront();
  SmallVector<unsigned> results = stagedResults();
  StagedValues values;
  if (upfront && failed(computeStaged(acc, results, values)))
    return failure();
  if (!upfront && failed(sumColumnsGuarded(acc)))
    return failure();
  storeColumnSums();
  // The results pass through the one staged tile in turn.
  for (auto [i, result] : llvm::enumerate(results)) {
    for (int64_t c0 = 0; c0 < t.bn; c0 += stagedCols) {
      // The first barrier ends the reads of the staged tile by the copy
      // before; the second makes this chunk's writes visible to the copy.
      syncConsumers();
      stagedFirstCol = c0;
      SmallVector<PairSlot> slots = stagedChunk(c0);
      if (upfront) {
        writeStaged(slots, values[i][c0 / stagedCols]);
      } else {
        for (const PairSlot &slot : slots)
          if (failed(storePair(slot.r, slot.c, acc[slot.at],
                               acc[slot.at + 1], true, result)))
            return failure();
      }
      syncConsumers();
      copyOutput(result);
    }
  }
  return success();
}

SmallVector<TensorCoreMatmul::PairSlot>
TensorCoreMatmul::stagedChunk(int64_t c0) {
  // With wgmma a warp holds whole rows: its n8 tiles are columns ni * 8
  // (warpCol = 0), and a chunk of staged columns picks them statically.
  int64_t tilesN = t.bn / t.warpsN / 8;
  bool chunked = stagedCols != t.bn;
  return pairSlots(chunked ? c0 / 8 : 0,
                   chunked ? (c0 + stagedCols) / 8 : tilesN);
}

LogicalResult TensorCoreMatmul::computeStaged(ValueRange acc,
                                              ArrayRef<unsigned> results,
                                              StagedValues &values) {
  auto yield =
      mlir::cast<YieldOp>(e.kernel().getBody().front().getTerminator());
  values.assign(results.size(), {});
  for (auto [i, result] : llvm::enumerate(results)) {
    for (int64_t c0 = 0; c0 < t.bn; c0 += stagedCols) {
      values[i].emplace_back();
      for (const PairSlot &slot : stagedChunk(c0)) {
        OutputPair at = pairAt(slot);
        FailureOr<Value> pair =
            stagedPair(slot, at, acc, yield.getValues()[result]);
        if (failed(pair) || (i == 0 && failed(addToColumnSums(slot, at))))
          return failure();
        values[i].back().push_back(*pair);
      }
    }
  }
  return success();
}

SmallVector<unsigned> TensorCoreMatmul::stagedResults() {
  auto yield =
      mlir::cast<YieldOp>(e.kernel().getBody().front().getTerminator());
  SmallVector<unsigned> results;
  for (auto [i, value] : llvm::enumerate(yield.getValues()))
    if (!columnPartialsSource(value))
      results.push_back(i);
  return results;
}

SmallVector<TensorCoreMatmul::PairSlot>
TensorCoreMatmul::pairSlots(int64_t firstN8, int64_t endN8) {
  int64_t tilesM = t.bm / t.warpsM / 16, tilesN = t.bn / t.warpsN / 8;
  Value localRow = add(warpRow, div(lane, 4));
  Value localCol = add(warpCol, mul(rem(lane, 4), 2));
  SmallVector<PairSlot> slots;
  for (int64_t mi = 0; mi < tilesM; ++mi)
    for (int64_t ni = firstN8; ni < endN8; ++ni)
      for (int64_t h = 0; h < 2; ++h)
        slots.push_back({add(localRow, idx(mi * 16 + h * 8)),
                         add(localCol, idx(ni * 8)),
                         (mi * tilesN + ni) * 4 + h * 2});
  return slots;
}

LogicalResult TensorCoreMatmul::storePairs(ValueRange acc, int64_t firstN8,
                                           int64_t endN8, bool staged) {
  for (const PairSlot &slot : pairSlots(firstN8, endN8))
    if (failed(
            storePair(slot.r, slot.c, acc[slot.at], acc[slot.at + 1], staged)))
      return failure();
  return success();
}

/// An epilogue that cannot read out of bounds (it reads no inputs, or the
/// tiles have no edges) is computed for every chunk before any is stored,
/// branch-free (the copies mask the tile's edges): the accumulators are
/// dead before the first branch. Else ptxas serialised the wgmmas of
/// kernels with partial tiles (C7514: "non wgmma instructions reading
/// accumulator registers"), the lm-head's with N = 50304 (196.5 tiles of
/// 256) among them. (Interleaved rows read their inputs at columns
/// clamped into the row: see outputPair.)
bool TensorCoreMatmul::computesUpfront() {
  bool rowEdges = (rows.active() ? p.m / rows.groups : p.m) % t.bm != 0;
  // Beside narrow edge tiles, the whole ones lie inside N.
  bool colEdges = !rows.active() && p.n % t.bn != 0;
  if (t.edgeN)
    colEdges =
        !rows.active() && edgeTile && (nTiles - 1) * wholeTileN + t.bn > p.n;
  return !epilogueReadsInputs() || (!rowEdges && !colEdges);
}

/// The loads of the epilogue's column vectors (a bias) go out before the
/// wait for the tile's last products, so that their latency hides behind
/// those; the epilogue then finds them (KernelEmitter caches elements by
/// index, and stagedPair takes the same OutputPairs), and a pair's two
/// elements load as one vector. Only where the epilogue is computed
/// branch-free (computesUpfront): every pair's inputs then lie inside
/// them. Up to 32 registers a thread, beside the 128 accumulators in
/// flight: one 16-bit bias of a 256-column tile. H200, the 4096^3 bf16
/// matmul with bias + GELU over the plain one, in turns (two runs each):
/// 1.049, 1.049 with the loads in the epilogue; 1.043, 1.044 with the
/// first staged chunk's prefetched; 1.038, 1.042 with all of them.
/// What the columns leave of those registers takes the first n8 tiles'
/// pairs of the inputs read at the output's own index (a residual, the
/// gate of SwiGLU): 16 of a 256-column tile's 32 for one bf16 input.
LogicalResult TensorCoreMatmul::prefetchEpilogueInputs() {
  prefetchedPairs.clear();
  if (!stageOutput || !computesUpfront())
    return success();
  constexpr int64_t budget = 32 * 4;
  int64_t tilesN = t.bn / t.warpsN / 8, tilesM = t.bm / t.warpsM / 16;
  // The inputs broadcast down the columns, one element a column; a thread
  // holds two columns of each n8 tile.
  SmallVector<Value> columns;
  int64_t bytes = 0;
  for (Operation &op : e.kernel().getBody().front()) {
    auto broadcast = dyn_cast<BroadcastOp>(op);
    if (!broadcast || !isa<BlockArgument>(broadcast.getInput()) ||
        broadcast.getInput().getType().getNumElements() != p.n)
      continue;
    columns.push_back(broadcast.getResult());
    bytes += 2 * tilesN *
             broadcast.getInput().getType().getElementTypeBitWidth() / 8;
  }
  if (bytes > budget) {
    columns.clear();
    bytes = 0;
  }
  SmallVector<Value> full = inputsAtOutputIndex();
  int64_t perN8 = 0;
  for (Value input : full)
    perN8 += tilesM * 4 * getElementTypeOrSelf(input.getType())
                              .getIntOrFloatBitWidth() / 8;
  int64_t fullN8 = perN8 ? std::min(tilesN, (budget - bytes) / perN8) : 0;
  if (columns.empty() && !fullN8)
    return success();
  for (const PairSlot &slot : pairSlots(0, tilesN)) {
    OutputPair at = outputPair(slot.r, slot.c);
    prefetchedPairs[slot.at] = at;
    for (Value column : columns)
      for (bool second : {false, true})
        if (failed(e.elementAt(column, pairIndex(column, at, second))))
          return failure();
    if (slot.at / 4 % tilesN >= fullN8)
      continue;
    for (Value input : full)
      if (failed(e.vectorAt(input, pairIndex(input, at, false),
                            {at.linear, at.linear1})))
        return failure();
  }
  return success();
}

/// Kernel inputs of the matmul result's shape that only elementwise ops
/// read: their elements at a pair's index are the ones its epilogue reads,
/// as the 2-vectors resultPair asks for.
SmallVector<Value> TensorCoreMatmul::inputsAtOutputIndex() {
  SmallVector<Value> inputs;
  if (p.n % 2 || rows.active())
    return inputs;
  Type shape = matmul.getResult().getType();
  for (BlockArgument arg : e.kernel().getBody().getArguments()) {
    if (arg == matmul.getA() || arg == matmul.getB() ||
        mlir::cast<ShapedType>(arg.getType()).getShape() !=
            mlir::cast<ShapedType>(shape).getShape() ||
        arg.use_empty())
      continue;
    if (llvm::all_of(arg.getUsers(), [](Operation *user) {
          return user->hasTrait<OpTrait::kf::Elementwise>();
        }))
      inputs.push_back(arg);
  }
  return inputs;
}

bool TensorCoreMatmul::epilogueReadsInputs() {
  for (Operation &op : e.kernel().getBody().front())
    if (&op != matmul.getOperation() && !isMatmulOperandView(&op) &&
        llvm::any_of(op.getOperands(),
                     [](Value v) { return isa<BlockArgument>(v); }))
      return true;
  return false;
}

TensorCoreMatmul::OutputPair TensorCoreMatmul::pairAt(const PairSlot &slot) {
  auto prefetched = prefetchedPairs.find(slot.at);
  return prefetched != prefetchedPairs.end() ? prefetched->second
                                             : outputPair(slot.r, slot.c);
}

/// The pair at `slot` through the epilogue, as a 2-vector of the staged
/// tile's dtype, whether or not it lies inside the output.
FailureOr<Value> TensorCoreMatmul::stagedPair(const PairSlot &slot,
                                              const OutputPair &at,
                                              ValueRange acc, Value value) {
  e.setElement(matmul.getResult(), at.linear, acc[slot.at]);
  e.setElement(matmul.getResult(), at.linear1, acc[slot.at + 1]);
  Type dtype = mlir::cast<RankedTensorType>(value.getType()).getElementType();
  FailureOr<std::array<Value, 2>> values = resultPair(value, at);
  if (failed(values))
    return failure();
  SmallVector<Value> pair;
  for (Value x : *values)
    pair.push_back(x.getType() == dtype
                       ? x
                       : arith::TruncFOp::create(b, l, dtype, x).getResult());
  return vector::FromElementsOp::create(b, l, VectorType::get({2}, dtype), pair)
      .getResult();
}

/// Where the pair's two elements are consecutive in every tensor the
/// epilogue reads (even rows, columns not clamped), they are asked for as
/// one 2-vector, so that a residual or a gate of the output's shape loads
/// in 4-byte (bf16) or 8-byte words rather than element by element.
FailureOr<std::array<Value, 2>> TensorCoreMatmul::resultPair(Value value,
                                                             const OutputPair &at) {
  if (p.n % 2 == 0 && !rows.active()) {
    FailureOr<SmallVector<Value>> lanes =
        e.vectorAt(value, pairIndex(value, at, false), {at.linear, at.linear1});
    if (failed(lanes))
      return failure();
    return std::array<Value, 2>{(*lanes)[0], (*lanes)[1]};
  }
  FailureOr<Value> x0 = e.elementAt(value, pairIndex(value, at, false));
  if (failed(x0))
    return failure();
  FailureOr<Value> x1 = e.elementAt(value, pairIndex(value, at, true));
  if (failed(x1))
    return failure();
  return std::array<Value, 2>{*x0, *x1};
}

void TensorCoreMatmul::writeStaged(ArrayRef<PairSlot> slots,
                                   ArrayRef<Value> pairs) {
  Value tile = outputTile();
  for (auto [slot, pair] : llvm::zip_equal(slots, pairs)) {
    Value c = arith::SubIOp::create(b, l, slot.c, idx(stagedFirstCol));
    Value at = add(mul(slot.r, stagedCols + 8), c);
    int64_t bytes =
        2 * mlir::cast<VectorType>(pair.getType()).getElementTypeBitWidth() / 8;
    vector::StoreOp::create(b, l, pair, tile, ValueRange{at}, false,
                            llvm::MaybeAlign(bytes));
  }
}

/// The output tile as staged in shared memory: [bm, bn + 8] elements of the
/// results' dtype (the padding spreads the rows a warp writes over banks;
/// kf-promote-shared stages several results only where they share it).
Value TensorCoreMatmul::outputTile() {
  Type type = mlir::cast<RankedTensorType>(e.kernel().getResult(0).getType())
                  .getElementType();
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return memref::ViewOp::create(
      b, l,
      MemRefType::get({t.bm * (stagedCols + 8)}, type, AffineMap(), workgroup),
      sharedBytes, idx(outputOffset), ValueRange{});
}

/// Thread tid stores vectors tid, tid + threads, ... of the staged tile, of
/// `vec` elements (16 bytes where the rows are whole 16-byte vectors, else
/// the widest vector whose size divides the row stride, so that each
/// starts aligned): a warp writes consecutive elements of a row. Rows that
/// kf-pad padded are written to their whole stride, zeros past the row's end.
void TensorCoreMatmul::copyOutput(unsigned result) {
  Value tile = outputTile();
  unsigned outArg = e.kernel().getInputs().size() + result;
  Value out = e.gpuFunc().getArgument(outArg);
  Type type = mlir::cast<MemRefType>(out.getType()).getElementType();
  int64_t padded = e.paddedStride(outArg);
  int64_t stride = padded ? padded : p.n;
  int64_t vec = 16 / (type.getIntOrFloatBitWidth() / 8);
  if (!rows.active())
    vec = std::gcd(vec, stride);
  auto vectorType = VectorType::get({vec}, type);
  e.loop(t.bm * stagedCols / vec / t.threads(), {}, [&](Value i, ValueRange) {
    Value at = mul(add(tid, mul(i, t.threads())), vec);
    Value r = div(at, stagedCols), c = rem(at, stagedCols);
    Value row = outputRow(r), col = add(tileAt.n0, add(c, idx(stagedFirstCol)));
    if (rows.active()) {
      copyAlignedVector(tile, out, add(mul(r, stagedCols + 8), c),
                        add(mul(row, p.n), col), row, col, vec);
      return SmallVector<Value>{};
    }
    Value inside = arith::AndIOp::create(b, l, less(row, idx(p.m)),
                                         less(col, idx(stride)));
    auto ifOp = scf::IfOp::create(b, l, inside, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value from = add(mul(r, stagedCols + 8), c);
    Value linear = add(mul(add(mul(tileAt.outBatch, p.m), row), stride), col);
    if (vec == 1) {
      Value v = memref::LoadOp::create(b, l, tile, ValueRange{from});
      if (padded)
        v = arith::SelectOp::create(b, l, less(col, idx(p.n)), v,
                                    e.constant(type, 0));
      memref::StoreOp::create(b, l, v, out, ValueRange{linear});
    } else {
      Value v = vector::LoadOp::create(b, l, vectorType, tile, ValueRange{from},
                                       false, llvm::MaybeAlign(16));
      if (padded)
        v = zeroPastRow(v, col);
      vector::StoreOp::create(b, l, v, out, ValueRange{linear}, false,
                              llvm::MaybeAlign(16));
    }
    return SmallVector<Value>{};
  });
}

void TensorCoreMatmul::copyAlignedVector(Value tile, Value out, Value from,
                                         Value linear, Value row, Value col,
                                         int64_t vec) {
  Type type = mlir::cast<MemRefType>(out.getType()).getElementType();
  Value rowInside = less(row, idx(p.m));
  // Unsigned: the columns before the row's start are past N too.
  Value whole = arith::AndIOp::create(b, l, less(col, idx(p.n)),
                                      less(add(col, idx(vec - 1)), idx(p.n)));
  auto ifOp = scf::IfOp::create(
      b, l, arith::AndIOp::create(b, l, rowInside, whole), true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  auto vectorType = VectorType::get({vec}, type);
  Value v = vector::LoadOp::create(b, l, vectorType, tile, ValueRange{from},
                                   false, llvm::MaybeAlign(16));
  vector::StoreOp::create(b, l, v, out, ValueRange{linear}, false,
                          llvm::MaybeAlign(16));
  // A vector across the row's start or end: the row's elements of it.
  b.setInsertionPointToStart(ifOp.elseBlock());
  for (int64_t k = 0; k < vec; ++k) {
    Value inside = arith::AndIOp::create(b, l, rowInside,
                                         less(add(col, idx(k)), idx(p.n)));
    auto element = scf::IfOp::create(b, l, inside, false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(element.thenBlock());
    Value x = memref::LoadOp::create(b, l, tile, ValueRange{add(from, idx(k))});
    memref::StoreOp::create(b, l, x, out, ValueRange{add(linear, idx(k))});
  }
}

Value TensorCoreMatmul::zeroPastRow(Value v, Value col) {
  auto type = mlir::cast<VectorType>(v.getType());
  SmallVector<Value> inside;
  for (int64_t k = 0; k < type.getNumElements(); ++k)
    inside.push_back(less(add(col, idx(k)), idx(p.n)));
  Value mask = vector::FromElementsOp::create(
      b, l, VectorType::get(type.getShape(), b.getI1Type()), inside);
  Value zero = arith::ConstantOp::create(
      b, l, type,
      DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
  return arith::SelectOp::create(b, l, mask, v, zero);
}

/// Output elements (row, col) and (row, col + 1) of the tile (local
/// coordinates), as far as they exist, after the kernel's epilogue: stored,
/// or written to the staged tile.
LogicalResult TensorCoreMatmul::storePair(Value r, Value c, Value v0, Value v1,
                                          bool staged, unsigned only) {
  OutputPair at = outputPair(r, c);
  Value inside = arith::AndIOp::create(b, l, less(at.row, idx(p.m)),
                                       less(at.col, idx(p.n)));
  auto ifOp = scf::IfOp::create(b, l, inside, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  e.setElement(matmul.getResult(), at.linear, v0);
  e.setElement(matmul.getResult(), at.linear1, v1);
  Value tile = staged ? outputTile() : Value();
  auto yield =
      mlir::cast<YieldOp>(e.kernel().getBody().front().getTerminator());
  for (auto [result, value] : llvm::enumerate(yield.getValues()))
    if (!columnPartialsSource(value) && (!staged || result == only) &&
        failed(storeResultPair(result, value, at, tile)))
      return failure();
  return success();
}

TensorCoreMatmul::OutputPair TensorCoreMatmul::outputPair(Value r, Value c) {
  OutputPair at;
  at.r = r;
  at.c = c;
  at.col = add(tileAt.n0, c);
  at.row = outputRow(r);
  at.outRow = add(mul(tileAt.outBatch, p.m), at.row);
  if (rows.active()) {
    // The first and last tiles of a row reach past its ends, where the
    // epilogue's inputs have no elements: their columns are clamped into
    // the row (the copy out never stores what is computed there). The two
    // elements keep distinct indices, under which their values are
    // recorded, even where both clamp to one column.
    auto clamp = [&](Value col) -> Value {
      Value inRow = arith::MaxSIOp::create(b, l, col, idx(0));
      return arith::MinSIOp::create(b, l, inRow, idx(p.n - 1));
    };
    at.col1 = clamp(add(at.col, idx(1)));
    at.col = clamp(at.col);
    at.linear = add(mul(at.outRow, p.n), at.col);
    at.linear1 = add(mul(at.outRow, p.n), at.col1);
    return at;
  }
  at.linear = add(mul(at.outRow, p.n), at.col);
  at.linear1 = add(at.linear, idx(1));
  at.col1 = add(at.col, idx(1));
  return at;
}

ElementIndex TensorCoreMatmul::pairIndex(Value value, const OutputPair &at,
                                         bool second) {
  ArrayRef<int64_t> shape = shapeOf(value);
  Value lin = second ? at.linear1 : at.linear, col = second ? at.col1 : at.col;
  return shape.back() == p.n
             ? ElementIndex::rowElement(shape, lin, at.outRow, col)
             : ElementIndex::linear(shape, lin);
}

/// One result's pair at `at`: from registers as a 2-vector when rows have
/// an even length, else an element at a time (the second only when the row
/// has it); into `tile` when the output is staged.
LogicalResult TensorCoreMatmul::storeResultPair(unsigned result, Value value,
                                                const OutputPair &at,
                                                Value tile) {
  Type dtype = mlir::cast<RankedTensorType>(value.getType()).getElementType();
  Value linear1 = at.linear1, col1 = at.col1;
  auto toShared = [&](Value x, Value cc) {
    if (dtype != x.getType())
      x = arith::TruncFOp::create(b, l, dtype, x);
    memref::StoreOp::create(
        b, l, x, tile,
        ValueRange{add(mul(at.r, stagedCols + 8),
                       arith::SubIOp::create(b, l, cc, idx(stagedFirstCol)))});
  };
  bool pairs = p.n % 2 == 0 && !dtype.isInteger(1);
  if (pairs) {
    FailureOr<std::array<Value, 2>> x = resultPair(value, at);
    if (failed(x))
      return failure();
    if (tile) {
      toShared((*x)[0], at.c);
      toShared((*x)[1], add(at.c, idx(1)));
    } else {
      e.storeLanes(result, BufferIndex(at.linear, at.outRow, at.col),
                   {(*x)[0], (*x)[1]});
    }
    return success();
  }
  FailureOr<Value> x0 = e.elementAt(value, pairIndex(value, at, false));
  if (failed(x0))
    return failure();
  auto second = [&]() -> LogicalResult {
    FailureOr<Value> x1 = e.elementAt(value, pairIndex(value, at, true));
    if (failed(x1))
      return failure();
    if (tile) {
      toShared(*x0, at.c);
      toShared(*x1, add(at.c, idx(1)));
    } else {
      e.storeResult(result, BufferIndex(linear1, at.outRow, col1), *x1);
    }
    return success();
  };
  if (tile)
    toShared(*x0, at.c);
  else
    e.storeResult(result, BufferIndex(at.linear, at.outRow, at.col), *x0);
  // An odd N: the pair may straddle the row's end.
  auto has = scf::IfOp::create(b, l, less(col1, idx(p.n)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(has.thenBlock());
  return second();
}

} // namespace kfuse::kf::detail
