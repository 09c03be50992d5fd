//===- CacheTest.cpp - plans, the disk cache, corrupt entries -------------===//

#include "compiler/CompileGraph.h"
#include "kfuse/kfuse.h"
#include "runtime/DiskCache.h"
#include "runtime/Module.h"
#include "runtime/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <sys/stat.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>

using namespace kfuse;
using namespace kfuse::runtime;

namespace {

Plan samplePlan() {
  Plan p;
  p.buffers = {{BufferRole::Input, 0, DType::bf16, {4, 8}, 64},
               {BufferRole::Output, 0, DType::f32, {4}, 16},
               {BufferRole::Temp, 0, DType::i1, {}, 1}};
  p.launches = {{"k0_pointwise", 1, 256, 0, {0, 2}, {}, {}, 32},
                {"k1_reduction", 2, 128, 64, {2, 1}, {{0, 1}}, {}, 4}};
  TensorMapDesc map;
  map.buffer = 0;
  map.rank = 2;
  map.dims[0] = 8;
  map.dims[1] = 4;
  map.strides[0] = 16;
  map.box[0] = 8;
  map.box[1] = 3;
  TensorMapDesc rows = map; // [slices][rows][cols], rows from the extent
  rows.rank = 3;
  rows.dims[2] = 2;
  rows.strides[1] = 64;
  rows.box[2] = 1;
  rows.rowsExtent = 0;
  p.launches[1].tensorMaps = {map, rows};
  p.zeroes = {{1, 1}};
  p.copies = {{1, 0}};
  p.inPlace = {{0, 1}};
  p.ptx = ".version 8.0\n.target sm_90\n";
  p.cubin = std::string("\x7f" "ELF\0\x01\n binary", 14);
  p.ptxasLog = "ptxas info : Used 8 registers";
  p.dumps = {{"graph", "module {\n}\n"}, {"llvm", ""}};
  return p;
}

void expectEqual(const Plan &a, const Plan &b) {
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    EXPECT_EQ(a.buffers[i].role, b.buffers[i].role);
    EXPECT_EQ(a.buffers[i].dtype, b.buffers[i].dtype);
    EXPECT_EQ(a.buffers[i].shape, b.buffers[i].shape);
    EXPECT_EQ(a.buffers[i].bytes, b.buffers[i].bytes);
  }
  ASSERT_EQ(a.launches.size(), b.launches.size());
  for (size_t i = 0; i < a.launches.size(); ++i) {
    EXPECT_EQ(a.launches[i].kernel, b.launches[i].kernel);
    EXPECT_EQ(a.launches[i].grid, b.launches[i].grid);
    EXPECT_EQ(a.launches[i].sharedBytes, b.launches[i].sharedBytes);
    EXPECT_EQ(a.launches[i].buffers, b.launches[i].buffers);
    EXPECT_EQ(a.launches[i].flops, b.launches[i].flops);
    ASSERT_EQ(a.launches[i].extents.size(), b.launches[i].extents.size());
    for (size_t e = 0; e < a.launches[i].extents.size(); ++e) {
      EXPECT_EQ(a.launches[i].extents[e].buffer,
                b.launches[i].extents[e].buffer);
      EXPECT_EQ(a.launches[i].extents[e].dim, b.launches[i].extents[e].dim);
    }
    ASSERT_EQ(a.launches[i].tensorMaps.size(), b.launches[i].tensorMaps.size());
    for (size_t m = 0; m < a.launches[i].tensorMaps.size(); ++m) {
      const TensorMapDesc &x = a.launches[i].tensorMaps[m],
                          &y = b.launches[i].tensorMaps[m];
      EXPECT_EQ(x.buffer, y.buffer);
      EXPECT_EQ(x.rowsExtent, y.rowsExtent);
      ASSERT_EQ(x.rank, y.rank);
      for (uint32_t d = 0; d < x.rank; ++d) {
        EXPECT_EQ(x.dims[d], y.dims[d]);
        EXPECT_EQ(x.box[d], y.box[d]);
      }
      EXPECT_EQ(x.strides[0], y.strides[0]);
    }
  }
  EXPECT_EQ(a.copies.size(), b.copies.size());
  ASSERT_EQ(a.zeroes.size(), b.zeroes.size());
  for (size_t i = 0; i < a.zeroes.size(); ++i) {
    EXPECT_EQ(a.zeroes[i].launch, b.zeroes[i].launch);
    EXPECT_EQ(a.zeroes[i].buffer, b.zeroes[i].buffer);
  }
  ASSERT_EQ(a.inPlace.size(), b.inPlace.size());
  for (size_t i = 0; i < a.inPlace.size(); ++i)
    EXPECT_TRUE(b.allowsInPlace(a.inPlace[i].input, a.inPlace[i].output));
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.ptxasLog, b.ptxasLog);
  EXPECT_EQ(a.dumps, b.dumps);
}

