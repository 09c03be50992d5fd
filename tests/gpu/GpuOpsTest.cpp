//===- GpuOpsTest.cpp - every op on the GPU against the evaluator ---------===//
//
// Each op case runs fused and unfused on fresh random inputs, with outputs
// poisoned (NaN bytes) before the run, and is compared with the float64
// reference evaluator by relative error; NaN never passes unless the
// reference has NaN in the same place. Skips, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "../common/GpuTest.h"
#include "../common/OpCases.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>

#include <random>

using namespace kfuse;

namespace {

uint64_t freshSeed() {
  static std::random_device device;
  return (uint64_t(device()) << 32) | device();
}

std::vector<HostTensor> randomInputs(const Graph &g,
                                     const std::vector<std::vector<int64_t>> &shapes,
                                     uint64_t seed) {
  std::vector<HostTensor> inputs;
  std::vector<TensorInfo> infos = g.inputs();
  for (size_t i = 0; i < infos.size(); ++i)
    inputs.push_back(HostTensor::random(infos[i].dtype, shapes[i], seed + i));
  return inputs;
}

void expectMatches(const Graph &g, const std::vector<HostTensor> &actual,
                   const std::vector<HostTensor> &expected,
                   const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size());
  std::vector<TensorInfo> outputs = g.outputs();
  for (size_t i = 0; i < actual.size(); ++i) {
    double error = relativeError(actual[i], expected[i]);
    double tol = kfuse::testing::outputTolerance(g, outputs[i], 1024);
    EXPECT_LE(error, tol) << what << " output '" << outputs[i].name
                          << "' (" << dtypeName(outputs[i].dtype)
                          << "): relative error " << error;
  }
}

/// A compile of an op case to run: what to call it, its options, and what
/// to check in the executable before it runs.
struct Variant {
  std::string name;
  CompileOptions options;
  std::function<void(Executable &)> inspect = {};
};

/// Op case `c` on fresh random inputs, compiled each way of `variants`,
/// against the evaluator.
void expectCaseMatches(const kfuse::testing::OpCase &c,
                       const std::vector<Variant> &variants) {
  Graph g(c.name);
  c.build(g);
  ASSERT_TRUE(g.status()) << g.status().message();
  uint64_t seed = freshSeed();
  std::vector<HostTensor> inputs = randomInputs(g, c.shapes, seed);
  Expected<std::vector<HostTensor>> reference = evaluate(g, inputs);
  ASSERT_TRUE(reference) << reference.error().message();
  for (const Variant &v : variants) {
    Expected<Executable> exe = kfuse::testing::compileUncached(g, v.options);
    ASSERT_TRUE(exe) << exe.error().message();
    if (v.inspect)
      v.inspect(*exe);
    Expected<std::vector<HostTensor>> out = exe->runOnHost(inputs);
    ASSERT_TRUE(out) << out.error().message();
    expectMatches(g, *out, *reference,
                  v.name + " (seed " + std::to_string(seed) + ")");
  }
}

class GpuOps : public ::testing::TestWithParam<kfuse::testing::OpCase> {};

TEST_P(GpuOps, MatchEvaluatorFusedAndUnfused) {
  SKIP_WITHOUT_GPU();
  CompileOptions fused, unfused;
  unfused.fusion = Fusion::Unfused;
  expectCaseMatches(GetParam(), {{"fused", fused}, {"unfused", unfused}});
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, GpuOps, ::testing::ValuesIn(kfuse::testing::allOpCases()),
    [](const ::testing::TestParamInfo<kfuse::testing::OpCase> &info) {
      return info.param.name;
    });

/// Rows too long for a block's registers, compiled for a chip without
/// thread block clusters (sm_80's PTX, which the driver compiles for this
/// GPU): their first pass stages them in shared memory, the template that
/// Hopper's split over clusters (cluster_rows_* above) replaced there.
TEST(Gpu, LongRowsStagedWithoutClusters) {
  SKIP_WITHOUT_GPU();
  CompileOptions sm80;
  sm80.arch = "sm_80";
  auto staged = [](Executable &exe) {
    Expected<std::string> fused = exe.dump(Stage::Fused);
    ASSERT_TRUE(fused) << fused.error().message();
    EXPECT_NE(fused->find("inShared = true"), std::string::npos) << *fused;
  };
  for (const kfuse::testing::OpCase &c : kfuse::testing::allOpCases())
    if (c.name == "cluster_rows_softmax_bf16")
      expectCaseMatches(c, {{"staged for sm_80", sm80, staged}});
}

