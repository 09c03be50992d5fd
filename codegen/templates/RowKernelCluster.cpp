//===- RowKernelCluster.cpp - rows split over thread block clusters -------===//
//
// A row too long for one block's registers (row_tiling's `cluster` = C) is
// shared by the C blocks of a cluster: block `rank` holds the lanes a block
// of C x `threads` threads would give its threads rank x threads and on, so
// the template's passes are the same, each over a share of the row. A
// reduction of the row reduces over the block (blockReduce), then each
// block sends its result into slot `rank` of every block's exchange buffer
// (`st.shared::cluster` at a `mapa` address), the cluster barrier (arrive
// releases the stores, wait acquires them), and every thread folds the C
// slots in rank order: every block gets the same bits. The exchange has two
// slots a block, taken by rows in turn: a block may send the next row's
// values only after passing the barrier at which every block had finished
// reading the slot it would write.
//
//===----------------------------------------------------------------------===//

#include "codegen/emitter/AsyncCopy.h"
#include "codegen/templates/RowKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

LogicalResult RowKernel::emitClusterRows() {
  Value bid = gpu::BlockIdOp::create(b, l, gpu::Dimension::x);
  Value grid = gpu::GridDimOp::create(b, l, gpu::Dimension::x);
  // A 1-d cluster of C blocks is C consecutive blocks.
  rank = arith::RemUIOp::create(b, l, bid, e.index(cluster));
  laneTid = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, rank, e.index(threads)), tid);
  Value first = arith::DivUIOp::create(b, l, bid, e.index(cluster));
  Value step = arith::DivUIOp::create(b, l, grid, e.index(cluster));
  // No block writes into another's shared memory before that one runs.
  NVVM::ClusterArriveRelaxedOp::create(b, l, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, l, b.getUnitAttr());
  auto loop = scf::ForOp::create(b, l, first, e.index(space.rows), step);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value r = loop.getInductionVar();
  Value turn =
      arith::DivUIOp::create(b, l, arith::SubIOp::create(b, l, r, first), step);
  rowParity = arith::RemUIOp::create(b, l, turn, e.index(2));
  return emitRow(r);
}

SmallVector<Value>
RowKernel::clusterReduce(ArrayRef<Value> values,
                         function_ref<Value(unsigned, Value, Value)> combine) {
  int64_t count = values.size();
  // [turn][rank][value], f32.
  Value exchange = workgroupBuffer(e, 2 * cluster * count);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, l, exchange);
  auto slot = [&](Value from, int64_t i) {
    Value at = arith::AddIOp::create(
        b, l, arith::MulIOp::create(b, l, rowParity, e.index(cluster)), from);
    return arith::AddIOp::create(
        b, l, arith::MulIOp::create(b, l, at, e.index(count)), e.index(i));
  };
  // Thread t < C sends the block's values to block t.
  Value sends = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, tid,
                                      e.index(cluster));
  auto send = scf::IfOp::create(b, l, sends);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(send.thenBlock()->getTerminator());
    Value peer = arith::IndexCastOp::create(b, l, b.getI32Type(), tid);
    for (auto [i, value] : llvm::enumerate(values)) {
      Value offset = arith::MulIOp::create(b, l, slot(rank, i), e.index(4));
      Value local =
          async::sharedPointer(b, l, arith::AddIOp::create(b, l, base, offset));
      Value remote = NVVM::MapaOp::create(
          b, l, LLVM::LLVMPointerType::get(b.getContext(), 7), local, peer);
      LLVM::StoreOp::create(b, l, value, remote);
    }
  }
  NVVM::ClusterArriveOp::create(b, l, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, l, b.getUnitAttr());
  SmallVector<Value> reduced;
  for (int64_t i = 0; i < count; ++i) {
    Value acc =
        memref::LoadOp::create(b, l, exchange, ValueRange{slot(e.index(0), i)});
    for (int64_t from = 1; from < cluster; ++from)
      acc = combine(i, acc,
                    memref::LoadOp::create(b, l, exchange,
                                           ValueRange{slot(e.index(from), i)}));
    reduced.push_back(acc);
  }
  return reduced;
}
