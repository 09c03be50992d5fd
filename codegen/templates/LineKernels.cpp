//===- LineKernels.cpp - one thread a line along an axis ------------------===//
//
// kf.arg_reduce and kf.cumsum are kernels of their own: each result
// element depends on a whole line of the input along one axis. One thread
// walks a line, reading the input (and any fused producer) through
// `elementAt`: an argmax keeps its best value and position, a cumsum
// stores its running sum at every element. Faster templates take most
// lines: last-axis lines a block a row (the row_tiling templates), a
// cumsum down columns a block a 32-column tile (column_scan_tiling).
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/KernelTemplates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kfuse::kf;

/// The line's start: the extreme of the compute type, which any element
/// ties or beats (a line of them gives position 0).
static Value argReduceInit(KernelEmitter &e, ReduceKind kind, Type type) {
  bool max = kind == ReduceKind::max;
  if (isa<FloatType>(type))
    return e.f32(max ? -INFINITY : INFINITY);
  return e.constant(type, max ? double(std::numeric_limits<int32_t>::min())
                              : double(std::numeric_limits<int32_t>::max()));
}

/// Whether `v` replaces `best`: strictly better, or the first NaN.
static Value argReduceTakes(KernelEmitter &e, ReduceKind kind, Value v,
                            Value best) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  bool max = kind == ReduceKind::max;
  if (!isa<FloatType>(v.getType()))
    return arith::CmpIOp::create(
        b, l, max ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt, v,
        best);
  Value better = arith::CmpFOp::create(
      b, l, max ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, v,
      best);
  Value vNaN = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
  Value bestNumber =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::ORD, best, best);
  return arith::OrIOp::create(b, l, better,
                              arith::AndIOp::create(b, l, vNaN, bestNumber));
}

namespace {

/// A thread's vector of one chunk of a row: its lanes' columns (clamped
/// into the row when the row is ragged), linear indices, and whether each
/// is inside the row.
struct ChunkLanes {
  SmallVector<Value> columns, linears, valid;
};

/// The geometry of the row templates of argmax and cumsum (their
/// row_tiling): chunk c of a row is `threads` vectors of `vec` columns,
/// thread t's at (c * threads + t) * vec. A ragged row (shorter than its
/// chunks) whose length is a multiple of `vec` still holds whole vectors:
/// each is inside or outside the row as one, and is read and written as a
/// vector (argmax over a 32000-column bf16 row read 2 bytes at a time ran
/// at 1.4x its floor).
struct RowChunks {
  RowChunks(KernelEmitter &e, RowSpace space)
      : e(e), space(space),
        vec(e.kernel().getTilingAs<RowTilingAttr>().getVector()),
        chunks(e.kernel().getTilingAs<RowTilingAttr>().getChunks()),
        threads(e.kernel().getLaunchAttr().getBlock()),
        ragged(space.length != threads * vec * chunks),
        wholeVectors(space.length % vec == 0) {}

  ChunkLanes lanes(Value row, Value c) const {
    OpBuilder &b = e.builder();
    Location l = e.loc();
    Value tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
    Value rowBase = arith::MulIOp::create(b, l, row, e.index(space.length));
    Value first = arith::MulIOp::create(
        b, l,
        arith::AddIOp::create(
            b, l, arith::MulIOp::create(b, l, c, e.index(threads)), tid),
        e.index(vec));
    ChunkLanes lanes;
    Value vectorInside;
    if (ragged && wholeVectors) { // read the row's first vector instead
      vectorInside = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                           first, e.index(space.length));
      first = arith::SelectOp::create(b, l, vectorInside, first, e.index(0));
    }
    for (int64_t k = 0; k < vec; ++k) {
      Value column =
          k ? Value(arith::AddIOp::create(b, l, first, e.index(k))) : first;
      if (vectorInside) {
        lanes.valid.push_back(vectorInside);
      } else {
        lanes.valid.push_back(arith::CmpIOp::create(
            b, l, arith::CmpIPredicate::ult, column, e.index(space.length)));
        if (ragged) // read inside the row; the lane is masked
          column = arith::SelectOp::create(b, l, lanes.valid.back(), column,
                                           e.index(0));
      }
      lanes.columns.push_back(column);
      lanes.linears.push_back(arith::AddIOp::create(b, l, rowBase, column));
    }
    return lanes;
  }

