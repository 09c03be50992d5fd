//===- CompilerTest.cpp - staged compiles, determinism, argument checks ---===//
//
// Runs without a GPU. Where a GPU is present, the tests that expect "no
// GPU" errors skip themselves (the GPU suite covers running).
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

using namespace kfuse;

namespace {

CompileOptions noDiskCache(Fusion fusion = Fusion::Fused) {
  CompileOptions options;
  options.diskCache = false;
  options.fusion = fusion;
  return options;
}

Graph biasGelu() {
  Graph g("bias_gelu");
  Tensor x = g.input("x", DType::f32, {"M", 64});
  Tensor b = g.input("b", DType::f32, {64});
  g.output("y", gelu(x + b) * 2.0);
  return g;
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(Compiler, EveryStageCanBePrinted) {
  Expected<Executable> exe = Compiler(noDiskCache()).compile(biasGelu());
  ASSERT_TRUE(exe) << exe.error().message();
  std::vector<std::vector<int64_t>> shapes = {{128, 64}, {64}};
  Expected<std::string> graph = exe->dump(Stage::Graph, shapes);
  ASSERT_TRUE(graph) << graph.error().message();
  EXPECT_NE(graph->find("tensor<128x64xf32>"), std::string::npos);
  Expected<std::string> fused = exe->dump(Stage::Fused, shapes);
  ASSERT_TRUE(fused);
  EXPECT_EQ(count(*fused, "kf.kernel pointwise"), 1u) << *fused;
  Expected<std::string> gpu = exe->dump(Stage::GPU, shapes);
  ASSERT_TRUE(gpu);
  EXPECT_NE(gpu->find("gpu.func @k0_pointwise"), std::string::npos);
  Expected<std::string> llvm = exe->dump(Stage::LLVM, shapes);
  ASSERT_TRUE(llvm);
  EXPECT_NE(llvm->find("define ptx_kernel void @k0_pointwise"),
            std::string::npos);
  Expected<std::string> ptx = exe->dump(Stage::PTX, shapes);
  ASSERT_TRUE(ptx);
  EXPECT_NE(ptx->find(".visible .entry k0_pointwise"), std::string::npos);
}

TEST(Compiler, UnfusedHasOneKernelPerOp) {
  Expected<Executable> exe =
      Compiler(noDiskCache(Fusion::Unfused)).compile(biasGelu());
  ASSERT_TRUE(exe);
  Expected<std::vector<KernelReport>> kernels =
      exe->kernels({{128, 64}, {64}});
  ASSERT_TRUE(kernels) << kernels.error().message();
  // broadcast(b), add, gelu, broadcast(2.0) folded to a constant, mul.
  EXPECT_EQ(kernels->size(), 4u);
  for (const KernelReport &k : *kernels) {
    EXPECT_EQ(k.block, 256u);
    EXPECT_EQ(k.grid, 8u); // 128 * 64 elements, 4 a thread, 256 a block
  }
}

TEST(Compiler, CompilesAreDeterministic) {
  Graph g = biasGelu();
  std::vector<std::vector<int64_t>> shapes = {{1000, 64}, {64}};
  Expected<Executable> a = Compiler(noDiskCache()).compile(g);
  Expected<Executable> b = Compiler(noDiskCache()).compile(g);
  ASSERT_TRUE(a && b);
  Expected<std::string> ptxA = a->dump(Stage::PTX, shapes);
  Expected<std::string> ptxB = b->dump(Stage::PTX, shapes);
  ASSERT_TRUE(ptxA && ptxB);
  EXPECT_EQ(*ptxA, *ptxB);
}

// The kernels of one graph lower and compile on threads of their own; their
// PTX is joined in kernel order, whatever the threads' timing, also when
// several graphs compile at once.
TEST(Compiler, KernelsCompiledInParallelJoinInOrder) {
  std::vector<std::vector<int64_t>> shapes = {{1000, 64}, {64}};
  auto ptxOf = [&] {
    Expected<Executable> exe =
        Compiler(noDiskCache(Fusion::Unfused)).compile(biasGelu());
    if (!exe)
      return exe.error().message();
    Expected<std::string> ptx = exe->dump(Stage::PTX, shapes);
    return ptx ? *ptx : ptx.error().message();
  };
  std::string first = ptxOf();
  size_t previous = 0;
  for (const char *kernel : {".entry k0_", ".entry k1_", ".entry k2_",
                             ".entry k3_"}) {
    size_t at = first.find(kernel);
    ASSERT_NE(at, std::string::npos) << kernel << " missing:\n" << first;
    EXPECT_GT(at, previous) << kernel << " out of order";
    previous = at;
  }
  std::vector<std::string> concurrent(4);
  std::vector<std::thread> threads;
  for (std::string &ptx : concurrent)
    threads.emplace_back([&] { ptx = ptxOf(); });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &ptx : concurrent)
    EXPECT_EQ(ptx, first);
}

TEST(Compiler, RejectsBadGraphsAndShapes) {
  Graph bad;
  matmul(bad.input("a", DType::f32, {2, 3}), bad.input("b", DType::f32, {4, 5}));
  Expected<Executable> exe = Compiler(noDiskCache()).compile(bad);
  ASSERT_FALSE(exe);
  EXPECT_EQ(exe.error().message(),
            "matmul: inner dimensions differ: a is 2x3, b is 4x5");

  Graph empty;
  empty.input("x", DType::f32, {4});
  Expected<Executable> noOutputs = Compiler(noDiskCache()).compile(empty);
  ASSERT_FALSE(noOutputs);
  EXPECT_EQ(noOutputs.error().message(), "compile: the graph has no outputs");

  Graph zero;
  zero.output("y", exp(zero.input("x", DType::f32, {4, 0})));
  Expected<Executable> zeroSize = Compiler(noDiskCache()).compile(zero);
  ASSERT_FALSE(zeroSize);
  EXPECT_NE(zeroSize.error().message().find(
                "input 'x' is 'tensor<4x0xf32>': tensors with a zero-size "
                "dim are not supported"),
            std::string::npos)
      << zeroSize.error().message();

  Expected<Executable> sym = Compiler(noDiskCache()).compile(biasGelu());
  ASSERT_TRUE(sym);
  Expected<std::string> noShapes = sym->dump(Stage::PTX);
  ASSERT_FALSE(noShapes);
  EXPECT_EQ(noShapes.error().message(),
            "input 'x' is Mx64: give the shapes to specialise for");
  Expected<std::string> huge =
      sym->dump(Stage::PTX, {{int64_t(1) << 60, 64}, {64}});
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().message(),
            "input 'x' has shape 1152921504606846976x64: more bytes than 64 "
            "bits can count");
  Expected<std::string> wrong = sym->dump(Stage::PTX, {{4, 65}, {64}});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message(),
            "input 'x' has shape 4x65 but the graph declares Mx64");
}

