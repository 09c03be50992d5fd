//===- AttentionTest.cpp - attention against the evaluator and unfused ----===//
//
// kf.attention built directly, over head dims 64 and 128 and padded ones,
// sequences that are not tile multiples, causal masks with fewer or more
// queries than keys, grouped-query heads and peaked scores (a large scale,
// so that the online softmax's rescaling matters), each on fresh random
// inputs with poisoned outputs against the float64 evaluator. Cases meant
// for the FlashAttention template check that kf-tile chose it. Attention
// written from primitives goes through kfuse::testing::checkFusion: the
// rewrite must fire, match the evaluator and the unfused graph (which
// materialises the scores); speed is kfuse-bench's to show, not a test's.
// Skips, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"
#include "../../bench/WorkloadGraphs.h"
#include "../common/OpCases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <regex>

using namespace kfuse;

namespace {

struct AttentionCase {
  std::string name;
  int64_t batch, heads, kvHeads, sq, sk, d, dv;
  bool causal;
  DType dtype = DType::bf16;
  std::optional<double> scale = std::nullopt;
  bool flash = true; ///< the FlashAttention template must compute it
  bool withMask = false;
  bool withBias = false;
  /// A mask built in the graph (compare of iotas) that leaves the first
  /// `maskedRows` query rows nothing to attend: their output is 0.
  int64_t maskedRows = 0;
  /// The log-sum-exp output too (attentionWithLse).
  bool withLse = false;
  /// q computed in the graph: rotated by RoPE tables (rotate-half written
  /// from slice, neg and concat) or scaled and shifted. The attention
  /// kernel computes it into its Q tile: one kernel in all.
  enum class QPrologue { none, rope, affine } qPrologue = QPrologue::none;
};

/// q [B, H, S, D] rotated by f32 tables [S, D] in f32, back in q's dtype.
Tensor ropeOf(Graph &g, Tensor q, int64_t s, int64_t d, DType dtype) {
  Tensor cos = g.input("cos", DType::f32, {s, d});
  Tensor sin = g.input("sin", DType::f32, {s, d});
  Tensor rotated =
      concat({-slice(q, -1, d / 2), slice(q, -1, 0, d / 2)}, -1);
  return cast(cast(q, DType::f32) * cos + cast(rotated, DType::f32) * sin,
              dtype);
}

void PrintTo(const AttentionCase &c, std::ostream *os) { *os << c.name; }

using kfuse::testing::freshSeed;
using kfuse::testing::randomInputs;

/// Compiled without the disk cache, with its fused IR.
struct Compiled {
  Executable exe;
  std::string fused;
};
Expected<Compiled> compileFresh(const Graph &g, bool splitKeys = false) {
  CompileOptions options;
  options.diskCache = false;
  options.splitKeys = splitKeys;
  Expected<Executable> exe = Compiler(options).compile(g);
  if (!exe)
    return exe.error();
  Expected<std::string> fused = exe->dump(Stage::Fused);
  if (!fused)
    return fused.error();
  return Compiled{exe.take(), fused.take()};
}

class Attention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(Attention, MatchesEvaluator) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  const AttentionCase &c = GetParam();
  Graph g(c.name);
  AttentionOptions o;
  o.causal = c.causal;
  o.scale = c.scale;
  Shape scores = {c.batch, c.heads, c.sq, c.sk};
  if (c.withMask)
    o.mask = g.input("mask", DType::i1, scores);
  if (c.maskedRows)
    o.mask = compare(
        Compare::ge, iota(g, scores, 2, DType::i32),
        broadcastTo(g.constant(double(c.maskedRows), DType::i32), scores));
  if (c.withBias)
    o.bias = g.input("bias", c.dtype, scores);
  Tensor q = g.input("q", c.dtype, {c.batch, c.heads, c.sq, c.d});
  if (c.qPrologue == AttentionCase::QPrologue::rope)
    q = ropeOf(g, q, c.sq, c.d, c.dtype);
  else if (c.qPrologue == AttentionCase::QPrologue::affine)
    q = q * 0.5 + 0.25;
  Tensor k = g.input("k", c.dtype, {c.batch, c.kvHeads, c.sk, c.d});
  Tensor v = g.input("v", c.dtype, {c.batch, c.kvHeads, c.sk, c.dv});
  if (c.withLse) {
    AttentionWithLse results = attentionWithLse(q, k, v, o);
    g.output("out", results.out);
    g.output("lse", results.lse);
  } else {
    g.output("out", attention(q, k, v, o));
  }
  ASSERT_TRUE(g.status()) << g.status().message();
  uint64_t seed = freshSeed();
  std::vector<HostTensor> inputs = randomInputs(g, seed);
  Expected<std::vector<HostTensor>> reference = evaluate(g, inputs);
  ASSERT_TRUE(reference) << reference.error().message();
  Expected<Compiled> compiled = compileFresh(g);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_EQ(compiled->fused.find("#kf.flash_tiling") != std::string::npos,
            c.flash)
      << "kf-tile chose the wrong template:\n"
      << compiled->fused;
  if (c.qPrologue != AttentionCase::QPrologue::none) {
    size_t kernels = 0;
    for (size_t at = compiled->fused.find("kf.kernel "); at != std::string::npos;
         at = compiled->fused.find("kf.kernel ", at + 1))
      ++kernels;
    EXPECT_EQ(kernels, 1u) << "q's prologue left the attention kernel:\n"
                           << compiled->fused;
  }
  Expected<std::vector<HostTensor>> out = compiled->exe.runOnHost(inputs);
  ASSERT_TRUE(out) << out.error().message();
  double error = relativeError((*out)[0], (*reference)[0]);
  // P is rounded to the operands' dtype for the second product.
  double tol = kfuse::testing::tolerance(c.dtype, c.sk + c.d);
  EXPECT_LE(error, tol) << "relative error (seed " << seed << ")";
  if (c.withLse) {
    // The scores are f32 sums of exact products: only f32 roundings.
    double lseError = relativeError((*out)[1], (*reference)[1]);
    EXPECT_LE(lseError, kfuse::testing::tolerance(DType::f32, c.sk + c.d))
        << "log-sum-exp relative error (seed " << seed << ")";
  }
  // Where kf-split-keys applies (few query tiles over many keys): the
  // chunks' attention and their combination, against the same reference.
  Expected<Compiled> split = compileFresh(g, /*splitKeys=*/true);
  ASSERT_TRUE(split) << split.error().message();
  if (split->fused == compiled->fused)
    return;
  Expected<std::vector<HostTensor>> chunked = split->exe.runOnHost(inputs);
  ASSERT_TRUE(chunked) << chunked.error().message();
  EXPECT_LE(relativeError((*chunked)[0], (*reference)[0]), tol)
      << "relative error with the keys split (seed " << seed << ")";
}

