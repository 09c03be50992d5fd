//===- IndexAddKernels.cpp - kf.index_add, gather's transpose -------------===//
//
// kf.index_add adds each update into the result row its index names (an
// embedding's gradient). Its `#kf.index_add_tiling` says how:
//   unordered  a thread an update: it reads the update (and any fused
//              producer) and its index once and adds the update into the
//              result, zeroed before the launch, with an f32 atomic add.
//              The adds to one element come in any order.
//   ordered    a block a tile of result rows by columns (the dims after
//              the axis), its sums in shared memory. The block reads the
//              indices 1,024 at a time (4 a thread, their loads in flight
//              together); warp ballots mark those that name a row of the
//              tile, and every thread walks the marks in order and adds
//              those updates' elements of its columns, the reads of 4 hits
//              issued before their adds. Each sum
//              belongs to one thread and takes its updates in index order:
//              the same sum in every run. Every update is read once, every
//              index once a tile. The results (the sums, or an elementwise
//              epilogue of them such as the cast to a table's dtype) are
//              stored from the shared sums.
// Indices in [-size, 0) count from the end; others outside [0, size) add
// nothing, as in the evaluator.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/KernelTemplates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// The updates as [pre, count, post]: the dims before the axis, the
/// indices' dims and the dims after them, each flattened; the result is
/// [pre, size, post].
struct ScatterSpace : IndexArithmetic {
  using IndexArithmetic::add;
  using IndexArithmetic::div;
  using IndexArithmetic::mul;
  using IndexArithmetic::rem;

  ScatterSpace(KernelEmitter &e, IndexAddOp op)
      : IndexArithmetic(e), op(op), updates(shapeOf(op.getUpdates())),
        indices(shapeOf(op.getIndices())), size(op.getSize()) {
    std::array<int64_t, 3> space = op.getScatterSpace();
    pre = space[0], count = space[1], post = space[2];
  }

  /// Index `i` (in [0, count)) as the row it names, an i64 in [0, size),
  /// and whether it names one.
  FailureOr<std::pair<Value, Value>> rowOf(Value i) {
    FailureOr<Value> index =
        e.elementAt(op.getIndices(), ElementIndex::linear(indices, i));
    if (failed(index))
      return failure();
    Value wide = *index;
    if (!wide.getType().isInteger(64))
      wide = arith::ExtSIOp::create(b, l, b.getI64Type(), wide);
    Value zero = e.constant(b.getI64Type(), 0);
    Value n = e.constant(b.getI64Type(), double(size));
    Value negative =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, wide, zero);
    Value row = arith::SelectOp::create(
        b, l, negative, arith::AddIOp::create(b, l, wide, n), wide);
    Value inside = arith::AndIOp::create(
        b, l,
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, row, zero),
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, row, n));
    return std::pair{row, inside};
  }

  Value asIndex(Value i64) {
    return arith::IndexCastOp::create(b, l, b.getIndexType(), i64);
  }

  /// Linear position `at` of [pre, middle, post] as its (pre, middle,
  /// post) coordinates.
  std::array<Value, 3> split(Value at, int64_t middle) {
    return {div(at, post * middle), rem(div(at, post), middle), rem(at, post)};
  }

  /// The linear position of (p, m, q) in [pre, middle, post].
  Value join(Value p, Value m, int64_t middle, Value q) {
    return add(mul(add(mul(p, middle), m), post), q);
  }

  IndexAddOp op;
  ArrayRef<int64_t> updates, indices;
  int64_t size, pre = 1, count = 1, post = 1;
};