  /// Whether a chunk's lanes are read and written as one vector.
  bool vectorAccess() const { return !ragged || wholeVectors; }

  /// The lanes' elements of `tensor` (a vector access where the rows are
  /// whole vectors).
  FailureOr<SmallVector<Value>> read(Value tensor, Value row,
                                     const ChunkLanes &lanes) const {
    ArrayRef<int64_t> shape = shapeOf(tensor);
    if (vectorAccess())
      return e.vectorAt(tensor,
                        ElementIndex::rowElement(shape, lanes.linears[0], row,
                                                 lanes.columns[0]),
                        lanes.linears);
    SmallVector<Value> values;
    for (int64_t k = 0; k < vec; ++k) {
      FailureOr<Value> v = e.elementAt(
          tensor, ElementIndex::rowElement(shape, lanes.linears[k], row,
                                           lanes.columns[k]));
      if (failed(v))
        return failure();
      values.push_back(*v);
    }
    return values;
  }

  KernelEmitter &e;
  RowSpace space;
  int64_t vec, chunks, threads;
  bool ragged, wholeVectors;
};

} // namespace

LogicalResult kfuse::kf::emitArgReduce(KernelEmitter &e, ArgReduceOp op,
                                       int64_t items) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op);
  int64_t axis = op.getAxis();
  Type type = KernelEmitter::computeType(
      getElementTypeOrSelf(op.getInput().getType()));
  return e.forEachItem(items, false, [&](Value item) -> LogicalResult {
    SmallVector<Value> outIdx = e.delinearize(item, out);
    LogicalResult inner = success();
    SmallVector<Value> best = e.loop(
        in[axis], {argReduceInit(e, op.getKind(), type), e.index(0)},
        [&](Value j, ValueRange carried) -> SmallVector<Value> {
          SmallVector<Value> idx(outIdx);
          if (op.getKeepDims())
            idx[axis] = j;
          else
            idx.insert(idx.begin() + axis, j);
          FailureOr<Value> v =
              e.elementAt(op.getInput(), ElementIndex::multi(in, idx));
          if (failed(v)) {
            inner = failure();
            return SmallVector<Value>(carried);
          }
          Value takes = argReduceTakes(e, op.getKind(), *v, carried[0]);
          return {arith::SelectOp::create(b, l, takes, *v, carried[0]),
                  arith::SelectOp::create(b, l, takes, j, carried[1])};
        });
    if (failed(inner))
      return failure();
    e.storeResult(0, item,
                  arith::IndexCastOp::create(b, l, b.getI64Type(), best[1]));
    return success();
  });
}

LogicalResult kfuse::kf::emitCumsum(KernelEmitter &e, CumsumOp op,
                                    int64_t items) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  ArrayRef<int64_t> shape = shapeOf(op);
  int64_t axis = op.getAxis(), n = shape[axis], inner = 1;
  for (int64_t d = axis + 1; d < int64_t(shape.size()); ++d)
    inner *= shape[d];
  Type type =
      KernelEmitter::computeType(getElementTypeOrSelf(op.getType()));
  return e.forEachItem(items, false, [&](Value line) -> LogicalResult {
    // Line (outer, i) starts at outer * n * inner + i, elements inner apart.
    Value outer = arith::DivUIOp::create(b, l, line, e.index(inner));
    Value first = arith::AddIOp::create(
        b, l, arith::MulIOp::create(b, l, outer, e.index(n * inner)),
        arith::RemUIOp::create(b, l, line, e.index(inner)));
    LogicalResult status = success();
    e.loop(n, {e.constant(type, 0)},
           [&](Value j, ValueRange carried) -> SmallVector<Value> {
             Value at = arith::AddIOp::create(
                 b, l, first, arith::MulIOp::create(b, l, j, e.index(inner)));
             FailureOr<Value> v =
                 e.elementAt(op.getInput(), ElementIndex::linear(shape, at));
             if (failed(v)) {
               status = failure();
               return SmallVector<Value>(carried);
             }
             Value sum = isa<FloatType>(type)
                             ? Value(arith::AddFOp::create(b, l, carried[0], *v))
                             : Value(arith::AddIOp::create(b, l, carried[0], *v));
             e.storeResult(0, at, sum);
             return {sum};
           });
    return status;
  });
}