/// Argument checks happen before the driver is touched, so they work on a
/// machine without a GPU, and nothing is launched.
TEST(Compiler, RunChecksArgumentsFirst) {
  Graph g("args");
  Tensor x = g.input("x", DType::f32, {"M", 4});
  Tensor y = g.input("y", DType::f32, {"M"});
  g.output("z", x * reshape(y, {"M", 1}));
  Expected<Executable> exe = Compiler(noDiskCache()).compile(g);
  ASSERT_TRUE(exe);
  alignas(16) static float fake[64];
  DeviceTensor xt{fake, DType::f32, {8, 4}}, yt{fake, DType::f32, {8}},
      zt{fake, DType::f32, {8, 4}};
  auto message = [&](std::initializer_list<DeviceTensor> in,
                     std::initializer_list<DeviceTensor> out) {
    Status s = exe->run(in, out);
    return s ? std::string("ok") : s.message();
  };
  EXPECT_EQ(message({xt}, {zt}),
            "run: the graph takes 2 inputs and 1 outputs, got 1 and 1");
  EXPECT_EQ(message({{fake, DType::f16, {8, 4}}, yt}, {zt}),
            "run: input 'x' is f16 but the graph takes f32");
  EXPECT_EQ(message({xt, {fake, DType::f32, {9}}}, {zt}),
            "symbolic dim 'M' is 8 in input 'x' but 9 in input 'y'");
  EXPECT_EQ(message({xt, yt}, {{fake, DType::f32, {8, 5}}}),
            "run: output 'z' has shape 8x5 but the graph gives 8x4");
  EXPECT_EQ(message({{nullptr, DType::f32, {8, 4}}, yt}, {zt}),
            "run: input 'x' is a null pointer");
  EXPECT_EQ(message({xt, yt},
                    {{reinterpret_cast<char *>(fake) + 2, DType::f32, {8, 4}}}),
            "run: output 'z' is misaligned: f32 data needs 4-byte alignment");
  EXPECT_EQ(message({{fake, DType::f32, {1, 2, 3, 4, 5, 6, 7, 8, 9}}, yt},
                    {zt}),
            "run: input 'x' has more than 8 dims");
  if (device())
    return; // with a GPU, valid arguments would launch on these fake pointers
  std::string noGpu = message({xt, yt}, {zt});
  EXPECT_TRUE(noGpu.find("no CUDA driver") == 0 || noGpu.find("no GPU") == 0 ||
              noGpu.find("no usable GPU") == 0)
      << noGpu;
}

