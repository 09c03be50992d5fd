//===- LowerNVGPU.cpp - kf-lower-nvgpu: nvgpu to NVVM at our index width --===//
//
// The conversion of upstream's convert-nvgpu-to-nvvm, with the index width
// of kfuse's LLVM lowering: the memref descriptors it materialises then
// match those of convert-gpu-to-nvvm, and the casts between them fold.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "codegen/Passes.h"

#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
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
    ConversionTarget target(*context);
    target.addIllegalDialect<nvgpu::NVGPUDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
