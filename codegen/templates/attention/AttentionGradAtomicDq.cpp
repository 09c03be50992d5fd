//===- AttentionGradAtomicDq.cpp - attention backward's dq added up -------===//
//
// With dqAtomic (an f32 dq, zeroed by the launch) there are no query
// blocks: a key block also stores each tile's dS^T to shared memory, and
// after a barrier each warpgroup multiplies it by half of the block's K
// columns, dQ_i += dS K (M = the tile's 64 queries, K = the block's 128
// keys), and adds the partial into dq. That is FlashAttention 3's five
// tile products a tile instead of seven, the exponentials once; the adds
// cost more than the two products save on the bench rows (bench/NOTES.md),
// so it is taken only where CompileOptions::deterministic is off. Where
// dq's rows are contiguous whole 16-byte chunks, the block stages the
// tile's partial in shared memory and one thread adds it with a single
// bulk reduction (the TMA's, as FlashAttention 3 does): 1.2-1.4x faster
// than per-element atomics from registers, which touch a 32-byte sector
// for every 8 bytes, and than a bulk add a row from one warp. Other shapes
// take the atomics. Non-causal key blocks of a kv head start at different
// query tiles, so that few of them add into the same rows at once (causal
// ones start at their diagonals).
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/attention/AttentionGradKernel.h"

#include "codegen/emitter/AsyncCopy.h"
#include "codegen/emitter/Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

void FlashAttentionGrad::storeTransposedDs(ArrayRef<Value> ds) {
  auto pairType = VectorType::get({2}, b.getF32Type());
  for (int64_t i = 0; i + 1 < kTile / 2; i += 2) {
    auto [key, query] = position(i);
    Value pair = vector::FromElementsOp::create(b, l, pairType,
                                                ValueRange{ds[i], ds[i + 1]});
    Value half =
        arith::TruncFOp::create(b, l, VectorType::get({2}, dtype), pair);
    // (swizzledOffset gives the 16-byte chunk; the pair lies inside it.)
    Value at = add(add(idx(dsAt()), rem(query, 8)),
                   wgmma::swizzledOffset(b, l, key, query, false));
    // (An even element of a 16-byte chunk: one 4-byte store.)
    vector::StoreOp::create(b, l, half, shared, ValueRange{at},
                            /*nontemporal=*/false, llvm::MaybeAlign(4));
  }
}

Value FlashAttentionGrad::issueDqProduct() {
  int64_t n = dp / 2;
  // A: dS^T's rows are keys (K), 64 queries (M) each; B: the block's own K
  // rows (K) from column warpgroup * n, within one 64-column atom column
  // (n <= 64). Both M/N-major; a step of 16 keys is 16 rows of 128 bytes.
  Value col = mul(warpgroup, n);
  Value kAt = add(mul(div(col, 64), kRows * 64), rem(col, 64));
  Value aBase =
      wgmma::descriptor(b, l, add(sharedBase, idx(2 * dsAt())), false);
  Value bBase = wgmma::descriptor(b, l, add(sharedBase, mul(kAt, 2)), false);
  SmallVector<std::pair<Value, Value>> steps;
  for (int64_t j = 0; j < kRows / 16; ++j)
    steps.push_back({wgmma::offsetDescriptor(b, l, aBase, 2048 * j),
                     wgmma::offsetDescriptor(b, l, bBase, 2048 * j)});
  NVVM::WgmmaFenceAlignedOp::create(b, l);
  return issueGroup(steps, n, NVVM::MMALayout::col, NVVM::MMALayout::row);
}

void FlashAttentionGrad::addDq(ArrayRef<Value> part, Value slice, Value row0) {
  if (!dqArgument)
    return;
  Value memref = e.gpuFunc().getArgument(*dqArgument);
  Value scaleBy = e.f32(scale);
  // Accumulator i of the warpgroup's m64nN product: row (query of the
  // tile) and column as position(), within the warpgroup's 64 rows.
  Value rowBase = add(mul(div(rem(tid, 128), 32), 16), div(lane, 4));
  Value colBase = add(mul(warpgroup, dp / 2), mul(rem(lane, 4), 2));
  for (int64_t i = 0; i < int64_t(part.size()); i += 2) {
    int64_t c = 8 * (i / 4);
    if (c >= d) // padding columns of the warpgroup's half, where d < dp
      continue;
    Value query = add(row0, add(rowBase, idx(i % 4 >= 2 ? 8 : 0)));
    Value col = add(colBase, idx(c));
    Value inside =
        arith::AndIOp::create(b, l, less(query, idx(sq)), less(col, idx(d)));
    auto ifInside = scf::IfOp::create(b, l, inside, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifInside.thenBlock());
    Value linear = add(mul(add(mul(slice, sq), query), d), col);
    Value at = e.offsetOf(*dqArgument,
                          BufferIndex(linear, add(mul(slice, sq), query), col));
    for (int64_t j = 0; j < 2; ++j)
      memref::AtomicRMWOp::create(
          b, l, arith::AtomicRMWKind::addf,
          arith::MulFOp::create(b, l, part[i + j], scaleBy), memref,
          ValueRange{add(at, idx(j))});
  }
}

void FlashAttentionGrad::addDqInBulk(ArrayRef<Value> part, Value slice,
                                     Value row0) {
  Value scaleBy = e.f32(scale);
  Value staging = add(sharedBase, idx(2 * dqStagingAt()));
  Value rowBase = add(mul(div(rem(tid, 128), 32), 16), div(lane, 4));
  Value colBase = add(mul(warpgroup, dp / 2), mul(rem(lane, 4), 2));
  auto pairType = VectorType::get({2}, b.getF32Type());
  for (int64_t i = 0; i < int64_t(part.size()); i += 2) {
    int64_t c = 8 * (i / 4);
    if (c >= d) // padding columns of the warpgroup's half, where d < dp
      continue;
    Value row = add(rowBase, idx(i % 4 >= 2 ? 8 : 0));
    Value col = add(colBase, idx(c));
    Value pair = vector::FromElementsOp::create(
        b, l, pairType,
        ValueRange{arith::MulFOp::create(b, l, part[i], scaleBy),
                   arith::MulFOp::create(b, l, part[i + 1], scaleBy)});
    auto inside = scf::IfOp::create(b, l, less(col, idx(d)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    Value at = add(staging, mul(add(mul(row, d), col), 4));
    LLVM::StoreOp::create(b, l, pair, async::sharedPointer(b, l, at),
                          /*alignment=*/8);
  }
  // Both warpgroups' halves stored and visible to the bulk copy.
  wgmma::fenceSharedForAsyncProxy(b, l);
  gpu::BarrierOp::create(b, l);
  Value dq = e.gpuFunc().getArgument(*dqArgument);
  onFirstThread([&] {
    // The tile's rows of the slice are consecutive rows of dq.
    Value rows =
        minIndex(idx(kTile), arith::SubIOp::create(b, l, idx(sq), row0));
    Value to =
        async::globalAddress(b, l, dq, mul(add(mul(slice, sq), row0), d));
    async::addToGlobalInBulk(b, l, to, staging, mul(rows, 4 * d));
  });
}

void FlashAttentionGrad::onFirstThread(function_ref<void()> body) {
  auto first = scf::IfOp::create(
      b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, tid, idx(0)),
      false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(first.thenBlock());
  body();
}
