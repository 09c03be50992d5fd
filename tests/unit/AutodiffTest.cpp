//===- AutodiffTest.cpp - vector-Jacobian rules against finite differences ===//
//
// Every rule is checked by kfuse::checkGradients: the joint graph's
// gradients, evaluated in float64, against central differences of the
// forward's outputs on fresh random inputs and cotangents. Graphs put each
// op's operands in its domain (log of x*x + 0.5) and mix broadcasting,
// fan-out and symbolic dims in.
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

#include <sstream>

#include <functional>
#include <random>

using namespace kfuse;

namespace {

using Builder = std::function<void(Graph &)>;

struct GradCase {
  std::string name;
  Builder build;
  GradientCheckOptions options = {};
};

std::ostream &operator<<(std::ostream &os, const GradCase &c) {
  return os << c.name;
}

Tensor positive(Tensor x) { return x * x + 0.5; }

Float64Tensor indices(std::vector<int64_t> shape, std::vector<double> values) {
  return {std::move(shape), std::move(values)};
}

GradCase unaryCase(std::string name, Tensor (*op)(Tensor), bool positiveOnly) {
  return {name, [op, positiveOnly](Graph &g) {
            Tensor x = g.input("x", DType::f32, {3, 5});
            g.output("y", op(positiveOnly ? positive(x) : x * 1.7));
          }};
}

std::vector<GradCase> elementwiseCases() {
  std::vector<GradCase> cases = {
      unaryCase("neg", neg, false),       unaryCase("abs", abs, false),
      unaryCase("relu", relu, false),     unaryCase("exp", exp, false),
      unaryCase("log", log, true),        unaryCase("sqrt", sqrt, true),
      unaryCase("rsqrt", rsqrt, true),    unaryCase("sin", sin, false),
      unaryCase("cos", cos, false),       unaryCase("tanh", tanh, false),
      unaryCase("sigmoid", sigmoid, false), unaryCase("erf", erf, false),
      unaryCase("gelu", gelu, false),     unaryCase("silu", silu, false),
      unaryCase("reciprocal", reciprocal, true),
  };
  auto binary = [](std::string name, Tensor (*op)(Tensor, Tensor),
                   bool positiveB) {
    return GradCase{name, [op, positiveB](Graph &g) {
                      // b broadcasts along the rows: its cotangent sums.
                      Tensor a = g.input("a", DType::f32, {3, 4});
                      Tensor b = g.input("b", DType::f32, {4});
                      g.output("y", op(a, positiveB ? positive(b) : b));
                    }};
  };
  cases.push_back(binary("add", add, false));
  cases.push_back(binary("sub", sub, false));
  cases.push_back(binary("mul", mul, false));
  cases.push_back(binary("div", div, true));
  cases.push_back(binary("maximum", maximum, false));
  cases.push_back(binary("minimum", minimum, false));
  cases.push_back(binary("mod", mod, true));
  cases.push_back({"pow", [](Graph &g) {
                     Tensor a = g.input("a", DType::f32, {3, 4});
                     Tensor b = g.input("b", DType::f32, {3, 4});
                     g.output("y", pow(positive(a), b));
                   }});
  cases.push_back({"where_floor_round", [](Graph &g) {
                     Tensor a = g.input("a", DType::f32, {4, 5});
                     Tensor b = g.input("b", DType::f32, {5});
                     // floor and round are constant: only a and b flow.
                     Tensor c = a > b;
                     g.output("y", where(c, a * b, exp(b)) + floor(a * 3.0) +
                                       round(b * 3.0) * a);
                   }});
  cases.push_back({"fan_out_and_cast", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {6});
                     Tensor y = sin(x) * x + exp(x * 0.5);
                     g.output("y", y);
                     g.output("z", y * y + cast(x, DType::f32));
                   }});
  return cases;
}

