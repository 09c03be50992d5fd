//===- MatmulTest.cpp - matmuls of every layout against the evaluator -----===//
//
// Shapes with sizes 1 and primes, partial tiles in M, N and K, every
// transpose, batches (B per batch or shared), bf16/f16/f32 (exact, and TF32
// where allowed), f32 results and fused epilogues, each on fresh random
// inputs with poisoned outputs,
// compared with the float64 evaluator at the dtype's tolerance for a
// reduction of length K. Cases meant for the tensor-core template also
// check that kf-tile chose it (so a silent fallback fails); the rest check
// that the fallback is right. Skips, saying so, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "OneKernel.h"
#include "../common/OpCases.h"
#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace kfuse;

namespace {

enum class Epilogue { None, BiasGelu, ResidualScale, CastF32 };

struct MatmulCase {
  std::string name;
  std::vector<int64_t> batch; ///< of A (and of B unless sharedB)
  int64_t m, n, k;
  bool transposeA, transposeB;
  DType dtype;
  bool sharedB = false;
  Epilogue epilogue = Epilogue::None;
  bool resultF32 = false;
  bool tensorCores = true; ///< the tensor-core template must compute it
  bool allowTF32 = false;  ///< compiled with CompileOptions::allowTF32
  /// On sm_90, kf-promote-shared must interleave the output's rows
  /// (RowInterleave), so that their odd lengths leave in whole vectors.
  bool interleavedRows = false;
  /// On sm_90, kf-tile must make the last column of tiles narrow (edgeN).
  bool narrowEdge = false;
  /// On sm_90, the decode-sized cp.async pipeline must be six stages deep
  /// (kMaxStreamingStages: one block an SM).
  bool deepStreaming = false;
};

void PrintTo(const MatmulCase &c, std::ostream *os) { *os << c.name; }
void PrintTo(const std::tuple<MatmulCase, std::string> &p, std::ostream *os) {
  *os << std::get<0>(p).name << " on " << std::get<1>(p);
}

Shape withBatch(const std::vector<int64_t> &batch, int64_t r, int64_t c) {
  Shape shape(batch.begin(), batch.end());
  shape.push_back(r);
  shape.push_back(c);
  return shape;
}

void build(Graph &g, const MatmulCase &c) {
  Tensor a = g.input("a", c.dtype,
                     withBatch(c.batch, c.transposeA ? c.k : c.m,
                               c.transposeA ? c.m : c.k));
  Tensor b = g.input("b", c.dtype,
                     withBatch(c.sharedB ? std::vector<int64_t>{} : c.batch,
                               c.transposeB ? c.n : c.k,
                               c.transposeB ? c.k : c.n));
  MatmulOptions o;
  o.transposeA = c.transposeA;
  o.transposeB = c.transposeB;
  if (c.resultF32)
    o.resultType = DType::f32;
  Tensor y = matmul(a, b, o);
  Shape out = withBatch(c.batch, c.m, c.n);
  switch (c.epilogue) {
  case Epilogue::None:
    break;
  case Epilogue::BiasGelu: {
    Tensor bias = g.input("bias", c.dtype, {c.n});
    y = gelu(y + broadcastTo(bias, out));
    break;
  }
  case Epilogue::ResidualScale: {
    Tensor residual = g.input("residual", c.dtype, out);
    y = y * 0.5 + residual;
    break;
  }
  case Epilogue::CastF32:
    y = cast(relu(y), DType::f32);
    break;
  }
  g.output("y", y);
}

/// sm_90 compiles for sm_90a with wgmma; sm_80 for mma.sync (its PTX is
/// compiled for the Hopper GPU by the driver).
class Matmul
    : public ::testing::TestWithParam<std::tuple<MatmulCase, std::string>> {};

TEST_P(Matmul, MatchesEvaluator) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  const MatmulCase &c = std::get<0>(GetParam());
  const std::string &arch = std::get<1>(GetParam());
  Graph g(c.name);
  build(g, c);
  ASSERT_TRUE(g.status()) << g.status().message();
  uint64_t seed = kfuse::testing::freshSeed();
  std::vector<HostTensor> inputs = kfuse::testing::randomInputs(g, seed);
  Expected<std::vector<HostTensor>> reference = evaluate(g, inputs);
  ASSERT_TRUE(reference) << reference.error().message();
  CompileOptions options;
  options.diskCache = false;
  options.arch = arch;
  options.allowTF32 = c.allowTF32;
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  Expected<std::string> fused = exe->dump(Stage::Fused);
  ASSERT_TRUE(fused) << fused.error().message();
  size_t at = fused->find("#kf.mma_tiling<");
  std::string tiling = at == std::string::npos
                           ? ""
                           : fused->substr(at, fused->find('>', at) - at);
  EXPECT_EQ(!tiling.empty(), c.tensorCores)
      << "kf-tile chose the wrong template:\n"
      << *fused;
  EXPECT_EQ(tiling.find("wgmma = true") != std::string::npos,
            c.tensorCores && arch == "sm_90")
      << *fused;
  EXPECT_EQ(fused->find("rowGroups") != std::string::npos,
            c.interleavedRows && arch == "sm_90")
      << *fused;
  EXPECT_EQ(fused->find("edgeN") != std::string::npos,
            c.narrowEdge && arch == "sm_90")
      << *fused;
  if (c.deepStreaming && arch == "sm_90")
    EXPECT_NE(fused->find("mma_pipeline<stages = 6, stageOutput = true>"),
              std::string::npos)
        << *fused;
  Expected<std::vector<HostTensor>> out = exe->runOnHost(inputs);
  ASSERT_TRUE(out) << out.error().message();
  double error = relativeError((*out)[0], (*reference)[0]);
  double tol = kfuse::testing::tolerance(c.dtype, c.k, c.allowTF32);
  EXPECT_LE(error, tol) << "relative error (seed " << seed << ")";
}

