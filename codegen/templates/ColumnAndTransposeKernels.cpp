//===- ColumnAndTransposeKernels.cpp - shared-memory tiles ----------------===//
//
// Two templates that go through a 32 x 33 f32 tile of shared memory (33:
// the padding column keeps the column accesses free of bank conflicts) so
// that both reads and writes are coalesced: column reductions, whose warps
// read 32 consecutive columns and meet in the tile, and transposes of the
// last two dims, read along the input's rows and written along the
// output's.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "codegen/templates/KernelTemplates.h"

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// A reduction over the leading dims ([rows, columns] to [columns]): a
/// block per 32 columns, 32 row groups a block, so that every warp reads
/// 32 consecutive columns; each thread keeps 8 accumulators (8 loads in
/// flight), and the groups' partials meet in shared memory in a fixed
/// order (deterministic). An elementwise epilogue of the sum (a weight
/// gradient's cast) is computed at each column where it is stored. A
/// kernel of several results (a LayerNorm's weight and bias gradients)
/// reduces each one's input over the same space in the same pass.
class ColumnKernel {
public:
  ColumnKernel(KernelEmitter &e, RowSpace space);
  LogicalResult emit();

private:
  static constexpr int64_t kAccumulators = 8;
  LogicalResult emitTile(Value tile);
  /// Reduce `r`'s input at `row` of this tile's column (the identity on
  /// failure).
  Value at(size_t r, Value row);
  /// This thread's partial of each reduce over its rows: full steps, then
  /// the tail.
  SmallVector<Value> accumulate();
  /// Group 0 combines the 32 groups' partials of each reduce in order and
  /// stores every result.
  void combinePartials(ArrayRef<Value> totals);

  KernelEmitter &e;
  OpBuilder &b;
  Location l;
  /// The reduces the results are computed from (resultReducesOf), each once.
  SmallVector<ReduceOp> reduces;
  SmallVector<Value> identities;
  int64_t rows, columns, steps;
  Value partials, lane, group;
  // The tile being emitted.
  Value column, valid, safeColumn;
  LogicalResult status = success();
};

ColumnKernel::ColumnKernel(KernelEmitter &e, RowSpace space)
    : e(e), b(e.builder()), l(e.loc()), rows(space.rows),
      columns(space.length), steps(space.rows / (32 * kAccumulators)) {
  for (ReduceOp reduce : resultReducesOf(e.kernel()))
    if (!llvm::is_contained(reduces, reduce))
      reduces.push_back(reduce);
}

LogicalResult ColumnKernel::emit() {
  for (ReduceOp reduce : reduces)
    identities.push_back(
        reductionInit(e, reduce.getKind(), b.getF32Type()));
  partials = workgroupBuffer(e, reduces.size() * 32 * 33);
  Value tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, l, tid, e.index(32));
  group = arith::DivUIOp::create(b, l, tid, e.index(32));
  return e.forEachItem((columns + 31) / 32, true,
                       [&](Value tile) { return emitTile(tile); });
}

LogicalResult ColumnKernel::emitTile(Value tile) {
  status = success();
  column = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, tile, e.index(32)), lane);
  valid = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, column,
                                e.index(columns));
  safeColumn = arith::SelectOp::create(b, l, valid, column, e.index(0));
  combinePartials(accumulate());
  gpu::BarrierOp::create(b, l);
  return status;
}

Value ColumnKernel::at(size_t r, Value row) {
  Value linear = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, row, e.index(columns)), safeColumn);
  Value input = reduces[r].getInput();
  FailureOr<Value> v =
      e.elementAt(input, ElementIndex::linear(shapeOf(input), linear));
  if (failed(v)) {
    status = failure();
    return identities[r];
  }
  return *v;
}

SmallVector<Value> ColumnKernel::accumulate() {
  size_t n = reduces.size();
  SmallVector<Value> init;
  for (Value identity : identities)
    init.append(kAccumulators, identity);
  SmallVector<Value> acc = e.loop(steps, init, [&](Value s, ValueRange c) {
    SmallVector<Value> next;
    Value base = arith::MulIOp::create(b, l, s, e.index(32 * kAccumulators));
    for (size_t r = 0; r < n; ++r)
      for (int64_t a = 0; a < kAccumulators; ++a) {
        Value row = arith::AddIOp::create(
            b, l, arith::AddIOp::create(b, l, base, e.index(32 * a)), group);
        next.push_back(combine(e, reduces[r].getKind(),
                               c[r * kAccumulators + a], at(r, row)));
      }
    return next;
  });
  SmallVector<Value> totals;
  for (size_t r = 0; r < n; ++r) {
    Value total = acc[r * kAccumulators];
    for (int64_t a = 1; a < kAccumulators; ++a)
      total = combine(e, reduces[r].getKind(), total,
                      acc[r * kAccumulators + a]);
    totals.push_back(total);
  }
  // The rows past the last full step.
  int64_t done = steps * 32 * kAccumulators;
  int64_t tail = (rows - done + 31) / 32;
  return e.loop(tail, totals, [&](Value t, ValueRange c) {
    Value row = arith::AddIOp::create(
        b, l,
        arith::AddIOp::create(b, l, e.index(done),
                              arith::MulIOp::create(b, l, t, e.index(32))),
        group);
    Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, row,
                                          e.index(rows));
    Value safeRow = arith::SelectOp::create(b, l, inRange, row, e.index(0));
    SmallVector<Value> next;
    for (size_t r = 0; r < n; ++r) {
      Value v = arith::SelectOp::create(b, l, inRange, at(r, safeRow),
                                        identities[r]);
      next.push_back(combine(e, reduces[r].getKind(), c[r], v));
    }
    return next;
  });
}

