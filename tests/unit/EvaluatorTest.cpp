//===- EvaluatorTest.cpp - the reference evaluator ------------------------===//
//
// Hand-checked values, and identities that hold for any input (softmax rows
// sum to one, layernorm gives mean 0 and variance 1).
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kfuse;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

HostTensor tensorOf(DType dtype, std::vector<int64_t> shape,
                    std::vector<double> values) {
  HostTensor t(dtype, std::move(shape));
  EXPECT_EQ(values.size(), t.numElements());
  for (size_t i = 0; i < values.size(); ++i)
    t.set(i, values[i]);
  return t;
}

std::vector<double> valuesOf(const HostTensor &t) {
  std::vector<double> out;
  for (size_t i = 0; i < t.numElements(); ++i)
    out.push_back(t.get(i));
  return out;
}

/// Evaluates a graph with one output.
HostTensor run(const Graph &g, const std::vector<HostTensor> &inputs) {
  Expected<std::vector<HostTensor>> out = evaluate(g, inputs);
  EXPECT_TRUE(out) << (out ? "" : out.error().message());
  if (!out || out->empty())
    return HostTensor();
  return (*out)[0];
}

TEST(Evaluator, ElementwiseAndBroadcast) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {2, 3});
  Tensor b = g.input("b", DType::f32, {3});
  g.output("y", (x + b) * 2.0 - 1.0);
  HostTensor y = run(g, {tensorOf(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                         tensorOf(DType::f32, {3}, {10, 20, 30})});
  EXPECT_EQ(valuesOf(y),
            (std::vector<double>{21, 43, 65, 27, 49, 71}));
}

TEST(Evaluator, Matmul) {
  Graph g;
  Tensor a = g.input("a", DType::f32, {2, 3});
  Tensor b = g.input("b", DType::f32, {2, 3});
  MatmulOptions o;
  o.transposeB = true;
  g.output("c", matmul(a, b, o));
  HostTensor c = run(g, {tensorOf(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                         tensorOf(DType::f32, {2, 3}, {1, 0, 1, 0, 1, 0})});
  // [1 2 3; 4 5 6] x [1 0 1; 0 1 0]^T = [4 2; 10 5]
  EXPECT_EQ(valuesOf(c), (std::vector<double>{4, 2, 10, 5}));
}

/// kf-split-k's partial products (kernel IR): partial s sums k in
/// [2 s, 2 s + 2), the last over what remains.
TEST(Evaluator, SplitKPartials) {
  Expected<Graph> g = Graph::fromMLIR(R"(
func.func @partials(%a: tensor<1x5xf32>, %b: tensor<5x2xf32>) -> tensor<3x1x2xf32> {
  %c = kf.matmul %a, %b {k_chunk = 2 : i64} : tensor<1x5xf32>, tensor<5x2xf32> -> tensor<3x1x2xf32>
  return %c : tensor<3x1x2xf32>
})");
  ASSERT_TRUE(g) << g.error().message();
  HostTensor c = run(
      *g, {tensorOf(DType::f32, {1, 5}, {1, 2, 3, 4, 5}),
           tensorOf(DType::f32, {5, 2}, {1, 10, 1, 10, 1, 10, 1, 10, 1, 10})});
  EXPECT_EQ(valuesOf(c), (std::vector<double>{3, 30, 7, 70, 5, 50}));
}

TEST(Evaluator, BatchedMatmulSharesRank2B) {
  Graph g;
  Tensor a = g.input("a", DType::f32, {2, 1, 2});
  Tensor b = g.input("b", DType::f32, {2, 1});
  g.output("c", matmul(a, b));
  HostTensor c = run(g, {tensorOf(DType::f32, {2, 1, 2}, {1, 2, 3, 4}),
                         tensorOf(DType::f32, {2, 1}, {10, 1})});
  EXPECT_EQ(valuesOf(c), (std::vector<double>{12, 34}));
}

TEST(Evaluator, ReductionsTransposeIota) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {2, 3});
  g.output("sum", reduceSum(x, {1}));
  g.output("max", reduceMax(x, {0}));
  g.output("mean", reduceMean(x));
  g.output("t", transpose(x, {1, 0}));
  g.output("iota", iota(g, {2, 3}, 1));
  auto out = evaluate(g, {tensorOf(DType::f32, {2, 3}, {1, -2, 3, 4, 5, -6})});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(valuesOf((*out)[0]), (std::vector<double>{2, 3}));
  EXPECT_EQ(valuesOf((*out)[1]), (std::vector<double>{4, 5, 3}));
  EXPECT_FLOAT_EQ((*out)[2].get(0), 5.0 / 6.0); // stored as f32
  EXPECT_EQ(valuesOf((*out)[3]), (std::vector<double>{1, 4, -2, 5, 3, -6}));
  EXPECT_EQ(valuesOf((*out)[4]), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ((*out)[2].shape(), std::vector<int64_t>{});
}

