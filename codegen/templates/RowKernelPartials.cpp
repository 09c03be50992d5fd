//===- RowKernelPartials.cpp - row kernels that sum column partials -------===//
//
// A kernel that yields column partials (kf-fuse-column-sums: a LayerNorm
// backward's weight and bias gradients beside its input gradient) runs a
// block per partial over a grid-stride loop of its rows, carrying each
// thread's running column sums across the rows in registers, and writes
// them once at the end (combined through shared memory over the rows a
// block takes at once). The sums' order is fixed: every run is the same.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/RowKernel.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

LogicalResult RowKernel::emitWithPartials(Value group) {
  Value first = yield.getValues()[partials.front().result];
  BlockColumnPartials layout = *blockColumnPartialsOf(first);
  int64_t blocks = e.kernel().getLaunchAttr().getGrid();
  if (!inRegisters || blocks != layout.blocks ||
      rowsPerBlock != layout.rowsPerBlock ||
      space.rows % (rowsPerBlock * blocks))
    return e.kernel().emitOpError()
           << "sums column partials over " << layout.blocks << " blocks of "
           << layout.rowsPerBlock
           << " rows each held in registers, but kf-tile decided a grid of "
           << blocks << " blocks of " << rowsPerBlock << " rows"
           << (inRegisters ? "" : " not in registers");
  for (const Partial &p : partials)
    if (shapeOf(p.source).back() != space.length ||
        mlir::cast<ShapedType>(p.source.getType()).getNumElements() !=
            space.rows * space.length)
      return e.kernel().emitOpError(
          "sums column partials of a value that is not of its rows");
  Value block = gpu::BlockIdOp::create(b, l, gpu::Dimension::x);
  int64_t groups = space.rows / rowsPerBlock;
  auto rowOf = [&](Value item) -> Value {
    if (rowsPerBlock == 1)
      return item;
    return arith::AddIOp::create(
        b, l, arith::MulIOp::create(b, l, item, e.index(rowsPerBlock)),
        group);
  };
  // A block takes a row at a time, and its two block reductions leave no
  // load in flight: the next row's vectors are loaded before this row's
  // are reduced. Every block has a first row (columnPartialLayout gives
  // each four or more); the last iteration loads its own row again.
  bool prefetch = prefetchesRows();
  SmallVector<Value> init(partials.size() * chunks * vec, e.f32(0));
  size_t sumCount = init.size();
  if (prefetch)
    llvm::append_range(init, loadRowVectors(rowOf(block)));
  auto loop = scf::ForOp::create(b, l, block, e.index(groups),
                                 e.index(blocks), init);
  {
    OpBuilder::InsertionGuard guard(b);
    if (!loop.getBody()->empty())
      loop.getBody()->getTerminator()->erase();
    b.setInsertionPointToEnd(loop.getBody());
    Value item = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> next;
    if (prefetch) {
      Value after = arith::AddIOp::create(b, l, item, e.index(blocks));
      Value inside = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                           after, e.index(groups));
      next = loadRowVectors(
          rowOf(arith::SelectOp::create(b, l, inside, after, item)));
      prefetched.assign(carried.begin() + sumCount, carried.end());
    }
    if (failed(emitRow(rowOf(item))))
      return failure();
    prefetched.clear();
    SmallVector<Value> yielded = accumulate(carried.take_front(sumCount));
    llvm::append_range(yielded, next);
    scf::YieldOp::create(b, l, yielded);
  }
  storePartials(loop.getResults().take_front(sumCount), block, group);
  return status;
}

/// The next row's vectors take registers beside this row's, under the
/// 64 a thread of two blocks of 512 an SM: at most 8 more. ptxas, sm_90:
/// LayerNorm backward, bf16 rows of 4096 (8 more) used 64 registers and
/// spilled nothing; f32 rows of 1000 (16 more) spilled 152 bytes, not 40.
bool RowKernel::prefetchesRows() const {
  constexpr int64_t kPrefetchRegisters = 8;
  if (ragged && !wholeVectors)
    return false;
  int64_t bits = 0;
  for (BlockArgument arg : streamed) {
    int64_t width = getElementTypeOrSelf(arg.getType()).getIntOrFloatBitWidth();
    if (vec * width > 128)
      return false;
    bits += chunks * vec * width;
  }
  return bits <= kPrefetchRegisters * 32;
}

