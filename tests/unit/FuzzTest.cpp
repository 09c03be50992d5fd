//===- FuzzTest.cpp - the fuzzer's generator and shrinker -----------------===//
//
// The fuzzer is only as good as these: every generated recipe must build
// (a generator that makes invalid graphs tests nothing), generation must be
// reproducible from its seed, and shrinking must reach a minimal graph that
// still fails.
//
//===----------------------------------------------------------------------===//

#include "ir/Numerics.h"
#include "tests/fuzz/Check.h"
#include "tests/fuzz/Recipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace kfuse;
using namespace kfuse::fuzz;

TEST(FuzzTest, GeneratedRecipesBuildAndRespectLimits) {
  GenerateOptions options;
  options.maxElements = 1 << 16;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Recipe recipe = generate(seed, options);
    Expected<BuiltGraph> built = build(recipe);
    ASSERT_TRUE(built) << built.error().message() << "\n" << recipe.str();
    EXPECT_LE(built->maxElements, options.maxElements) << recipe.str();
    EXPECT_FALSE(recipe.outputs.empty());
  }
}

TEST(FuzzTest, GenerationIsReproducibleFromTheSeed) {
  for (uint64_t seed : {3u, 77u, 1234u}) {
    Expected<BuiltGraph> a = build(generate(seed)), b = build(generate(seed));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a->graph.toMLIR(), *b->graph.toMLIR());
  }
  EXPECT_NE(*build(generate(1))->graph.toMLIR(),
            *build(generate(2))->graph.toMLIR());
}

TEST(FuzzTest, SomeGraphsHaveSymbolicDimsBoundByTheirInputShapes) {
  int symbolic = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Recipe recipe = generate(seed);
    if (!recipe.symbolic)
      continue;
    ++symbolic;
    Expected<BuiltGraph> built = build(recipe);
    ASSERT_TRUE(built) << recipe.str();
    bool anySymbol = false;
    std::vector<TensorInfo> inputs = built->graph.inputs();
    ASSERT_EQ(inputs.size(), built->inputShapes.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      for (size_t d = 0; d < inputs[i].shape.size(); ++d) {
        anySymbol |= inputs[i].shape[d].isSymbolic();
        EXPECT_GT(built->inputShapes[i][d], 0);
      }
    EXPECT_TRUE(anySymbol || built->maxElements == 1) << recipe.str();
    Expected<std::vector<HostTensor>> out =
        evaluate(built->graph, randomInputs(*built, seed));
    if (built->maxElements < 100000)
      EXPECT_TRUE(out) << out.error().message();
  }
  EXPECT_GT(symbolic, 10);
}

/// A stand-in for a compiler bug: any graph with a sine fails.
bool hasSine(const Recipe &recipe) {
  return std::any_of(recipe.nodes.begin(), recipe.nodes.end(),
                     [](const Node &n) {
                       return n.kind == NodeKind::Unary && n.op == 7;
                     });
}

TEST(FuzzTest, ShrinkingReachesAMinimalFailingGraph) {
  int shrunk = 0;
  for (uint64_t seed = 1; seed <= 1000 && shrunk < 5; ++seed) {
    // With no attempts, shrinking only drops the nodes outputs do not use.
    Recipe recipe = shrink(generate(seed), hasSine, 0);
    if (!hasSine(recipe) || recipe.nodes.size() < 6)
      continue;
    ++shrunk;
    Recipe small = shrink(recipe, hasSine);
    ASSERT_TRUE(hasSine(small)) << small.str();
    ASSERT_TRUE(build(small)) << small.str();
    // An input and its sine, with every dim down to 1.
    EXPECT_EQ(small.nodes.size(), 2u) << small.str();
    EXPECT_EQ(small.outputs.size(), 1u);
    Expected<BuiltGraph> built = build(small);
    EXPECT_EQ(built->maxElements, 1) << small.str();
  }
  EXPECT_EQ(shrunk, 5) << "too few generated graphs have a sine";
}

/// The judge of integer outputs cast from computed floats (the fuzzer's
/// find: i32 of a bf16 matmul, where the unfused kernels round the product
/// to bf16 as stored and the evaluator keeps it): truncating a rounded
/// float flips a few elements near integers and passes; a cast that rounds
/// to nearest, or an element off by more than rounding explains, fails.
TEST(FuzzTest, IntegerCastsOfRoundedFloatsMayFlipNearIntegersOnly) {
  const int64_t n = 4096;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> value(-40, 40);
  HostTensor expected(DType::i32, {n}), truncated(DType::i32, {n}),
      nearest(DType::i32, {n});
  int flips = 0;
  for (int64_t i = 0; i < n; ++i) {
    double f = value(rng);
    double rounded =
        numerics::bf16ToFloat(numerics::floatToBF16(static_cast<float>(f)));
    expected.set(i, std::trunc(f));
    truncated.set(i, std::trunc(rounded));
    nearest.set(i, std::nearbyint(f));
    flips += std::trunc(f) != std::trunc(rounded);
  }
  ASSERT_GT(flips, 2) << "the case should have flips to judge";
  EXPECT_TRUE(fuzz::plausibleRoundingFlips(truncated, expected, DType::bf16));
  EXPECT_FALSE(fuzz::plausibleRoundingFlips(nearest, expected, DType::bf16));
  // f32 intermediates round far finer: bf16's flips are too many for them.
  EXPECT_FALSE(fuzz::plausibleRoundingFlips(truncated, expected, DType::f32));
  HostTensor offByThree = truncated;
  offByThree.set(7, expected.get(7) + 3);
  EXPECT_FALSE(fuzz::plausibleRoundingFlips(offByThree, expected, DType::bf16));
}

/// Seed 66000071's GPU failure: a floor of a computed float 1.4e-6 from an
/// integer, added up by a matmul, moved a whole row of the product. Only
/// a decision whose result a contraction adds up is judged that loosely.
TEST(FuzzTest, DecisionsAddedUpByAContractionSpread) {
  Recipe recipe;
  recipe.dims = {PoolDim{8}, PoolDim{4}};
  auto node = [&](NodeKind kind, std::vector<int> operands, int op = 0) {
    Node n;
    n.kind = kind;
    n.operands = std::move(operands);
    n.op = op;
    recipe.nodes.push_back(n);
    return int(recipe.nodes.size()) - 1;
  };
  Node input;
  input.dims = {0, 1};
  recipe.nodes.push_back(input);
  int computed = node(NodeKind::Unary, {0}, 0);
  int floored = node(NodeKind::Unary, {computed}, 15);
  int pointwise = node(NodeKind::Unary, {floored}, 0);
  recipe.outputs = {pointwise};
  Expected<BuiltGraph> alone = build(recipe);
  ASSERT_TRUE(alone) << alone.error().message();
  EXPECT_TRUE(alone->discrete);
  EXPECT_FALSE(alone->discreteSpreads);

  Node sum;
  sum.kind = NodeKind::Reduce;
  sum.operands = {pointwise};
  sum.axes = {1};
  recipe.nodes.push_back(sum);
  recipe.outputs = {int(recipe.nodes.size()) - 1};
  Expected<BuiltGraph> added = build(recipe);
  ASSERT_TRUE(added) << added.error().message();
  EXPECT_TRUE(added->discreteSpreads);

  // The floor of an input decides nothing rounding moves.
  recipe.nodes[floored].operands = {0};
  Expected<BuiltGraph> exact = build(recipe);
  ASSERT_TRUE(exact) << exact.error().message();
  EXPECT_FALSE(exact->discrete);
  EXPECT_FALSE(exact->discreteSpreads);
}
