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
//              tile, a ballot of the marks says which masks have any, and
//              the block walks the marks in order, 8 at a time, skipping
//              masks without one. Each thread adds those updates' elements
//              of its columns, a vector of consecutive columns (one 16-byte
//              read) at a time, the reads of the 8 issued before their
//              adds. Each sum belongs to one thread and takes its updates
//              in index order: the same sum in every run. Every update is
//              read once, every index once a tile. The results (the sums,
//              or an elementwise epilogue of them such as the cast to a
//              table's dtype) are stored from the shared sums, a vector at
//              a time.
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
        vector(tiling.getVector()), width(tiling.getThreadsPerRow()),
        groups(kIndexAddThreads / width),
        rowSteps(llvm::divideCeil(rows, groups)),
        columnSteps(tiling.getColumnSteps()) {}

  LogicalResult emit();

private:
  /// The indices a thread reads a chunk: their loads are in flight
  /// together, and the block's barriers are a quarter of one a thread.
  static constexpr int64_t kIndicesPerThread = 4;
  static constexpr int64_t kChunk = kIndexAddThreads * kIndicesPerThread;
  /// A chunk's masks: one a warp lane.
  static constexpr int64_t kMasks = kChunk / 32;
  static_assert(kMasks == 32, "a warp ballot summarises a chunk's masks");
  /// The marked updates read before the first of them is added: a row
  /// that many indices name (padding) waits on a read a batch, not a hit.
  /// 16 was slower on every embedding row of the training bench (H100,
  /// session 55: 1.1-3.2x, registers).
  static constexpr int64_t kHitsPerBatch = 8;

  /// A marked index: its update's position, the tile row it names, and
  /// whether there was one (the walk's last batch may run out).
  struct Hit {
    Value position, row, valid;
  };
  /// Where the walk of a chunk's marks is: the current mask's marks not
  /// yet taken, its number, and the marked masks not yet begun.
  struct Walk {
    Value marks, mask, pending;
  };

  LogicalResult emitTile();
  /// Marks the indices of chunk `k` that name a row of the tile (a mask
  /// each 32 of them, each index's row of the tile beside it).
  void markChunk(Value k);
  /// Adds the marked updates of chunk `k` in order, kHitsPerBatch at a
  /// time, skipping masks without marks.
  void addMarked(Value k);
  /// The next marked index of chunk `k` after `walk`, moving to the next
  /// marked mask where the current one is done.
  Hit nextHit(Value k, Walk &walk);
  /// Adds the updates of `hits` into their rows of the tile, in order,
  /// for each that is one of this thread's rows.
  void addUpdates(ArrayRef<Hit> hits);
  /// body(tile row, column step) for each of this thread's vectors of sums
  /// inside the tile and the result.
  void forEachSumVector(function_ref<void(Value, int64_t)> body);
  /// Whether this thread's vector at column step `step` is inside the tile
  /// and the result.
  Value vectorInside(int64_t step);
  /// The tile column of the first element of this thread's vector at
  /// column step `step`.
  Value columnOf(int64_t step) {
    return mul(add(firstVector, idx(step * width)), vector);
  }
  /// The shared sum of tile row `row` and element `lane` of this thread's
  /// vector at `step`: a step's vectors interleaved, element by element.
  Value slotOf(Value row, int64_t step, int64_t lane) {
    return add(mul(row, tiling.getSumsPerRow()),
               add(idx((step * vector + lane) * width), firstVector));
  }

  ScatterSpace s;
  IndexAddTilingAttr tiling;
  /// The tile, and how the block's threads share it: `width` threads a row
  /// group, a vector of `vector` columns each a step, `groups` of them,
  /// group g taking the rows r with r % groups = g.
  int64_t rows, columns, vector, width, groups, rowSteps, columnSteps;
  Value sums, masks, marked, tid, group, firstVector, active;
  // The tile being emitted: its outer index, first row and first column.
  Value p, row0, column0;
  LogicalResult status = success();
};

