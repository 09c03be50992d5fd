//===- RewriteOnly.cpp - a greedy rewrite that changes nothing else -------===//

#include "transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

LogicalResult kfuse::kf::applyOnlyPatterns(Operation *op,
                                           RewritePatternSet &&patterns) {
  // No folding, no constant CSE, no region simplification: the ops the
  // patterns leave dead go, and the graph is otherwise the one the user
  // wrote (and later passes' decisions see it so).
  GreedyRewriteConfig config;
  config.enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(op, std::move(patterns), config);
}