/// The least column holding the block's best value, from each thread's
/// `best` and its `column`: the best value first (a NaN-propagating max or
/// min), then the least column among the threads holding it (NaN equal to
/// NaN). `scratch` holds values, `positions` i32 columns.
static Value blockArgBest(KernelEmitter &e, ReduceKind kind, Value best,
                          Value column, Value scratch, Value positions,
                          int64_t threads) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  bool isFloat = isa<FloatType>(best.getType());
  bool max = kind == ReduceKind::max;
  Value winner = e.blockReduce(
      best, argReduceInit(e, kind, best.getType()), scratch, threads,
      [&](Value x, Value y) -> Value {
        if (isFloat)
          return max ? Value(arith::MaximumFOp::create(b, l, x, y))
                     : Value(arith::MinimumFOp::create(b, l, x, y));
        return max ? Value(arith::MaxSIOp::create(b, l, x, y))
                   : Value(arith::MinSIOp::create(b, l, x, y));
      });
  Value holds;
  if (isFloat) {
    // UEQ holds where either is NaN: then both must be.
    auto isNaN = [&](Value v) {
      return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
    };
    holds = arith::AndIOp::create(
        b, l,
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::UEQ, best, winner),
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, isNaN(best),
                              isNaN(winner)));
  } else {
    holds = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, best, winner);
  }
  Type i32 = b.getI32Type();
  Value none = e.constant(i32, double(std::numeric_limits<int32_t>::max()));
  Value offer = arith::SelectOp::create(
      b, l, holds, arith::IndexCastOp::create(b, l, i32, column), none);
  return e.blockReduce(offer, none, positions, threads,
                       [&](Value x, Value y) -> Value {
                         return arith::MinSIOp::create(b, l, x, y);
                       });
}

/// A block a row: each thread keeps the best of its strided share of the
/// row (vectors of the row_tiling, in column order, so its first best is
/// kept), then the block finds the best value (NaN-propagating max or min)
/// and the least column among the threads that hold it.
LogicalResult kfuse::kf::emitArgReduceRows(KernelEmitter &e, ArgReduceOp op,
                                           RowSpace space) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  RowChunks rows(e, space);
  ReduceKind kind = op.getKind();
  Type type = KernelEmitter::computeType(
      getElementTypeOrSelf(op.getInput().getType()));
  Type i32 = b.getI32Type();
  int64_t threads = rows.threads;
  Value scratch = workgroupBuffer(e, 32, type);
  Value positions = workgroupBuffer(e, 32, i32);
  return e.forEachItem(space.rows, true, [&](Value row) -> LogicalResult {
    Value tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
    LogicalResult status = success();
    SmallVector<Value> best = e.loop(
        rows.chunks, {argReduceInit(e, kind, type), e.index(0)},
        [&](Value c, ValueRange carried) -> SmallVector<Value> {
          ChunkLanes lanes = rows.lanes(row, c);
          FailureOr<SmallVector<Value>> values =
              rows.read(op.getInput(), row, lanes);
          SmallVector<Value> acc(carried);
          if (failed(values)) {
            status = failure();
            return acc;
          }
          for (auto [k, v] : llvm::enumerate(*values)) {
            Value takes = arith::AndIOp::create(
                b, l, lanes.valid[k], argReduceTakes(e, kind, v, acc[0]));
            acc = {arith::SelectOp::create(b, l, takes, v, acc[0]),
                   arith::SelectOp::create(b, l, takes, lanes.columns[k],
                                           acc[1])};
          }
          return acc;
        });
    if (failed(status))
      return failure();
    Value column = blockArgBest(e, kind, best[0], best[1], scratch,
                                positions, threads);
    Value leader = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, tid,
                                         e.index(0));
    auto store = scf::IfOp::create(b, l, leader);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(store.thenBlock()->getTerminator());
    e.storeResult(0, row, arith::ExtSIOp::create(b, l, b.getI64Type(), column));
    return success();
  });
}