std::vector<GradCase> shapeCases() {
  std::vector<GradCase> cases;
  for (int kind = 0; kind < 4; ++kind)
    for (bool keep : {false, true})
      cases.push_back(
          {"reduce" + std::to_string(kind) + (keep ? "_keep" : ""),
           [kind, keep](Graph &g) {
             Tensor x = g.input("x", DType::f32, {3, 4, 5});
             Tensor (*ops[])(Tensor, std::vector<int64_t>, bool) = {
                 reduceSum, reduceMean, reduceMax, reduceMin};
             g.output("rows", ops[kind](x, {-1}, keep));
             g.output("cols", ops[kind](x, {0, 2}, keep));
             g.output("all", ops[kind](x * x, {}, keep));
           }});
  cases.push_back({"reduce_max_ties", [](Graph &g) {
                     // Each element twice: the two copies of the max tie
                     // and take half each, which the concat sums again.
                     Tensor x = g.input("x", DType::f32, {4, 6});
                     g.output("y", reduceMax(concat({x, x}, 1), {1}));
                     g.output("z", maximum(x, x * 1.0));
                   }});
  cases.push_back({"movement", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {2, 3, 4});
                     Tensor t = transpose(x, {2, 0, 1});
                     Tensor r = reshape(t, {4, 6});
                     g.output("y", broadcastTo(r, {2, 4, 6}) * r);
                   }});
  cases.push_back({"slices", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {5, 11});
                     g.output("a", slice(x, 1, 2, 9));
                     g.output("b", slice(x, 1, 1, std::nullopt, 3));
                     g.output("c", slice(slice(x, 0, -4, 5, 2), 1, 0, 10, 2));
                   }});
  cases.push_back({"concat_pad", [](Graph &g) {
                     Tensor a = g.input("a", DType::f32, {3, 2});
                     Tensor b = g.input("b", DType::f32, {3, 4});
                     Tensor c = concat({a, b * b, a}, 1);
                     g.output("y", pad(c, {{1, 2}, {0, 3}}, 5.0) * 2.0);
                   }});
  cases.push_back({"cumsum", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {4, 6});
                     g.output("rows", cumsum(x * x, 1));
                     g.output("cols", cumsum(x, 0));
                   }});
  GradCase embedding{"gather_embedding", [](Graph &g) {
                    Tensor table = g.input("table", DType::f32, {5, 3});
                    Tensor ids = g.input("ids", DType::i32, {2, 4});
                    g.output("y", gather(table, ids, 0));
                  }};
  // Repeated rows and a negative index (counted from the end).
  embedding.options.values["ids"] =
      indices({2, 4}, {0, 3, 3, -1, 4, 0, 2, 3});
  cases.push_back(embedding);
  GradCase columns{"gather_columns", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {3, 6});
                     Tensor ids = g.input("ids", DType::i64, {4});
                     g.output("y", gather(x, ids, 1));
                   }};
  columns.options.values["ids"] = indices({4}, {5, 0, 5, -2});
  cases.push_back(columns);
  // Rows added twice, one counted from the end, one past the size (adds
  // nothing, and its update's gradient is zero).
  GradCase indexAdd{"index_add", [](Graph &g) {
                      Tensor u = g.input("u", DType::f32, {2, 4, 3});
                      Tensor ids = g.input("ids", DType::i64, {4});
                      g.output("y", kfuse::indexAdd(u * u, ids, 1, 5));
                    }};
  indexAdd.options.values["ids"] = indices({4}, {1, -1, 7, 1});
  cases.push_back(indexAdd);
  GradCase take{"take_along_axis", [](Graph &g) {
                  Tensor x = g.input("x", DType::f32, {4, 7});
                  Tensor ids = g.input("ids", DType::i32, {4, 2});
                  g.output("y", takeAlongAxis(x, ids, 1));
                }};
  take.options.values["ids"] = indices({4, 2}, {0, 6, 3, 3, -1, 2, 5, 1});
  cases.push_back(take);
  // The row count symbolic, which index_add cannot take: the compare
  // rules, with indices counted from the end wrapped by a count of the
  // rows taken from the iota.
  GradCase symbolic{"gather_take_symbolic_rows", [](Graph &g) {
                      Tensor table = g.input("table", DType::f32, {"V", 3});
                      Tensor ids = g.input("ids", DType::i64, {5});
                      Tensor labels = g.input("labels", DType::i64, {"V", 1});
                      g.output("rows", gather(table, ids, 0));
                      g.output("picks", takeAlongAxis(table, labels, 1));
                    }};
  symbolic.options.shapes = {{6, 3}, {5}, {6, 1}};
  symbolic.options.values["ids"] = indices({5}, {5, -1, 0, -6, 2});
  symbolic.options.values["labels"] = indices({6, 1}, {0, -1, 2, -3, 1, 1});
  cases.push_back(symbolic);
  return cases;
}

