//===- PTXTest.cpp - every op's PTX is accepted by ptxas ------------------===//
//
// Runs without a GPU: each op case is compiled fused and unfused, for sm_90
// (and sm_80 for a few), and its PTX assembled by the toolkit's ptxas.
//
//===----------------------------------------------------------------------===//

#include "../common/OpCases.h"
#include "../../bench/WorkloadGraphs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace kfuse;

namespace {

bool havePtxas() { return access(KFUSE_PTXAS, X_OK) == 0; }

/// Runs ptxas (with `flags`) on `ptx`: its exit status and output.
std::pair<int, std::string> runPtxas(const std::string &ptx,
                                     const std::string &flags) {
  char dir[] = "/tmp/kfuse-ptx-XXXXXX";
  if (!mkdtemp(dir))
    return {-1, "cannot make a temporary directory"};
  std::string in = std::string(dir) + "/k.ptx", out = std::string(dir) + "/k.cubin",
              log = std::string(dir) + "/log";
  std::ofstream(in) << ptx;
  std::string command = std::string(KFUSE_PTXAS) +
                        " -arch=" + kfuse::ptxTarget(ptx) + " " + flags + " " +
                        in + " -o " + out + " > " + log + " 2>&1";
  int rc = std::system(command.c_str());
  std::ifstream logFile(log);
  std::string output(std::istreambuf_iterator<char>(logFile), {});
  std::system(("rm -rf " + std::string(dir)).c_str());
  return {rc, output};
}

/// Assembles `ptx` for `arch`; returns ptxas's output when it fails.
std::string assemble(const std::string &ptx, const std::string &arch) {
  auto [rc, output] = runPtxas(ptx, "");
  return rc == 0 ? std::string() : "ptxas failed:\n" + output;
}

class PTXTest : public ::testing::TestWithParam<kfuse::testing::OpCase> {};

TEST_P(PTXTest, AcceptedByPtxas) {
  if (!havePtxas())
    GTEST_SKIP() << "no ptxas at " << KFUSE_PTXAS;
  const kfuse::testing::OpCase &c = GetParam();
  Graph g(c.name);
  c.build(g);
  ASSERT_TRUE(g.status()) << g.status().message();
  for (Fusion fusion : {Fusion::Fused, Fusion::Unfused}) {
    CompileOptions options;
    options.fusion = fusion;
    options.diskCache = false;
    Expected<Executable> exe = Compiler(options).compile(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> ptx = exe->dump(Stage::PTX, c.shapes);
    ASSERT_TRUE(ptx) << ptx.error().message();
    EXPECT_NE(ptx->find(".target sm_90"), std::string::npos);
    EXPECT_EQ(assemble(*ptx, "sm_90"), "");
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, PTXTest, ::testing::ValuesIn(kfuse::testing::allOpCases()),
    [](const ::testing::TestParamInfo<kfuse::testing::OpCase> &info) {
      return info.param.name;
    });

TEST(PTX, OtherArchitectures) {
  if (!havePtxas())
    GTEST_SKIP() << "no ptxas at " << KFUSE_PTXAS;
  Graph g("arch");
  Tensor x = g.input("x", DType::bf16, {64, 33});
  g.output("y", softmax(gelu(x)) + reduceSum(x, {1}, true));
  for (const char *arch : {"sm_80", "sm_90"}) {
    CompileOptions options;
    options.arch = arch;
    options.diskCache = false;
    Expected<Executable> exe = Compiler(options).compile(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> ptx = exe->dump(Stage::PTX);
    ASSERT_TRUE(ptx);
    EXPECT_NE(ptx->find(std::string(".target ") + arch), std::string::npos);
    EXPECT_EQ(assemble(*ptx, arch), "") << arch;
  }
}

} // namespace

namespace {

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

/// Attention from primitives (the benchmark's graphs, smaller): fused, one
/// FlashAttention kernel that ptxas accepts, with HGMMA-bound wgmma in its
/// PTX; unfused, the scores in memory and no kf.attention.
TEST(PTX, AttentionFromPrimitivesIsOneFlashKernel) {
  if (!havePtxas())
    GTEST_SKIP() << "no ptxas at " << KFUSE_PTXAS;
  for (bench::AttentionShape s :
       {bench::AttentionShape{1, 4, 4, 256, 64, false},
        bench::AttentionShape{2, 4, 2, 320, 128, true}}) {
    Graph g = bench::attentionFromPrimitives("attention", s);
    ASSERT_TRUE(g.status()) << g.status().message();
    for (Fusion fusion : {Fusion::Fused, Fusion::Unfused}) {
      CompileOptions options;
      options.fusion = fusion;
      options.diskCache = false;
      Expected<Executable> exe = Compiler(options).compile(g);
      ASSERT_TRUE(exe) << exe.error().message();
      Expected<std::string> fused = exe->dump(Stage::Fused);
      ASSERT_TRUE(fused) << fused.error().message();
      if (fusion == Fusion::Unfused) {
        EXPECT_EQ(count(*fused, "kf.attention"), 0u) << *fused;
        continue;
      }
      EXPECT_EQ(count(*fused, "kf.kernel "), 1u) << *fused;
      EXPECT_EQ(count(*fused, "kf.kernel attention"), 1u) << *fused;
      EXPECT_NE(fused->find("#kf.flash_tiling"), std::string::npos) << *fused;
      Expected<std::string> ptx = exe->dump(Stage::PTX);
      ASSERT_TRUE(ptx) << ptx.error().message();
      EXPECT_NE(ptx->find("wgmma.mma_async"), std::string::npos);
      EXPECT_EQ(assemble(*ptx, "sm_90a"), "");
    }
  }
}

/// A Llama-style prefill block (bench/BlockGraphs.cpp, smaller: 4/2 heads
/// of 64): RoPE of q is computed by the attention kernel into its Q tile
/// (its concat of halves is in that kernel's body), in each layer of a
/// stack too, where the tables' broadcasts to the heads are shared by the
/// layers (kf-rematerialize copies them into each of their consumers'
/// kernels). One layer is 11 kernels; two are twice that.
/// ptxas keeps the attention's wgmmas asynchronous.
TEST(PTX, LlamaBlockRotatesQInTheAttentionKernel) {
  if (!havePtxas())
    GTEST_SKIP() << "no ptxas at " << KFUSE_PTXAS;
  for (int layers : {1, 2}) {
    Graph g = bench::llamaStack({2, 128, 256, 4, 2, 512}, layers);
    ASSERT_TRUE(g.status()) << g.status().message();
    Expected<Executable> exe = kfuse::testing::compileUncached(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> fused = exe->dump(Stage::Fused);
    ASSERT_TRUE(fused) << fused.error().message();
    EXPECT_EQ(count(*fused, "kf.kernel "), layers == 1 ? 11u : 22u) << *fused;
    size_t attentions = 0;
    for (size_t at = fused->find("kf.kernel attention");
         at != std::string::npos;
         at = fused->find("kf.kernel attention", at + 1)) {
      ++attentions;
      size_t end = fused->find("kf.kernel ", at + 1);
      std::string body = fused->substr(at, end - at);
      EXPECT_NE(body.find("kf.concat"), std::string::npos)
          << "q's RoPE is not in the attention kernel:\n"
          << body;
    }
    EXPECT_EQ(attentions, size_t(layers));
    if (layers > 1)
      continue;
    Expected<std::string> ptx = exe->dump(Stage::PTX);
    ASSERT_TRUE(ptx) << ptx.error().message();
    auto [rc, log] = runPtxas(*ptx, "-v");
    EXPECT_EQ(rc, 0) << log;
    EXPECT_EQ(log.find("C7511"), std::string::npos) << log;
    EXPECT_EQ(log.find("C7514"), std::string::npos) << log;
  }
}

} // namespace

namespace {

/// wgmma matmuls whose tiles overhang N or M (the lm-head's N = 50304 is
/// 196.5 tiles of 256): ptxas keeps their wgmmas asynchronous, without
/// C7514 ("wgmma.mma_async instructions are serialized due to non wgmma
/// instructions reading accumulator registers"), which zeros moved into
/// the accumulators and the epilogue's branches caused.
TEST(PTX, WgmmaMatmulsStayAsynchronous) {
  if (!havePtxas())
    GTEST_SKIP() << "no ptxas at " << KFUSE_PTXAS;
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{8192, 50304, 768}, Shape{8192, 50257, 768},
                  Shape{1000, 1000, 256}, Shape{16, 4096, 4096}}) {
    Graph g("lm_head");
    Tensor a = g.input("a", DType::bf16, {s.m, s.k});
    Tensor w = g.input("w", DType::bf16, {s.n, s.k});
    MatmulOptions transposed;
    transposed.transposeB = true;
    g.output("y", matmul(a, w, transposed));
    CompileOptions options;
    options.diskCache = false;
    Expected<Executable> exe = Compiler(options).compile(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> ptx = exe->dump(Stage::PTX);
    ASSERT_TRUE(ptx) << ptx.error().message();
    ASSERT_NE(ptx->find("wgmma.mma_async"), std::string::npos);
    auto [rc, log] = runPtxas(*ptx, "-v");
    EXPECT_EQ(rc, 0) << log;
    EXPECT_EQ(log.find("C7514"), std::string::npos)
        << s.m << "x" << s.n << "x" << s.k << ":\n"
        << log;
  }
}

/// A softmax's rows too long for a block's registers (the sweep's bf16
/// softmax over 65536 columns) are split over clusters of 4 blocks: one
/// kernel, launched in whole clusters (.reqnctapercluster), its max and sum
/// combined through distributed shared memory, and
/// no spills under the 64 registers a thread of two blocks an SM. The
/// sweep's LayerNorm and RMSNorm of such rows stay staged in shared memory.
TEST(PTX, LongSoftmaxRowsSplitOverClusters) {
  if (!havePtxas())
    GTEST_SKIP() << "no ptxas at " << KFUSE_PTXAS;
  constexpr int64_t rows = 1024, cols = 65536;
  for (std::string kind : {"softmax", "layernorm", "rmsnorm"}) {
    Graph g(kind);
    Tensor x = g.input("x", DType::bf16, {rows, cols});
    g.output("y", kind == "softmax" ? softmax(x)
                  : kind == "layernorm"
                      ? bench::layernorm(g, x, DType::bf16, cols)
                      : bench::rmsnorm(g, x, DType::bf16, cols));
    Expected<Executable> exe = kfuse::testing::compileUncached(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> fused = exe->dump(Stage::Fused);
    ASSERT_TRUE(fused) << fused.error().message();
    EXPECT_EQ(count(*fused, "kf.kernel "), 1u) << *fused;
    bool clustered = kind == "softmax";
    EXPECT_EQ(count(*fused, "cluster = 4>"), clustered ? 1u : 0u) << *fused;
    EXPECT_EQ(count(*fused, "inShared = true"), clustered ? 0u : 1u) << *fused;
    Expected<std::string> ptx = exe->dump(Stage::PTX);
    ASSERT_TRUE(ptx) << ptx.error().message();
    // One barrier at the start (no block writes into another's shared
    // memory before that one runs), then one for the max, one for the sum.
    EXPECT_EQ(count(*ptx, "barrier.cluster.wait"), clustered ? 3u : 0u)
        << kind;
    for (const char *piece : {".reqnctapercluster 4, 1, 1",
                              "mapa.shared::cluster", "st.shared::cluster"})
      EXPECT_EQ(ptx->find(piece) != std::string::npos, clustered)
          << kind << ": " << piece;
    auto [rc, log] = runPtxas(*ptx, "-v");
    EXPECT_EQ(rc, 0) << log;
    EXPECT_NE(log.find(" 0 bytes spill stores"), std::string::npos) << log;
    EXPECT_EQ(count(log, "bytes spill stores"), 1u) << log;
  }
}

/// f32 matmuls take TF32 tensor cores only when allowed: wgmma k8 on
/// sm_90 (through the TMA pipeline, and its cp.async form for M = 16),
/// mma.sync m16n8k8 on sm_80, each accepted by ptxas; exact otherwise.
TEST(PTX, Tf32OnlyWhenAllowed) {
  if (!havePtxas())
    GTEST_SKIP() << "no ptxas at " << KFUSE_PTXAS;
  for (int64_t m : {int64_t(1000), int64_t(16)}) {
    Graph g("linear_f32");
    MatmulOptions transposed;
    transposed.transposeB = true;
    g.output("y", matmul(g.input("x", DType::f32, {m, 512}),
                         g.input("w", DType::f32, {768, 512}), transposed));
    for (const char *arch : {"sm_90", "sm_80"})
      for (bool allow : {true, false}) {
        CompileOptions options;
        options.diskCache = false;
        options.arch = arch;
        options.allowTF32 = allow;
        Expected<Executable> exe = Compiler(options).compile(g);
        ASSERT_TRUE(exe) << exe.error().message();
        Expected<std::string> ptx = exe->dump(Stage::PTX);
        ASSERT_TRUE(ptx) << ptx.error().message();
        std::string product = std::string(arch) == "sm_90"
                                  ? "k8.f32.tf32.tf32"
                                  : "mma.sync.aligned.m16n8k8.row.col.f32."
                                    "tf32.tf32.f32";
        EXPECT_EQ(ptx->find(product) != std::string::npos, allow)
            << arch << " M = " << m << (allow ? " with" : " without")
            << " allowTF32";
        EXPECT_EQ(ptx->find("tf32") != std::string::npos, allow);
        auto [rc, log] = runPtxas(*ptx, "-v");
        EXPECT_EQ(rc, 0) << log;
        EXPECT_EQ(log.find("C7514"), std::string::npos) << log;
      }
  }
}

} // namespace