TEST(Gpu, SizesOneAndSeven) {
  SKIP_WITHOUT_GPU();
  for (int64_t n : {1, 7}) {
    Graph g("small");
    Tensor x = g.input("x", DType::f32, {n});
    Tensor s = g.input("s", DType::f32, {1});
    g.output("y", softmax(x) + reduceSum(x * s, {0}, true));
    Expected<Executable> exe = Compiler().compile(g);
    ASSERT_TRUE(exe) << exe.error().message();
    std::vector<HostTensor> in = {HostTensor::random(DType::f32, {n}, freshSeed()),
                                  HostTensor::random(DType::f32, {1}, freshSeed())};
    auto out = exe->runOnHost(in);
    ASSERT_TRUE(out) << out.error().message();
    auto ref = evaluate(g, in);
    ASSERT_TRUE(ref);
    EXPECT_LE(relativeError((*out)[0], (*ref)[0]), 1e-5) << n;
  }
}

/// `g` run on `inputs` on the GPU (`gpu`) and by the evaluator
/// (`reference`); false, the failure recorded, where either fails.
bool runAndEvaluate(Graph &g, const std::vector<HostTensor> &inputs,
                    std::vector<HostTensor> &gpu,
                    std::vector<HostTensor> &reference) {
  Expected<Executable> exe = Compiler().compile(g);
  if (!exe) {
    ADD_FAILURE() << exe.error().message();
    return false;
  }
  auto out = exe->runOnHost(inputs);
  auto ref = evaluate(g, inputs);
  if (!out || !ref) {
    ADD_FAILURE() << (out ? ref.error().message() : out.error().message());
    return false;
  }
  gpu = std::move(*out);
  reference = std::move(*ref);
  return true;
}

/// Runs the one-input f32 graph `g` on `xs` and checks every output
/// element against the evaluator: equal, or |got - want| <= rel |want| +
/// `flushed` (results the GPU may flush to zero), NaN where it is NaN.
void expectElementwiseClose(Graph &g, const std::vector<float> &xs, double rel,
                            double flushed, DType dtype = DType::f32) {
  const int64_t n = xs.size();
  HostTensor in(dtype, {n});
  for (int64_t i = 0; i < n; ++i)
    in.set(i, xs[i]);
  std::vector<HostTensor> out, ref;
  ASSERT_TRUE(runAndEvaluate(g, {in}, out, ref));
  std::vector<TensorInfo> outputs = g.outputs();
  for (size_t o = 0; o < outputs.size(); ++o) {
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      double got = out[o].get(i), want = ref[o].get(i);
      bool ok = std::isnan(want)
                    ? std::isnan(got)
                    : got == want || std::fabs(got - want) <=
                                         rel * std::fabs(want) + flushed;
      if (!ok && wrong++ < 5)
        ADD_FAILURE() << outputs[o].name << "(" << in.get(i) << ") = " << got
                      << ", want " << want;
    }
    EXPECT_EQ(wrong, 0) << outputs[o].name;
  }
}

/// Special values every range test includes.
std::vector<float> specialValues() {
  return {0.0f,   -0.0f,   1e-30f,   -1e-30f,   1e6f,
          -3e20f, 3.4e38f, INFINITY, -INFINITY, NAN};
}

/// f32 sine and cosine over the whole range, element by element: small and
/// large arguments (the fast reduction, up to 105615), values next to
/// multiples of pi/2 (where the reduction cancels), huge ones (libdevice's
/// path), signed zeros, infinities and NaN.
TEST(Gpu, SineAndCosineAcrossTheRange) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(freshSeed());
  std::vector<float> xs = specialValues();
  for (float edge : {105614.99f, 105615.0f, -105616.0f})
    xs.push_back(edge);
  std::uniform_real_distribution<double> wide(-106000, 106000), narrow(-4, 4);
  std::uniform_int_distribution<int> quarter(-60000, 60000);
  while (xs.size() < 30000) {
    xs.push_back(float(wide(rng)));
    xs.push_back(float(narrow(rng)));
    xs.push_back(float(quarter(rng) * M_PI_2));
  }
  Graph g("sincos");
  Tensor x = g.input("x", DType::f32, {int64_t(xs.size())});
  g.output("sin", sin(x));
  g.output("cos", cos(x));
  expectElementwiseClose(g, xs, 5e-7, 1e-37);
}

