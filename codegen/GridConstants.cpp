//===- GridConstants.cpp - kf-grid-constants: by-value tensor maps --------===//
//
// A TMA copy names its tensor map by address, which must lie in parameter,
// constant or global space: a by-value kernel parameter qualifies only as
// a grid constant, which NVPTX reads in place instead of copying it to
// local memory.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFGRIDCONSTANTSPASS
#include "codegen/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;

namespace {

struct KFGridConstantsPass
    : public kfuse::kf::impl::KFGridConstantsPassBase<KFGridConstantsPass> {
  using KFGridConstantsPassBase::KFGridConstantsPassBase;

  void runOnOperation() override {
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      auto count = func->getAttrOfType<IntegerAttr>(kfuse::kf::kTensorMapArgs);
      if (!count)
        return;
      func->removeAttr(kfuse::kf::kTensorMapArgs);
      Builder b(func.getContext());
      unsigned args = func.getNumArguments();
      for (unsigned i = args - count.getInt(); i < args; ++i) {
        func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(LLVM::LLVMArrayType::get(
                            b.getI8Type(), kfuse::kf::kTensorMapBytes)));
        func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(64));
        func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                        b.getUnitAttr());
      }
    });
  }
};

} // namespace