std::vector<AttentionCase> cases() {
  const DType f16 = DType::f16;
  return {
      {"d64", 2, 4, 4, 256, 256, 64, 64, false},
      {"d64_peaked", 1, 2, 2, 192, 320, 64, 64, false, DType::bf16, 1.0},
      {"d128_causal", 1, 2, 2, 256, 256, 128, 128, true},
      {"d128_ragged_f16", 1, 2, 2, 200, 333, 128, 128, false, f16},
      {"causal_ragged", 2, 1, 1, 300, 300, 64, 64, true, DType::bf16, 0.5},
      {"causal_fewer_queries", 1, 2, 2, 100, 300, 64, 64, true},
      {"causal_more_queries", 1, 2, 2, 300, 100, 64, 64, true},
      {"grouped_query_causal", 1, 8, 2, 192, 192, 128, 128, true},
      // Many key tiles: the TMA pipeline's stages go round several times.
      {"d128_long_causal_gqa", 1, 4, 2, 520, 700, 128, 128, true},
      {"d96_padded", 1, 2, 1, 130, 150, 96, 96, false, f16},
      {"d256", 1, 1, 1, 128, 200, 256, 256, true},
      {"d40_dv72", 1, 2, 2, 70, 90, 40, 72, false},
      {"one_query", 1, 2, 2, 1, 77, 128, 128, false},
      {"one_key_causal", 1, 1, 1, 65, 1, 64, 64, true},
      // Mask and bias operands, read at each score; ragged tiles, causal,
      // grouped-query; rows with nothing to attend give 0.
      {"mask_operand", 1, 2, 2, 64, 80, 64, 64, false, DType::bf16,
       std::nullopt, true, true},
      {"bias_causal_ragged", 2, 2, 2, 130, 150, 64, 64, true, DType::bf16,
       std::nullopt, true, false, true},
      {"mask_bias_gqa_d128_f16", 1, 4, 2, 200, 333, 128, 128, false, f16, 0.2,
       true, true, true},
      {"computed_mask_empty_rows", 1, 2, 2, 100, 90, 64, 64, false, DType::bf16,
       std::nullopt, true, false, false, 7},
      // Keys a multiple of 8: the bias is staged in shared memory with K,
      // zero-filled past the partial last tiles of queries and keys.
      {"staged_bias_ragged_causal_gqa", 1, 4, 2, 200, 136, 64, 64, true,
       DType::bf16, std::nullopt, true, false, true},
      {"staged_bias_mask_d128", 2, 2, 2, 130, 256, 128, 128, false, DType::bf16,
       0.3, true, true, true},
      // The log-sum-exp output; rows with nothing to attend give -inf.
      {"lse_causal_gqa_ragged", 1, 4, 2, 300, 200, 64, 64, true, DType::bf16,
       std::nullopt, true, false, false, 0, true},
      {"lse_bias_empty_rows_d128", 1, 2, 2, 100, 90, 128, 128, false,
       DType::f16, 0.3, true, false, true, 7, true},
      {"lse_f32", 1, 2, 2, 50, 60, 32, 32, true, DType::f32, std::nullopt,
       false, false, false, 0, true},
      // Decode-sized queries in tiles of 128 rows: a step's one token over
      // a long grouped-query cache, with RoPE on q; a short causal
      // prefill; 63 rows over more keys.
      {"decode_gqa_d128_kv4096", 1, 32, 8, 1, 4096, 128, 128, false},
      {"decode_rope_q_gqa_kv300", 2, 8, 2, 1, 300, 128, 128, false,
       DType::bf16, std::nullopt, true, false, false, 0, false,
       AttentionCase::QPrologue::rope},
      {"short_prefill_causal_gqa", 1, 8, 2, 64, 64, 64, 64, true},
      {"q63_causal_lse_d128", 1, 4, 4, 63, 200, 128, 128, true, DType::bf16,
       std::nullopt, true, false, false, 0, true},
      // Few blocks over many keys (kf-split-keys' shapes): 16 blocks of 3
      // query rows over 1536 keys; one kv head per query head, f16.
      {"few_blocks_gqa_kv1536", 2, 4, 2, 3, 1536, 64, 64, false},
      {"few_blocks_d128_kv1024_f16", 1, 8, 8, 5, 1024, 128, 128, false,
       DType::f16},
      // The one-thread-per-output kernel.
      {"f32", 1, 2, 2, 50, 60, 32, 32, true, DType::f32, std::nullopt, false},
      // Rows of 8- and 4-byte words: smaller copies, a partial last chunk.
      {"d20", 1, 2, 2, 50, 60, 20, 20, false},
      {"d36_dv18_causal_f16", 1, 4, 2, 140, 130, 36, 18, true, f16},
      // Odd head dims: kf-pad copies q, k and v into rows of whole 16-byte
      // chunks (zeros past the end); odd output rows are stored an element
      // at a time.
      {"d21_odd", 1, 2, 2, 50, 60, 21, 21, false},
      {"d65_dv33_causal_gqa_f16", 1, 4, 2, 140, 130, 65, 33, true, f16},
      {"d127_bias_lse", 1, 2, 2, 100, 90, 127, 127, false, DType::bf16, 0.1,
       true, false, true, 0, true},
      // q's prologue computed into the Q tile: rows past the end (ragged
      // query tiles), head-dim padding (d96 and d40 in tiles of 64
      // columns), head dims of 4-byte words (d20, d18), grouped-query, causal,
      // with a bias, the log-sum-exp; head dims of 128 and more, where the
      // TMA pipeline's multiplying warpgroups compute the tile (at 256 for
      // Q K^T to read from shared memory).
      {"rope_q_causal_gqa_ragged", 1, 4, 2, 200, 136, 64, 64, true,
       DType::bf16, std::nullopt, true, false, false, 0, false,
       AttentionCase::QPrologue::rope},
      {"rope_q_d128_causal", 2, 2, 2, 256, 256, 128, 128, true, DType::bf16,
       std::nullopt, true, false, false, 0, false,
       AttentionCase::QPrologue::rope},
      {"rope_q_d96_padded_f16", 1, 2, 1, 130, 150, 96, 96, false, f16,
       std::nullopt, true, false, false, 0, true,
       AttentionCase::QPrologue::rope},
      {"rope_q_d256_causal_gqa", 1, 4, 2, 200, 200, 256, 256, true,
       DType::bf16, std::nullopt, true, false, false, 0, false,
       AttentionCase::QPrologue::rope},
      {"affine_q_d128_ragged_f16", 1, 2, 2, 130, 190, 128, 128, false, f16,
       std::nullopt, true, false, false, 0, true,
       AttentionCase::QPrologue::affine},
      {"affine_q_d40_bias", 1, 2, 2, 70, 90, 40, 40, false, DType::bf16,
       std::nullopt, true, false, true, 0, false,
       AttentionCase::QPrologue::affine},
      {"affine_q_d20_one_query", 1, 2, 2, 1, 77, 20, 20, false, DType::bf16,
       std::nullopt, true, false, false, 0, false,
       AttentionCase::QPrologue::affine},
      // Head dims not a multiple of 8 compute groups of 4 or 2 columns,
      // each at its place inside a swizzled 16-byte chunk; RoPE's halves
      // (10 columns) split a group of 4.
      {"rope_q_d20_causal", 1, 2, 1, 90, 90, 20, 20, true, DType::bf16,
       std::nullopt, true, false, false, 0, false,
       AttentionCase::QPrologue::rope},
      {"affine_q_d18_f16", 1, 2, 2, 40, 33, 18, 18, false, f16,
       std::nullopt, true, false, false, 0, false,
       AttentionCase::QPrologue::affine},
  };
}

