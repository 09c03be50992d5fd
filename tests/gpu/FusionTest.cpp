//===- FusionTest.cpp - every benchmark workload through checkFusion ------===//
//
// The memory-bound workloads of kfuse-bench, at test size: fused and
// unfused against the reference evaluator, and fused in no more kernels.
// No test here asserts speed (a sanitizer or a busy GPU would fail it):
// kfuse-bench times fused against unfused. Skips, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "../../bench/WorkloadGraphs.h"
#include "OneKernel.h"
#include "kfuse/Testing.h"

#include <gtest/gtest.h>

using namespace kfuse;

namespace {

class Workloads : public ::testing::TestWithParam<bench::Workload> {};

TEST_P(Workloads, FusedMatchesUnfused) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  Graph g(GetParam().name);
  GetParam().build(g);
  kfuse::testing::CheckOptions options;
  options.reductionLength = 1024;
  options.time = false;
  Expected<kfuse::testing::FusionReport> report =
      kfuse::testing::checkFusion(g, options);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_TRUE(report->valuesMatch) << report->summary();
  EXPECT_LE(report->fusedKernels, report->unfusedKernels) << report->summary();
}

INSTANTIATE_TEST_SUITE_P(
    MemoryBound, Workloads,
    ::testing::ValuesIn(bench::memoryBoundWorkloads(/*small=*/true)),
    [](const ::testing::TestParamInfo<bench::Workload> &info) {
      return info.param.name;
    });

/// Pointwise kernels large enough for the large-kernel layouts: two
/// vectors a thread step (16-bit data), and loops over several steps with a
/// ragged last one where the grid is a wave of resident blocks.
void checkLargePointwise(Graph &g) {
  gputest::expectOneMatchingKernel(g, {});
}

TEST(LargePointwise, F32WithBroadcastsAndTranscendentals) {
  if (Expected<DeviceInfo> gpu = device(); !gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  Graph g("large_f32");
  Tensor x = g.input("x", DType::f32, {1027, 4096});
  Tensor row = g.input("row", DType::f32, {4096});
  Tensor col = g.input("col", DType::f32, {1027, 1});
  g.output("y", sin(x) * cos(x) + tanh(x * row + col));
  checkLargePointwise(g);
}

TEST(LargePointwise, Bf16TwoOutputs) {
  if (Expected<DeviceInfo> gpu = device(); !gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  Graph g("large_bf16");
  const int64_t n = (int64_t(1) << 22) + 3 * 4096; // whole 2-vector chunks
  Tensor x = g.input("x", DType::bf16, {n});
  Tensor w = g.input("w", DType::bf16, {n});
  g.output("gelu", gelu(x * w + 1.0));
  g.output("scaled", x * 2.0 - w);
  checkLargePointwise(g);
}

/// checkFusion with allowTF32: both modes compile with TF32 tensor cores
/// and are held to the TF32 tolerance, which the exact one would fail.
TEST(CheckFusion, Tf32LinearWithEpilogue) {
  if (Expected<DeviceInfo> gpu = device(); !gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  Graph g("linear_tf32");
  MatmulOptions transposed;
  transposed.transposeB = true;
  Tensor y = matmul(g.input("x", DType::f32, {512, 1024}),
                    g.input("w", DType::f32, {768, 1024}), transposed);
  g.output("y",
           silu(y + broadcastTo(g.input("b", DType::f32, {768}), {512, 768})));
  kfuse::testing::CheckOptions options;
  options.allowTF32 = true;
  options.reductionLength = 1024;
  options.time = false;
  Expected<kfuse::testing::FusionReport> report =
      kfuse::testing::checkFusion(g, options);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_TRUE(report->valuesMatch) << report->summary();
  ASSERT_EQ(report->outputs.size(), 1u);
  // TF32 is about 1e-3 off: the exact f32 tolerance would not hold.
  EXPECT_GT(report->outputs[0].fusedError,
            kfuse::testing::tolerance(DType::f32, 1024))
      << report->summary();
  // (12 output tiles: kf-split-k makes the fused matmul two kernels.)
  EXPECT_LT(report->fusedKernels, report->unfusedKernels) << report->summary();
}

TEST(CheckFusion, ReportsSymbolicShapesItCannotGuess) {
  Graph g("sym");
  g.output("y", exp(g.input("x", DType::f32, {"N"})));
  auto report = kfuse::testing::checkFusion(g);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().message(),
            "checkFusion: input 'x' has symbolic dims: give the shapes");
}

} // namespace

namespace kfuse::bench {
void PrintTo(const Workload &w, std::ostream *os) { *os << w.name; }
} // namespace kfuse::bench