// A rebuild of the same version must not load kernels the previous build
// compiled: the build ID is part of the key, so it must exist.
TEST(CacheKey, NamesTheCompilersBuild) {
  std::string id = kfuse::compilerBuildId();
  EXPECT_GE(id.size(), 16u) << "no GNU build ID in libkfuse";
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
}

TEST(Plan, RoundTrips) {
  Plan p = samplePlan();
  std::optional<Plan> back = Plan::deserialize(p.serialize());
  ASSERT_TRUE(back);
  expectEqual(p, *back);
}

TEST(Plan, RejectsEveryTruncation) {
  std::string text = samplePlan().serialize();
  for (size_t n = 0; n < text.size(); ++n)
    EXPECT_FALSE(Plan::deserialize(std::string_view(text).substr(0, n)))
        << "accepted " << n << " of " << text.size() << " bytes";
}

TEST(Plan, RejectsCorruptFields) {
  std::string text = samplePlan().serialize();
  auto corrupt = [&](const std::string &from, const std::string &to) {
    std::string bad = text;
    size_t at = bad.find(from);
    if (at == std::string::npos) {
      ADD_FAILURE() << "no '" << from << "' in the plan";
      return true;
    }
    bad.replace(at, from.size(), to);
    return Plan::deserialize(bad).has_value();
  };
  EXPECT_FALSE(corrupt("bf16", "f64"));           // unknown dtype
  EXPECT_FALSE(corrupt("b 0 0", "b 7 0"));        // unknown role
  EXPECT_FALSE(corrupt(" 0 2 0 0\n", " 0 9 0 0\n")); // buffer out of range
  std::string ptxSize = std::to_string(samplePlan().ptx.size());
  EXPECT_FALSE(corrupt("blob ptx " + ptxSize,
                       "blob ptx " + ptxSize + "1")); // wrong length
  EXPECT_FALSE(corrupt("launches 2", "launches 3"));
  EXPECT_FALSE(corrupt("kfuse-plan 6", "kfuse-plan 5"));
  EXPECT_FALSE(corrupt("z 1 1", "z 2 1"));         // zeroed before no launch
  EXPECT_FALSE(corrupt("z 1 1", "z 1 3"));         // zeroes no buffer
  EXPECT_FALSE(corrupt("i 0 1", "i 0 7"));         // in place on no buffer
  EXPECT_FALSE(corrupt("m 0 2 -1 8 8", "m 0 2 -1 8 0")); // an empty box
  EXPECT_FALSE(corrupt("m 0 2", "m 5 2"));         // map of no buffer
  EXPECT_FALSE(corrupt("m 0 2", "m 0 4"));         // rank past 3
  EXPECT_FALSE(corrupt(" 1 0 1 2\n", " 1 1 0 2\n")); // extent of an output
  EXPECT_FALSE(corrupt(" 1 0 1 2\n", " 1 0 2 2\n")); // dim past the rank
  EXPECT_FALSE(corrupt("m 0 3 0", "m 0 3 1"));     // rows of no extent
  EXPECT_FALSE(corrupt("m 0 2 -1", "m 0 2 0"));    // rows of a 2-d map
}

