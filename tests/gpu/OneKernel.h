//===- OneKernel.h - a graph fused into one kernel, checked ---------------===//
//
// What several GPU tests assert of a graph: fused and unfused match the
// reference evaluator, and the fused compile is one kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_TESTS_GPU_ONEKERNEL_H
#define KFUSE_TESTS_GPU_ONEKERNEL_H

#include "kfuse/Testing.h"

#include <gtest/gtest.h>

namespace kfuse::gputest {

/// checkFusion of `g` (untimed): values match, one fused kernel.
inline void expectOneMatchingKernel(Graph &g,
                                    kfuse::testing::CheckOptions options) {
  options.time = false;
  Expected<kfuse::testing::FusionReport> report =
      kfuse::testing::checkFusion(g, options);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_TRUE(report->valuesMatch) << report->summary();
  EXPECT_EQ(report->fusedKernels, 1u) << report->summary();
}

} // namespace kfuse::gputest

#endif // KFUSE_TESTS_GPU_ONEKERNEL_H