/// A thread an update, added into the zeroed result.
LogicalResult emitUnordered(KernelEmitter &e, IndexAddOp op, unsigned result,
                            int64_t items) {
  ScatterSpace s(e, op);
  OpBuilder &b = e.builder();
  Location l = e.loc();
  return e.forEachItem(items, false, [&](Value u) -> LogicalResult {
    auto [p, i, q] = s.split(u, s.count);
    FailureOr<std::pair<Value, Value>> row = s.rowOf(i);
    FailureOr<Value> update =
        e.elementAt(op.getUpdates(), ElementIndex::linear(s.updates, u));
    if (failed(row) || failed(update))
      return failure();
    auto inside = scf::IfOp::create(b, l, row->second, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    e.addToResult(result, s.join(p, s.asIndex(row->first), s.size, q),
                  *update);
    return success();
  });
}

/// A block a tile of sums, each thread's added in index order (the
/// file comment).
class OrderedIndexAdd : IndexArithmetic {
public:
  OrderedIndexAdd(KernelEmitter &e, IndexAddOp op)
      : IndexArithmetic(e), s(e, op),
        tiling(e.kernel().getTilingAs<IndexAddTilingAttr>()),
        rows(tiling.getRowsPerBlock()), columns(tiling.getColumnsPerBlock()),
        width(std::min(columns, kIndexAddThreads)),
        groups(kIndexAddThreads / width),
        rowSteps(llvm::divideCeil(rows, groups)),
        columnSteps(llvm::divideCeil(columns, width)) {}

  LogicalResult emit();

private:
  /// The indices a thread reads a chunk: their loads are in flight
  /// together, and the block's barriers are a quarter of one a thread.
  static constexpr int64_t kIndicesPerThread = 4;
  static constexpr int64_t kChunk = kIndexAddThreads * kIndicesPerThread;
  /// The marked updates read before the first of them is added: a row
  /// that many indices name (padding) waits on a read a batch, not a hit.
  static constexpr int64_t kHitsPerBatch = 4;
  LogicalResult emitTile();
  /// Marks the indices of chunk `k` that name a row of the tile (a mask
  /// each 32 of them, each index's row of the tile beside it).
  void markChunk(Value k);
  /// Adds the marked updates of chunk `k`, mask by mask, in order.
  void addMarked(Value k);
  /// Adds the updates at index `positions` (where `valid`) into rows `r`
  /// of the tile, in order, for each that is one of this thread's rows.
  void addUpdates(ArrayRef<Value> positions, ArrayRef<Value> r,
                  ArrayRef<Value> valid);
  /// body(sum's slot in the tile, its result row, its column) for each of
  /// this thread's sums inside the result.
  void forEachSum(function_ref<void(Value, Value, Value)> body);
  /// Whether `c` (one of this thread's columns of the tile) is inside the
  /// tile and the result.
  Value columnInside(Value c);

  ScatterSpace s;
  IndexAddTilingAttr tiling;
  /// The tile, and how the block's threads share it: `width` threads a row
  /// group, `groups` of them, group g taking the rows r with r % groups = g.
  int64_t rows, columns, width, groups, rowSteps, columnSteps;
  Value sums, masks, marked, tid, group, firstColumn, active;
  // The tile being emitted: its outer index, first row and first column.
  Value p, row0, column0;
  LogicalResult status = success();
};

LogicalResult OrderedIndexAdd::emit() {
  sums = workgroupBuffer(e, rows * columns);
  masks = workgroupBuffer(e, kChunk / 32, b.getI32Type());
  marked = workgroupBuffer(e, kChunk, b.getI32Type());
  tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  group = div(tid, width);
  firstColumn = rem(tid, width);
  active = less(group, idx(groups));
  int64_t rowTiles = llvm::divideCeil(s.size, rows);
  int64_t columnTiles = llvm::divideCeil(s.post, columns);
  return e.forEachItem(s.pre * rowTiles * columnTiles, true, [&](Value tile) {
    p = div(tile, rowTiles * columnTiles);
    row0 = mul(rem(div(tile, columnTiles), rowTiles), rows);
    column0 = mul(rem(tile, columnTiles), columns);
    return emitTile();
  });
}

Value OrderedIndexAdd::columnInside(Value c) {
  Value inTile = less(c, idx(columns));
  Value inResult = less(add(column0, c), idx(s.post));
  return arith::AndIOp::create(b, l, arith::AndIOp::create(b, l, inTile,
                                                           inResult),
                               active);
}

void OrderedIndexAdd::forEachSum(function_ref<void(Value, Value, Value)> body) {
  e.loop(rowSteps, {}, [&](Value step, ValueRange) {
    Value r = add(group, mul(step, groups));
    Value inside = arith::AndIOp::create(
        b, l, less(r, idx(rows)), less(add(row0, r), idx(s.size)));
    for (int64_t k = 0; k < columnSteps; ++k) {
      Value c = add(firstColumn, idx(k * width));
      auto guard = scf::IfOp::create(
          b, l, arith::AndIOp::create(b, l, inside, columnInside(c)));
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      body(add(mul(r, columns), c), add(row0, r), add(column0, c));
    }
    return SmallVector<Value>{};
  });
}

LogicalResult OrderedIndexAdd::emitTile() {
  status = success();
  forEachSum([&](Value slot, Value, Value) {
    memref::StoreOp::create(b, l, e.f32(0), sums, ValueRange{slot});
  });
  e.loop(llvm::divideCeil(s.count, kChunk), {},
         [&](Value k, ValueRange) {
           markChunk(k);
           gpu::BarrierOp::create(b, l);
           addMarked(k);
           gpu::BarrierOp::create(b, l);
           return SmallVector<Value>{};
         });
  // Each sum is this thread's own: no barrier before it is stored, with
  // any elementwise epilogue computed from it.
  forEachSum([&](Value slot, Value row, Value column) {
    Value at = s.join(p, row, s.size, column);
    e.setElement(s.op.getResult(), at,
                 memref::LoadOp::create(b, l, sums, ValueRange{slot}));
    if (failed(storeResultsAt(e, at)))
      status = failure();
  });
  return status;
}

void OrderedIndexAdd::markChunk(Value k) {
  // Every index's load first, so that they are in flight together.
  SmallVector<Value> entries, valid;
  SmallVector<std::pair<Value, Value>> named;
  for (int64_t j = 0; j < kIndicesPerThread; ++j) {
    entries.push_back(add(tid, idx(j * kIndexAddThreads)));
    Value i = add(mul(k, kChunk), entries.back());
    valid.push_back(less(i, idx(s.count)));
    FailureOr<std::pair<Value, Value>> row =
        s.rowOf(arith::SelectOp::create(b, l, valid.back(), i, idx(0)));
    if (failed(row)) {
      status = failure();
      return;
    }
    named.push_back(*row);
  }
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  Value first = arith::IndexCastOp::create(b, l, i64, row0);
  Value leader = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                       rem(tid, 32), idx(0));
  for (int64_t j = 0; j < kIndicesPerThread; ++j) {
    Value offset = arith::SubIOp::create(b, l, named[j].first, first);
    // Unsigned: a row before the tile wraps past its end.
    Value inTile = arith::CmpIOp::create(
        b, l, arith::CmpIPredicate::ult, offset,
        e.constant(i64, double(rows)));
    Value hit = arith::AndIOp::create(
        b, l, arith::AndIOp::create(b, l, valid[j], named[j].second),
        inTile);
    Value mask = NVVM::VoteSyncOp::create(b, l, i32, e.constant(i32, -1), hit,
                                          NVVM::VoteSyncKind::ballot);
    memref::StoreOp::create(b, l, arith::TruncIOp::create(b, l, i32, offset),
                            marked, ValueRange{entries[j]});
    auto store = scf::IfOp::create(b, l, leader);
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPoint(store.thenBlock()->getTerminator());
    memref::StoreOp::create(b, l, mask, masks,
                            ValueRange{div(entries[j], 32)});
  }
}

