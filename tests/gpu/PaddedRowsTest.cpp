//===- PaddedRowsTest.cpp - kf-pad's padded intermediates on the GPU ------===//
//
// Graphs whose buffers between kernels have rows that are not a whole
// number of 16-byte vectors, so that kf-pad pads them: the producers write
// whole padded rows (zeros past the end), the consumers read them by row
// and column, and a matmul that takes one as an operand uses tensor
// cores. Temporaries start poisoned with NaN, so a pad that is read but
// was not written as zeros shows up in the result. Each graph is checked
// against the float64 evaluator with kf-pad on and off, and its fused dump
// must show the padding (so a silent change of decision fails). Skips,
// saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "../common/OpCases.h"
#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

using namespace kfuse;

namespace {

struct PaddedCase {
  std::string name;
  std::function<void(Graph &)> build;
  int64_t reductionLength;
  /// Text the fused dump must hold with kf-pad on.
  std::vector<std::string> expected;
};

void PrintTo(const PaddedCase &c, std::ostream *os) { *os << c.name; }

Tensor layernorm(Tensor x) {
  Tensor xf = cast(x, DType::f32);
  Tensor centered = xf - reduceMean(xf, {-1}, true);
  Tensor var = reduceMean(centered * centered, {-1}, true);
  return cast(centered * rsqrt(var + 1e-5), x.dtype());
}

std::vector<PaddedCase> cases() {
  std::vector<PaddedCase> v;
  // f32 logits of 1001 columns (padded to 1004) into a softmax.
  v.push_back({"logits_softmax",
               [](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {300, 64});
                 Tensor w = g.input("w", DType::bf16, {1001, 64});
                 MatmulOptions o;
                 o.transposeB = true;
                 o.resultType = DType::f32;
                 g.output("p", softmax(matmul(x, w, o)));
               },
               64,
               {"padded_rows = array<i64: 1004>"}});
  // A layernorm over rows of 1001 feeding a matmul along them: padded to
  // 1008, the matmul takes tensor cores, and the K tail reads the zeros.
  v.push_back({"layernorm_matmul",
               [](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {257, 1001});
                 Tensor w = g.input("w", DType::bf16, {1001, 96});
                 g.output("y", matmul(layernorm(x), w));
               },
               1001,
               {"padded_rows = array<i64: 1008>", "#kf.mma_tiling"}});
  // Batched scores of 1001 keys: f32 scores padded to 1004, bf16
  // probabilities to 1008, both as batched operands, the second
  // transposed (its contiguous dim is M).
  v.push_back(
      {"batched_scores_transposed",
       [](Graph &g) {
         Tensor q = g.input("q", DType::bf16, {2, 1001, 64});
         Tensor k = g.input("k", DType::bf16, {2, 1001, 64});
         Tensor u = g.input("u", DType::bf16, {2, 1001, 48});
         MatmulOptions scores;
         scores.transposeB = true;
         scores.resultType = DType::f32;
         Tensor p = cast(softmax(matmul(q, k, scores) * 0.125), DType::bf16);
         MatmulOptions transposed;
         transposed.transposeA = true;
         g.output("o", matmul(p, u, transposed));
       },
       1001,
       {"padded_rows = array<i64: 1004>", "padded_rows = array<i64: 1008>"}});
  return v;
}

class PaddedRows : public ::testing::TestWithParam<PaddedCase> {};

TEST_P(PaddedRows, MatchEvaluatorWithAndWithoutPadding) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  const PaddedCase &c = GetParam();
  Graph g(c.name);
  c.build(g);
  ASSERT_TRUE(g.status()) << g.status().message();
  uint64_t seed = kfuse::testing::freshSeed();
  std::vector<HostTensor> inputs = kfuse::testing::randomInputs(g, seed);
  Expected<std::vector<HostTensor>> reference = evaluate(g, inputs);
  ASSERT_TRUE(reference) << reference.error().message();
  for (bool pad : {true, false}) {
    CompileOptions options;
    options.diskCache = false;
    options.padRows = pad;
    Expected<Executable> exe = Compiler(options).compile(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> fused = exe->dump(Stage::Fused);
    ASSERT_TRUE(fused) << fused.error().message();
    for (const std::string &text : c.expected)
      EXPECT_EQ(fused->find(text) != std::string::npos, pad)
          << "kf-pad " << (pad ? "on" : "off") << ", looking for " << text
          << ":\n"
          << *fused;
    Expected<std::vector<HostTensor>> out = exe->runOnHost(inputs);
    ASSERT_TRUE(out) << out.error().message();
    double error = relativeError((*out)[0], (*reference)[0]);
    double tol =
        kfuse::testing::tolerance((*out)[0].dtype(), c.reductionLength);
    EXPECT_LE(error, tol) << "kf-pad " << (pad ? "on" : "off")
                          << ", relative error (seed " << seed << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Graphs, PaddedRows, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

} // namespace