GradCase matmulCase(std::string name, Shape a, Shape b, MatmulOptions o) {
  return {name, [a, b, o](Graph &g) {
            Tensor x = g.input("a", DType::f32, a);
            Tensor y = g.input("b", DType::f32, b);
            g.output("c", matmul(x, y, o));
          }};
}

std::vector<GradCase> contractionCases() {
  std::vector<GradCase> cases = {
      matmulCase("matmul", {3, 4}, {4, 5}, {}),
      matmulCase("matmul_tA", {4, 3}, {4, 5}, {true, false}),
      matmulCase("matmul_tB", {3, 4}, {5, 4}, {false, true}),
      matmulCase("matmul_tAB", {4, 3}, {5, 4}, {true, true}),
      matmulCase("matmul_batched", {2, 3, 4}, {2, 4, 5}, {}),
      matmulCase("matmul_batched_tAB", {2, 4, 3}, {2, 5, 4}, {true, true}),
      matmulCase("matmul_shared_b", {2, 3, 4}, {4, 5}, {}),
      matmulCase("matmul_shared_b_tAB", {2, 4, 3}, {5, 4}, {true, true}),
  };
  cases.push_back({"softmax", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {3, 6});
                     g.output("rows", softmax(x * 2.0, -1));
                     g.output("cols", softmax(x, 0));
                   }});
  cases.push_back({"layernorm", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {4, 8});
                     Tensor w = g.input("w", DType::f32, {8});
                     Tensor mean = reduceMean(x, {-1}, true);
                     Tensor d = x - mean;
                     Tensor var = reduceMean(d * d, {-1}, true);
                     g.output("y", d * rsqrt(var + 1e-5) * w);
                   }});
  cases.push_back({"cross_entropy", [](Graph &g) {
                     Tensor logits = g.input("logits", DType::f32, {4, 9});
                     Tensor labels = g.input("labels", DType::i64, {4, 1});
                     Tensor m = reduceMax(logits, {-1}, true);
                     Tensor lse =
                         log(reduceSum(exp(logits - m), {-1}, true)) + m;
                     g.output("loss", reduceMean(
                                          lse - takeAlongAxis(logits, labels, 1)));
                   }});
  cases.back().options.values["labels"] = indices({4, 1}, {0, 8, 3, 3});
  cases.push_back({"cross_entropy_logsumexp", [](Graph &g) {
                     Tensor z = g.input("logits", DType::f32, {4, 9});
                     Tensor labels = g.input("labels", DType::i64, {4, 1});
                     g.output("loss", reduceMean(logsumexp(z, {-1}, true) -
                                                 takeAlongAxis(z, labels, 1)));
                   }});
  cases.back().options.values["labels"] = indices({4, 1}, {0, 8, 3, 3});
  cases.push_back({"logsumexp_all_dims", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {3, 4, 5});
                     g.output("y", logsumexp(x * 3.0));
                   }});
  cases.push_back({"logsumexp_middle_axis", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {3, 6, 2});
                     g.output("y", logsumexp(x, {1}) * 2.0);
                   }});
  struct Variant {
    const char *name;
    int64_t heads, kvHeads;
    bool causal, bias, mask, lse;
  };
  for (Variant v : {Variant{"attention", 2, 2, false, false, false, false},
                    Variant{"attention_causal_gqa", 4, 2, true, false, false,
                            false},
                    Variant{"attention_bias_mask_lse", 2, 1, false, true,
                            true, true}})
    cases.push_back({v.name, [v](Graph &g) {
                       Tensor q = g.input("q", DType::f32, {1, v.heads, 5, 4});
                       Tensor k = g.input("k", DType::f32, {1, v.kvHeads, 6, 4});
                       Tensor val =
                           g.input("v", DType::f32, {1, v.kvHeads, 6, 3});
                       AttentionOptions o;
                       o.causal = v.causal;
                       if (v.bias)
                         o.bias = g.input("bias", DType::f32, {5, 6});
                       if (v.mask)
                         o.mask = compare(Compare::ne, iota(g, {5, 6}, 1),
                                          iota(g, {5, 6}, 0));
                       AttentionWithLse out = attentionWithLse(q, k, val, o);
                       g.output("o", out.out);
                       if (v.lse)
                         g.output("lse", out.lse);
                     }});
  return cases;
}

