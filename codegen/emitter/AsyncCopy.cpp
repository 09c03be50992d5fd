//===- AsyncCopy.cpp - mbarriers and TMA copies of warp-specialised blocks ===//

#include "codegen/emitter/AsyncCopy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace kfuse::kf::async {

namespace {

Value index(OpBuilder &b, Location l, int64_t v) {
  return arith::ConstantIndexOp::create(b, l, v);
}

} // namespace

LogicalResult splitRoles(OpBuilder &b, Location l, Value tid, int64_t computing,
                         function_ref<LogicalResult()> copy,
                         function_ref<LogicalResult()> compute,
                         RegisterSplit split) {
  auto roles =
      scf::IfOp::create(b, l,
                        arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                              tid, index(b, l, computing)),
                        true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(roles.elseBlock());
  NVVM::SetMaxRegisterOp::create(b, l, split.copying,
                                 NVVM::SetMaxRegisterAction::decrease);
  auto leader =
      scf::IfOp::create(b, l,
                        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                              tid, index(b, l, computing)),
                        false);
  b.setInsertionPointToStart(leader.thenBlock());
  if (failed(copy()))
    return failure();
  b.setInsertionPointToStart(roles.thenBlock());
  NVVM::SetMaxRegisterOp::create(b, l, split.computing,
                                 NVVM::SetMaxRegisterAction::increase);
  return compute();
}

void initBarriers(OpBuilder &b, Location l, Value tid,
                  function_ref<void()> init) {
  auto first =
      scf::IfOp::create(b, l,
                        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                              tid, index(b, l, 0)),
                        false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    init();
    NVVM::FenceMbarrierInitOp::create(b, l);
  }
  gpu::BarrierOp::create(b, l);
}

void initBarrier(OpBuilder &b, Location l, Value barrier, int32_t arrivals) {
  NVVM::MBarrierInitOp::create(
      b, l, barrier,
      arith::ConstantOp::create(b, l, b.getI32IntegerAttr(arrivals)), Value());
}

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

void loadBulk(OpBuilder &b, Location l, Value dst, Value src, Value bytes,
              Value barrier) {
  auto global = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Global));
  // The CTA's own shared memory, as the cluster's window addresses it (the
  // CTA form needs PTX 8.6).
  Value window = LLVM::AddrSpaceCastOp::create(
      b, l, LLVM::LLVMPointerType::get(b.getContext(), 7), dst);
  NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(
      b, l, window, LLVM::IntToPtrOp::create(b, l, global, src), barrier, bytes,
      /*multicastMask=*/Value(), /*l2CacheHint=*/Value());
}

Value globalAddress(OpBuilder &b, Location l, Value memref, Value offset) {
  // kf-lower-nvgpu lowers the cast to the descriptor's aligned pointer: an
  // address of 64 bits, where one taken as an index would be cut to the
  // kernel's 32-bit indices.
  auto global = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Global));
  Value base =
      UnrealizedConversionCastOp::create(b, l, TypeRange{global}, memref)
          .getResult(0);
  Type element = mlir::cast<MemRefType>(memref.getType()).getElementType();
  Value at = LLVM::GEPOp::create(
      b, l, global, element, base,
      ValueRange{arith::IndexCastOp::create(b, l, b.getI32Type(), offset)});
  return LLVM::PtrToIntOp::create(b, l, b.getI64Type(), at);
}

void addToGlobalInBulk(OpBuilder &b, Location l, Value to, Value from,
                       Value bytes) {
  auto i32 = [&](Value v) {
    return arith::IndexCastOp::create(b, l, b.getI32Type(), v);
  };
  // NVVM has the bulk reduction only for tensor maps; this one takes plain
  // addresses.
  LLVM::InlineAsmOp::create(
      b, l, TypeRange(), ValueRange{to, i32(from), i32(bytes)},
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 "
      "[$0], [$1], $2;",
      "l,r,r", /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
  NVVM::CpAsyncBulkCommitGroupOp::create(b, l);
}

void waitBulkGroups(OpBuilder &b, Location l, bool readOnly) {
  NVVM::CpAsyncBulkWaitGroupOp::create(b, l, b.getI32IntegerAttr(0),
                                       readOnly ? b.getUnitAttr() : UnitAttr());
}

} // namespace kfuse::kf::async