void OrderedIndexAdd::addUpdates(ArrayRef<Value> positions,
                                 ArrayRef<Value> r, ArrayRef<Value> valid) {
  // Every hit's and column step's update is read before the first is
  // added, so that the reads are in flight together (a hit not this
  // thread's, or a column outside, reads the chunk's first update).
  struct Read {
    Value slot, add, update;
  };
  SmallVector<Read> reads;
  for (auto [position, row, ok] : llvm::zip_equal(positions, r, valid)) {
    Value mine = arith::AndIOp::create(
        b, l, ok,
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                              rem(row, groups), group));
    for (int64_t step = 0; step < columnSteps; ++step) {
      Value c = add(firstColumn, idx(step * width));
      Value inside = arith::AndIOp::create(b, l, mine, columnInside(c));
      Value column = arith::SelectOp::create(b, l, inside, add(column0, c),
                                             idx(0));
      Value at = arith::SelectOp::create(b, l, inside, position, positions[0]);
      FailureOr<Value> update = e.elementAt(
          s.op.getUpdates(),
          ElementIndex::linear(s.updates, s.join(p, at, s.count, column)));
      if (failed(update)) {
        status = failure();
        return;
      }
      reads.push_back({add(mul(row, columns), c), inside, *update});
    }
  }
  for (const Read &read : reads) {
    auto guard = scf::IfOp::create(b, l, read.add);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value sum = memref::LoadOp::create(b, l, sums, ValueRange{read.slot});
    memref::StoreOp::create(b, l, arith::AddFOp::create(b, l, sum, read.update),
                            sums, ValueRange{read.slot});
  }
}