class GradientRules : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradientRules, MatchFiniteDifferences) {
  const GradCase &c = GetParam();
  Graph g(c.name);
  c.build(g);
  ASSERT_TRUE(g.status()) << g.status().message();
  Expected<std::vector<GradientCheck>> checks = checkGradients(g, c.options);
  ASSERT_TRUE(checks) << checks.error().message();
  ASSERT_FALSE(checks->empty());
  for (const GradientCheck &check : *checks)
    EXPECT_TRUE(check.passed)
        << "grad_" << check.input << ": relative error " << check.error;
}

INSTANTIATE_TEST_SUITE_P(Elementwise, GradientRules,
                         ::testing::ValuesIn(elementwiseCases()),
                         [](const auto &info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Shapes, GradientRules,
                         ::testing::ValuesIn(shapeCases()),
                         [](const auto &info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Contractions, GradientRules,
                         ::testing::ValuesIn(contractionCases()),
                         [](const auto &info) { return info.param.name; });

TEST(Autodiff, GradOfAScalarLossHasTheInputsDtypesAndKnownValues) {
  Graph g("loss");
  Tensor x = g.input("x", DType::f32, {3});
  Tensor w = g.input("w", DType::bf16, {3});
  g.output("loss", reduceSum(x * x * cast(w, DType::f32)));
  Expected<Graph> joint = grad(g, "loss");
  ASSERT_TRUE(joint) << joint.error().message();
  std::vector<TensorInfo> ins = joint->inputs(), outs = joint->outputs();
  ASSERT_EQ(ins.size(), 2u); // no grad_loss: the seed is 1
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[1].name, "grad_x");
  EXPECT_EQ(outs[1].dtype, DType::f32);
  EXPECT_EQ(outs[2].name, "grad_w");
  EXPECT_EQ(outs[2].dtype, DType::bf16);
  HostTensor xv(DType::f32, {3}), wv(DType::bf16, {3});
  for (int i = 0; i < 3; ++i) {
    xv.set(i, i + 1.0);  // 1, 2, 3
    wv.set(i, 0.5 * i);  // 0, 0.5, 1
  }
  Expected<std::vector<HostTensor>> out = evaluate(*joint, {xv, wv});
  ASSERT_TRUE(out) << out.error().message();
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ((*out)[1].get(i), 2 * (i + 1.0) * 0.5 * i);   // 2xw
    EXPECT_DOUBLE_EQ((*out)[2].get(i), (i + 1.0) * (i + 1.0));     // x^2
  }
}

TEST(Autodiff, StopGradientPassesNothingBack) {
  Graph g("stopped");
  Tensor x = g.input("x", DType::f32, {3});
  g.output("loss", reduceSum(x * stopGradient(x)));
  Expected<Graph> joint = grad(g, "loss");
  ASSERT_TRUE(joint) << joint.error().message();
  HostTensor xv(DType::f32, {3});
  for (int i = 0; i < 3; ++i)
    xv.set(i, i - 1.5);
  Expected<std::vector<HostTensor>> out = evaluate(*joint, {xv});
  ASSERT_TRUE(out) << out.error().message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_DOUBLE_EQ((*out)[0].get(0), 1.5 * 1.5 + 0.25 + 0.25);
  for (int i = 0; i < 3; ++i) // x, not the 2x through both operands
    EXPECT_DOUBLE_EQ((*out)[1].get(i), i - 1.5);
}

