//===- PassPipeline.cpp - the only place the kfuse pass order lives -------===//

#include "compiler/PassPipeline.h"
#include "codegen/Passes.h"
#include "transforms/Passes.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kfuse::kf::buildGraphPipeline(OpPassManager &pm,
                                   const GraphPipelineOptions &options) {
  if (!options.shapes.empty() || !options.bindings.empty()) {
    KFSpecializePassOptions specialize;
    specialize.shapes.assign(options.shapes.begin(), options.shapes.end());
    specialize.bind.assign(options.bindings.begin(), options.bindings.end());
    pm.addPass(createKFSpecializePass(specialize));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void kfuse::kf::addAttachTarget(OpPassManager &pm,
                                const KernelPipelineOptions &options) {
  KFAttachTargetPassOptions target;
  target.chip = options.chip;
  target.sms = options.multiprocessors;
  target.aligned = options.aligned;
  target.wgmma = options.wgmma;
  target.allowTF32 = options.allowTF32;
  target.unorderedAdds = !options.deterministic;
  pm.addPass(createKFAttachTargetPass(target));
}

void kfuse::kf::buildKernelPipeline(OpPassManager &pm,
                                    const KernelPipelineOptions &options) {
  // The target first: every pass after it reads `kf.target`.
  addAttachTarget(pm, options);
  buildGraphRewrites(pm, options);
  KFFusePassOptions fuse;
  fuse.mode = options.fused ? "fused" : "unfused";
  pm.addPass(createKFFusePass(fuse));
  // kf-rematerialize's copies of a value whose users all joined one kernel
  // are one value again there.
  pm.addPass(createCSEPass());
  // Before kf-pad and kf-split-k, which then see the matmul kernel that
  // also sums its result's columns.
  if (options.fused)
    pm.addPass(createKFFuseColumnSumsPass());
  if (options.pad)
    pm.addPass(createKFPadPass());
  if (options.splitK)
    pm.addPass(createKFSplitKPass());
  pm.addPass(createKFTilePass());
  KFPromoteSharedPassOptions promote;
  promote.gradTma = options.attentionGradTma;
  pm.addPass(createKFPromoteSharedPass(promote));
  // After the templates are chosen: which of them take a size at run time.
  pm.addPass(createKFRuntimeExtentsPass());
}

void kfuse::kf::buildGraphRewrites(OpPassManager &pm,
                                   const KernelPipelineOptions &options) {
  // The unfused baseline materialises the scores of attention too.
  if (!options.fused)
    return;
  pm.addPass(createKFOnlineSoftmaxPass());
  // Before kf-rematerialize and kf-fuse, which place dq's cast from f32
  // with what reads it.
  pm.addPass(createKFAtomicDqPass());
  // After the attentions exist: their shared masks are computed per score
  // in each, never written as B x H x Sq x Sk elements, and what their q
  // prologues share (RoPE's tables broadcast to the heads) once a block;
  // a backward's statistics and casts in each kernel that reads them.
  pm.addPass(createKFRematerializePass());
  // Before fusion, so that the chunks' combination joins the kernel of
  // what reads the attention's result.
  if (options.splitKeys)
    pm.addPass(createKFSplitKeysPass());
  // Before fusion, so that each of the two reductions gathers its own
  // producers and consumers.
  pm.addPass(createKFSplitReductionPass());
  // After kf-split-reduction, which would take the sums this adds (not
  // broadcast back over their rows themselves) out of their row kernel.
  pm.addPass(createKFSeparateRowSumsPass());
}

void kfuse::kf::buildGPUPipeline(OpPassManager &pm) {
  pm.addPass(createKFLowerToGPUPass());
}

void kfuse::kf::buildLLVMLoweringPipeline(OpPassManager &pm,
                                          unsigned indexBits) {
  OpPassManager &gpu = pm.nest<gpu::GPUModuleOp>();
  // nvgpu's cp.async and ldmatrix (tensor-core matmuls) first: their
  // lowering reads memref descriptors that the GPU-to-NVVM step erases.
  KFLowerNVGPUPassOptions nvgpu;
  nvgpu.indexBitwidth = indexBits;
  gpu.addPass(createKFLowerNVGPUPass(nvgpu));
  gpu.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = indexBits;
  nvvm.useBarePtrCallConv = true;
  gpu.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  gpu.addPass(createKFGridConstantsPass());
  // NVVM ops written as PTX (wgmma) become inline assembly.
  gpu.addPass(createConvertNVVMToLLVMPass());
  gpu.addPass(createReconcileUnrealizedCastsPass());
  gpu.addPass(createCanonicalizerPass());
}

void kfuse::kf::registerKFusePasses() {
  registerKFTransformsPasses();
  registerKFCodegenPasses();
  PassPipelineRegistration<>(
      "kf-graph-pipeline", "kfuse's graph-level stages, without shapes",
      [](OpPassManager &pm) { buildGraphPipeline(pm, {}); });
}