/// The (input, output) buffer pairs a graph's plan lets share memory.
std::vector<std::pair<uint32_t, uint32_t>>
inPlacePairs(const std::function<void(Graph &)> &build) {
  Graph g("in_place");
  build(g);
  Expected<std::string> text = g.toMLIR();
  EXPECT_TRUE(text);
  if (!text)
    return {};
  compiler::CompileRequest request;
  request.graphText = *text;
  request.stopAfter = Stage::GPU;
  Expected<Plan> plan = compiler::compileGraph(request);
  EXPECT_TRUE(plan) << plan.error().message();
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  if (plan)
    for (const InPlaceDesc &p : plan->inPlace)
      pairs.push_back({p.input, p.output});
  return pairs;
}

/// Attention's backward compiled with and without `deterministic`: only
/// without does its plan zero a buffer, the f32 dq its launch adds into.
TEST(Plan, ZeroesWhatAKernelAddsInto) {
  Graph forward("attention");
  Tensor q = forward.input("q", DType::bf16, {1, 2, 200, 64});
  Tensor k = forward.input("k", DType::bf16, {1, 2, 200, 64});
  Tensor v = forward.input("v", DType::bf16, {1, 2, 200, 64});
  AttentionOptions o;
  o.causal = true;
  forward.output("o", attention(q, k, v, o));
  Expected<Graph> joint = vjp(forward);
  ASSERT_TRUE(joint) << joint.error().message();
  Expected<std::string> text = joint->toMLIR();
  ASSERT_TRUE(text) << text.error().message();
  for (bool deterministic : {true, false}) {
    compiler::CompileRequest request;
    request.graphText = *text;
    request.stopAfter = Stage::GPU;
    request.deterministic = deterministic;
    Expected<Plan> plan = compiler::compileGraph(request);
    ASSERT_TRUE(plan) << plan.error().message();
    if (deterministic) {
      EXPECT_TRUE(plan->zeroes.empty());
      continue;
    }
    ASSERT_EQ(plan->zeroes.size(), 1u);
    const ZeroDesc &z = plan->zeroes[0];
    ASSERT_LT(z.launch, plan->launches.size());
    const LaunchDesc &launch = plan->launches[z.launch];
    EXPECT_NE(launch.kernel.find("attention_grad"), std::string::npos)
        << launch.kernel;
    EXPECT_NE(std::find(launch.buffers.begin(), launch.buffers.end(),
                        z.buffer),
              launch.buffers.end());
    const BufferDesc &dq = plan->buffers[z.buffer];
    EXPECT_EQ(dq.role, BufferRole::Temp);
    EXPECT_EQ(dq.dtype, DType::f32);
    EXPECT_EQ(dq.shape, (std::vector<int64_t>{1, 2, 200, 64}));
  }
}

/// Only a lone pointwise kernel's streamed inputs may share memory with
/// its outputs of the same element size; run() computes any other overlap
/// through a temporary (tests/gpu/RuntimeTest.cpp runs them).
TEST(Plan, RecordsWhichOutputsMayShareAnInputsBuffer) {
  using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;
  EXPECT_EQ(inPlacePairs([](Graph &g) {
              Tensor x = g.input("x", DType::f32, {64, 100});
              Tensor w = g.input("w", DType::f32, {64, 100});
              g.output("y", exp(x) * 0.5 + x * w);
            }),
            (Pairs{{0, 2}, {1, 2}}));
  EXPECT_EQ(inPlacePairs([](Graph &g) { // a broadcast row is not streamed
              Tensor x = g.input("x", DType::f32, {64, 100});
              g.output("y", x + g.input("row", DType::f32, {100}));
            }),
            (Pairs{{0, 2}}));
  EXPECT_EQ(inPlacePairs([](Graph &g) { // 4-byte inputs, 2-byte outputs
              g.output("y", cast(g.input("x", DType::f32, {4096}), DType::bf16));
            }),
            Pairs{});
  EXPECT_EQ(inPlacePairs([](Graph &g) {
              Tensor x = g.input("x", DType::f32, {256, 256});
              g.output("y", transpose(x, {1, 0}) + x);
            }),
            Pairs{});
  EXPECT_EQ(inPlacePairs([](Graph &g) {
              g.output("y", softmax(g.input("x", DType::f32, {64, 100})));
            }),
            Pairs{});
  EXPECT_EQ(inPlacePairs([](Graph &g) { // a copy reads x after the kernel
              Tensor x = g.input("x", DType::f32, {4096});
              g.output("same", x);
              g.output("y", x * 2.0);
            }),
            Pairs{});
}