void ColumnKernel::combinePartials(ArrayRef<Value> totals) {
  auto slot = [&](size_t r, Value g) -> Value {
    return arith::AddIOp::create(
        b, l,
        arith::MulIOp::create(b, l, arith::AddIOp::create(
                                        b, l, g, e.index(r * 32)),
                              e.index(33)),
        lane);
  };
  for (auto [r, total] : llvm::enumerate(totals))
    memref::StoreOp::create(b, l, total, partials, ValueRange{slot(r, group)});
  gpu::BarrierOp::create(b, l);
  Value first =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, group, e.index(0));
  Value store = arith::AndIOp::create(b, l, first, valid);
  auto guard = scf::IfOp::create(b, l, store);
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  for (auto [r, reduce] : llvm::enumerate(reduces)) {
    Value sum = identities[r];
    for (int64_t g = 0; g < 32; ++g) {
      Value p = memref::LoadOp::create(b, l, partials,
                                       ValueRange{slot(r, e.index(g))});
      sum = combine(e, reduce.getKind(), sum, p);
    }
    if (reduce.getKind() == ReduceKind::mean)
      sum = arith::DivFOp::create(b, l, sum,
                                  e.f32(static_cast<double>(rows)));
    e.setElement(reduce.getResult(), column, sum);
  }
  if (failed(storeResultsAt(e, column)))
    status = failure();
}

/// A pointwise kernel around the transpose of the last two dims of an
/// input: 32x32 tiles are read along the input's rows into shared memory
/// and written along the output's rows, 8 rows a pass.
class TransposeKernel {
public:
  TransposeKernel(KernelEmitter &e, TransposeOp transpose);
  LogicalResult emit();

private:
  LogicalResult emitTile(Value t);
  /// row < rows and col < cols.
  Value inside(Value row, Value col, int64_t rows, int64_t cols);
  /// Input element (c0 + i + ty, r0 + tx) of this batch into the tile, as
  /// tileElementType().
  void loadRow(int64_t i);
  mlir::Type tileElementType();
  /// The kernel's root at output element (r0 + i + ty, c0 + tx), computed
  /// from the tile (at a clamped index outside the output).
  FailureOr<Value> computeRow(int64_t i);
  /// Stores a computed row element where it is inside the output.
  void storeRow(int64_t i, Value value);
  /// Output row, column and linear index of row pass `i`.
  Value outRow(int64_t i);
  Value outCol();
  Value outLinear(int64_t i);

  KernelEmitter &e;
  OpBuilder &b;
  Location l;
  TransposeOp transpose;
  Value root;
  ArrayRef<int64_t> out, in;
  int64_t rank, rowsOut, colsOut, tilesR, tilesC, batches = 1;
  Value tileBuffer, tx, ty, inMemref;
  // The tile being emitted: its corner and its batch's first element.
  Value r0, c0, batchBase;
};

TransposeKernel::TransposeKernel(KernelEmitter &e, TransposeOp transpose)
    : e(e), b(e.builder()), l(e.loc()), transpose(transpose),
      root(rootValue(e.kernel())), out(shapeOf(root)),
      in(shapeOf(transpose.getInput())), rank(int64_t(out.size())),
      rowsOut(out[rank - 2]), colsOut(out[rank - 1]),
      tilesR((rowsOut + 31) / 32), tilesC((colsOut + 31) / 32) {
  for (int64_t d = 0; d + 2 < rank; ++d)
    batches *= out[d];
}

/// What the tile holds an element as: f32 for floats up to 32 bits (exact),
/// i32 for integers up to 32 bits (zero-extended, truncated back), else
/// the element's own type (i64).
Type TransposeKernel::tileElementType() {
  Type element = transpose.getType().getElementType();
  if (element.getIntOrFloatBitWidth() > 32)
    return element;
  return isa<FloatType>(element) ? Type(b.getF32Type())
                                 : Type(b.getI32Type());
}

LogicalResult TransposeKernel::emit() {
  tileBuffer = workgroupBuffer(e, 32 * 33, tileElementType());
  Value tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  tx = arith::RemUIOp::create(b, l, tid, e.index(32));
  ty = arith::DivUIOp::create(b, l, tid, e.index(32));
  auto arg = mlir::cast<BlockArgument>(transpose.getInput());
  inMemref = e.gpuFunc().getArgument(arg.getArgNumber());
  return e.forEachItem(batches * tilesR * tilesC, true,
                       [&](Value t) { return emitTile(t); });
}