std::vector<MatmulCase> cases() {
  const DType bf16 = DType::bf16, f16 = DType::f16, f32 = DType::f32;
  std::vector<MatmulCase> v = {
      {"exact_tiles_bf16", {}, 256, 256, 64, false, false, bf16},
      {"one_row_bf16", {}, 1, 64, 64, false, false, bf16},
      {"one_by_eight_bf16", {}, 1, 8, 8, false, false, bf16},
      {"prime_m_bf16", {}, 131, 64, 96, false, false, bf16},
      {"prime_m_n_tb_bf16", {}, 131, 257, 72, false, true, bf16},
      {"prime_n_tb_f16", {}, 64, 97, 40, false, true, f16},
      {"ta_bf16", {}, 136, 80, 24, true, false, bf16},
      {"ta_tb_f16", {}, 72, 53, 48, true, true, f16},
      {"k8_bf16", {}, 100, 200, 8, false, false, bf16},
      {"k_tail_bf16", {}, 300, 136, 200, false, false, bf16},
      {"large_bf16", {}, 520, 1000, 512, false, false, bf16},
      // Rows of 1040 bytes start mid-sector: interleaved to 128-byte lines
      // on sm_90 (8 groups of 125 rows).
      {"large_tb_f16", {}, 1000, 520, 264, false, true, f16, false,
       Epilogue::None, false, true, false, true},
      {"batched_bf16", {3}, 67, 80, 48, false, false, bf16},
      // More tiles than SMs: persistent blocks (wgmma), partial edge tiles.
      {"persistent_bf16", {}, 2100, 2000, 192, false, false, bf16},
      // Output rows that start off 16-byte boundaries (N * 2 bytes, or
      // N * 4, not a multiple of 16), stored element by element from the
      // staged tile: persistent blocks with an epilogue, f32 results with
      // N % 4 = 1, 2, 3, and batches of an odd M.
      {"persistent_odd_n_tb_bf16", {}, 2100, 2003, 128, false, true, bf16,
       false, Epilogue::BiasGelu},
      {"f32_result_n_odd_bf16", {}, 130, 1001, 64, false, true, bf16, false,
       Epilogue::None, true},
      {"f32_result_n_even_bf16", {}, 70, 1002, 64, false, true, bf16, false,
       Epilogue::None, true},
      {"f32_result_n_3_mod_4_bf16", {2}, 90, 523, 64, false, true, bf16,
       false, Epilogue::None, true},
      {"batched_odd_m_n_tb_bf16", {3}, 67, 515, 64, false, true, bf16},
      // Odd rows of a few 16-byte chunks at most, far narrower than a
      // tile: the staged tile's copy masks nearly all of each row (the
      // warp-specialised pipeline: M >= 128).
      {"narrow_odd_n_tb_bf16", {}, 300, 13, 64, false, true, bf16},
      {"narrow_odd_n_21_tb_f16", {}, 260, 21, 64, false, true, f16, false,
       Epilogue::BiasGelu},
      {"f32_result_batched_odd_m_n", {2}, 131, 301, 64, false, true, f16,
       false, Epilogue::None, true},
      {"persistent_batched_tb_f16", {6}, 700, 1100, 192, false, true, f16,
       false, Epilogue::BiasGelu},
      {"batched_shared_b_f16", {2, 3}, 33, 24, 64, false, false, f16, true},
      // On sm_90 with a tile's rows of A: TMA copies of a B shared by the
      // batches (a 2-d map) and of a transposed, batched A (3-d, M-major
      // boxes) with a K tail.
      {"tma_shared_b_bf16", {3}, 200, 264, 136, false, false, bf16, true},
      {"tma_ta_batched_f16", {2}, 296, 200, 100, true, false, f16},
      {"f32_result_bf16", {}, 130, 136, 128, false, false, bf16, false,
       Epilogue::None, true},
      {"bias_gelu_bf16", {}, 257, 512, 128, false, false, bf16, false,
       Epilogue::BiasGelu},
      // Whole tiles: epilogues that read inputs are computed for the whole
      // tile before any of it is staged.
      {"bias_gelu_whole_tiles_bf16", {}, 256, 512, 192, false, false, bf16,
       false, Epilogue::BiasGelu},
      {"residual_whole_tiles_tb_f16", {2}, 128, 256, 64, false, true, f16,
       false, Epilogue::ResidualScale},
      {"residual_odd_n_tb_bf16", {}, 64, 101, 64, false, true, bf16, false,
       Epilogue::ResidualScale},
      {"relu_cast_f16", {2}, 96, 128, 32, true, false, f16, false,
       Epilogue::CastF32},
      // Odd output rows, interleaved (sm_90): tiles take every 64th row
      // (128-byte boundaries) or every 8th or 4th (16-byte ones), each
      // group's columns shifted so that the rows start aligned; the first
      // and last tiles of a row reach past its ends. Groups of 125 rows
      // leave row edges in the tiles (the bias read at clamped columns);
      // whole groups compute an epilogue reading a residual up front. Not
      // with B as [K, N]: the TMA cannot copy its N-major boxes from
      // shifted columns (an illegal instruction at odd ones).
      {"interleaved_128b_row_edges_bias_gelu_tb_bf16", {}, 8000, 301, 64,
       false, true, bf16, false, Epilogue::BiasGelu, false, true, false, true},
      {"interleaved_128b_residual_tb_bf16", {}, 8192, 301, 64, false, true,
       bf16, false, Epilogue::ResidualScale, false, true, false, true},
      {"interleaved_16b_tb_f16", {}, 1024, 1001, 128, false, true, f16, false,
       Epilogue::None, false, true, false, true},
      {"interleaved_f32_result_tb_bf16", {}, 8192, 999, 64, false, true, bf16,
       false, Epilogue::None, true, true, false, true},
      {"n_major_b_not_interleaved_bf16", {}, 1024, 1001, 64, false, false,
       bf16},
      // A narrow last column of tiles (sm_90: edgeN), where 8 rows of 16
      // whole 256-column tiles fill 128 SMs and the 8 edge tiles go to the
      // other 4: 16 columns wide (all of them inside N, the epilogue
      // computed up front), 64 where B is N-major (kf-pad pads its rows),
      // in batches (a 3-d B map), of f32 results and TF32 products; and
      // where the rows interleave: N = 4104 (rows that start mid-sector, 8
      // groups of 125 rows, the edge 64 wide, row edges guarded) and
      // N = 4101 (128 wide: the reach past N is 63 columns).
      {"narrow_edge_residual_tb_bf16", {}, 1024, 4112, 256, false, true, bf16,
       false, Epilogue::ResidualScale, false, true, false, false, true},
      {"narrow_edge_partial_bias_gelu_tb_bf16", {}, 1000, 4104, 128, false,
       true, bf16, false, Epilogue::BiasGelu, false, true, false, true, true},
      {"narrow_edge_n_major_bf16", {}, 1024, 4100, 128, false, false, bf16,
       false, Epilogue::None, false, true, false, false, true},
      {"narrow_edge_batched_tb_f16", {2}, 512, 4112, 128, false, true, f16,
       false, Epilogue::ResidualScale, false, true, false, false, true},
      {"narrow_edge_f32_result_tb_bf16", {}, 1024, 4112, 64, false, true, bf16,
       false, Epilogue::None, true, true, false, false, true},
      {"narrow_edge_tf32_tb", {}, 1024, 4112, 64, false, true, f32, false,
       Epilogue::None, false, true, true, false, true},
      {"narrow_edge_interleaved_tb_bf16", {}, 8192, 4101, 32, false, true,
       bf16, false, Epilogue::None, false, true, false, true, true},
      // Operand rows that are not whole 16-byte chunks: kf-pad copies the
      // operand into padded rows (zeros past the end) and the matmul
      // takes tensor cores, zero-filled K tails included.
      {"copied_b_odd_n_bf16", {}, 300, 1001, 256, false, false, bf16},
      {"copied_a_b_odd_k_tb_f16", {2}, 400, 192, 771, false, true, f16},
      {"copied_a_odd_m_ta_bf16", {}, 517, 1024, 512, true, false, bf16, false,
       Epilogue::BiasGelu},
      // The one-thread-per-output fallback.
      {"fallback_f32", {}, 37, 41, 29, false, false, DType::f32, false,
       Epilogue::BiasGelu, false, false},
      {"fallback_odd_k_bf16", {}, 33, 40, 27, false, false, bf16, false,
       Epilogue::None, false, false},
      // f32 with allowTF32: K-major operands go straight to the TF32
      // tensor cores; an operand of the other layout is copied transposed
      // first (kf-pad), rows of K % 4 != 0 padded, where the copies pay
      // (100 MFLOP and more); K tails zero-filled.
      {"tf32_tb", {}, 1000, 520, 264, false, true, f32, false,
       Epilogue::None, false, true, true},
      {"tf32_one_row_tb", {}, 1, 64, 64, false, true, f32, false,
       Epilogue::None, false, true, true},
      {"tf32_k_tail_bias_gelu_tb", {}, 2100, 2000, 100, false, true, f32,
       false, Epilogue::BiasGelu, false, true, true},
      {"tf32_copied_b", {}, 520, 264, 400, false, false, f32, false,
       Epilogue::None, false, true, true},
      {"tf32_copied_a_b_batched", {3}, 387, 256, 196, true, false, f32,
       false, Epilogue::ResidualScale, false, true, true},
      {"tf32_shared_b", {2}, 130, 72, 64, false, true, f32, true,
       Epilogue::None, false, true, true},
      {"tf32_padded_odd_k_tb", {}, 2000, 1000, 27, false, true, f32, false,
       Epilogue::None, false, true, true},
      // Decode-sized M with a long K: kf-split-k computes f32 partial
      // sums over K chunks and a second kernel adds them and runs the
      // epilogue (K tails inside the last chunk; batches; TF32).
      {"split_k_decode_bias_gelu_tb_bf16", {}, 16, 1024, 4096, false, true,
       bf16, false, Epilogue::BiasGelu},
      {"split_k_k_tail_f16", {}, 33, 520, 2056, false, false, f16},
      {"split_k_batched_residual_bf16", {2}, 16, 256, 4096, false, false,
       bf16, false, Epilogue::ResidualScale},
      {"split_k_tf32_tb", {}, 16, 512, 2048, false, true, f32, false,
       Epilogue::None, false, true, true},
      // Decode-sized M over 86 columns of 128x128 tiles, one block an SM:
      // six stages of B in flight.
      {"decode_six_stages_bias_gelu_bf16", {}, 16, 11008, 1024, false, false,
       bf16, false, Epilogue::BiasGelu, false, true, false, false, false,
       true},
      // Not K-major and K % 4 != 0: the exact fallback.
      {"tf32_fallback_odd_k", {}, 40, 33, 27, false, false, f32, false,
       Epilogue::None, false, false, true},
  };
  return v;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Matmul,
    ::testing::Combine(::testing::ValuesIn(cases()),
                       ::testing::Values("sm_90", "sm_80")),
    [](const auto &info) {
      return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
    });

} // namespace