/// Tensor map `m` reads buffer `buffer` as `dims` (innermost first, as
/// many as its rank) in boxes of `box`, dims 1 and up `strides` bytes
/// apart.
static void expectMap(const TensorMapDesc &m, uint32_t buffer,
                      std::vector<uint64_t> dims, std::vector<uint32_t> box,
                      std::vector<uint64_t> strides) {
  EXPECT_EQ(m.buffer, buffer);
  ASSERT_EQ(m.rank, dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    SCOPED_TRACE("dim " + std::to_string(d));
    EXPECT_EQ(m.dims[d], dims[d]);
    EXPECT_EQ(m.box[d], box[d]);
    if (d > 0)
      EXPECT_EQ(m.strides[d - 1], strides[d - 1]);
  }
}

/// Compiles `graph` into `plan`, which must be one warp-specialised
/// (384-thread) launch.
static void compileWarpSpecialised(const char *graph, Plan &plan) {
  compiler::CompileRequest request;
  request.graphText = graph;
  Expected<Plan> compiled = compiler::compileGraph(request);
  ASSERT_TRUE(compiled) << compiled.error().message();
  ASSERT_EQ(compiled->launches.size(), 1u);
  EXPECT_EQ(compiled->launches[0].block, 384u);
  plan = std::move(*compiled);
}

/// The TMA tensor maps a warp-specialised matmul's launch carries: what
/// the kernel's copies assume (innermost dim first, the box one copy
/// moves, byte strides) must be what the runtime encodes.
TEST(Plan, WarpSpecialisedMatmulCarriesTensorMaps) {
  Plan plan;
  ASSERT_NO_FATAL_FAILURE(compileWarpSpecialised(R"(
func.func @mm(%a: tensor<3x64x256xbf16> {kf.name = "a"},
              %b: tensor<512x64xbf16> {kf.name = "b"})
    -> (tensor<3x256x512xbf16> {kf.name = "y"}) {
  %y = kf.matmul %a, %b {transpose_a = true, transpose_b = true}
      : tensor<3x64x256xbf16>, tensor<512x64xbf16> -> tensor<3x256x512xbf16>
  return %y : tensor<3x256x512xbf16>
})",
                                                 plan));
  const LaunchDesc &launch = plan.launches[0];
  ASSERT_EQ(launch.tensorMaps.size(), 2u) << plan.dumps["fused"];
  // A: [3, K = 64, M = 256], M contiguous (transposed): 64-column boxes
  // of the K step's 64 rows, batches 64 rows apart.
  expectMap(launch.tensorMaps[0], 0, {256, 64, 3}, {64, 64, 1},
            {256 * 2, 64 * 256 * 2});
  // B: [N = 512, K = 64], shared by the batches: 2-d, K contiguous, one
  // box of the tile's N rows.
  const TensorMapDesc &b = launch.tensorMaps[1];
  expectMap(b, 1, {64, 512}, {64, b.box[1]}, {64 * 2});
  EXPECT_GE(b.box[1], 32u);
}