Value TransposeKernel::inside(Value row, Value col, int64_t rows,
                              int64_t cols) {
  return arith::AndIOp::create(
      b, l,
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, row,
                            e.index(rows)),
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, col,
                            e.index(cols)));
}

LogicalResult TransposeKernel::emitTile(Value t) {
  Value batch = arith::DivUIOp::create(b, l, t, e.index(tilesR * tilesC));
  Value inBatch = arith::RemUIOp::create(b, l, t, e.index(tilesR * tilesC));
  r0 = arith::MulIOp::create(
      b, l, arith::DivUIOp::create(b, l, inBatch, e.index(tilesC)),
      e.index(32));
  c0 = arith::MulIOp::create(
      b, l, arith::RemUIOp::create(b, l, inBatch, e.index(tilesC)),
      e.index(32));
  batchBase = arith::MulIOp::create(b, l, batch, e.index(rowsOut * colsOut));
  for (int64_t i = 0; i < 32; i += 8)
    loadRow(i);
  gpu::BarrierOp::create(b, l);
  // Every row pass's result before any store: the other operands' loads
  // (e.g. the addend of transpose + z) are then all in flight together,
  // not one latency after each store (the stores may alias them).
  SmallVector<Value, 4> rows;
  for (int64_t i = 0; i < 32; i += 8) {
    FailureOr<Value> y = computeRow(i);
    if (failed(y))
      return failure();
    rows.push_back(*y);
  }
  for (int64_t i = 0; i < 32; i += 8)
    storeRow(i, rows[i / 8]);
  gpu::BarrierOp::create(b, l);
  return success();
}

void TransposeKernel::loadRow(int64_t i) {
  // Input rows are the output's columns.
  Value inRow =
      arith::AddIOp::create(b, l, c0, arith::AddIOp::create(b, l, ty, e.index(i)));
  Value inCol = arith::AddIOp::create(b, l, r0, tx);
  Value ok = inside(inRow, inCol, in[rank - 2], in[rank - 1]);
  Value linear = arith::AddIOp::create(
      b, l, batchBase,
      arith::AddIOp::create(
          b, l, arith::MulIOp::create(b, l, inRow, e.index(in[rank - 1])),
          inCol));
  linear = arith::SelectOp::create(b, l, ok, linear, e.index(0));
  Value v = memref::LoadOp::create(b, l, inMemref, ValueRange{linear});
  Type tile = tileElementType();
  if (v.getType() != tile)
    v = isa<FloatType>(tile) ? Value(arith::ExtFOp::create(b, l, tile, v))
                             : Value(arith::ExtUIOp::create(b, l, tile, v));
  Value slot = arith::AddIOp::create(
      b, l,
      arith::MulIOp::create(b, l, arith::AddIOp::create(b, l, ty, e.index(i)),
                            e.index(33)),
      tx);
  memref::StoreOp::create(b, l, v, tileBuffer, ValueRange{slot});
}

Value TransposeKernel::outRow(int64_t i) {
  return arith::AddIOp::create(b, l, r0,
                               arith::AddIOp::create(b, l, ty, e.index(i)));
}

Value TransposeKernel::outCol() { return arith::AddIOp::create(b, l, c0, tx); }

Value TransposeKernel::outLinear(int64_t i) {
  return arith::AddIOp::create(
      b, l, batchBase,
      arith::AddIOp::create(
          b, l, arith::MulIOp::create(b, l, outRow(i), e.index(colsOut)),
          outCol()));
}

FailureOr<Value> TransposeKernel::computeRow(int64_t i) {
  Type dtype = transpose.getType().getElementType();
  Value slot = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, tx, e.index(33)),
      arith::AddIOp::create(b, l, ty, e.index(i)));
  Value v = memref::LoadOp::create(b, l, tileBuffer, ValueRange{slot});
  // Narrow floats stay in f32, as the emitter computes them.
  if (isa<IntegerType>(dtype) && v.getType() != dtype)
    v = arith::TruncIOp::create(b, l, dtype, v);
  // Outside the output the element is computed at index 0 and not stored.
  Value ok = inside(outRow(i), outCol(), rowsOut, colsOut);
  Value linear = arith::SelectOp::create(b, l, ok, outLinear(i), e.index(0));
  e.setElement(transpose.getResult(), linear, v);
  return e.elementAt(root, ElementIndex::linear(out, linear));
}

void TransposeKernel::storeRow(int64_t i, Value value) {
  auto guard =
      scf::IfOp::create(b, l, inside(outRow(i), outCol(), rowsOut, colsOut));
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  e.storeResult(0, outLinear(i), value);
}

} // namespace

LogicalResult kfuse::kf::emitColumns(KernelEmitter &e, RowSpace space) {
  return ColumnKernel(e, space).emit();
}

LogicalResult kfuse::kf::emitTiledTranspose(KernelEmitter &e,
                                            TransposeOp transpose) {
  return TransposeKernel(e, transpose).emit();
}