/// Sigmoid and SiLU from -100 to 100, where 2^t overflows or flushes.
/// Sigmoids below 2^-126 flush to zero (ex2/rcp .ftz, as in compiled
/// PyTorch): SiLU then loses up to 88 x 2^-126.
TEST(Gpu, SigmoidAndSiluAcrossTheRange) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(freshSeed());
  std::vector<float> xs = specialValues();
  for (float edge : {88.0f, -88.0f, 88.5f, -88.5f, 87.9f, -87.9f})
    xs.push_back(edge);
  std::uniform_real_distribution<double> wide(-100, 100), narrow(-2, 2);
  while (xs.size() < 20000) {
    xs.push_back(float(wide(rng)));
    xs.push_back(float(narrow(rng)));
  }
  Graph g("sigmoid");
  Tensor x = g.input("x", DType::f32, {int64_t(xs.size())});
  g.output("sigmoid", sigmoid(x));
  g.output("silu", silu(x));
  expectElementwiseClose(g, xs, 1e-6, 88 * std::ldexp(1.0, -126));
}

/// logsumexp of rows whose max is infinite: -inf for a row of -inf, +inf
/// with a +inf (not the NaN of inf - inf at the max), NaN with a NaN; the
/// row kernel against the evaluator.
TEST(Gpu, LogsumexpOfInfiniteRows) {
  SKIP_WITHOUT_GPU();
  const float inf = INFINITY;
  std::vector<std::array<float, 4>> rows = {
      {-inf, -inf, -inf, -inf}, {inf, 1, 2, 3},    {1, 2, 3, 4},
      {-inf, 0, 1, 2},          {inf, inf, -inf, 0}, {NAN, 1, 2, 3},
      {-3e38f, -3e38f, 0, 1}};
  Graph g("logsumexp_infinite_rows");
  Tensor x = g.input("x", DType::f32, {int64_t(rows.size()), 4});
  g.output("lse", logsumexp(x, {1}));
  HostTensor in(DType::f32, {int64_t(rows.size()), 4});
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t c = 0; c < 4; ++c)
      in.set(int64_t(r) * 4 + c, rows[r][c]);
  std::vector<HostTensor> out, ref;
  ASSERT_TRUE(runAndEvaluate(g, {in}, out, ref));
  EXPECT_EQ(ref[0].get(0), -INFINITY);
  EXPECT_EQ(ref[0].get(1), INFINITY);
  for (size_t r = 0; r < rows.size(); ++r) {
    double got = out[0].get(r), want = ref[0].get(r);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << "row " << r;
    else if (std::isinf(want))
      EXPECT_EQ(got, want) << "row " << r;
    else
      EXPECT_NEAR(got, want, 1e-6 * std::fabs(want)) << "row " << r;
  }
}
/// bf16 GELU from -8 to 8 (its Phi is the 16-bit approximation, 2^Q):
/// within bf16 rounding, plus a few 1e-7 x of absolute slack (PyTorch's
/// formula cancels 1 + erf there), and the reference's NaN at -inf.
TEST(Gpu, Bf16GeluAcrossTheRange) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(freshSeed());
  std::vector<float> xs = {0.0f,   -0.0f,    1e-6f,     -1e-6f, 3e38f,
                           -3e38f, INFINITY, -INFINITY, NAN};
  std::uniform_real_distribution<double> wide(-8, 8), narrow(-0.5, 0.5);
  while (xs.size() < 20000) {
    xs.push_back(float(wide(rng)));
    xs.push_back(float(narrow(rng)));
  }
  Graph g("gelu_bf16");
  g.output("gelu", gelu(g.input("x", DType::bf16, {int64_t(xs.size())})));
  expectElementwiseClose(g, xs, std::ldexp(1.0, -7), 2e-6, DType::bf16);
}

