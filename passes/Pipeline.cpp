//===- Pipeline.cpp - the only place the kfuse pass order lives -----------===//

#include "passes/Pipeline.h"
#include "passes/Passes.h"

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

void kfuse::kf::registerKFusePasses() {
  registerKFPasses();
  PassPipelineRegistration<>(
      "kf-graph-pipeline", "kfuse's graph-level stages, without shapes",
      [](OpPassManager &pm) { buildGraphPipeline(pm, {}); });
}