void OrderedIndexAdd::addMarked(Value k) {
  Type i32 = b.getI32Type();
  Value zero = e.constant(i32, 0);
  for (int64_t w = 0; w < kChunk / 32; ++w) {
    Value mask = memref::LoadOp::create(b, l, masks, ValueRange{idx(w)});
    Value count = arith::IndexCastOp::create(
        b, l, b.getIndexType(), LLVM::CtPopOp::create(b, l, i32, mask));
    auto walk = scf::ForOp::create(b, l, idx(0), count, idx(kHitsPerBatch),
                                   ValueRange{mask});
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPointToEnd(walk.getBody());
    // The next kHitsPerBatch marks, lowest first (cleared as taken).
    Value left = walk.getRegionIterArgs()[0];
    SmallVector<Value> positions, r, valid;
    for (int64_t h = 0; h < kHitsPerBatch; ++h) {
      valid.push_back(
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, left, zero));
      Value bit = arith::IndexCastOp::create(
          b, l, b.getIndexType(),
          LLVM::CountTrailingZerosOp::create(b, l, i32, left, false));
      // cttz of 0 is 32, past the mask's entries: a batch's missing hit
      // reads its last entry instead (and adds nothing).
      Value entry = add(idx(w * 32), arith::MinUIOp::create(b, l, bit,
                                                            idx(31)));
      r.push_back(arith::IndexCastOp::create(
          b, l, b.getIndexType(),
          memref::LoadOp::create(b, l, marked, ValueRange{entry})));
      positions.push_back(add(mul(k, kChunk), entry));
      left = arith::AndIOp::create(
          b, l, left, arith::SubIOp::create(b, l, left, e.constant(i32, 1)));
    }
    addUpdates(positions, r, valid);
    scf::YieldOp::create(b, l, left);
  }
}

} // namespace

LogicalResult kfuse::kf::emitIndexAdd(KernelEmitter &e, IndexAddOp op,
                                      int64_t items) {
  KernelOp kernel = e.kernel();
  if (!kernel.getTilingAs<IndexAddTilingAttr>().getUnordered())
    return OrderedIndexAdd(e, op).emit();
  std::optional<unsigned> result = resultIndexOf(kernel, op.getResult());
  if (!result)
    return kernel.emitOpError("does not write its index_add's result");
  return emitUnordered(e, op, *result, items);
}