/// e^x in kernels whose results are 16-bit (one MUFU.EX2 of x log2 e):
/// within one rounding of the result across the range, from subnormal
/// results to overflow, infinities and NaN.
TEST(Gpu, ExpForHalfResultsAcrossTheRange) {
  SKIP_WITHOUT_GPU();
  struct Range {
    DType dtype;
    float low, high; ///< past the subnormal results and the overflow
    double rel, flushed;
  };
  for (Range r : {Range{DType::bf16, -95.0f, 90.0f, std::ldexp(1.0, -7),
                        std::ldexp(1.0, -132)},
                  Range{DType::f16, -18.0f, 12.0f, std::ldexp(1.0, -10),
                        std::ldexp(1.0, -24)}}) {
    SCOPED_TRACE(dtypeName(r.dtype));
    std::mt19937_64 rng(freshSeed());
    std::vector<float> xs = {0.0f, -0.0f, 1e-30f, INFINITY, -INFINITY, NAN,
                             r.low, r.high};
    std::uniform_real_distribution<double> wide(r.low, r.high),
        narrow(-2, 2);
    while (xs.size() < 20000) {
      xs.push_back(float(wide(rng)));
      xs.push_back(float(narrow(rng)));
    }
    Graph g("exp_half");
    g.output("exp", exp(g.input("x", r.dtype, {int64_t(xs.size())})));
    expectElementwiseClose(g, xs, r.rel, r.flushed, r.dtype);
  }
}

/// 64-bit indexing: an i1 tensor of more than 2^31 elements.
TEST(Gpu, MoreThan2To31Elements) {
  SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t(1) << 31) + 13;
  Graph g("big");
  Tensor x = g.input("x", DType::i1, {n});
  g.output("y", compare(Compare::eq, x, cast(g.constant(0, DType::i1), DType::i1)));
  Expected<Executable> exe = Compiler().compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  std::vector<unsigned char> host(n);
  for (int64_t i = 0; i < n; ++i)
    host[i] = (i % 3 == 0) || (i % 7 == 5);
  auto in = DeviceBuffer::allocate(n), out = DeviceBuffer::allocate(n);
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(in->copyFromHost(host.data(), n));
  ASSERT_TRUE(out->fill(0xFF));
  Status s = exe->run({{in->data(), DType::i1, {n}}},
                      {{out->data(), DType::i1, {n}}});
  ASSERT_TRUE(s) << s.message();
  ASSERT_TRUE(synchronize());
  std::vector<unsigned char> result(n);
  ASSERT_TRUE(out->copyToHost(result.data(), n));
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    wrong += result[i] != (host[i] ? 0 : 1);
  EXPECT_EQ(wrong, 0);
}

TEST(Gpu, SymbolicShapesCompileOncePerShape) {
  SKIP_WITHOUT_GPU();
  Graph g("per_shape");
  Tensor x = g.input("x", DType::bf16, {"M", "N"});
  g.output("y", silu(x) * 2.0);
  CompileOptions options;
  options.diskCache = false;
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe);
  uint64_t before = cacheStats().compiles;
  for (auto shape : {std::vector<int64_t>{33, 65}, {128, 3}, {33, 65},
                     {128, 3}, {1, 1}}) {
    std::vector<HostTensor> in = {
        HostTensor::random(DType::bf16, shape, freshSeed())};
    auto out = exe->runOnHost(in);
    ASSERT_TRUE(out) << out.error().message();
    auto ref = evaluate(g, in);
    ASSERT_TRUE(ref);
    EXPECT_LE(relativeError((*out)[0], (*ref)[0]), 1e-2);
  }
  EXPECT_EQ(cacheStats().compiles - before, 3u);
}

TEST(Gpu, KernelReportsCarryPtxasFigures) {
  SKIP_WITHOUT_GPU();
  Graph g("report");
  g.output("y", exp(g.input("x", DType::f32, {1024})));
  CompileOptions options;
  options.diskCache = false;
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe);
  ASSERT_TRUE(exe->runOnHost({HostTensor::random(DType::f32, {1024}, 3)}));
  auto kernels = exe->kernels();
  ASSERT_TRUE(kernels);
  ASSERT_EQ(kernels->size(), 1u);
  EXPECT_GT((*kernels)[0].registers, 0);
  EXPECT_EQ((*kernels)[0].localBytes, 0); // no spills, no stack
}

} // namespace