namespace {

/// The SASS of `ptx`, through the CUDA toolkit's ptxas and cuobjdump.
std::string sassOf(const std::string &ptx) {
  const char *home = std::getenv("CUDA_HOME");
  std::string bin = std::string(home ? home : "/usr/local/cuda") + "/bin/";
  char dir[] = "/tmp/kfuse-sass-XXXXXX";
  if (!mkdtemp(dir))
    return "";
  std::string d = dir;
  std::ofstream(d + "/k.ptx") << ptx;
  std::string command = bin + "ptxas -arch=" + ptxTarget(ptx) + " " + d +
                        "/k.ptx -o " + d + "/k.cubin && " + bin +
                        "cuobjdump -sass " + d + "/k.cubin > " + d +
                        "/k.sass 2>&1";
  std::string sass;
  if (std::system(command.c_str()) == 0) {
    std::ifstream in(d + "/k.sass");
    sass.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::system(("rm -rf " + d).c_str());
  return sass;
}

/// A bf16 matmul runs on tensor cores: HGMMA (wgmma) on sm_90, HMMA
/// (mma.sync) where kfuse compiles for an older target.
TEST(MatmulSass, Bf16UsesTensorCores) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  Graph g("sass");
  g.output("y", matmul(g.input("a", DType::bf16, {256, 512}),
                       g.input("b", DType::bf16, {512, 256})));
  for (const char *arch : {"sm_90", "sm_80"}) {
    CompileOptions options;
    options.diskCache = false;
    options.arch = arch;
    Expected<Executable> exe = Compiler(options).compile(g);
    ASSERT_TRUE(exe) << exe.error().message();
    Expected<std::string> ptx = exe->dump(Stage::PTX);
    ASSERT_TRUE(ptx) << ptx.error().message();
    std::string sass = sassOf(*ptx);
    ASSERT_FALSE(sass.empty()) << "ptxas or cuobjdump failed for " << arch;
    const char *expected = std::string(arch) == "sm_90" ? "HGMMA" : "HMMA";
    EXPECT_NE(sass.find(expected), std::string::npos)
        << arch << ": no " << expected << " in the SASS";
  }
}

} // namespace