/// Interleaved output rows (N = 1001 f16, 8 groups): A's map views its 1024
/// rows as [128 rows of each group][8 groups][K], and a box is one row of
/// each of 128 groups apart by 8 rows, i.e. one group's tile rows.
TEST(Plan, InterleavedRowsReadAThroughA3dMap) {
  Plan plan;
  ASSERT_NO_FATAL_FAILURE(compileWarpSpecialised(R"(
func.func @mm(%a: tensor<1024x128xf16> {kf.name = "a"},
              %b: tensor<1001x128xf16> {kf.name = "b"})
    -> (tensor<1024x1001xf16> {kf.name = "y"}) {
  %y = kf.matmul %a, %b {transpose_b = true}
      : tensor<1024x128xf16>, tensor<1001x128xf16> -> tensor<1024x1001xf16>
  return %y : tensor<1024x1001xf16>
})",
                                                 plan));
  const LaunchDesc &launch = plan.launches[0];
  ASSERT_EQ(launch.tensorMaps.size(), 2u) << plan.dumps["fused"];
  ASSERT_NE(plan.dumps["fused"].find("rowGroups = 8"), std::string::npos)
      << plan.dumps["fused"];
  expectMap(launch.tensorMaps[0], 0, {128, 8, 128}, {64, 1, 128},
            {128 * 2, 8 * 128 * 2});
  const TensorMapDesc &b = launch.tensorMaps[1];
  expectMap(b, 1, {128, 1001}, {64, b.box[1]}, {128 * 2});
}

/// A warp-specialised attention's launch carries Q's, K's and V's maps:
/// [batch * heads, rows, head dim] (K and V with the KV heads), boxes of 64
/// head-dim columns (zeros past 96) by the block's 128 queries or the key
/// tile's 64 keys.
/// Warp-specialised kernels are assembled by the toolkit's ptxas (the
/// driver's JIT spilled the matmul's multiplying warpgroups): a cubin for
/// the PTX's target, with ptxas's report of no spills.
TEST(Plan, ToolkitPtxasAssemblesWarpSpecialisedKernels) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    GTEST_SKIP() << "no ptxas from the CUDA toolkit on this machine";
  Plan plan;
  ASSERT_NO_FATAL_FAILURE(compileWarpSpecialised(R"(
func.func @mm(%a: tensor<512x256xbf16> {kf.name = "a"},
              %b: tensor<256x1024xbf16> {kf.name = "b"},
              %bias: tensor<1024xbf16> {kf.name = "bias"})
    -> (tensor<512x1024xbf16> {kf.name = "y"}) {
  %c = kf.matmul %a, %b : tensor<512x256xbf16>, tensor<256x1024xbf16>
      -> tensor<512x1024xbf16>
  %bb = kf.broadcast %bias : tensor<1024xbf16> -> tensor<512x1024xbf16>
  %s = kf.add %c, %bb : tensor<512x1024xbf16>
  %y = kf.gelu %s : tensor<512x1024xbf16>
  return %y : tensor<512x1024xbf16>
})",
                                                 plan));
  ASSERT_NE(plan.ptx.find("setmaxnreg"), std::string::npos);
  ASSERT_TRUE(assembleWithPtxas(ptxas, plan)) << plan.ptx.substr(0, 400);
  ASSERT_GE(plan.cubin.size(), 4u);
  EXPECT_EQ(plan.cubin.substr(0, 4), "\x7f"
                                     "ELF");
  std::vector<KernelReport> reports = kernelReports(plan, nullptr);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_GT(reports[0].registers, 0) << plan.ptxasLog;
  EXPECT_EQ(reports[0].spillBytes, 0) << plan.ptxasLog;
  EXPECT_EQ(plan.ptxasLog.find("serialized"), std::string::npos)
      << plan.ptxasLog;

  // A PTX ptxas rejects leaves the plan as it was.
  Plan broken;
  broken.ptx = ".version 8.0\n.target sm_90a\nnot ptx";
  EXPECT_FALSE(assembleWithPtxas(ptxas, broken));
  EXPECT_TRUE(broken.cubin.empty());
}