TEST(Autodiff, SixteenBitAttentionsBackwardIsOneAttentionGradOp) {
  // FlashAttention's backward: no S x S scores (no matmul, no softmax) in
  // the backward, which reads the forward's output and log-sum-exp.
  Graph g("attention");
  Tensor q = g.input("q", DType::bf16, {2, 4, 40, 16});
  Tensor k = g.input("k", DType::bf16, {2, 2, 48, 16});
  Tensor v = g.input("v", DType::bf16, {2, 2, 48, 8});
  AttentionOptions o;
  o.causal = true;
  g.output("o", attention(q, k, v, o));
  Expected<TrainingGraphs> split = splitVJP(g);
  ASSERT_TRUE(split) << split.error().message();
  Expected<std::string> backward = split->backward.toMLIR();
  ASSERT_TRUE(backward) << backward.error().message();
  EXPECT_NE(backward->find("kf.attention_grad"), std::string::npos)
      << *backward;
  EXPECT_EQ(backward->find("kf.matmul"), std::string::npos) << *backward;
  EXPECT_EQ(backward->find("kf.softmax"), std::string::npos) << *backward;
  EXPECT_EQ(backward->find("kf.attention "), std::string::npos) << *backward;
}

/// The joint graph of attention over q [B, H, Sq, D], k and v [B, Hkv, Sk,
/// D or Dv] in `dtype`.
Graph attentionJoint(DType dtype, const std::vector<int64_t> &q,
                     const std::vector<int64_t> &kv,
                     int64_t dv, bool causal) {
  Graph f("attention");
  Tensor tq = f.input("q", dtype, Shape(q.begin(), q.end()));
  Tensor tk = f.input("k", dtype, Shape(kv.begin(), kv.end()));
  Tensor tv = f.input("v", dtype, {kv[0], kv[1], kv[2], dv});
  AttentionOptions o;
  o.causal = causal;
  f.output("o", attention(tq, tk, tv, o));
  Expected<Graph> joint = vjp(f);
  EXPECT_TRUE(joint) << joint.error().message();
  return joint ? joint.take() : Graph("failed");
}

TEST(Autodiff, BlocksWithFlashBackwardSplit) {
  // Heads split by a projection, attention, heads merged back: the forward
  // takes the attention that also gives the log-sum-exp; the split graphs
  // parse and the backward has no attention of its own.
  Graph g("block");
  Tensor x = g.input("x", DType::bf16, {2, 64, 128});
  Tensor w = g.input("w", DType::bf16, {128, 128});
  auto heads = [&](Tensor t) {
    return transpose(reshape(t, {2, 64, 4, 32}), {0, 2, 1, 3});
  };
  Tensor h = heads(matmul(x, w));
  AttentionOptions o;
  o.causal = true;
  Tensor a = attention(h, heads(x), heads(x), o);
  g.output("y", reshape(transpose(a, {0, 2, 1, 3}), {2, 64, 128}) + x);
  Expected<TrainingGraphs> split = splitVJP(g);
  ASSERT_TRUE(split) << split.error().message();
  Expected<std::string> backward = split->backward.toMLIR();
  ASSERT_TRUE(backward) << backward.error().message();
  EXPECT_NE(backward->find("kf.attention_grad"), std::string::npos);
  EXPECT_EQ(backward->find("kf.attention "), std::string::npos) << *backward;
}