TEST(Evaluator, IntegerSemantics) {
  Graph g;
  Tensor a = g.input("a", DType::i32, {4});
  Tensor b = g.input("b", DType::i32, {4});
  g.output("div", a / b);
  g.output("mul", a * b);
  auto out = evaluate(g, {tensorOf(DType::i32, {4}, {7, -7, 5, 2147483647}),
                          tensorOf(DType::i32, {4}, {2, 2, 0, 2})});
  ASSERT_TRUE(out) << out.error().message();
  // Division truncates toward zero and x / 0 is 0; products wrap.
  EXPECT_EQ(valuesOf((*out)[0]), (std::vector<double>{3, -3, 0, 1073741823}));
  EXPECT_EQ(valuesOf((*out)[1]), (std::vector<double>{14, -14, 0, -2}));
}

TEST(Evaluator, CastsRoundAndSaturate) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {6});
  g.output("i", cast(x, DType::i32));
  g.output("bf", cast(x, DType::bf16));
  g.output("b", cast(x, DType::i1));
  auto out = evaluate(
      g, {tensorOf(DType::f32, {6}, {2.9, -2.9, 1e12, kNaN, 1.00390625, 0})});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(valuesOf((*out)[0]),
            (std::vector<double>{2, -2, 2147483647, 0, 1, 0}));
  std::vector<double> bf = valuesOf((*out)[1]);
  EXPECT_EQ(bf[4], 1.0); // 1 + 2^-8 is a bf16 tie: rounds to even
  EXPECT_TRUE(std::isnan(bf[3]));
  EXPECT_EQ(valuesOf((*out)[2]), (std::vector<double>{1, 1, 1, 1, 1, 0}));
}

TEST(Evaluator, CompareWithNaN) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {3});
  Tensor y = g.input("y", DType::f32, {3});
  g.output("lt", x < y);
  g.output("ne", compare(Compare::ne, x, y));
  g.output("max", maximum(x, y));
  auto out = evaluate(g, {tensorOf(DType::f32, {3}, {1, kNaN, 3}),
                          tensorOf(DType::f32, {3}, {2, 0, kNaN})});
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(valuesOf((*out)[0]), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(valuesOf((*out)[1]), (std::vector<double>{1, 1, 1}));
  std::vector<double> m = valuesOf((*out)[2]);
  EXPECT_EQ(m[0], 2);
  EXPECT_TRUE(std::isnan(m[1]) && std::isnan(m[2]));
}

TEST(Evaluator, GeluKnownValues) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {4});
  g.output("y", gelu(x));
  HostTensor y = run(g, {tensorOf(DType::f32, {4}, {0, 1, -1, 3})});
  // x * Phi(x), Phi the standard normal CDF.
  EXPECT_NEAR(y.get(0), 0.0, 1e-7);
  EXPECT_NEAR(y.get(1), 0.8413447460685429, 1e-6);
  EXPECT_NEAR(y.get(2), -0.15865525393145707, 1e-6);
  EXPECT_NEAR(y.get(3), 2.995950, 1e-6);
}

TEST(Evaluator, SoftmaxRowsSumToOne) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {"M", 37});
  g.output("y", softmax(x * 4.0));
  HostTensor y = run(g, {HostTensor::random(DType::f32, {9, 37}, 5)});
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{9, 37}));
  for (int64_t r = 0; r < 9; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 37; ++c) {
      EXPECT_GT(y.get(r * 37 + c), 0.0);
      sum += y.get(r * 37 + c);
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TEST(Evaluator, SoftmaxOfMaskedRowIsZero) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {2, 3});
  g.output("y", softmax(x, 1));
  HostTensor y = run(g, {tensorOf(DType::f32, {2, 3},
                                  {-kInf, -kInf, -kInf, 0, -kInf, 0})});
  EXPECT_EQ(valuesOf(y), (std::vector<double>{0, 0, 0, 0.5, 0, 0.5}));
}