INSTANTIATE_TEST_SUITE_P(Shapes, Attention, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

class AttentionRewrite : public ::testing::TestWithParam<
                             std::pair<std::string, bench::AttentionShape>> {};

TEST_P(AttentionRewrite, PrimitivesMatchUnfused) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  const auto &[name, shape] = GetParam();
  Graph g = bench::attentionFromPrimitives(name, shape);
  ASSERT_TRUE(g.status()) << g.status().message();
  Expected<Compiled> compiled = compileFresh(g);
  ASSERT_TRUE(compiled) << compiled.error().message();
  EXPECT_NE(compiled->fused.find("kf.kernel attention"), std::string::npos)
      << compiled->fused;
  EXPECT_NE(compiled->fused.find("#kf.flash_tiling"), std::string::npos)
      << compiled->fused;
  kfuse::testing::CheckOptions check;
  check.reductionLength = shape.seq + shape.headDim;
  check.time = false;
  Expected<kfuse::testing::FusionReport> report =
      kfuse::testing::checkFusion(g, check);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->fusedKernels, 1u) << report->summary();
  EXPECT_TRUE(report->valuesMatch) << report->summary();
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, AttentionRewrite,
    ::testing::Values(
        // Grouped-query heads, causal.
        std::make_pair(std::string("gqa_causal"),
                       bench::AttentionShape{1, 4, 2, 1024, 128, true}),
        // A bias added to the scaled scores (read in the flash kernel).
        std::make_pair(std::string("bias"),
                       bench::AttentionShape{1, 4, 4, 640, 64, false, true})),
    [](const auto &info) { return info.param.first; });