namespace {

/// x + y, of floats or integers.
Value addScalars(OpBuilder &b, Location l, Value x, Value y) {
  return isa<FloatType>(x.getType()) ? Value(arith::AddFOp::create(b, l, x, y))
                                     : Value(arith::AddIOp::create(b, l, x, y));
}

/// The inclusive prefix of `value` over the lanes of a warp (lane `lane`),
/// by shuffles: lane i gets values 0..i summed.
Value warpInclusiveScan(KernelEmitter &e, Value value, Value lane) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  Value width = arith::ConstantOp::create(b, l, b.getI32IntegerAttr(32));
  Value inclusive = value;
  for (int offset = 1; offset < 32; offset *= 2) {
    Value before = gpu::ShuffleOp::create(
                       b, l, inclusive,
                       arith::ConstantOp::create(b, l,
                                                 b.getI32IntegerAttr(offset)),
                       width, gpu::ShuffleMode::UP)
                       .getShuffleResult();
    Value has = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, lane,
                                      e.index(offset));
    inclusive = arith::SelectOp::create(
        b, l, has, addScalars(b, l, inclusive, before), inclusive);
  }
  return inclusive;
}

/// Exclusive prefix of `value` over the block's threads in thread order,
/// and the block's total, every thread getting both: shuffles within a
/// warp, then each thread adds the totals of the warps before its own
/// (`scratch` holds one a warp).
std::pair<Value, Value> blockExclusiveScan(KernelEmitter &e, Value value,
                                           Value scratch, int64_t threads) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  bool isFloat = isa<FloatType>(value.getType());
  auto add = [&](Value x, Value y) { return addScalars(b, l, x, y); };
  Value zero = e.constant(value.getType(), 0);
  Value tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, l, tid, e.index(32));
  Value warp = arith::DivUIOp::create(b, l, tid, e.index(32));
  Value inclusive = warpInclusiveScan(e, value, lane);
  int64_t warps = (threads + 31) / 32;
  Value last = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, lane,
                                     e.index(31));
  auto publish = scf::IfOp::create(b, l, last);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(publish.thenBlock()->getTerminator());
    memref::StoreOp::create(b, l, inclusive, scratch, ValueRange{warp});
  }
  gpu::BarrierOp::create(b, l);
  Value offset = zero, total = zero;
  for (int64_t w = 0; w < warps; ++w) {
    Value partial =
        memref::LoadOp::create(b, l, scratch, ValueRange{e.index(w)});
    Value earlier = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt,
                                          warp, e.index(w));
    offset = arith::SelectOp::create(b, l, earlier, add(offset, partial),
                                     offset);
    total = add(total, partial);
  }
  // The scratch is reused by the next chunk's scan.
  gpu::BarrierOp::create(b, l);
  Value exclusive = isFloat
                        ? Value(arith::SubFOp::create(b, l, inclusive, value))
                        : Value(arith::SubIOp::create(b, l, inclusive, value));
  return {add(exclusive, offset), total};
}

/// Stores a chunk's lanes: one vector (where inside the row), or lane by
/// lane inside a ragged row.
void storeChunk(KernelEmitter &e, const RowChunks &rows, Value row,
                const ChunkLanes &lanes, ArrayRef<Value> values) {
  OpBuilder &b = e.builder();
  auto storeVector = [&] {
    e.storeLanes(0, BufferIndex(lanes.linears[0], row, lanes.columns[0]),
                 values);
  };
  if (!rows.ragged)
    return storeVector();
  if (rows.wholeVectors) {
    auto guard = scf::IfOp::create(b, e.loc(), lanes.valid[0]);
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    return storeVector();
  }
  for (auto [k, v] : llvm::enumerate(values)) {
    auto guard = scf::IfOp::create(b, e.loc(), lanes.valid[k]);
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    e.storeResult(0, BufferIndex(lanes.linears[k], row, lanes.columns[k]), v);
  }
}

/// Values a thread of a row cumsum reads before its first scan: a row
/// whose chunks fit is loaded whole, so that its loads are all in flight at
/// once rather than each behind the scan (barriers) and store of the chunk
/// before it (cumsum_rows_f32 at 1.21x its floor).
constexpr int64_t kCumsumRowValuesInRegisters = 32;

/// A cumsum along rows (row_tiling), a block a row: the row in chunks of
/// `threads` vectors, in order; each thread sums its vector's lanes, the
/// block scans those sums, and the lanes are stored with their offset plus
/// the carry of the chunks before. The row is read once and written once.
class RowScan {
public:
  RowScan(KernelEmitter &e, CumsumOp op, RowSpace space)
      : e(e), b(e.builder()), l(e.loc()), op(op), rows(e, space),
        type(KernelEmitter::computeType(
            getElementTypeOrSelf(op.getInput().getType()))) {}

