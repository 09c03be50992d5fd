//===- LowerNVGPU.cpp - kf-lower-nvgpu: nvgpu to NVVM at our index width --===//
//
// The conversion of upstream's convert-nvgpu-to-nvvm, with the index width
// of kfuse's LLVM lowering: the memref descriptors it materialises then
// match those of convert-gpu-to-nvvm, and the casts between them fold.
// It also lowers the emitter's casts of a memref to an LLVM pointer (the
// address inline PTX takes) while the descriptors are still at hand.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "codegen/Passes.h"

#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFLOWERNVGPUPASS
#include "codegen/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;

namespace {

unsigned nvvmAddressSpace(gpu::AddressSpace space) {
  switch (space) {
  case gpu::AddressSpace::Global:
    return static_cast<unsigned>(NVVM::NVVMMemorySpace::Global);
  case gpu::AddressSpace::Workgroup:
    return static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);
  case gpu::AddressSpace::Private:
    return 0;
  }
  llvm_unreachable("unknown GPU address space");
}

/// `unrealized_conversion_cast %m : memref<...> to !llvm.ptr<N>`: the
/// address of the view's first element, from its descriptor's aligned
/// pointer (64 bits, whatever the width of the kernel's indices).
struct MemRefToPointer
    : public ConvertOpToLLVMPattern<UnrealizedConversionCastOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  static bool matches(UnrealizedConversionCastOp op) {
    return op->getNumOperands() == 1 && op->getNumResults() == 1 &&
           isa<MemRefType>(op->getOperand(0).getType()) &&
           isa<LLVM::LLVMPointerType>(op->getResult(0).getType());
  }

  LogicalResult
  matchAndRewrite(UnrealizedConversionCastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!matches(op))
      return failure();
    auto type = cast<MemRefType>(op->getOperand(0).getType());
    MemRefDescriptor descriptor(adaptor.getOperands()[0]);
    Value at = descriptor.bufferPtr(rewriter, op.getLoc(),
                                    *getTypeConverter(), type);
    Type wanted = op->getResult(0).getType();
    if (at.getType() != wanted)
      at = LLVM::AddrSpaceCastOp::create(rewriter, op.getLoc(), wanted, at);
    rewriter.replaceOp(op, at);
    return success();
  }
};

struct KFLowerNVGPUPass
    : public kfuse::kf::impl::KFLowerNVGPUPassBase<KFLowerNVGPUPass> {
  using KFLowerNVGPUPassBase::KFLowerNVGPUPassBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LowerToLLVMOptions options(context);
    options.overrideIndexBitwidth(indexBitwidth);
    LLVMTypeConverter converter(context, options);
    populateGpuMemorySpaceAttributeConversions(converter, nvvmAddressSpace);
    // Tokens of cp.async groups exist only to order ops in the IR.
    converter.addConversion([context](nvgpu::DeviceAsyncTokenType) -> Type {
      return IntegerType::get(context, 32);
    });
    RewritePatternSet patterns(context);
    populateNVGPUToNVVMConversionPatterns(converter, patterns);
    patterns.add<MemRefToPointer>(converter);
    ConversionTarget target(*context);
    target.addDynamicallyLegalOp<UnrealizedConversionCastOp>(
        [](UnrealizedConversionCastOp op) {
          return !MemRefToPointer::matches(op);
        });
    target.addIllegalDialect<nvgpu::NVGPUDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