TEST(Compiler, RunOnHostWithoutGPUSaysSo) {
  if (device())
    GTEST_SKIP() << "a GPU is present; the GPU suite runs graphs";
  Graph g = biasGelu();
  Expected<Executable> exe = Compiler(noDiskCache()).compile(g);
  ASSERT_TRUE(exe);
  auto out = exe->runOnHost({HostTensor::random(DType::f32, {4, 64}, 1),
                             HostTensor::random(DType::f32, {64}, 2)});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), ErrorCode::NoDevice) << out.error().message();
}

/// The dump directory is created with every missing level above it.
TEST(Compiler, DumpDirectoryGetsEveryStage) {
  std::string dir = ::testing::TempDir() + "kfuse-dumps-" +
                    std::to_string(::getpid());
  CompileOptions options = noDiskCache();
  options.dumpDir = dir + "/missing/levels";
  Graph g("dumped");
  g.output("y", exp(g.input("x", DType::f32, {32})));
  ASSERT_TRUE(Compiler(options).compile(g));
  size_t files = 0;
  for (auto &entry : std::filesystem::recursive_directory_iterator(dir))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 5u); // graph, fused, gpu, llvm, ptx
  std::filesystem::remove_all(dir);
}

} // namespace

namespace {

/// The gpu and LLVM stages are printed only when a compile dumps to a
/// directory; asked for later, they come from compiling again, and equal
/// what the dumping compile wrote.
TEST(Compiler, LateStagesAreCompiledAgainWhenAskedFor) {
  Graph g("late_stages");
  Tensor x = g.input("x", DType::f32, {64, 96});
  g.output("y", softmax(x * 0.5) + x);
  Expected<Executable> plain = Compiler(noDiskCache()).compile(g);
  ASSERT_TRUE(plain) << plain.error().message();
  std::string dir = ::testing::TempDir() + "kfuse-late-" +
                    std::to_string(::getpid());
  CompileOptions dumping = noDiskCache();
  dumping.dumpDir = dir;
  Expected<Executable> dumped = Compiler(dumping).compile(g);
  ASSERT_TRUE(dumped) << dumped.error().message();
  for (Stage stage : {Stage::Graph, Stage::Fused, Stage::GPU, Stage::LLVM,
                      Stage::PTX}) {
    Expected<std::string> a = plain->dump(stage), b = dumped->dump(stage);
    ASSERT_TRUE(a) << a.error().message();
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_FALSE(a->empty());
    EXPECT_EQ(*a, *b) << "stage " << int(stage);
  }
  Expected<std::string> llvm = plain->dump(Stage::LLVM);
  ASSERT_TRUE(llvm);
  EXPECT_NE(llvm->find("define ptx_kernel"), std::string::npos) << *llvm;
  Expected<std::string> gpu = plain->dump(Stage::GPU);
  ASSERT_TRUE(gpu);
  EXPECT_NE(gpu->find("gpu.module"), std::string::npos) << *gpu;
  std::filesystem::remove_all(dir);
}

} // namespace

/// A decode step's attention: one query row for each of 32 heads over a
/// cache of 4096 keys on 8 kv heads, heads merged after it.
Graph decodeAttention() {
  Graph g("decode_attention");
  Tensor q = g.input("q", DType::bf16, {1, 32, 1, 128});
  Tensor k = g.input("k", DType::bf16, {1, 8, 4096, 128});
  Tensor v = g.input("v", DType::bf16, {1, 8, 4096, 128});
  g.output("o", reshape(transpose(attention(q, k, v), {0, 2, 1, 3}),
                        {1, 1, 4096}));
  return g;
}