TEST(Autodiff, AttentionGradOpGivesThePrimitivesGradients) {
  // 16-bit attention's backward is kf.attention_grad, f32's is built from
  // matmuls and a softmax (checked against finite differences above): on
  // the same values (16-bit ones, so that the 16-bit graph's casts of the
  // cotangent are exact) the two give the same gradients, but for the
  // 16-bit graph's rounding of each gradient to bf16 (and, near zero, of
  // f32 casts on the way).
  struct Case {
    int64_t heads, kvHeads, sq, sk, d, dv;
    bool causal;
  };
  for (Case c : {Case{4, 2, 9, 9, 8, 16, true}, Case{2, 1, 5, 12, 16, 8, false},
                 Case{3, 3, 7, 4, 8, 8, true}}) {
    std::vector<int64_t> q = {2, c.heads, c.sq, c.d},
                         kv = {2, c.kvHeads, c.sk, c.d};
    Graph flash = attentionJoint(DType::bf16, q, kv, c.dv, c.causal);
    Graph primitives = attentionJoint(DType::f32, q, kv, c.dv, c.causal);
    Expected<std::string> text = flash.toMLIR();
    ASSERT_TRUE(text) << text.error().message();
    ASSERT_NE(text->find("kf.attention_grad"), std::string::npos) << *text;
    std::vector<HostTensor> bf16Inputs, f32Inputs;
    uint64_t seed = 7;
    for (const TensorInfo &in : flash.inputs()) {
      std::vector<int64_t> sizes;
      for (const Dim &dim : in.shape)
        sizes.push_back(dim.size());
      HostTensor x(DType::bf16, sizes);
      for (size_t i = 0; i < x.numElements(); ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x.set(i, double(int64_t(seed >> 40) % 2001 - 1000) / 700.0);
      }
      HostTensor wide(DType::f32, sizes);
      for (size_t i = 0; i < x.numElements(); ++i)
        wide.set(i, x.get(i)); // bf16's value, exactly
      bf16Inputs.push_back(x);
      f32Inputs.push_back(wide);
    }
    Expected<std::vector<HostTensor>> got = evaluate(flash, bf16Inputs);
    Expected<std::vector<HostTensor>> want = evaluate(primitives, f32Inputs);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_TRUE(want) << want.error().message();
    ASSERT_EQ(got->size(), 4u); // o, grad_q, grad_k, grad_v
    for (size_t r = 1; r < got->size(); ++r) {
      double largest = 0;
      for (size_t i = 0; i < (*want)[r].numElements(); ++i)
        largest = std::max(largest, std::abs((*want)[r].get(i)));
      ASSERT_GT(largest, 0.0);
      for (size_t i = 0; i < (*want)[r].numElements(); ++i)
        ASSERT_NEAR((*got)[r].get(i), (*want)[r].get(i),
                    std::abs((*want)[r].get(i)) / 128 + largest * 1e-6)
            << flash.outputs()[r].name << " element " << i;
    }
  }
}

TEST(Autodiff, LogsumexpsBackwardNeitherComparesNorReducesARow) {
  // Through its max, the backward would sum the softmax over each row and
  // compare every element with the max: the work of two more passes, for a
  // gradient that is zero. The split backward reads the saved max and sum
  // (and compares only each row's max, for rows whose max is infinite).
  Graph g("lse");
  Tensor x = g.input("x", DType::f32, {4, 9});
  g.output("y", logsumexp(x, {-1}));
  Expected<TrainingGraphs> split = splitVJP(g);
  ASSERT_TRUE(split) << split.error().message();
  Expected<std::string> text = split->backward.toMLIR();
  ASSERT_TRUE(text) << text.error().message();
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);)
    EXPECT_FALSE(line.find("kf.compare") != std::string::npos &&
                 line.find("4x9") != std::string::npos)
        << line;
  EXPECT_EQ(text->find("kf.reduce"), std::string::npos) << *text;
}

TEST(Autodiff, SymbolicDimsFlowThroughTheBackward) {
  Graph g("mlp");
  Tensor x = g.input("x", DType::f32, {"B", "S", 4});
  Tensor w = g.input("w", DType::f32, {4, 3});
  Tensor h = gelu(matmul(x, w));
  g.output("y", softmax(h, -1) * reduceMean(h, {-1}, true));
  GradientCheckOptions options;
  options.shapes = {{2, 3, 4}, {4, 3}};
  Expected<std::vector<GradientCheck>> checks = checkGradients(g, options);
  ASSERT_TRUE(checks) << checks.error().message();
  ASSERT_EQ(checks->size(), 2u);
  for (const GradientCheck &check : *checks)
    EXPECT_TRUE(check.passed) << check.input << ": " << check.error;
}