LogicalResult OrderedIndexAdd::emit() {
  sums = dynamicSharedView(b, l, rows * tiling.getSumsPerRow(), b.getF32Type());
  masks = workgroupBuffer(e, kMasks, b.getI32Type());
  marked = workgroupBuffer(e, kChunk, b.getI32Type());
  tid = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  group = div(tid, width);
  firstVector = rem(tid, width);
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

Value OrderedIndexAdd::vectorInside(int64_t step) {
  // Columns, the tile's and the result's, are whole vectors.
  Value c = columnOf(step);
  Value inTile = less(c, idx(columns));
  Value inResult = less(add(column0, c), idx(s.post));
  return arith::AndIOp::create(
      b, l, arith::AndIOp::create(b, l, inTile, inResult), active);
}

void OrderedIndexAdd::forEachSumVector(
    function_ref<void(Value, int64_t)> body) {
  e.loop(rowSteps, {}, [&](Value step, ValueRange) {
    Value r = add(group, mul(step, groups));
    Value inside = arith::AndIOp::create(
        b, l, less(r, idx(rows)), less(add(row0, r), idx(s.size)));
    for (int64_t k = 0; k < columnSteps; ++k) {
      auto guard = scf::IfOp::create(
          b, l, arith::AndIOp::create(b, l, inside, vectorInside(k)));
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      body(r, k);
    }
    return SmallVector<Value>{};
  });
}

LogicalResult OrderedIndexAdd::emitTile() {
  status = success();
  forEachSumVector([&](Value r, int64_t k) {
    for (int64_t v = 0; v < vector; ++v)
      memref::StoreOp::create(b, l, e.f32(0), sums,
                              ValueRange{slotOf(r, k, v)});
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
  // any elementwise epilogue computed from it, a vector at a time.
  auto yield = cast<YieldOp>(e.kernel().getBody().front().getTerminator());
  forEachSumVector([&](Value r, int64_t k) {
    Value at = s.join(p, add(row0, r), s.size, add(column0, columnOf(k)));
    SmallVector<Value> lanes = e.laneIndices(at, vector);
    for (int64_t v = 0; v < vector; ++v)
      e.setElement(s.op.getResult(), lanes[v],
                   memref::LoadOp::create(b, l, sums,
                                          ValueRange{slotOf(r, k, v)}));
    for (auto [i, root] : llvm::enumerate(yield.getValues())) {
      FailureOr<SmallVector<Value>> values =
          e.vectorAt(root, ElementIndex::linear(shapeOf(root), at), lanes);
      if (failed(values)) {
        status = failure();
        return;
      }
      e.storeLanes(i, at, *values);
    }
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

OrderedIndexAdd::Hit OrderedIndexAdd::nextHit(Value k, Walk &walk) {
  Type i32 = b.getI32Type();
  Value zero = e.constant(i32, 0), one = e.constant(i32, 1);
  auto isZero = [&](Value x) {
    return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x, zero);
  };
  auto lowestCleared = [&](Value x) {
    return arith::AndIOp::create(b, l, x, arith::SubIOp::create(b, l, x, one));
  };
  // The same for every thread: no divergence.
  Value advance = arith::AndIOp::create(
      b, l, isZero(walk.marks),
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, walk.pending,
                            zero));
  auto next = scf::IfOp::create(
      b, l, TypeRange{i32, b.getIndexType(), i32}, advance, true);
  {
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPointToStart(next.thenBlock());
    Value mask = arith::IndexCastOp::create(
        b, l, b.getIndexType(),
        LLVM::CountTrailingZerosOp::create(b, l, i32, walk.pending, false));
    Value marks = memref::LoadOp::create(b, l, masks, ValueRange{mask});
    scf::YieldOp::create(b, l,
                         ValueRange{marks, mask, lowestCleared(walk.pending)});
    b.setInsertionPointToStart(next.elseBlock());
    scf::YieldOp::create(b, l,
                         ValueRange{walk.marks, walk.mask, walk.pending});
  }
  walk = {next.getResult(0), next.getResult(1), next.getResult(2)};
  Value valid = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne,
                                      walk.marks, zero);
  // cttz of 0 is 32, past the mask's entries: a missing hit reads its
  // mask's last entry instead (and adds nothing).
  Value bit = arith::IndexCastOp::create(
      b, l, b.getIndexType(),
      LLVM::CountTrailingZerosOp::create(b, l, i32, walk.marks, false));
  Value entry = add(mul(walk.mask, 32), minIndex(bit, idx(31)));
  Value row = arith::IndexCastOp::create(
      b, l, b.getIndexType(),
      memref::LoadOp::create(b, l, marked, ValueRange{entry}));
  walk.marks = lowestCleared(walk.marks);
  return {add(mul(k, kChunk), entry), row, valid};
}

void OrderedIndexAdd::addMarked(Value k) {
  Type i32 = b.getI32Type(), index = b.getIndexType();
  Value zero = e.constant(i32, 0);
  // Lane w of every warp holds mask w: a ballot says which have marks.
  Value own = memref::LoadOp::create(b, l, masks, ValueRange{rem(tid, 32)});
  Value pending = NVVM::VoteSyncOp::create(
      b, l, i32, e.constant(i32, -1),
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, own, zero),
      NVVM::VoteSyncKind::ballot);
  auto walk = scf::WhileOp::create(b, l, TypeRange{i32, index, i32},
                                   ValueRange{zero, idx(0), pending});
  OpBuilder::InsertionGuard insertion(b);
  Block *before = b.createBlock(&walk.getBefore(), {}, {i32, index, i32},
                                {l, l, l});
  Value more = arith::OrIOp::create(b, l, before->getArgument(0),
                                    before->getArgument(2));
  scf::ConditionOp::create(
      b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, more, zero),
      before->getArguments());
  Block *after =
      b.createBlock(&walk.getAfter(), {}, {i32, index, i32}, {l, l, l});
  Walk state{after->getArgument(0), after->getArgument(1),
             after->getArgument(2)};
  SmallVector<Hit> hits;
  for (int64_t h = 0; h < kHitsPerBatch; ++h)
    hits.push_back(nextHit(k, state));
  addUpdates(hits);
  scf::YieldOp::create(b, l,
                       ValueRange{state.marks, state.mask, state.pending});
}

void OrderedIndexAdd::addUpdates(ArrayRef<Hit> hits) {
  // Every hit's and column step's update is read before the first is
  // added, so that the reads are in flight together (a hit not this
  // thread's, or a vector outside, reads the batch's first update, which
  // is always a hit).
  struct Read {
    Value row;
    int64_t step;
    Value add;
    SmallVector<Value> update;
  };
  SmallVector<Read> reads;
  for (const Hit &hit : hits) {
    Value mine = arith::AndIOp::create(
        b, l, hit.valid,
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                              rem(hit.row, groups), group));
    for (int64_t k = 0; k < columnSteps; ++k) {
      Value inside = arith::AndIOp::create(b, l, mine, vectorInside(k));
      Value column = arith::SelectOp::create(
          b, l, inside, add(column0, columnOf(k)), idx(0));
      Value at = arith::SelectOp::create(b, l, inside, hit.position,
                                         hits.front().position);
      Value first = s.join(p, at, s.count, column);
      FailureOr<SmallVector<Value>> update =
          e.vectorAt(s.op.getUpdates(), ElementIndex::linear(s.updates, first),
                     e.laneIndices(first, vector));
      if (failed(update)) {
        status = failure();
        return;
      }
      reads.push_back({hit.row, k, inside, std::move(*update)});
    }
  }
  // Loads used only inside their hit's guarded add would be sunk into it
  // by LLVM (each issued after the previous hit's adds): an empty asm
  // taking a lane of each keeps every vector's load issued here (the
  // other lanes stay packed in the loaded registers until they are added).
  for (const Read &read : reads) {
    LLVM::InlineAsmOp::create(
        b, l, TypeRange(), read.update.front(), "", "f",
        /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::tailcallkind::TailCallKind::None,
        LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
        ArrayAttr());
  }
  for (const Read &read : reads) {
    auto guard = scf::IfOp::create(b, l, read.add);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    for (auto [v, update] : llvm::enumerate(read.update)) {
      Value slot = slotOf(read.row, read.step, v);
      Value sum = memref::LoadOp::create(b, l, sums, ValueRange{slot});
      memref::StoreOp::create(b, l, arith::AddFOp::create(b, l, sum, update),
                              sums, ValueRange{slot});
    }
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