/// Compiles gradient case `c` with `configure`'s options in each launch
/// mode; its fused IR holds a match of regex `marker` exactly where
/// `expectMarker` says; one executable runs `runs` times, each against the
/// evaluator.
void expectGradientsMatch(const kfuse::testing::OpCase &c,
                          const std::function<void(CompileOptions &)> &configure,
                          const std::string &marker, bool expectMarker,
                          int runs) {
  Graph g(c.name);
  c.build(g);
  ASSERT_TRUE(g.status()) << g.status().message();
  uint64_t seed = freshSeed();
  std::vector<HostTensor> inputs;
  std::vector<TensorInfo> infos = g.inputs();
  for (size_t i = 0; i < infos.size(); ++i)
    inputs.push_back(HostTensor::random(infos[i].dtype, c.shapes[i], seed + i));
  Expected<std::vector<HostTensor>> reference = evaluate(g, inputs);
  ASSERT_TRUE(reference) << reference.error().message();
  for (Launch launch : {Launch::Kernels, Launch::Graph}) {
    CompileOptions options;
    options.diskCache = false;
    options.launch = launch;
    configure(options);
    Expected<Executable> exe = Compiler(options).compile(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> fused = exe->dump(Stage::Fused);
    ASSERT_TRUE(fused) << fused.error().message();
    EXPECT_EQ(std::regex_search(*fused, std::regex(marker)), expectMarker)
        << marker << " in:\n" << *fused;
    for (int run = 0; run < runs; ++run) {
      Expected<std::vector<HostTensor>> out = exe->runOnHost(inputs);
      ASSERT_TRUE(out) << out.error().message();
      std::vector<TensorInfo> outputs = g.outputs();
      for (size_t i = 0; i < outputs.size(); ++i) {
        double error = relativeError((*out)[i], (*reference)[i]);
        EXPECT_LE(error, kfuse::testing::outputTolerance(g, outputs[i], 1024))
            << outputs[i].name << ", run " << run << ", "
            << (launch == Launch::Graph ? "graph" : "kernels") << ", seed "
            << seed;
      }
    }
  }
}

/// Whether a gradient case's head dims pass 128 (its name says d192 or
/// d256): dk and dv in blocks of their own, no dqAtomic.
bool wideHeads(const std::string &name) {
  return name.find("_d192") != std::string::npos ||
         name.find("_d256") != std::string::npos;
}

/// FlashAttention's backward with `deterministic` off: key blocks add dq up
/// with atomics into an f32 buffer the launch zeroes (kf-atomic-dq), at
/// head dims up to 128. Every joint attention graph of the gradient cases,
/// each launch mode, three runs of one executable (a run whose dq were not
/// zeroed first would add onto the last one's), each against the
/// evaluator.
class AtomicDq : public ::testing::TestWithParam<kfuse::testing::OpCase> {};

TEST_P(AtomicDq, MatchesEvaluatorRunAfterRun) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  expectGradientsMatch(
      GetParam(), [](CompileOptions &o) { o.deterministic = false; },
      "dqAtomic = true", !wideHeads(GetParam().name), 3);
}

