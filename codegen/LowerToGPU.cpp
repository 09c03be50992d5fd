//===- LowerToGPU.cpp - kf-lower-to-gpu: one gpu.func per kernel ----------===//
//
// Declares one gpu.func per kf.kernel and fills its body with the template
// the kernel's kind and config pick (codegen/templates/): vectorised
// pointwise kernels and padded-row copies (PointwiseKernels.cpp), row
// kernels (RowKernels.cpp), column reductions and transposes through
// shared-memory tiles (ColumnAndTransposeKernels.cpp), tensor-core matmuls
// (matmul/), FlashAttention (attention/), and one thread per output where
// no faster template applies (PerOutputKernels.cpp).
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "codegen/templates/KernelTemplates.h"
#include "codegen/templates/PointwiseTemplate.h"
#include "analysis/MatmulTiling.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFLOWERTOGPUPASS
#include "codegen/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Kernel arguments are flat: one bare pointer each, to rows of kf-pad's
/// stride where it padded them.
MemRefType memrefOf(Value tensor) {
  auto type = mlir::cast<RankedTensorType>(tensor.getType());
  int64_t elements = type.getNumElements();
  if (int64_t stride = paddedRowStride(tensor))
    elements = elements / type.getShape().back() * stride;
  return MemRefType::get({elements}, type.getElementType());
}

/// Only the row and tensor-core matmul templates address padded rows (by
/// row and column), and the padded-rows template writes them; kf-pad pads
/// nothing else.
LogicalResult checkPaddedBuffers(KernelOp kernel) {
  bool rowTemplate = (kernel.getKind() == KernelKind::reduction ||
                      kernel.getKind() == KernelKind::normalization) &&
                     rowSpaceOf(kernel) && !configValue(kernel, "columns");
  bool mmaTemplate = configValue(kernel, "mma") != 0;
  if (rowTemplate || mmaTemplate)
    return success();
  bool paddedCopy = kernel.getKind() == KernelKind::pointwise &&
                    kernel.getNumResults() == 1 &&
                    !configValue(kernel, "tiled_transpose");
  // The FlashAttention template reads q, k and v by row stride.
  SmallVector<Value> addressedByRow;
  if (configValue(kernel, "flash")) {
    AttentionOp op = attentionOf(kernel);
    for (Value operand : {op.getQ(), op.getK(), op.getV()})
      addressedByRow.push_back(
          kernel
              .getInputs()[mlir::cast<BlockArgument>(operand).getArgNumber()]);
  }
  SmallVector<Value> buffers(kernel.getInputs());
  if (!paddedCopy)
    llvm::append_range(buffers, kernel.getResults());
  for (Value v : buffers)
    if (paddedRowStride(v) && !llvm::is_contained(addressedByRow, v))
      return kernel.emitOpError()
             << "has a buffer with padded rows (" << v.getType()
             << "), which its template does not address";
  return success();
}

/// The body of the emitter's kernel, by the template its kind and config
/// pick: `items` (threads or blocks) of work.
LogicalResult emitBody(KernelEmitter &e, int64_t items) {
  KernelOp kernel = e.kernel();
  std::optional<RowSpace> rows = rowSpaceOf(kernel);
  switch (kernel.getKind()) {
  case KernelKind::pointwise:
    if (usesPointwiseTemplate(kernel))
      return emitPointwise(e, items);
    if (configValue(kernel, "tiled_transpose"))
      return emitTiledTranspose(e, tiledTransposeOf(kernel));
    return emitPaddedRows(e, items);
  case KernelKind::reduction:
    if (configValue(kernel, "columns"))
      return emitColumns(e, *columnSpaceOf(kernel));
    return rows ? emitRows(e, *rows) : emitReduction(e, items);
  case KernelKind::normalization:
    return rows ? emitRows(e, *rows) : emitSoftmax(e, items);
  case KernelKind::matmul:
    return configValue(kernel, "mma")
               ? emitTensorCoreMatmul(e, matmulOf(kernel))
               : emitMatmul(e, items);
  case KernelKind::attention:
    return configValue(kernel, "flash")
               ? emitFlashAttention(e, attentionOf(kernel))
               : emitAttention(e, items);
  }
  llvm_unreachable("unknown kernel kind");
}

LogicalResult lowerKernel(KernelOp kernel, gpu::GPUModuleOp module,
                          StringRef name) {
  SmallVector<Type> args;
  for (Value v : kernel.getInputs())
    args.push_back(memrefOf(v));
  for (Value v : kernel.getResults())
    args.push_back(memrefOf(v));
  unsigned buffers = args.size();
  if (configValue(kernel, "tma"))
    args.append(tmaOperands(kernel).size(),
                LLVM::LLVMPointerType::get(kernel.getContext()));
  DictionaryAttr config = kernel.getConfigAttr();
  if (!config || !config.getAs<IntegerAttr>("block") ||
      !config.getAs<IntegerAttr>("items"))
    return kernel.emitOpError("has no launch config: run kf-tile first");
  if (failed(checkPaddedBuffers(kernel)))
    return failure();
  int64_t block = configValue(kernel, "block");
  int64_t items = configValue(kernel, "items");

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(b, kernel.getLoc(), name,
                                     b.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(block), 1, 1}));
  // The alignment fact the runtime checked: every buffer starts on a
  // 16-byte boundary, so LLVM may merge accesses into 16-byte vectors.
  if (int64_t align = configValue(kernel, "aligned"))
    for (unsigned i = 0; i < buffers; ++i)
      func.setArgAttr(i, "llvm.align", b.getI64IntegerAttr(align));
  // The TMA tensor maps come by value (kf-grid-constants).
  if (args.size() > buffers)
    func->setAttr(kTensorMapArgs, b.getI64IntegerAttr(args.size() - buffers));
  KernelEmitter emitter(kernel, func);
  LogicalResult status = emitBody(emitter, items);
  gpu::ReturnOp::create(emitter.builder(), kernel.getLoc());
  kernel->setAttr("gpu_func", b.getStringAttr(name));
  return status;
}

struct KFLowerToGPUPass
    : public kfuse::kf::impl::KFLowerToGPUPassBase<KFLowerToGPUPass> {
  using KFLowerToGPUPassBase::KFLowerToGPUPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "kf_kernels");
    int counter = 0;
    WalkResult walk = module.walk([&](KernelOp kernel) {
      std::string name = "k" + std::to_string(counter++) + "_" +
                         stringifyKernelKind(kernel.getKind()).str();
      if (failed(lowerKernel(kernel, gpuModule, name)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
