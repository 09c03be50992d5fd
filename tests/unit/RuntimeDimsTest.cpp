//===- RuntimeDimsTest.cpp - dims whose size changes from call to call ----===//
//
// Without a GPU: which compiles CompileOptions::dynamicDims makes (one a
// bucket where the kernels take the size at run time, one a size where
// they cannot, and why), what the plan passes the kernels, and the errors
// for names that are no dims.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompileGraph.h"
#include "compiler/RuntimeDims.h"
#include "kfuse/kfuse.h"
#include "runtime/Plan.h"

#include <gtest/gtest.h>

using namespace kfuse;

namespace {

/// Grouped-query attention over a cache of `keys` keys; with `alsoSummed`
/// the cache is also summed, in a kernel that cannot take its length.
Graph cacheAttention(const std::string &name, Dim keys,
                     bool alsoSummed = false) {
  Graph g(name);
  Tensor q = g.input("q", DType::bf16, {1, 8, 1, 128});
  Tensor k = g.input("k", DType::bf16, {1, 2, keys, 128});
  Tensor v = g.input("v", DType::bf16, {1, 2, keys, 128});
  g.output("o", attention(q, k, v));
  if (alsoSummed)
    g.output("s", reduceSum(cast(k, DType::f32), {2}));
  return g;
}

std::vector<std::vector<int64_t>> shapesFor(int64_t keys) {
  return {{1, 8, 1, 128}, {1, 2, keys, 128}, {1, 2, keys, 128}};
}

Expected<Executable> compileDynamic(const Graph &g,
                                    std::vector<std::string> dynamic) {
  CompileOptions options;
  options.diskCache = false;
  options.dynamicDims = std::move(dynamic);
  return Compiler(options).compile(g);
}

/// Compiles for each key length (kernels() specialises without a GPU)
/// and returns how many compiles that took.
uint64_t compilesFor(Executable &exe, std::initializer_list<int64_t> keys) {
  uint64_t before = cacheStats().compiles;
  for (int64_t k : keys) {
    Expected<std::vector<KernelReport>> reports = exe.kernels(shapesFor(k));
    EXPECT_TRUE(reports) << "L = " << k << ": " << reports.error().message();
  }
  return cacheStats().compiles - before;
}

TEST(RuntimeDims, BucketsArePowersOfTwoFrom64) {
  using compiler::RuntimeDims;
  EXPECT_EQ(RuntimeDims::bucket(1), 64);
  EXPECT_EQ(RuntimeDims::bucket(64), 64);
  EXPECT_EQ(RuntimeDims::bucket(65), 128);
  EXPECT_EQ(RuntimeDims::bucket(4096), 4096);
  EXPECT_EQ(RuntimeDims::bucket(4097), 8192);
}

TEST(RuntimeDims, AttentionCompilesOnceABucket) {
  Graph g = cacheAttention("runtime_keys_once", "L");
  Expected<Executable> exe = compileDynamic(g, {"L"});
  ASSERT_TRUE(exe) << exe.error().message();
  EXPECT_EQ(compilesFor(*exe, {65, 100, 127, 128, 66}), 1u);
  EXPECT_EQ(compilesFor(*exe, {129, 200, 256}), 1u);
  EXPECT_EQ(compilesFor(*exe, {1, 64, 30}), 1u);
  // 256 consecutive lengths: at most three buckets.
  Graph again = cacheAttention("runtime_keys_run", "L");
  Expected<Executable> run = compileDynamic(again, {"L"});
  ASSERT_TRUE(run);
  uint64_t before = cacheStats().compiles;
  for (int64_t k = 100; k < 356; ++k)
    ASSERT_TRUE(run->kernels(shapesFor(k)));
  EXPECT_EQ(cacheStats().compiles - before, 3u);
}

/// What compiled, and why: the API a user asks when a loop recompiles.
TEST(RuntimeDims, SpecializationsSayWhyACallCompiled) {
  Graph g = cacheAttention("runtime_keys_why", "L");
  Expected<Executable> exe = compileDynamic(g, {"L"});
  ASSERT_TRUE(exe);
  compilesFor(*exe, {100, 120, 300});
  std::vector<SpecializationInfo> specs = exe->specializations();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_TRUE(specs[0].runtimeSizes);
  EXPECT_EQ(specs[0].shapes[1], (std::vector<int64_t>{1, 2, 128, 128}));
  EXPECT_EQ(specs[0].reason,
            "new buckets: runs L in 65..128 with the call's sizes");
  EXPECT_EQ(specs[1].shapes[2], (std::vector<int64_t>{1, 2, 512, 128}));

  Graph summed = cacheAttention("runtime_keys_why_not", "L", true);
  Expected<Executable> exact = compileDynamic(summed, {"L"});
  ASSERT_TRUE(exact);
  compilesFor(*exact, {100});
  specs = exact->specializations();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_FALSE(specs[0].runtimeSizes);
  EXPECT_EQ(specs[0].shapes[1], (std::vector<int64_t>{1, 2, 100, 128}));
  EXPECT_NE(specs[0].reason.find("specialised exactly: dim 2 of 'k'"),
            std::string::npos)
      << specs[0].reason;
}

TEST(RuntimeDims, WithoutThemEachLengthCompiles) {
  Graph g = cacheAttention("runtime_keys_exact", "L");
  Expected<Executable> exe = compileDynamic(g, {});
  ASSERT_TRUE(exe);
  EXPECT_EQ(compilesFor(*exe, {65, 100, 127}), 3u);
}

/// The kernels' side of it: the attention launch takes dim 2 of k as a
/// parameter, and K's and V's tensor maps take their rows from it.
TEST(RuntimeDims, ThePlanPassesTheKeyLength) {
  Expected<std::string> text = cacheAttention("runtime_keys_plan", "L").toMLIR();
  ASSERT_TRUE(text);
  compiler::CompileRequest request;
  request.graphText = *text;
  request.shapes = shapesFor(256);
  request.runtimeSymbols = {"L"};
  request.stopAfter = Stage::GPU;
  Expected<runtime::Plan> plan = compiler::compileGraph(request);
  ASSERT_TRUE(plan) << plan.error().message();
  ASSERT_EQ(plan->launches.size(), 1u);
  const runtime::LaunchDesc &l = plan->launches[0];
  ASSERT_EQ(l.extents.size(), 1u) << plan->dumps["fused"];
  EXPECT_EQ(l.extents[0].buffer, 1u);
  EXPECT_EQ(l.extents[0].dim, 2u);
  ASSERT_EQ(l.tensorMaps.size(), 3u);
  EXPECT_EQ(l.tensorMaps[0].rowsExtent, -1); // q
  EXPECT_EQ(l.tensorMaps[1].rowsExtent, 0);  // k
  EXPECT_EQ(l.tensorMaps[2].rowsExtent, 0);  // v
  EXPECT_NE(plan->dumps["fused"].find("runtime_extents = array<i64: 1, 2>"),
            std::string::npos)
      << plan->dumps["fused"];
}

/// Where a kernel cannot take the length, the compile says which and why,
/// and the executable specialises each length exactly (still correct).
TEST(RuntimeDims, ARefusedDimIsSpecialisedExactly) {
  Graph g = cacheAttention("runtime_keys_refused", "L", /*alsoSummed=*/true);
  Expected<std::string> text = g.toMLIR();
  ASSERT_TRUE(text);
  compiler::CompileRequest request;
  request.graphText = *text;
  request.shapes = shapesFor(128);
  request.runtimeSymbols = {"L"};
  std::string refusal;
  request.refusal = &refusal;
  EXPECT_FALSE(compiler::compileGraph(request));
  EXPECT_NE(refusal.find("dim 2 of 'k'"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("only the FlashAttention template"),
            std::string::npos)
      << refusal;

  Expected<Executable> exe = compileDynamic(g, {"L"});
  ASSERT_TRUE(exe);
  // The refused try, then one compile a length.
  EXPECT_EQ(compilesFor(*exe, {100}), 2u);
  EXPECT_EQ(compilesFor(*exe, {101, 102}), 2u);
  Expected<std::vector<std::vector<int64_t>>> shapes =
      exe->outputShapes(shapesFor(101));
  ASSERT_TRUE(shapes);
  EXPECT_EQ((*shapes)[1], (std::vector<int64_t>{1, 2, 128}));
}

TEST(RuntimeDims, AnIotaOfTheDimIsRefused) {
  Graph g("runtime_keys_iota");
  Tensor k = g.input("k", DType::f32, {"L"});
  g.output("y", k + cast(iota(g, {"L"}, 0, DType::i32), DType::f32));
  Expected<std::string> text = g.toMLIR();
  ASSERT_TRUE(text);
  compiler::CompileRequest request;
  request.graphText = *text;
  request.shapes = {{100}};
  request.runtimeSymbols = {"L"};
  std::string refusal;
  request.refusal = &refusal;
  EXPECT_FALSE(compiler::compileGraph(request));
  EXPECT_NE(refusal.find("kf.iota makes a tensor of L elements"),
            std::string::npos)
      << refusal;
}

TEST(RuntimeDims, ANameThatIsNoDimIsAnError) {
  Graph g = cacheAttention("runtime_keys_bad_name", "L");
  Expected<Executable> exe = compileDynamic(g, {"S"});
  ASSERT_FALSE(exe);
  EXPECT_NE(exe.error().message().find("'S'"), std::string::npos)
      << exe.error().message();
}

} // namespace
