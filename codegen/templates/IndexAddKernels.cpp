//===- IndexAddKernels.cpp - kf.index_add, gather's transpose -------------===//
//
// kf.index_add adds each update into the result row its index names (an
// embedding's gradient). Its `#kf.index_add_tiling` says how:
//   unordered  a thread an update: it reads the update (and any fused
//              producer) and its index once and adds the update into the
//              result, zeroed before the launch, with an f32 atomic add.
//              The adds to one element come in any order.
//   ordered    a thread a result element: it walks the indices in order
//              and adds the updates whose index names its row, the same
//              sum in every run, at one index read per index for every
//              result element.
// Indices in [-size, 0) count from the end; others outside [0, size) add
// nothing, as in the evaluator.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/KernelTemplates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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
    int64_t axis = op.getAxis(), rank = indices.size();
    for (int64_t d = 0; d < axis; ++d)
      pre *= updates[d];
    for (int64_t n : indices)
      count *= n;
    for (int64_t d = axis + rank; d < int64_t(updates.size()); ++d)
      post *= updates[d];
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

/// A thread a result element, its updates summed in index order.
LogicalResult emitOrdered(KernelEmitter &e, IndexAddOp op, unsigned result,
                          int64_t items) {
  ScatterSpace s(e, op);
  OpBuilder &b = e.builder();
  Location l = e.loc();
  return e.forEachItem(items, false, [&](Value o) -> LogicalResult {
    auto [p, row, q] = s.split(o, s.size);
    Value j = arith::IndexCastOp::create(b, l, b.getI64Type(), row);
    LogicalResult status = success();
    SmallVector<Value> sum = e.loop(
        s.count, {e.f32(0)}, [&](Value i, ValueRange carried) {
          FailureOr<std::pair<Value, Value>> row = s.rowOf(i);
          if (failed(row)) {
            status = failure();
            return SmallVector<Value>(carried);
          }
          Value hit = arith::AndIOp::create(
              b, l, row->second,
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                    row->first, j));
          // Only the updates of this row are read.
          auto add = scf::IfOp::create(b, l, TypeRange{carried[0].getType()},
                                       hit, true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(add.thenBlock());
          FailureOr<Value> update = e.elementAt(
              op.getUpdates(),
              ElementIndex::linear(s.updates, s.join(p, i, s.count, q)));
          if (failed(update))
            status = failure();
          Value next = succeeded(update)
                           ? Value(arith::AddFOp::create(b, l, carried[0],
                                                         *update))
                           : carried[0];
          scf::YieldOp::create(b, l, next);
          b.setInsertionPointToStart(add.elseBlock());
          scf::YieldOp::create(b, l, carried[0]);
          return SmallVector<Value>{add.getResult(0)};
        });
    if (failed(status))
      return failure();
    e.storeResult(result, o, sum[0]);
    return success();
  });
}

} // namespace

LogicalResult kfuse::kf::emitIndexAdd(KernelEmitter &e, IndexAddOp op,
                                      int64_t items) {
  KernelOp kernel = e.kernel();
  std::optional<unsigned> result = resultIndexOf(kernel, op.getResult());
  if (!result)
    return kernel.emitOpError("does not write its index_add's result");
  return kernel.getTilingAs<IndexAddTilingAttr>().getUnordered()
             ? emitUnordered(e, op, *result, items)
             : emitOrdered(e, op, *result, items);
}