  LogicalResult emit() {
    scratch = workgroupBuffer(e, 32, type);
    bool wholeRow = rows.chunks * rows.vec <= kCumsumRowValuesInRegisters;
    return e.forEachItem(rows.space.rows, true, [&](Value row) {
      return wholeRow ? scanWholeRow(row) : scanRowByChunk(row);
    });
  }

private:
  Value add(Value x, Value y) {
    return isa<FloatType>(type) ? Value(arith::AddFOp::create(b, l, x, y))
                                : Value(arith::AddIOp::create(b, l, x, y));
  }

  /// Every chunk of the row loaded, then each scanned and stored.
  LogicalResult scanWholeRow(Value row) {
    SmallVector<ChunkLanes> lanes;
    SmallVector<SmallVector<Value>> values;
    for (int64_t c = 0; c < rows.chunks; ++c) {
      lanes.push_back(rows.lanes(row, e.index(c)));
      FailureOr<SmallVector<Value>> chunk =
          rows.read(op.getInput(), row, lanes.back());
      if (failed(chunk))
        return failure();
      values.push_back(std::move(*chunk));
    }
    Value carry = e.constant(type, 0);
    for (int64_t c = 0; c < rows.chunks; ++c)
      carry = scanChunk(row, lanes[c], values[c], carry);
    return success();
  }

  /// A loop over the row's chunks, each loaded, scanned and stored.
  LogicalResult scanRowByChunk(Value row) {
    LogicalResult status = success();
    e.loop(rows.chunks, {e.constant(type, 0)},
           [&](Value c, ValueRange carry) -> SmallVector<Value> {
             ChunkLanes lanes = rows.lanes(row, c);
             FailureOr<SmallVector<Value>> values =
                 rows.read(op.getInput(), row, lanes);
             if (failed(values)) {
               status = failure();
               return SmallVector<Value>(carry);
             }
             return {scanChunk(row, lanes, *values, carry[0])};
           });
    return status;
  }

  /// One chunk's scan and store, after the chunks whose total is `carry`;
  /// returns the total with this chunk's.
  Value scanChunk(Value row, const ChunkLanes &lanes, ArrayRef<Value> values,
                  Value carry) {
    // The lanes' running sums within the vector (lanes past a ragged
    // row's end add nothing).
    SmallVector<Value> running;
    Value sum = e.constant(type, 0);
    for (auto [k, v] : llvm::enumerate(values)) {
      sum = add(sum, rows.ragged ? Value(arith::SelectOp::create(
                                       b, l, lanes.valid[k], v,
                                       e.constant(type, 0)))
                                 : v);
      running.push_back(sum);
    }
    auto [before, total] = blockExclusiveScan(e, sum, scratch, rows.threads);
    Value offset = add(carry, before);
    for (Value &r : running)
      r = add(offset, r);
    storeChunk(e, rows, row, lanes, running);
    return add(carry, total);
  }

  KernelEmitter &e;
  OpBuilder &b;
  Location l;
  CumsumOp op;
  RowChunks rows;
  Type type;
  Value scratch;
};

} // namespace

LogicalResult kfuse::kf::emitCumsumRows(KernelEmitter &e, CumsumOp op,
                                        RowSpace space) {
  return RowScan(e, op, space).emit();
}

namespace {

/// A cumsum down columns (column_scan_tiling): thread (segment s, lane c)
/// of a 32 x 32 block holds `perThread` consecutive rows of a chunk of
/// 32 * perThread rows and `lanes` consecutive columns from c * lanes of
/// the block's tile (read and written as one vector a row), a running sum
/// a column in registers. The 32 segment totals of each column meet in
/// `totals`, where warp w scans the tile's columns w, w + 32, ... (lane s
/// segment s's total, by shuffles) into each segment's offset: the
/// column's `carry` (the chunks before) plus the totals of the segments
/// before it; lane 31 advances the carry. (Each thread had added up the
/// totals before its own segment, a chain of up to 31 loads a chunk: the
/// same time, 1.12x the floor at [4096, 16384] f32 on an H100.) A chunk's
/// values are loaded while the chunk before is scanned: its barriers and
/// stores otherwise left the block's loads idle, at 1.53x the floor.
class ColumnScan {
public:
  ColumnScan(KernelEmitter &e, CumsumOp op)
      : e(e), b(e.builder()), l(e.loc()), op(op), shape(shapeOf(op)),
        type(KernelEmitter::computeType(getElementTypeOrSelf(op.getType()))) {
    auto tiling = e.kernel().getTilingAs<ColumnScanTilingAttr>();
    perThread = tiling.getRowsPerThread();
    lanes = tiling.getColumnsPerThread();
    int64_t axis = op.getAxis();
    n = shape[axis];
    for (int64_t d = axis + 1; d < int64_t(shape.size()); ++d)
      inner *= shape[d];
    width = 32 * lanes;
    stride = width + 1;
  }