TEST(Plan, WarpSpecialisedAttentionCarriesTensorMaps) {
  Plan plan;
  ASSERT_NO_FATAL_FAILURE(compileWarpSpecialised(R"(
func.func @attn(%q: tensor<2x4x300x96xbf16> {kf.name = "q"},
                %k: tensor<2x2x200x96xbf16> {kf.name = "k"},
                %v: tensor<2x2x200x64xbf16> {kf.name = "v"})
    -> (tensor<2x4x300x64xbf16> {kf.name = "o"}) {
  %o = kf.attention %q, %k, %v {causal = true, scale = 0.1 : f64}
      : tensor<2x4x300x96xbf16>, tensor<2x2x200x96xbf16>,
        tensor<2x2x200x64xbf16> -> tensor<2x4x300x64xbf16>
  return %o : tensor<2x4x300x64xbf16>
})",
                                                 plan));
  const LaunchDesc &launch = plan.launches[0];
  EXPECT_EQ(launch.grid, 2u * 4 * 3);
  ASSERT_EQ(launch.tensorMaps.size(), 3u) << plan.dumps["fused"];
  expectMap(launch.tensorMaps[0], 0, {96, 300, 8}, {64, 128, 1},
            {96 * 2, 300 * 96 * 2});
  expectMap(launch.tensorMaps[1], 1, {96, 200, 4}, {64, 64, 1},
            {96 * 2, 200 * 96 * 2});
  expectMap(launch.tensorMaps[2], 2, {64, 200, 4}, {64, 64, 1},
            {64 * 2, 200 * 64 * 2});
}

class DiskCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = ::testing::TempDir() + "kfuse-cache-test-" +
          std::to_string(::getpid()) + "/a/b";
  }
  void TearDown() override {
    std::filesystem::remove_all(dir.substr(0, dir.size() - 4));
  }
  std::string dir;
};

TEST_F(DiskCacheTest, StoresLoadsAndChecksTheKey) {
  DiskCache cache(dir);
  EXPECT_FALSE(cache.load("key one"));
  ASSERT_TRUE(cache.store("key one", samplePlan()));
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::optional<Plan> back = cache.load("key one");
  ASSERT_TRUE(back);
  // Everything but the stages' text, which stays off the disk.
  Plan expected = samplePlan();
  ASSERT_FALSE(expected.dumps.empty());
  expected.dumps.clear();
  expectEqual(expected, *back);

  // An entry under another key's name (a hash collision, or tampering).
  std::filesystem::copy_file(cache.pathFor("key one"),
                             cache.pathFor("key two"));
  bool rejected = false;
  EXPECT_FALSE(cache.load("key two", &rejected));
  EXPECT_TRUE(rejected);
}

