//===- LowerToGPU.cpp - kf-lower-to-gpu: one gpu.func per kernel ----------===//
//
// Declares one gpu.func per kf.kernel and fills its body with the template
// the kernel's kind and tiling pick (codegen/templates/): vectorised
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
  Attribute tiling = kernel.getTilingAttr();
  if (isa_and_nonnull<RowTilingAttr, MmaTilingAttr>(tiling))
    return success();
  bool paddedCopy = kernel.getKind() == KernelKind::pointwise &&
                    kernel.getNumResults() == 1 &&
                    !isa_and_nonnull<TransposeTilingAttr>(tiling);
  // The FlashAttention template reads q, k and v by row stride.
  SmallVector<Value> addressedByRow;
  if (isa_and_nonnull<FlashTilingAttr>(tiling)) {
    AttentionOp op = attentionOf(kernel);
    for (Value operand : {op.getQ(), op.getK(), op.getV()})
      if (std::optional<StridedView> view =
              attentionOperandView(kernel, operand))
        addressedByRow.push_back(
            kernel.getInputs()[mlir::cast<BlockArgument>(view->root)
                                   .getArgNumber()]);
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

/// A tiling whose template does not apply to the kernel's body.
LogicalResult refuseTiling(KernelOp kernel, StringRef what) {
  return kernel.emitOpError()
         << "has " << kernel.getTilingAttr() << " but " << what;
}

/// A kernel with a row_tiling: the row template, or the line template of
/// an argmax or cumsum along its rows (a block a row).
LogicalResult emitRowTiled(KernelEmitter &e) {
  KernelOp kernel = e.kernel();
  std::optional<RowSpace> rows = rowSpaceOf(kernel);
  if (!rows)
    return refuseTiling(kernel, "works along no one row length");
  Value root = rootValue(kernel);
  bool lineKernel =
      root.getDefiningOp<ArgReduceOp>() || root.getDefiningOp<CumsumOp>();
  if (lineKernel && kernel.getTilingAs<RowTilingAttr>().getRowsPerBlock() != 1)
    return refuseTiling(kernel, "argmax and cumsum take a block a row");
  if (auto arg = root.getDefiningOp<ArgReduceOp>())
    return emitArgReduceRows(e, arg, *rows);
  if (auto cumsum = root.getDefiningOp<CumsumOp>())
    return emitCumsumRows(e, cumsum, *rows);
  return emitRows(e, *rows);
}

/// The body of the emitter's kernel, by the template its kind and tiling
/// pick: `items` (threads or blocks) of work.
LogicalResult emitBody(KernelEmitter &e, int64_t items) {
  KernelOp kernel = e.kernel();
  Attribute tiling = kernel.getTilingAttr();
  if (isa_and_nonnull<TransposeTilingAttr>(tiling)) {
    TransposeOp transpose = tiledTransposeOf(kernel);
    return transpose ? emitTiledTranspose(e, transpose)
                     : refuseTiling(kernel, "no transpose to tile");
  }
  if (isa_and_nonnull<ColumnScanTilingAttr>(tiling)) {
    auto cumsum = rootValue(kernel).getDefiningOp<CumsumOp>();
    return cumsum ? emitColumnScan(e, cumsum)
                  : refuseTiling(kernel, "its root is no cumsum");
  }
  if (isa_and_nonnull<IndexAddTilingAttr>(tiling)) {
    auto ops = kernel.getBody().getOps<IndexAddOp>();
    return ops.empty() ? refuseTiling(kernel, "computes no index_add")
                       : emitIndexAdd(e, *ops.begin(), items);
  }
  if (isa_and_nonnull<ColumnTilingAttr>(tiling)) {
    std::optional<RowSpace> columns = columnSpaceOf(kernel);
    return columns ? emitColumns(e, *columns)
                   : refuseTiling(kernel, "reduces no leading dims");
  }
  if (isa_and_nonnull<RowTilingAttr>(tiling))
    return emitRowTiled(e);
  switch (kernel.getKind()) {
  case KernelKind::pointwise:
    if (!isa_and_nonnull<PointwiseTilingAttr>(tiling))
      return kernel.emitOpError("has no pointwise_tiling: run kf-tile first");
    return paddedRowStride(kernel.getResult(0)) ? emitPaddedRows(e, items)
                                                : emitPointwise(e, items);
  case KernelKind::reduction:
    if (auto arg = rootValue(kernel).getDefiningOp<ArgReduceOp>())
      return emitArgReduce(e, arg, items);
    if (auto cumsum = rootValue(kernel).getDefiningOp<CumsumOp>())
      return emitCumsum(e, cumsum, items);
    return emitReduction(e, items);
  case KernelKind::normalization:
    return emitSoftmax(e, items);
  case KernelKind::matmul:
    return isa_and_nonnull<MmaTilingAttr>(tiling)
               ? emitTensorCoreMatmul(e, matmulOf(kernel))
               : emitMatmul(e, items);
  case KernelKind::attention:
    return isa_and_nonnull<FlashTilingAttr>(tiling)
               ? emitFlashAttention(e, attentionOf(kernel))
               : emitAttention(e, items);
  case KernelKind::attention_grad:
    if (!isa_and_nonnull<FlashGradTilingAttr>(tiling))
      return kernel.emitOpError("has no flash_grad_tiling: run kf-tile first");
    return emitFlashAttentionGrad(e, attentionGradOf(kernel));
  }
  llvm_unreachable("unknown kernel kind");
}

/// A template that wrote no element of a result would leave the caller's
/// buffer as it was: a silent wrong answer rather than an error (a merged
/// kernel's second column sum once went unwritten that way).
LogicalResult checkResultsWritten(KernelOp kernel, gpu::GPUFuncOp func) {
  unsigned first = kernel.getInputs().size();
  for (unsigned r = 0; r < kernel->getNumResults(); ++r)
    if (func.getArgument(first + r).use_empty())
      return kernel.emitOpError()
             << "has result " << r << " (" << kernel.getResult(r).getType()
             << ") that its template writes nowhere";
  return success();
}

LogicalResult lowerKernel(KernelOp kernel, gpu::GPUModuleOp module,
                          StringRef name) {
  SmallVector<Type> args;
  for (Value v : kernel.getInputs())
    args.push_back(memrefOf(v));
  for (Value v : kernel.getResults())
    args.push_back(memrefOf(v));
  unsigned buffers = args.size();
  // The sizes taken at run time (kf-runtime-extents), before the tensor
  // maps, which kf-grid-constants finds last.
  if (DenseI64ArrayAttr extents = kernel.getRuntimeExtentsAttr())
    args.append(extents.size() / 2, IntegerType::get(kernel.getContext(), 64));
  unsigned scalars = args.size();
  if (kernel.copiesWithTma())
    args.append(tmaOperands(kernel).size(),
                LLVM::LLVMPointerType::get(kernel.getContext()));
  LaunchAttr launch = kernel.getLaunchAttr();
  if (!launch)
    return kernel.emitOpError("has no launch: run kf-tile first");
  if (failed(checkPaddedBuffers(kernel)))
    return failure();

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(b, kernel.getLoc(), name,
                                     b.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(launch.getBlock()), 1, 1}));
  // The alignment fact the runtime checked: every buffer starts on a
  // 16-byte boundary, so LLVM may merge accesses into 16-byte vectors.
  if (int64_t align = TargetAttr::of(kernel).bufferAlignment())
    for (unsigned i = 0; i < buffers; ++i)
      func.setArgAttr(i, "llvm.align", b.getI64IntegerAttr(align));
  // Rows split over clusters: PTX's .reqnctapercluster, so that the
  // runtime's plain launches run whole clusters.
  if (auto rows = kernel.getTilingAs<RowTilingAttr>();
      rows && rows.getCluster() > 1)
    func.setKnownClusterSizeAttr(b.getDenseI32ArrayAttr(
        {static_cast<int32_t>(rows.getCluster()), 1, 1}));
  if (int64_t blocks = launch.getMinBlocksPerSM())
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(blocks));
  // The TMA tensor maps come by value (kf-grid-constants).
  if (args.size() > scalars)
    func->setAttr(kTensorMapArgs, b.getI64IntegerAttr(args.size() - scalars));
  KernelEmitter emitter(kernel, func);
  LogicalResult status = emitBody(emitter, launch.getItems());
  if (succeeded(status))
    status = checkResultsWritten(kernel, func);
  gpu::ReturnOp::create(emitter.builder(), kernel.getLoc());
  kernel.setGpuFuncAttr(b.getStringAttr(name));
  return status;
}

