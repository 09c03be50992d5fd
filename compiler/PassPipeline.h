//===- PassPipeline.h - the kfuse pass order --------------------*- C++ -*-===//

#ifndef KFUSE_COMPILER_PASSPIPELINE_H
#define KFUSE_COMPILER_PASSPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include <string>
#include <vector>

namespace kfuse::kf {

struct GraphPipelineOptions {
  /// One shape per function argument ("128x64"); empty keeps symbols.
  std::vector<std::string> shapes;
  /// Explicit symbol bindings ("M=128").
  std::vector<std::string> bindings;
};

/// Graph-level stages: kf-specialize (when shapes or bindings are given),
/// then canonicalization and CSE.
void buildGraphPipeline(mlir::OpPassManager &pm,
                        const GraphPipelineOptions &options);

/// What buildKernelPipeline runs, and the target it records on the module
/// (`kf.target`, read by every pass after it).
struct KernelPipelineOptions {
  bool fused = true;
  /// The PTX target.
  std::string chip = "sm_90";
  int64_t multiprocessors = 132;
  /// Every buffer starts on a 16-byte boundary (the runtime checks).
  bool aligned = true;
  /// The target has wgmma (sm_90: kfuse then emits for sm_90a).
  bool wgmma = false;
  /// kf-pad pads the rows of intermediate buffers.
  bool pad = true;
  /// f32 matmuls may take TF32 tensor cores (kf-pad, kf-tile).
  bool allowTF32 = false;
  /// Run kf-split-k.
  bool splitK = true;
  /// Run kf-split-keys (fused compiles).
  bool splitKeys = true;
  /// Else run kf-atomic-dq (fused compiles).
  bool deterministic = true;
  /// kf-promote-shared's `grad-tma`.
  bool attentionGradTma = true;
};

/// Partitioning and launch shapes: kf-attach-target, kf-online-softmax
/// (fused), kf-fuse, kf-pad, kf-split-k, kf-tile, then kf-promote-shared.
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const KernelPipelineOptions &options);

/// kf-attach-target with the options' target: the first pass of
/// buildKernelPipeline, whose passes read the target from the module.
void addAttachTarget(mlir::OpPassManager &pm,
                     const KernelPipelineOptions &options);

/// The graph rewrites that come before partitioning (the first stage of
/// buildKernelPipeline), in fused compiles only: kf-online-softmax,
/// kf-atomic-dq (a rewrite where not `deterministic`), kf-rematerialize, kf-split-keys
/// (with `splitKeys`), kf-split-reduction.
void buildGraphRewrites(mlir::OpPassManager &pm,
                        const KernelPipelineOptions &options);

/// kf-lower-to-gpu: one gpu.func per kernel.
void buildGPUPipeline(mlir::OpPassManager &pm);

/// The gpu.module to the LLVM and NVVM dialects: scf to cf, gpu to nvvm
/// (indices of `indexBits`, one bare pointer per memref), then cleanup.
void buildLLVMLoweringPipeline(mlir::OpPassManager &pm, unsigned indexBits);

/// Registers every kf pass and the `kf-graph-pipeline` pipeline with MLIR's
/// command-line registry (kfuse-opt).
void registerKFusePasses();

} // namespace kfuse::kf

#endif // KFUSE_COMPILER_PASSPIPELINE_H