namespace {

/// Rows of `t` (a [rows, columns] tensor) from `first` on, `count` of them.
HostTensor rowsOf(const HostTensor &t, int64_t first, int64_t count) {
  int64_t columns = t.shape()[1];
  HostTensor part(t.dtype(), {count, columns});
  std::memcpy(part.data(),
              static_cast<const char *>(t.data()) +
                  first * columns * dtypeSize(t.dtype()),
              part.sizeInBytes());
  return part;
}

/// A matmul large enough for kf-pad to copy its B, whose rows start off
/// 128-byte lines (4104 bf16 columns), into rows on them. The evaluator
/// checks the first and last 64 rows (all of the result would take it
/// minutes): every column tile, the last one ragged.
TEST(MatmulRowLines, BCopiedOntoLinesMatchesEvaluator) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  const int64_t m = 4096, n = 4104, k = 2048, rows = 64;
  auto build = [&](Graph &g, int64_t mRows) {
    Tensor a = g.input("a", DType::bf16, {mRows, k});
    Tensor b = g.input("b", DType::bf16, {k, n});
    g.output("y", matmul(a, b));
  };
  Graph g("b_rows_off_lines");
  build(g, m);
  ASSERT_TRUE(g.status()) << g.status().message();
  uint64_t seed = kfuse::testing::freshSeed();
  std::vector<HostTensor> inputs = kfuse::testing::randomInputs(g, seed);
  CompileOptions options;
  options.diskCache = false;
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  Expected<std::string> fused = exe->dump(Stage::Fused);
  ASSERT_TRUE(fused) << fused.error().message();
  EXPECT_NE(fused->find("padded_rows = array<i64: 4160>"), std::string::npos)
      << "B is not copied into rows on 128-byte lines:\n"
      << *fused;
  Expected<std::vector<HostTensor>> out = exe->runOnHost(inputs);
  ASSERT_TRUE(out) << out.error().message();
  Graph part("b_rows_off_lines_rows");
  build(part, rows);
  for (int64_t from : {int64_t(0), m - rows}) {
    Expected<std::vector<HostTensor>> reference =
        evaluate(part, {rowsOf(inputs[0], from, rows), inputs[1]});
    ASSERT_TRUE(reference) << reference.error().message();
    double error = relativeError(rowsOf((*out)[0], from, rows), (*reference)[0]);
    EXPECT_LE(error, kfuse::testing::tolerance(DType::bf16, k, false))
        << "rows from " << from << ", relative error (seed " << seed << ")";
  }
}