TEST(Evaluator, LayerNormHasMeanZeroVarianceOne) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {"M", 256});
  Tensor centered = x - reduceMean(x, {1}, true);
  Tensor var = reduceMean(centered * centered, {1}, true);
  g.output("y", centered * rsqrt(var + 1e-12));
  HostTensor y = run(g, {HostTensor::random(DType::f32, {5, 256}, 17)});
  for (int64_t r = 0; r < 5; ++r) {
    double sum = 0, sumSq = 0;
    for (int64_t c = 0; c < 256; ++c) {
      sum += y.get(r * 256 + c);
      sumSq += y.get(r * 256 + c) * y.get(r * 256 + c);
    }
    EXPECT_NEAR(sum / 256, 0.0, 1e-6);
    EXPECT_NEAR(sumSq / 256, 1.0, 1e-5);
  }
}

/// attention(...) against the same math written from primitives.
TEST(Evaluator, AttentionMatchesPrimitives) {
  for (bool causal : {false, true}) {
    Graph g;
    Tensor q = g.input("q", DType::f32, {1, 4, 5, 8});
    Tensor k = g.input("k", DType::f32, {1, 2, 5, 8}); // grouped-query
    Tensor v = g.input("v", DType::f32, {1, 2, 5, 3});
    AttentionOptions o;
    o.causal = causal;
    g.output("fused", attention(q, k, v, o));
    // Primitives: repeat each kv head twice, then softmax(q k^T s) v.
    Tensor kr = reshape(broadcastTo(reshape(k, {1, 2, 1, 5, 8}), {1, 2, 2, 5, 8}),
                        {1, 4, 5, 8});
    Tensor vr = reshape(broadcastTo(reshape(v, {1, 2, 1, 5, 3}), {1, 2, 2, 5, 3}),
                        {1, 4, 5, 3});
    MatmulOptions tb;
    tb.transposeB = true;
    Tensor s = matmul(q, kr, tb) * (1.0 / std::sqrt(8.0));
    if (causal) {
      Tensor keep = iota(g, {1, 4, 5, 5}, 3) <= iota(g, {1, 4, 5, 5}, 2);
      s = where(keep, s, g.constant(-kInf, DType::f32));
    }
    g.output("composed", matmul(softmax(s), vr));
    ASSERT_TRUE(g.status()) << g.status().message();
    auto out = evaluate(g, {HostTensor::random(DType::f32, {1, 4, 5, 8}, 1),
                            HostTensor::random(DType::f32, {1, 2, 5, 8}, 2),
                            HostTensor::random(DType::f32, {1, 2, 5, 3}, 3)});
    ASSERT_TRUE(out) << out.error().message();
    EXPECT_LT(relativeError((*out)[0], (*out)[1]), 1e-6) << causal;
  }
}

TEST(Evaluator, AttentionFullyMaskedRowIsZero) {
  Graph g;
  Tensor q = g.input("q", DType::f32, {1, 1, 2, 4});
  AttentionOptions o;
  o.mask = g.input("m", DType::i1, {2, 2});
  g.output("o", attention(q, q, q, o));
  HostTensor q0 = HostTensor::random(DType::f32, {1, 1, 2, 4}, 9);
  HostTensor out =
      run(g, {q0, tensorOf(DType::i1, {2, 2}, {0, 0, 1, 0})});
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(out.get(c), 0.0);                     // row 0 sees nothing
    EXPECT_NEAR(out.get(4 + c), q0.get(c), 1e-6);   // row 1 sees key 0
  }
}

/// attentionWithLse's log-sum-exp against log(sum(exp(scores))) written
/// from primitives; a query row with no key to attend gives -inf.
TEST(Evaluator, AttentionLseMatchesPrimitives) {
  Graph g;
  Tensor q = g.input("q", DType::f32, {1, 2, 3, 4});
  Tensor k = g.input("k", DType::f32, {1, 2, 5, 4});
  Tensor v = g.input("v", DType::f32, {1, 2, 5, 2});
  Tensor m = g.input("m", DType::i1, {3, 5});
  AttentionOptions o;
  o.mask = m;
  o.scale = 0.5;
  AttentionWithLse attn = attentionWithLse(q, k, v, o);
  g.output("lse", attn.lse);
  MatmulOptions tb;
  tb.transposeB = true;
  Tensor s = where(m, matmul(q, k, tb) * 0.5, g.constant(-kInf, DType::f32));
  g.output("composed", log(reduceSum(exp(s), {3})));
  ASSERT_TRUE(g.status()) << g.status().message();
  EXPECT_EQ(attn.lse.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(attn.lse.dtype(), DType::f32);
  auto out =
      evaluate(g, {HostTensor::random(DType::f32, {1, 2, 3, 4}, 4),
                   HostTensor::random(DType::f32, {1, 2, 5, 4}, 5),
                   HostTensor::random(DType::f32, {1, 2, 5, 2}, 6),
                   tensorOf(DType::i1, {3, 5},
                            {0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1})});
  ASSERT_TRUE(out) << out.error().message();
  for (int64_t h = 0; h < 2; ++h)
    EXPECT_EQ((*out)[0].get(3 * h), -kInf) << "head " << h << ": row 0";
  EXPECT_LT(relativeError((*out)[0], (*out)[1]), 1e-12);
}

TEST(Evaluator, NaNAndInfPropagate) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {3});
  g.output("y", exp(x) + 1.0);
  g.output("s", reduceSum(x));
  auto out = evaluate(g, {tensorOf(DType::f32, {3}, {kNaN, kInf, -kInf})});
  ASSERT_TRUE(out);
  std::vector<double> y = valuesOf((*out)[0]);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], kInf);
  EXPECT_EQ(y[2], 1.0);
  EXPECT_TRUE(std::isnan((*out)[1].get(0)));
}