TEST(Autodiff, RandomMasksAreTheSameInTheBackward) {
  Graph g("dropout");
  Tensor x = g.input("x", DType::f32, {8, 8});
  Tensor seed = g.input("seed", DType::i32, {});
  g.output("y", dropout(x * x, seed, 0.4));
  Expected<std::vector<GradientCheck>> checks = checkGradients(g);
  ASSERT_TRUE(checks) << checks.error().message();
  ASSERT_EQ(checks->size(), 1u); // the seed is an integer: no gradient
  EXPECT_TRUE(checks->front().passed) << checks->front().error;
}

TEST(Autodiff, InputsNoOutputDependsOnGetZeros) {
  Graph g("unused");
  Tensor x = g.input("x", DType::f32, {2});
  g.input("unused", DType::f16, {3});
  g.output("y", exp(x));
  Expected<Graph> joint = vjp(g);
  ASSERT_TRUE(joint) << joint.error().message();
  HostTensor xv = HostTensor::random(DType::f32, {2}, 1);
  HostTensor u = HostTensor::random(DType::f16, {3}, 2);
  HostTensor ct = HostTensor::random(DType::f32, {2}, 3);
  Expected<std::vector<HostTensor>> out = evaluate(*joint, {xv, u, ct});
  ASSERT_TRUE(out) << out.error().message();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[2].dtype(), DType::f16);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ((*out)[2].get(i), 0.0);
}

TEST(Autodiff, BadRequestsAreErrorsThatNameThem) {
  Graph g("g");
  Tensor x = g.input("x", DType::f32, {2, 3});
  Tensor i = g.input("i", DType::i32, {2});
  g.output("y", x * 2.0);
  g.output("idx", argmax(x, 1));
  g.output("grad_x", x);
  auto message = [](const Expected<Graph> &r) {
    return r ? std::string("no error") : r.error().message();
  };
  EXPECT_EQ(message(grad(g, "y")),
            "grad: the loss 'y' is 2x3; grad() takes a rank-0 output (vjp() "
            "takes any)");
  EXPECT_EQ(message(vjp(g, {{"nope"}, {}})),
            "vjp: the graph has no output named 'nope'");
  EXPECT_EQ(message(vjp(g, {{"idx"}, {}})),
            "vjp: output 'idx' is i64; only floats have gradients");
  EXPECT_EQ(message(vjp(g, {{"y"}, {"i"}})),
            "vjp: input 'i' is i32; only floats have gradients");
  EXPECT_EQ(message(vjp(g, {{"y"}, {"x"}})),
            "vjp: the gradient's name 'grad_x' is already an output of the "
            "graph");
  (void)i;
}

TEST(Autodiff, ParsedGraphsDifferentiateLikeBuiltOnes) {
  Graph g("built");
  Tensor x = g.input("x", DType::f32, {"N", 5});
  Tensor b = g.input("b", DType::f32, {5});
  g.output("y", tanh(broadcastTo(b, {"N", 5}) + x) * slice(x, 1, 0, 5));
  Expected<std::string> text = g.toMLIR();
  ASSERT_TRUE(text);
  Expected<Graph> parsed = Graph::fromMLIR(*text);
  ASSERT_TRUE(parsed) << parsed.error().message();
  GradientCheckOptions options;
  options.shapes = {{3, 5}, {5}};
  for (const Graph *graph : {&g, &*parsed}) {
    Expected<std::vector<GradientCheck>> checks =
        checkGradients(*graph, options);
    ASSERT_TRUE(checks) << checks.error().message();
    for (const GradientCheck &check : *checks)
      EXPECT_TRUE(check.passed) << check.input << ": " << check.error;
  }
}

} // namespace