/// Whether `a` and `b` compute the same function of their buffers: the
/// same kind, decisions (launch, tiling, pipeline), input and result types
/// and body. The layers of a model repeat their kernels; one gpu.func
/// serves all copies, so LLVM and the PTX assembler see each once.
bool sameFunction(KernelOp a, KernelOp b) {
  if (a.getInputs().getTypes() != b.getInputs().getTypes())
    return false;
  llvm::DenseMap<Value, Value> equivalent;
  auto check = [&](Value l, Value r) -> LogicalResult {
    auto it = equivalent.find(l);
    if (it != equivalent.end())
      return success(it->second == r);
    // The kernels' own operands: any values of one type (checked above).
    return success(!a->isAncestor(l.getParentRegion()->getParentOp()));
  };
  auto mark = [&](Value l, Value r) { equivalent[l] = r; };
  return OperationEquivalence::isEquivalentTo(
      a, b, check, mark, OperationEquivalence::IgnoreLocations);
}

/// The kernels of `module` in walk order, each with the index of the first
/// kernel computing the same function (itself when none before does).
SmallVector<std::pair<KernelOp, size_t>> kernelClasses(ModuleOp module) {
  SmallVector<std::pair<KernelOp, size_t>> kernels;
  // Candidates by a hash of the op without its body or operands.
  llvm::DenseMap<llvm::hash_code, SmallVector<size_t, 1>> byHash;
  module.walk([&](KernelOp kernel) {
    llvm::hash_code hash = llvm::hash_combine(
        OperationEquivalence::computeHash(
            kernel, OperationEquivalence::ignoreHashValue,
            OperationEquivalence::ignoreHashValue,
            OperationEquivalence::IgnoreLocations),
        kernel.getBody().front().getOperations().size());
    SmallVector<size_t, 1> &candidates = byHash[hash];
    size_t representative = kernels.size();
    for (size_t c : candidates)
      if (sameFunction(kernels[c].first, kernel)) {
        representative = c;
        break;
      }
    if (representative == kernels.size())
      candidates.push_back(representative);
    kernels.push_back({kernel, representative});
  });
  return kernels;
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
    auto kernels = kernelClasses(module);
    for (auto [i, entry] : llvm::enumerate(kernels)) {
      auto [kernel, representative] = entry;
      if (representative != i) {
        kernel.setGpuFuncAttr(kernels[representative].first.getGpuFuncAttr());
        continue;
      }
      std::string name = "k" + std::to_string(i) + "_" +
                         stringifyKernelKind(kernel.getKind()).str();
      if (failed(lowerKernel(kernel, gpuModule, name)))
        return signalPassFailure();
    }
  }
};

} // namespace