TEST(Compiler, SplitKeysRunsFewQueryTilesOverChunksOfKeys) {
  CompileOptions options = noDiskCache();
  EXPECT_TRUE(options.splitKeys) << "on by default";
  options.splitKeys = false;
  Expected<Executable> whole = Compiler(options).compile(decodeAttention());
  options.splitKeys = true;
  Expected<Executable> split = Compiler(options).compile(decodeAttention());
  ASSERT_TRUE(whole && split);
  Expected<std::vector<KernelReport>> one = whole->kernels();
  Expected<std::vector<KernelReport>> two = split->kernels();
  ASSERT_TRUE(one && two);
  // Off: one block a head. On: 4 chunks of 1024 keys a head (132 SMs),
  // then one row kernel combining them into the merged heads.
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().grid, 32u);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].grid, 128u);
  Expected<std::string> fused = split->dump(Stage::Fused);
  ASSERT_TRUE(fused);
  EXPECT_EQ(count(*fused, "kf.kernel attention"), 1u) << *fused;
  EXPECT_EQ(count(*fused, "kf.kernel reduction"), 1u) << *fused;
  EXPECT_NE(fused->find("tensor<1x32x1024x128xbf16>"), std::string::npos);
}

/// A Linear's weight gradient with its operands as [B, S, .] activations
/// (`views`: reshaped in the graph) or as the [B * S, .] matrices they
/// regroup into.
Graph weightGradient(bool views) {
  Graph g("weight_grad");
  MatmulOptions o;
  o.transposeA = true;
  Tensor x = views ? reshape(g.input("x", DType::bf16, {4, 1024, 512}),
                             {4096, 512})
                   : g.input("x", DType::bf16, {4096, 512});
  Tensor dy = views ? reshape(g.input("dy", DType::bf16, {4, 1024, 768}),
                              {4096, 768})
                    : g.input("dy", DType::bf16, {4096, 768});
  g.output("dw", matmul(x, dy, o));
  return g;
}

TEST(Compiler, MatmulReadsReshapedOperandsInPlace) {
  Expected<Executable> viewed =
      Compiler(noDiskCache()).compile(weightGradient(true));
  Expected<Executable> flat =
      Compiler(noDiskCache()).compile(weightGradient(false));
  ASSERT_TRUE(viewed && flat);
  // No copy kernel for either reshape: the matmul kernel (and the kernel
  // summing its split K, if any) read the activations' rows in place,
  // with the code that reads the flat matrices.
  Expected<std::vector<KernelReport>> kernels = viewed->kernels();
  Expected<std::vector<KernelReport>> flatKernels = flat->kernels();
  ASSERT_TRUE(kernels && flatKernels);
  EXPECT_EQ(kernels->size(), flatKernels->size());
  Expected<std::string> fused = viewed->dump(Stage::Fused);
  ASSERT_TRUE(fused);
  EXPECT_EQ(count(*fused, "kf.kernel pointwise"), 0u) << *fused;
  Expected<std::string> ptx = viewed->dump(Stage::PTX);
  Expected<std::string> flatPtx = flat->dump(Stage::PTX);
  ASSERT_TRUE(ptx && flatPtx);
  EXPECT_EQ(*ptx, *flatPtx);
}

TEST(Compiler, WideHeadAttentionBackwardIsFlashWithKeyBlocksApart) {
  // Head dim 256: FlashAttention's backward, no S x S scores. dk's and
  // dv's accumulators do not fit a thread's registers together, so each
  // has blocks of its own: 2 x 16 blocks of 128 keys (2 kv heads of 1024),
  // then 32 of 128 query rows (4 heads).
  Graph g("attention_d256");
  AttentionOptions o;
  o.causal = true;
  g.output("o", attention(g.input("q", DType::bf16, {1, 4, 1024, 256}),
                          g.input("k", DType::bf16, {1, 2, 1024, 256}),
                          g.input("v", DType::bf16, {1, 2, 1024, 256}), o));
  Expected<TrainingGraphs> split = splitVJP(g);
  ASSERT_TRUE(split) << split.error().message();
  Expected<Executable> backward =
      Compiler(noDiskCache()).compile(split->backward);
  ASSERT_TRUE(backward) << backward.error().message();
  Expected<std::string> fused = backward->dump(Stage::Fused);
  ASSERT_TRUE(fused) << fused.error().message();
  EXPECT_EQ(count(*fused, "kf.kernel attention_grad"), 1u) << *fused;
  EXPECT_NE(fused->find("splitKeyBlocks = true"), std::string::npos) << *fused;
  EXPECT_EQ(fused->find("x1024x1024x"), std::string::npos) << *fused;
  Expected<std::vector<KernelReport>> kernels = backward->kernels();
  ASSERT_TRUE(kernels) << kernels.error().message();
  auto grad =
      std::find_if(kernels->begin(), kernels->end(), [](const KernelReport &k) {
        return k.name.find("attention_grad") != std::string::npos;
      });
  ASSERT_NE(grad, kernels->end());
  EXPECT_EQ(grad->grid, 2u * 16 + 32);
}