  LogicalResult emit() {
    totals = workgroupBuffer(e, 32 * stride, type);
    carry = workgroupBuffer(e, width, type);
    Value tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
    lane = arith::RemUIOp::create(b, l, tid, e.index(32));
    segment = arith::DivUIOp::create(b, l, tid, e.index(32));
    int64_t tilesAcross = (inner + width - 1) / width;
    int64_t leading = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(op.getAxis()); ++d)
      leading *= shape[d];
    return e.forEachItem(leading * tilesAcross, true, [&](Value tile) {
      Value outer = arith::DivUIOp::create(b, l, tile, e.index(tilesAcross));
      // (inner is a multiple of `lanes`: a thread's columns are all inside
      // or all past the tile's end.)
      Value col = add(
          mul(arith::RemUIOp::create(b, l, tile, e.index(tilesAcross)), width),
          mul(lane, lanes));
      colInside = less(col, inner);
      Value safe = arith::SelectOp::create(b, l, colInside, col, e.index(0));
      base = add(mul(outer, n * inner), safe);
      resetCarry();
      int64_t chunk = 32 * perThread;
      FailureOr<SmallVector<Value>> first = loadChunk(e.index(0));
      if (failed(first))
        return failure();
      LogicalResult status = success();
      e.loop((n + chunk - 1) / chunk, *first,
             [&](Value c, ValueRange values) -> SmallVector<Value> {
               // The last chunk's next is past the column: its loads are
               // masked, at row 0.
               Value chunkRow = mul(c, chunk);
               FailureOr<SmallVector<Value>> next =
                   loadChunk(add(chunkRow, e.index(chunk)));
               if (failed(next)) {
                 status = failure();
                 return SmallVector<Value>(values);
               }
               scanChunk(chunkRow, values);
               return *next;
             });
      return status;
    });
  }

private:
  Value add(Value x, Value y) { return arith::AddIOp::create(b, l, x, y); }
  Value mul(Value x, int64_t k) {
    return arith::MulIOp::create(b, l, x, e.index(k));
  }
  Value less(Value x, int64_t bound) {
    return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, x,
                                 e.index(bound));
  }
  Value sum(Value x, Value y) { return addScalars(b, l, x, y); }
  /// Runs `body` in the threads where `cond` holds.
  void when(Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, l, cond);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    body();
  }
  Value isSegment(int64_t s) {
    return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, segment,
                                 e.index(s));
  }
  /// The tile's column of the thread's lane `v`.
  Value ownColumn(int64_t v) { return add(mul(lane, lanes), e.index(v)); }
  /// Segment s's total of tile column c in `totals`: rows of width + 1, so
  /// that a warp's reads of one column fall on 32 banks.
  Value totalAt(Value s, Value c) { return add(mul(s, stride), c); }

  /// The carries start at 0; the barrier before ends the reads of the
  /// previous tile's last chunk.
  void resetCarry() {
    gpu::BarrierOp::create(b, l);
    when(isSegment(0), [&] {
      for (int64_t v = 0; v < lanes; ++v)
        memref::StoreOp::create(b, l, e.constant(type, 0), carry,
                                ValueRange{ownColumn(v)});
    });
    gpu::BarrierOp::create(b, l);
  }

  /// Warp w (the thread's segment index) scans tile column c's segment
  /// totals, lane s holding segment s's, and writes each segment's offset
  /// over its total; lane 31 advances the column's carry.
  void scanTotals(Value c) {
    Value at = totalAt(lane, c);
    Value total = memref::LoadOp::create(b, l, totals, ValueRange{at});
    Value carried = memref::LoadOp::create(b, l, carry, ValueRange{c});
    Value inclusive = warpInclusiveScan(e, total, lane);
    // The lane before's inclusive sum (0 at lane 0): the exact sum of the
    // totals before, where inclusive - total would round.
    Value width32 = arith::ConstantOp::create(b, l, b.getI32IntegerAttr(32));
    Value before = gpu::ShuffleOp::create(
                       b, l, inclusive,
                       arith::ConstantOp::create(b, l, b.getI32IntegerAttr(1)),
                       width32, gpu::ShuffleMode::UP)
                       .getShuffleResult();
    Value first =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, lane, e.index(0));
    before = arith::SelectOp::create(b, l, first, e.constant(type, 0), before);
    memref::StoreOp::create(b, l, sum(carried, before), totals, ValueRange{at});
    // (The shuffles follow every lane's read of the carry.)
    when(arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, lane,
                               e.index(31)),
         [&] {
           memref::StoreOp::create(b, l, sum(carried, inclusive), carry,
                                   ValueRange{c});
         });
  }

  /// Where the thread's row `j` of the chunk at `chunkRow` starts (row 0
  /// of the column where it is past the column), and whether it is inside.
  std::pair<Value, Value> place(Value chunkRow, int64_t j) {
    Value r = add(add(chunkRow, mul(segment, perThread)), e.index(j));
    Value rowInside = less(r, n);
    Value safeRow = arith::SelectOp::create(b, l, rowInside, r, e.index(0));
    return {add(base, mul(safeRow, inner)),
            arith::AndIOp::create(b, l, rowInside, colInside)};
  }

  /// The thread's values of the chunk at `chunkRow`, row by row (`lanes` a
  /// row), 0 outside the input.
  FailureOr<SmallVector<Value>> loadChunk(Value chunkRow) {
    SmallVector<Value> values;
    for (int64_t j = 0; j < perThread; ++j) {
      auto [at, inside] = place(chunkRow, j);
      SmallVector<Value> row;
      if (lanes == 1) {
        FailureOr<Value> v =
            e.elementAt(op.getInput(), ElementIndex::linear(shape, at));
        if (failed(v))
          return failure();
        row.push_back(*v);
      } else {
        FailureOr<SmallVector<Value>> v =
            e.vectorAt(op.getInput(), ElementIndex::linear(shape, at),
                       e.laneIndices(at, lanes));
        if (failed(v))
          return failure();
        row = *v;
      }
      for (Value v : row)
        values.push_back(
            arith::SelectOp::create(b, l, inside, v, e.constant(type, 0)));
    }
    return values;
  }

  /// Scans and stores the chunk at `chunkRow` (the thread's `values`).
  void scanChunk(Value chunkRow, ValueRange values) {
    SmallVector<Value> running(lanes, e.constant(type, 0)), prefixes;
    for (int64_t j = 0; j < perThread; ++j)
      for (int64_t v = 0; v < lanes; ++v) {
        running[v] = sum(running[v], values[j * lanes + v]);
        prefixes.push_back(running[v]);
      }
    for (int64_t v = 0; v < lanes; ++v)
      memref::StoreOp::create(b, l, running[v], totals,
                              ValueRange{totalAt(segment, ownColumn(v))});
    gpu::BarrierOp::create(b, l);
    for (int64_t k = 0; k < lanes; ++k)
      scanTotals(add(segment, e.index(32 * k)));
    gpu::BarrierOp::create(b, l);
    // (The next chunk's totals overwrite these slots, read by this thread
    // alone, after these reads; its scans wait for the barrier above.)
    SmallVector<Value> offsets;
    for (int64_t v = 0; v < lanes; ++v)
      offsets.push_back(memref::LoadOp::create(
          b, l, totals, ValueRange{totalAt(segment, ownColumn(v))}));
    for (int64_t j = 0; j < perThread; ++j) {
      auto [at, inside] = place(chunkRow, j);
      when(inside, [&] {
        if (lanes == 1)
          return e.storeResult(0, at, sum(prefixes[j], offsets[0]));
        SmallVector<Value> row;
        for (int64_t v = 0; v < lanes; ++v)
          row.push_back(sum(prefixes[j * lanes + v], offsets[v]));
        e.storeLanes(0, at, row);
      });
    }
  }

  KernelEmitter &e;
  OpBuilder &b;
  Location l;
  CumsumOp op;
  ArrayRef<int64_t> shape;
  int64_t perThread, lanes, width, stride, n = 0, inner = 1;
  Type type;
  Value totals, carry, lane, segment, colInside, base;
};

} // namespace

LogicalResult kfuse::kf::emitColumnScan(KernelEmitter &e, CumsumOp op) {
  return ColumnScan(e, op).emit();
}