/// kf.index_add with `deterministic` off: a thread an update, added with
/// an atomic into the result the launch zeroes. The index_add cases, each
/// launch mode, three runs of one executable (a run whose sums were not
/// zeroed first would add onto the last one's).
class UnorderedIndexAdd
    : public ::testing::TestWithParam<kfuse::testing::OpCase> {};

TEST_P(UnorderedIndexAdd, MatchesEvaluatorRunAfterRun) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  expectGradientsMatch(
      GetParam(), [](CompileOptions &o) { o.deterministic = false; },
      "index_add_tiling<unordered = true>", true, 3);
}

/// FlashAttention's backward with CompileOptions::attentionGradTma: a
/// warpgroup of its own copies the tiles with the TMA, each key block's
/// lse and delta too (AttentionGradTmaPipeline.cpp), wherever q's length
/// is a multiple of 4 and q, k, v and dO are kernel arguments (not the
/// cross-attention case's 77 queries, nor the heads split out of one
/// projection, nor 130 queries); the others keep the cp.async kernel, as
/// every case does with the option off. Three stages, four where the head
/// dims are at most 64, fewer where they pass 128 (two at 192, one at
/// 256). Two runs of one executable (the second over stale stages and
/// statistics).
class AttentionGradTma
    : public ::testing::TestWithParam<kfuse::testing::OpCase> {};