TEST_F(DiskCacheTest, CorruptEntriesAreIgnoredAndReplaced) {
  DiskCache cache(dir);
  ASSERT_TRUE(cache.store("k", samplePlan()));
  std::string path = cache.pathFor("k");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  bool rejected = false;
  EXPECT_FALSE(cache.load("k", &rejected));
  EXPECT_TRUE(rejected);
  ASSERT_TRUE(cache.store("k", samplePlan()));
  EXPECT_TRUE(cache.load("k"));
  std::ofstream(path, std::ios::binary) << "garbage";
  EXPECT_FALSE(cache.load("k"));
  // No temporary files are left behind.
  size_t files = 0;
  for (auto &e : std::filesystem::directory_iterator(dir))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

/// A writer killed between creating its temporary file and renaming it
/// leaves the file behind: old ones go at the next process's first store.
TEST_F(DiskCacheTest, AbandonedTemporaryFilesAreSwept) {
  DiskCache cache(dir);
  ASSERT_TRUE(cache.store("first", samplePlan()));
  std::string old = cache.pathFor("gone") + ".tmp.999999.0";
  std::string fresh = cache.pathFor("busy") + ".tmp.999999.1";
  std::ofstream(old) << "half an entry";
  std::ofstream(fresh) << "a write in progress";
  struct timeval hourAgo[2] = {{time(nullptr) - 3600, 0},
                               {time(nullptr) - 3600, 0}};
  ASSERT_EQ(utimes(old.c_str(), hourAgo), 0);
  // This process swept `dir` at its first store; a new process would sweep
  // again. Another directory name for the same place stands in for it.
  DiskCache again(dir + "/.");
  ASSERT_TRUE(again.store("second", samplePlan()));
  EXPECT_FALSE(std::filesystem::exists(old));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_TRUE(cache.load("first") && cache.load("second"));
}

/// Entries are machine code that kfuse loads and runs, and their checksum
/// is no key: a cache directory that another user created, can write or
/// has pointed elsewhere is refused. An entry planted there, whole and
/// with a valid checksum, is never loaded, and nothing is stored there.
TEST_F(DiskCacheTest, RefusesDirectoriesThatAreNotTheUsersOwn) {
  DiskCache own(dir);
  ASSERT_TRUE(own.store("planted", samplePlan()));
  std::string base = dir.substr(0, dir.size() - 4);
  auto plantIn = [&](const std::string &other) {
    std::filesystem::create_directory(other);
    std::filesystem::copy_file(own.pathFor("planted"),
                               DiskCache(other).pathFor("planted"));
  };
  auto expectRefused = [&](const std::string &other, const std::string &why) {
    SCOPED_TRACE(other);
    DiskCache cache(other);
    EXPECT_FALSE(cache.load("planted"));
    Status stored = cache.store("new", samplePlan());
    ASSERT_FALSE(stored);
    EXPECT_NE(stored.message().find(why), std::string::npos) << stored.message();
    EXPECT_NE(stored.message().find("does not trust"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(cache.pathFor("new")));
  };
  std::string open = base + "/world-writable";
  plantIn(open);
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);
  expectRefused(open, "writable by other users (mode 0777)");
  std::string group = base + "/group-writable";
  plantIn(group);
  ASSERT_EQ(chmod(group.c_str(), 0770), 0);
  expectRefused(group, "writable by other users");
  // A link to the user's own directory is refused too: where it points
  // can change under the process.
  std::string link = base + "/link";
  std::filesystem::create_directory_symlink(dir, link);
  expectRefused(link, "is a symbolic link");
  if (geteuid() != 0) {
    std::cout << "[  NOTE    ] not root: the directory owned by another "
                 "user is not tested (chown needs root)\n";
    return;
  }
  std::string foreign = base + "/foreign";
  plantIn(foreign);
  ASSERT_EQ(chmod(foreign.c_str(), 0700), 0);
  ASSERT_EQ(chown(foreign.c_str(), 4242, 4242), 0);
  expectRefused(foreign, "owned by uid 4242");
}

/// A compile with an untrusted cache directory still compiles, and writes
/// nothing there.
TEST_F(DiskCacheTest, CompilerRunsWithoutAnUntrustedDirectory) {
  std::string base = dir.substr(0, dir.size() - 4);
  std::filesystem::create_directories(base + "/shared");
  ASSERT_EQ(chmod((base + "/shared").c_str(), 0777), 0);
  CompileOptions options;
  options.cacheDir = base + "/shared";
  Graph g("untrusted");
  g.output("y", sigmoid(g.input("x", DType::f32, {"N"})) - 2.0);
  CacheStats before = cacheStats();
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe);
  ASSERT_TRUE(exe->dump(Stage::PTX, {{777}}));
  EXPECT_EQ(cacheStats().compiles, before.compiles + 1);
  EXPECT_EQ(cacheStats().diskHits, before.diskHits);
  EXPECT_TRUE(std::filesystem::is_empty(base + "/shared"));
}