SmallVector<Value> RowKernel::loadRowVectors(Value r) {
  row = r;
  rowBase = arith::MulIOp::create(b, l, row, e.index(space.length));
  SmallVector<Value> vectors;
  for (int64_t c = 0; c < chunks; ++c) {
    RowLanes lanes = lanesOf(e.index(c), /*load=*/false);
    for (BlockArgument arg : streamed)
      vectors.push_back(e.loadRaw(
          e.gpuFunc().getArgument(arg.getArgNumber()),
          e.offsetOf(arg.getArgNumber(),
                     BufferIndex(lanes.linears[0], row, lanes.columns[0])),
          vec));
  }
  for (BlockArgument arg : rowScalars)
    vectors.push_back(e.loadVector(arg, BufferIndex(row), 1)[0]);
  return vectors;
}

SmallVector<Value> RowKernel::accumulate(ValueRange sums) {
  SmallVector<Value> next;
  for (const Partial &p : partials)
    for (const RowLanes &lanes : unrolled)
      for (int64_t k = 0; k < vec; ++k) {
        Value v = element(p.source, lanes, k);
        if (ragged)
          v = arith::SelectOp::create(b, l, lanes.valid[k], v, e.f32(0));
        next.push_back(arith::AddFOp::create(b, l, sums[next.size()], v));
      }
  return next;
}

void RowKernel::storePartials(ValueRange sums, Value block, Value group) {
  // The lanes of the partial's row `block`, as lanesOf finds them.
  row = block;
  rowBase = arith::MulIOp::create(b, l, block, e.index(space.length));
  rowStaged = false;
  SmallVector<RowLanes> lanes;
  for (int64_t c = 0; c < chunks; ++c)
    lanes.push_back(lanesOf(e.index(c), /*load=*/false));
  // Rows a block takes at once: each group's sums into shared memory at
  // its lanes' own slots, then the first group adds them up.
  int64_t span = threads * chunks * vec;
  Value stage, isFirst;
  if (rowsPerBlock > 1) {
    stage = workgroupBuffer(e, rowsPerBlock * span);
    isFirst = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, group,
                                    e.index(0));
  }
  auto slot = [&](Value g, const RowLanes &at, int64_t k) -> Value {
    return arith::AddIOp::create(
        b, l, arith::MulIOp::create(b, l, g, e.index(span)),
        arith::AddIOp::create(b, l, at.first, e.index(k)));
  };
  size_t n = 0;
  for (const Partial &p : partials) {
    ValueRange own = sums.slice(n, chunks * vec);
    n += chunks * vec;
    if (!stage) {
      for (int64_t c = 0; c < chunks; ++c)
        storePartialLanes(p.result, lanes[c],
                          llvm::to_vector(own.slice(c * vec, vec)));
      continue;
    }
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t k = 0; k < vec; ++k)
        memref::StoreOp::create(b, l, own[c * vec + k], stage,
                                ValueRange{slot(group, lanes[c], k)});
    gpu::BarrierOp::create(b, l);
    {
      OpBuilder::InsertionGuard guard(b);
      auto first = scf::IfOp::create(b, l, isFirst);
      b.setInsertionPoint(first.thenBlock()->getTerminator());
      for (int64_t c = 0; c < chunks; ++c) {
        SmallVector<Value> total;
        for (int64_t k = 0; k < vec; ++k) {
          Value t = e.f32(0);
          for (int64_t g = 0; g < rowsPerBlock; ++g)
            t = arith::AddFOp::create(
                b, l, t,
                memref::LoadOp::create(b, l, stage,
                                       ValueRange{slot(e.index(g), lanes[c],
                                                       k)}));
          total.push_back(t);
        }
        storePartialLanes(p.result, lanes[c], total);
      }
    }
    // The next partial reuses the stage.
    gpu::BarrierOp::create(b, l);
  }
}

void RowKernel::storePartialLanes(unsigned result, const RowLanes &lanes,
                                  ArrayRef<Value> values) {
  OpBuilder::InsertionGuard guard(b);
  if (!ragged || wholeVectors) {
    if (ragged) {
      auto inside = scf::IfOp::create(b, l, lanes.valid[0]);
      b.setInsertionPoint(inside.thenBlock()->getTerminator());
    }
    e.storeLanes(result, BufferIndex(lanes.linears[0], row, lanes.columns[0]),
                 values);
    return;
  }
  for (int64_t k = 0; k < vec; ++k) {
    OpBuilder::InsertionGuard lane(b);
    auto inside = scf::IfOp::create(b, l, lanes.valid[k]);
    b.setInsertionPoint(inside.thenBlock()->getTerminator());
    e.storeResult(result, BufferIndex(lanes.linears[k], row, lanes.columns[k]),
                  values[k]);
  }
}