TEST_P(AttentionGradTma, MatchesEvaluator) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  const std::string &name = GetParam().name;
  bool eligible = name.find("cross_") == std::string::npos &&
                  name.find("split_heads") == std::string::npos &&
                  name.find("_s130_") == std::string::npos;
  expectGradientsMatch(
      GetParam(), [](CompileOptions &o) { o.attentionGradTma = true; },
      wideHeads(name) ? "flash_grad_pipeline<stages = [12], tma = true>"
                      : "flash_grad_pipeline<stages = [34], tma = true>",
      eligible, 2);
}

TEST_P(AttentionGradTma, OffKeepsCpAsyncAndMatchesEvaluator) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  expectGradientsMatch(
      GetParam(), [](CompileOptions &o) { o.attentionGradTma = false; },
      wideHeads(GetParam().name) ? "flash_grad_pipeline<stages = [12]>"
                                 : "flash_grad_pipeline<stages = 2>",
      true, 2);
}

std::vector<kfuse::testing::OpCase> attentionGradientCases() {
  std::vector<kfuse::testing::OpCase> all = kfuse::testing::allOpCases(), out;
  for (const kfuse::testing::OpCase &c : all)
    if (c.name.rfind("grad_attention_flash", 0) == 0)
      out.push_back(c);
  return out;
}

// kf-promote-shared plans two blocks an SM for the head-dim-64 kernel
// without a mask or bias (minBlocksPerSM = 2): the assembler must keep it
// within 128 registers a thread. The driver's JIT had given it 156, one
// block an SM, and causal attention lost a quarter of its speed.
TEST(AttentionOccupancy, HeadDim64KeepsTwoBlocksAnSM) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  Graph g("attention_d64_two_blocks");
  AttentionOptions o;
  o.causal = true;
  o.scale = 0.125;
  g.output("out", attention(g.input("q", DType::bf16, {1, 4, 256, 64}),
                            g.input("k", DType::bf16, {1, 2, 256, 64}),
                            g.input("v", DType::bf16, {1, 2, 256, 64}), o));
  ASSERT_TRUE(g.status()) << g.status().message();
  CompileOptions options;
  options.diskCache = false;
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  ASSERT_TRUE(exe->runOnHost(randomInputs(g, freshSeed())));
  auto kernels = exe->kernels();
  ASSERT_TRUE(kernels) << kernels.error().message();
  ASSERT_EQ(kernels->size(), 1u);
  const KernelReport &k = (*kernels)[0];
  ASSERT_GT(k.registers, 0) << "no register count for " << k.name;
  EXPECT_LE(int64_t(k.registers) * k.block, 65536 / 2)
      << k.name << ": " << k.registers << " registers a thread of "
      << k.block;
}

std::vector<kfuse::testing::OpCase> indexAddCases() {
  std::vector<kfuse::testing::OpCase> out;
  for (const kfuse::testing::OpCase &c : kfuse::testing::allOpCases())
    if (c.name.rfind("index_add_", 0) == 0 || c.name == "grad_indexing_f32")
      out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    IndexAdd, UnorderedIndexAdd, ::testing::ValuesIn(indexAddCases()),
    [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    FlashGradients, AtomicDq, ::testing::ValuesIn(attentionGradientCases()),
    [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    FlashGradients, AttentionGradTma,
    ::testing::ValuesIn(attentionGradientCases()),
    [](const auto &info) { return info.param.name; });

} // namespace
