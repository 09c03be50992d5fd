//===- TrainingSplitTest.cpp - splitVJP against the joint graph ------------===//
//
// The forward and backward graphs of splitVJP, evaluated one after the
// other (the backward's inputs gathered as backwardInputs says), give the
// joint graph's outputs and gradients on fresh random inputs; and the
// split saves what it must (matmuls, reductions) and recomputes what is
// cheap.
//
//===----------------------------------------------------------------------===//

#include "../common/OpCases.h"
#include "kfuse/kfuse.h"

#include <gtest/gtest.h>


using namespace kfuse;

namespace {

/// Runs the split on `inputs` and the joint's cotangent inputs; expects the
/// joint's outputs from the forward and its gradients from the backward.
void expectSplitMatchesJoint(const Graph &f, const VJPOptions &options) {
  Expected<Graph> joint = vjp(f, options);
  ASSERT_TRUE(joint) << joint.error().message();
  Expected<TrainingGraphs> split = splitVJP(f, options);
  ASSERT_TRUE(split) << split.error().message();
  uint64_t seed = kfuse::testing::freshSeed();
  std::vector<HostTensor> jointInputs = kfuse::testing::randomInputs(*joint, seed);
  size_t numInputs = f.inputs().size(), numOutputs = f.outputs().size();
  std::vector<HostTensor> inputs(jointInputs.begin(),
                                 jointInputs.begin() + numInputs);
  Expected<std::vector<HostTensor>> want = evaluate(*joint, jointInputs);
  ASSERT_TRUE(want) << want.error().message();
  Expected<std::vector<HostTensor>> fwd = evaluate(split->forward, inputs);
  ASSERT_TRUE(fwd) << fwd.error().message();
  std::vector<HostTensor> backwardInputs;
  for (const BackwardInput &in : split->backwardInputs) {
    using S = BackwardInput::Source;
    backwardInputs.push_back(
        in.source == S::forwardInput    ? inputs[in.index]
        : in.source == S::forwardOutput ? (*fwd)[in.index]
        : in.source == S::saved         ? (*fwd)[numOutputs + in.index]
                                        : jointInputs[numInputs + in.index]);
  }
  Expected<std::vector<HostTensor>> bwd =
      evaluate(split->backward, backwardInputs);
  ASSERT_TRUE(bwd) << bwd.error().message();
  ASSERT_EQ(numOutputs + bwd->size(), want->size());
  // The joint graph keeps its intermediates in float64 where the split
  // stores the saved ones in their dtypes: equal within that rounding.
  std::vector<TensorInfo> outputs = joint->outputs();
  for (size_t i = 0; i < want->size(); ++i) {
    const HostTensor &got = i < numOutputs ? (*fwd)[i] : (*bwd)[i - numOutputs];
    EXPECT_LE(relativeError(got, (*want)[i]),
              kfuse::testing::outputTolerance(*joint, outputs[i]))
        << "output " << outputs[i].name << " (seed " << seed << ")";
  }
}

/// `g` compiles (no GPU needed) to `count` kernels.
void expectKernels(const Graph &g, size_t count) {
  CompileOptions options;
  options.diskCache = false;
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  Expected<std::vector<KernelReport>> kernels = exe->kernels();
  ASSERT_TRUE(kernels);
  Expected<std::string> fused = exe->dump(Stage::Fused);
  EXPECT_EQ(kernels->size(), count) << (fused ? *fused : "");
}

bool mentions(const std::vector<std::string> &lines, const std::string &op,
              const std::string &what) {
  for (const std::string &line : lines)
    if (line.find(op) != std::string::npos &&
        line.find(what) != std::string::npos)
      return true;
  return false;
}

TEST(TrainingSplit, MlpSavesTheMatmulAndRecomputesTheActivation) {
  Graph f("mlp");
  Tensor x = f.input("x", DType::bf16, {16, 32});
  Tensor w = f.input("w", DType::bf16, {32, 64});
  Tensor b = f.input("b", DType::f32, {64});
  Tensor h = gelu(cast(matmul(x, w), DType::f32) + b);
  f.output("loss", reduceMean(h * h));
  expectSplitMatchesJoint(f, {{"loss"}, {"x", "w", "b"}});
  Expected<TrainingGraphs> split = splitVJP(f, {{"loss"}, {"x", "w", "b"}});
  ASSERT_TRUE(split);
  EXPECT_TRUE(mentions(split->decisions, "kf.matmul", "never recomputed"));
  EXPECT_TRUE(mentions(split->decisions, "kf.gelu", "recomputed") ||
              mentions(split->decisions, "kf.add", "recomputed"));
  // The loss and the matmul's result: nothing else crosses.
  EXPECT_EQ(split->forward.outputs().size(), 2u);
}

/// GELU's output is the down projection's operand, so a forward kernel
/// writes it anyway, and the down projection's weight gradient reads it
/// too: saved rather than recomputed by a kernel of the backward that
/// would write it again.
TEST(TrainingSplit, SavesAnActivationTwoMatmulsRead) {
  Graph f("mlp2");
  Tensor x = f.input("x", DType::bf16, {16, 32});
  Tensor up = f.input("up", DType::bf16, {32, 64});
  Tensor down = f.input("down", DType::bf16, {64, 32});
  Tensor y = cast(matmul(gelu(matmul(x, up)), down), DType::f32);
  f.output("loss", reduceMean(y * y));
  VJPOptions options{{"loss"}, {"x", "up", "down"}};
  expectSplitMatchesJoint(f, options);
  Expected<TrainingGraphs> split = splitVJP(f, options);
  ASSERT_TRUE(split);
  EXPECT_TRUE(mentions(split->decisions, "kf.gelu", "write it again"));
  EXPECT_FALSE(mentions(split->decisions, "kf.gelu", "recomputed"));
  // The loss, both products and GELU's output.
  EXPECT_EQ(split->forward.outputs().size(), 4u);
}

/// The backward of exp reads exp's value, which the forward computes from
/// v = m1 + m2 (bf16, two matmuls'): saving v is cheaper than saving both
/// matmuls and recomputing v from them (what a choice one op at a time,
/// each recomputed where its own operands look no larger, made), and than
/// saving exp's f32 value. The minimum cut saves v alone.
TEST(TrainingSplit, SavesTheMinimumCut) {
  Graph f("cut");
  Tensor x = f.input("x", DType::bf16, {16, 32});
  Tensor w1 = f.input("w1", DType::bf16, {32, 64});
  Tensor w2 = f.input("w2", DType::bf16, {32, 64});
  Tensor m1 = cast(matmul(x, w1), DType::f32);
  Tensor m2 = cast(matmul(x, w2), DType::f32);
  Tensor v = cast(m1 + m2, DType::bf16);
  f.output("loss", reduceMean(exp(cast(v, DType::f32))));
  VJPOptions options{{"loss"}, {"x", "w1", "w2"}};
  expectSplitMatchesJoint(f, options);
  Expected<TrainingGraphs> split = splitVJP(f, options);
  ASSERT_TRUE(split) << split.error().message();
  std::vector<TensorInfo> out = split->forward.outputs();
  ASSERT_EQ(out.size(), 2u) << "the loss and one saved value";
  EXPECT_EQ(out[1].dtype, DType::bf16);
  EXPECT_TRUE(mentions(split->decisions, "kf.cast",
                       "recomputing it would need at least as many bytes saved"));
  EXPECT_FALSE(mentions(split->decisions, "kf.matmul", "saved"));
}

TEST(TrainingSplit, LayerNormAndCrossEntropyMatchTheJointGraph) {
  Graph f("ln_xent");
  Tensor x = f.input("x", DType::f32, {8, 48});
  Tensor w = f.input("w", DType::f32, {48});
  Tensor b = f.input("b", DType::f32, {48});
  Tensor labels = f.input("labels", DType::i32, {8, 1});
  Tensor y = kfuse::testing::layerNormOf(x, w, b);
  Tensor m = reduceMax(y, {1}, true);
  Tensor lse = log(reduceSum(exp(y - m), {1}, true)) + m;
  f.output("y", y);
  f.output("loss", reduceMean(lse - takeAlongAxis(y, labels, 1)));
  expectSplitMatchesJoint(f, {{"y", "loss"}, {"x", "w", "b"}});
}

TEST(TrainingSplit, LayerNormForwardWritesItsSavedStatisticsInOneKernel) {
  Graph f("ln");
  Tensor x = cast(f.input("x", DType::bf16, {512, 1024}), DType::f32);
  Tensor w = f.input("w", DType::f32, {1024});
  Tensor b = f.input("b", DType::f32, {1024});
  f.output("y", cast(kfuse::testing::layerNormOf(x, w, b), DType::bf16));
  Expected<TrainingGraphs> split = splitVJP(f, {{"y"}, {"x", "w", "b"}});
  ASSERT_TRUE(split) << split.error().message();
  // The backward reads per-row statistics: the forward returns them too.
  ASSERT_GT(split->forward.outputs().size(), 1u);
  // One row kernel reads x once and writes the rows and the statistics
  // (not a kernel per statistic, each reading x again).
  expectKernels(split->forward, 1);
}

TEST(TrainingSplit, AttentionSavesItsOutput) {
  Graph f("attention");
  Tensor q = f.input("q", DType::f32, {1, 2, 16, 8});
  Tensor k = f.input("k", DType::f32, {1, 2, 16, 8});
  Tensor v = f.input("v", DType::f32, {1, 2, 16, 8});
  AttentionOptions causal;
  causal.causal = true;
  f.output("o", attention(q, k, v, causal));
  expectSplitMatchesJoint(f, {});
}

/// The attention's output, its heads merged into [B, S, H D] for the output
/// projection, is saved as that view (which the forward writes anyway):
/// the forward writes it once, from the attention kernel, and the backward
/// reads the output back through the inverse views.
TEST(TrainingSplit, AttentionOutputIsSavedAsItsMergedHeads) {
  Graph f("heads");
  const int64_t b = 2, h = 2, s = 16, d = 8;
  Tensor x = f.input("x", DType::bf16, {b, s, h * d});
  Tensor w = f.input("w", DType::bf16, {h * d, h * d});
  auto heads = [&](Tensor t) {
    return transpose(reshape(t, {b, s, h, d}), {0, 2, 1, 3});
  };
  AttentionOptions causal;
  causal.causal = true;
  Tensor o = attention(heads(x), heads(x), heads(x), causal);
  Tensor merged = reshape(transpose(o, {0, 2, 1, 3}), {b, s, h * d});
  f.output("y", cast(matmul(merged, w), DType::bf16));
  VJPOptions options{{"y"}, {"x", "w"}};
  expectSplitMatchesJoint(f, options);
  Expected<TrainingGraphs> split = splitVJP(f, options);
  ASSERT_TRUE(split) << split.error().message();
  EXPECT_TRUE(mentions(split->decisions, "kf.attention", "saved as its view"));
  bool savedMerged = false, savedHeads = false;
  for (const TensorInfo &out : split->forward.outputs()) {
    savedMerged |= out.shape == Shape{b, s, h * d} && out.name != "y";
    savedHeads |= out.shape == Shape{b, h, s, d};
  }
  EXPECT_TRUE(savedMerged);
  EXPECT_FALSE(savedHeads);
  // The attention kernel stores the merged heads (and the log-sum-exp):
  // no kernel copies them apart.
  expectKernels(split->forward, 2);
}

// Found by kfuse-fuzz --gradients: symbolic query heads over one kv head
// crashed the attention rule (it divided symbolic head counts).
TEST(TrainingSplit, AttentionOverOneKvHeadWithSymbolicHeads) {
  Graph f("gqa");
  Tensor q = f.input("q", DType::f32, {"B", "H", 7, 8});
  Tensor k = f.input("k", DType::f32, {"B", 1, 7, 8});
  Tensor v = f.input("v", DType::f32, {"B", 1, 7, 8});
  AttentionOptions causal;
  causal.causal = true;
  f.output("o", attention(q, k, v, causal));
  GradientCheckOptions options;
  options.shapes = {{2, 3, 7, 8}, {2, 1, 7, 8}, {2, 1, 7, 8}};
  Expected<std::vector<GradientCheck>> checks = checkGradients(f, options);
  ASSERT_TRUE(checks) << checks.error().message();
  for (const GradientCheck &c : *checks)
    EXPECT_TRUE(c.passed) << c.input << ": " << c.error;

  Graph g("gqa2");
  Tensor q2 = g.input("q", DType::f32, {"B", "H", 7, 8});
  Tensor k2 = g.input("k", DType::f32, {"B", 2, 7, 8});
  g.output("o", attention(q2, k2, k2));
  Expected<Graph> joint = vjp(g);
  ASSERT_FALSE(joint);
  EXPECT_NE(joint.error().message().find("kv heads"), std::string::npos)
      << joint.error().message();
}

TEST(TrainingSplit, BadRequestsAreErrorsThatNameThem) {
  Graph f("g");
  Tensor x = f.input("x", DType::f32, {4});
  f.output("y", x * 2.0);
  Expected<TrainingGraphs> split = splitVJP(f, {{"y"}, {"nope"}});
  ASSERT_FALSE(split);
  EXPECT_NE(split.error().message().find("nope"), std::string::npos)
      << split.error().message();
}

} // namespace