TEST(Evaluator, StoresOutputsInTheirDtype) {
  Graph g;
  Tensor x = g.input("x", DType::bf16, {2});
  g.output("y", x * 3.0);
  HostTensor y = run(g, {tensorOf(DType::bf16, {2}, {1.0078125, 0.5})});
  EXPECT_EQ(y.dtype(), DType::bf16);
  // 3.0234375 is not a bf16: it rounds to 3.03125 (8 bits of mantissa).
  EXPECT_EQ(y.get(0), 3.03125);
  EXPECT_EQ(y.get(1), 1.5);
}

TEST(Evaluator, RoundsEachOpOnlyWhenAsked) {
  // 1024 + 0.25 is no f16 (its ulp there is 1): an f16 add rounds it to
  // 1024 when each op's result is stored in its dtype; otherwise only the
  // cast to f32 rounds, and the quarter stays. The compare then decides
  // differently too.
  Graph g;
  Tensor a = g.input("a", DType::f16, {2});
  Tensor b = g.input("b", DType::f16, {2});
  Tensor sum = a + b;
  g.output("sum", cast(sum, DType::f32));
  g.output("exceeds", compare(Compare::gt, sum, a));
  std::vector<HostTensor> inputs = {tensorOf(DType::f16, {2}, {1024, 2}),
                                    tensorOf(DType::f16, {2}, {0.25, 0.25})};
  Expected<std::vector<HostTensor>> ideal = evaluate(g, inputs);
  Expected<std::vector<HostTensor>> rounded =
      evaluate(g, inputs, EvaluateOptions{true});
  ASSERT_TRUE(ideal) << ideal.error().message();
  ASSERT_TRUE(rounded) << rounded.error().message();
  EXPECT_EQ(valuesOf((*ideal)[0]), (std::vector<double>{1024.25, 2.25}));
  EXPECT_EQ(valuesOf((*rounded)[0]), (std::vector<double>{1024, 2.25}));
  EXPECT_EQ(valuesOf((*ideal)[1]), (std::vector<double>{1, 1}));
  EXPECT_EQ(valuesOf((*rounded)[1]), (std::vector<double>{0, 1}));
}

TEST(EvaluatorErrors, BadInputs) {
  Graph g;
  Tensor x = g.input("x", DType::f32, {"M", 4});
  Tensor y = g.input("y", DType::f32, {"M"});
  g.output("z", x + reshape(y, {"M", 1}));
  auto count = evaluate(g, {HostTensor(DType::f32, {2, 4})});
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().message(), "evaluate: the graph takes 2 inputs, got 1");
  auto dtype = evaluate(g, {HostTensor(DType::f16, {2, 4}),
                            HostTensor(DType::f32, {2})});
  ASSERT_FALSE(dtype);
  EXPECT_EQ(dtype.error().message(), "evaluate: input 'x' must be f32, got f16");
  auto conflict = evaluate(g, {HostTensor(DType::f32, {2, 4}),
                               HostTensor(DType::f32, {3})});
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().message(),
            "evaluate: symbolic dim 'M' is bound to 2 by argument 'x' dim 0 "
            "and to 3 by argument 'y' dim 0");
  auto fixed = evaluate(g, {HostTensor(DType::f32, {2, 5}),
                            HostTensor(DType::f32, {2})});
  ASSERT_FALSE(fixed);
  EXPECT_EQ(fixed.error().message(),
            "evaluate: argument 'x' dim 1 is 4 in the graph but 5 in the call");
}

} // namespace
