//===- AsyncCopy.cpp - mbarriers and TMA copies of warp-specialised blocks ===//

#include "passes/AsyncCopy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace kfuse::kf::async {

Value sharedPointer(OpBuilder &b, Location l, Value address) {
  Value i64 = arith::IndexCastOp::create(b, l, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b, l, LLVM::LLVMPointerType::get(b.getContext(), 3), i64);
}

void waitParity(OpBuilder &b, Location l, Value barrier, Value phase) {
  // The suspend-time hint CUTLASS uses (ns): the thread sleeps in the
  // instruction instead of spinning.
  Value hint = arith::ConstantOp::create(b, l, b.getI32IntegerAttr(10000000));
  NVVM::MBarrierTryWaitParityOp::create(b, l, barrier, phase, hint);
}

void loadBox(OpBuilder &b, Location l, Value map, ValueRange coords, Value dst,
             Value barrier) {
  SmallVector<Value> at;
  for (Value c : coords)
    at.push_back(arith::IndexCastOp::create(b, l, b.getI32Type(), c));
  // The CTA's own shared memory, as the cluster's window addresses it.
  Value window = LLVM::AddrSpaceCastOp::create(
      b, l, LLVM::LLVMPointerType::get(b.getContext(), 7), dst);
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, l, window, map, at, barrier, ValueRange{}, Value(), Value(),
      NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr(), Value());
}

} // namespace kfuse::kf::async