TEST_F(DiskCacheTest, CompilerUsesItAcrossInstances) {
  CompileOptions options;
  options.cacheDir = dir;
  Graph g("cached");
  g.output("y", tanh(g.input("x", DType::f32, {"N"})) + 1.0);
  CacheStats before = cacheStats();
  Expected<Executable> first = Compiler(options).compile(g);
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->dump(Stage::PTX, {{100}}));
  CacheStats afterFirst = cacheStats();
  EXPECT_EQ(afterFirst.compiles, before.compiles + 1);
  // Another Compiler in this process: found in memory.
  Expected<Executable> second = Compiler(options).compile(g);
  ASSERT_TRUE(second && second->dump(Stage::PTX, {{100}}));
  EXPECT_EQ(cacheStats().compiles, afterFirst.compiles);
  EXPECT_GT(cacheStats().memoryHits, afterFirst.memoryHits);
  // A new shape compiles again; the code-changing option fusion too.
  ASSERT_TRUE(second->dump(Stage::PTX, {{101}}));
  EXPECT_EQ(cacheStats().compiles, afterFirst.compiles + 1);
}

/// Concurrent compiles of one key: one compile, one plan for all.
TEST(MemoryCache, ConcurrentCallersCompileOnce) {
  Graph g("concurrent");
  g.output("y", sigmoid(g.input("x", DType::f32, {4099})) * 3.0);
  CompileOptions options;
  options.diskCache = false;
  uint64_t before = cacheStats().compiles;
  constexpr int kThreads = 16;
  std::vector<std::string> ptx(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Expected<Executable> exe = Compiler(options).compile(g);
      if (exe)
        if (Expected<std::string> text = exe->dump(Stage::PTX))
          ptx[t] = *text;
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(cacheStats().compiles - before, 1u);
  for (const std::string &text : ptx) {
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(text, ptx[0]);
  }
}

/// 32 threads compile and use a mix of shapes, half of them through one
/// shared Executable: each (shape) key compiles exactly once, every thread
/// sees the same PTX for it, and with a GPU every run matches the
/// evaluator.
TEST(MemoryCache, ThirtyTwoThreadsMixingShapesCompileEachKeyOnce) {
  Graph g("mixed_shapes");
  Tensor x = g.input("x", DType::f32, {"N"});
  g.output("y", exp(x) * 0.5 - x);
  CompileOptions options;
  options.diskCache = false;
  const std::vector<int64_t> sizes = {3, 97, 1024, 4099, 65537};
  uint64_t before = cacheStats().compiles;
  Expected<Executable> shared = Compiler(options).compile(g);
  ASSERT_TRUE(shared);
  bool gpu = bool(device());
  constexpr int kThreads = 32, kRounds = 20;
  std::vector<std::vector<std::string>> ptx(
      kThreads, std::vector<std::string>(sizes.size()));
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Expected<Executable> own = Compiler(options).compile(g);
      Executable &exe = t % 2 ? *shared : *own;
      for (int r = 0; r < kRounds && errors[t].empty(); ++r) {
        size_t s = size_t(t * 7 + r) % sizes.size();
        Expected<std::string> text = exe.dump(Stage::PTX, {{sizes[s]}});
        if (!text) {
          errors[t] = text.error().message();
          break;
        }
        ptx[t][s] = *text;
        if (!gpu)
          continue;
        HostTensor in = HostTensor::random(DType::f32, {sizes[s]}, t * 100 + r);
        Expected<std::vector<HostTensor>> out = exe.runOnHost({in});
        Expected<std::vector<HostTensor>> ref = evaluate(g, {in});
        if (!out || !ref || !(relativeError((*out)[0], (*ref)[0]) <= 1e-5))
          errors[t] = out ? "values differ from the evaluator"
                          : out.error().message();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    EXPECT_EQ(e, "");
  EXPECT_EQ(cacheStats().compiles - before, sizes.size());
  for (size_t s = 0; s < sizes.size(); ++s)
    for (int t = 0; t < kThreads; ++t)
      if (!ptx[t][s].empty())
        EXPECT_EQ(ptx[t][s], ptx[(s * 5) % kThreads][s]) << "size " << sizes[s];
}

} // namespace