/// x @ w^T written with a transpose (as `x @ w.T` in PyTorch) reads w
/// [N, K] in place with the matmul's flag: one kernel, no transposed copy;
/// so does a transposed A of 16-bit operands, with a bias epilogue.
TEST(MatmulTransposes, ReadInPlaceMatchEvaluator) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  Graph g("transposed_operands");
  Tensor x = g.input("x", DType::bf16, {2, 160, 256});
  Tensor w = g.input("w", DType::bf16, {192, 256});
  Tensor t = g.input("t", DType::bf16, {2, 256, 160});
  Tensor bias = g.input("bias", DType::bf16, {192});
  Tensor wt = transpose(w, {1, 0});
  g.output("xw", matmul(x, wt));
  g.output("tw", matmul(transpose(t, {0, 2, 1}), wt) +
                     broadcastTo(bias, {2, 160, 192}));
  ASSERT_TRUE(g.status()) << g.status().message();
  uint64_t seed = kfuse::testing::freshSeed();
  std::vector<HostTensor> inputs = kfuse::testing::randomInputs(g, seed);
  Expected<std::vector<HostTensor>> reference = evaluate(g, inputs);
  ASSERT_TRUE(reference) << reference.error().message();
  CompileOptions options;
  options.diskCache = false;
  Expected<Executable> exe = Compiler(options).compile(g);
  ASSERT_TRUE(exe) << exe.error().message();
  Expected<std::string> fused = exe->dump(Stage::Fused);
  ASSERT_TRUE(fused) << fused.error().message();
  EXPECT_EQ(fused->find("kf.kernel pointwise"), std::string::npos)
      << "a transpose was copied:\n"
      << *fused;
  Expected<std::vector<HostTensor>> out = exe->runOnHost(inputs);
  ASSERT_TRUE(out) << out.error().message();
  for (size_t i = 0; i < out->size(); ++i)
    EXPECT_LE(relativeError((*out)[i], (*reference)[i]),
              kfuse::testing::tolerance(DType::bf16, 256, false))
        << g.outputs()[i].name << ", relative error (seed " << seed << ")";
}

} // namespace

/// A pre-activation and its GELU both written by one matmul's epilogue
/// (a training forward saves both), staged one after the other through
/// the output tile: whole tiles (the epilogue computed up front), and
/// tiles with edges and a bias read at each (stored pair by pair). One
/// kernel, both outputs against the evaluator.
TEST(MatmulTwoOutputs, PreActivationAndGeluMatchEvaluator) {
  Expected<DeviceInfo> gpu = device();
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << gpu.error().message();
  for (auto [m, n, k] : {std::array<int64_t, 3>{1024, 2048, 512},
                         std::array<int64_t, 3>{1000, 1304, 520}}) {
    Graph g("pre_activation_" + std::to_string(m));
    Tensor x = g.input("x", DType::bf16, {m, k});
    Tensor w = g.input("w", DType::bf16, {k, n});
    Tensor bias = g.input("b", DType::f32, {n});
    MatmulOptions f32;
    f32.resultType = DType::f32;
    Tensor h = cast(matmul(x, w, f32) + broadcastTo(bias, {m, n}), DType::bf16);
    g.output("gelu", gelu(h));
    g.output("h", h);
    kfuse::testing::CheckOptions options;
    options.reductionLength = k;
    gputest::expectOneMatchingKernel(g, options);
  }
}
