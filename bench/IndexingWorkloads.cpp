//===- IndexingWorkloads.cpp - memory-bound workloads of the indexing ops -===//
//
// Each new op alone and fused into its typical chain, larger than L2: a
// strided slice, a concat, a pad, rotate-half RoPE (slices, a negation, a
// concat), an embedding lookup with a positional add, dropout, and
// cross-entropy over two vocabulary sizes (bf16 logits read once). The same
// shapes are in bench/peers.py.
//
//===----------------------------------------------------------------------===//

#include "WorkloadGraphs.h"

#include <random>

namespace kfuse::bench {

namespace {

/// Uniform token ids in [0, vocab) of `shape`, as i64.
HostTensor tokenIds(std::vector<int64_t> shape, int64_t vocab, uint64_t seed) {
  HostTensor ids(DType::i64, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
  for (size_t i = 0; i < ids.numElements(); ++i)
    ids.set(i, double(pick(rng)));
  return ids;
}

/// Mean cross-entropy of [rows, vocab] bf16 logits against i64 labels,
/// from primitives and logsumexp (whose max passes no gradient back).
void crossEntropy(Graph &g, int64_t rows, int64_t vocab) {
  Tensor x = cast(g.input("logits", DType::bf16, {rows, vocab}), DType::f32);
  Tensor labels = g.input("labels", DType::i64, {rows, 1});
  g.output("loss",
           reduceMean(logsumexp(x, {1}, true) - takeAlongAxis(x, labels, 1)));
}

} // namespace

/// Random data for every input but the token ids, which are `ids`.
std::vector<HostTensor> withIds(const Graph &g, const std::string &idsName,
                                int64_t vocab) {
  std::vector<HostTensor> inputs;
  uint64_t seed = 1;
  for (const TensorInfo &info : g.inputs()) {
    std::vector<int64_t> shape;
    for (const Dim &d : info.shape)
      shape.push_back(d.size());
    inputs.push_back(info.name == idsName
                         ? tokenIds(shape, vocab, seed++)
                         : HostTensor::random(info.dtype, shape, seed++));
  }
  return inputs;
}

void addIndexingWorkloads(std::vector<Workload> &w, bool small) {
  const int64_t m = small ? 96 : 16384, n = small ? 256 : 8192;
  w.push_back({"slice_stride2_bf16", [=](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {m, n});
                 g.output("y", slice(x, 1, 0, std::nullopt, 2) * 2.0);
               },
               0});
  w.push_back({"concat_bf16", [=](Graph &g) {
                 Tensor a = g.input("a", DType::bf16, {m, n / 2});
                 Tensor b = g.input("b", DType::bf16, {m, n / 2});
                 g.output("y", concat({a, b}, 1));
               },
               0});
  w.push_back({"pad_f32", [=](Graph &g) {
                 Tensor x = g.input("x", DType::f32, {m / 2 - 2, n - 2});
                 g.output("y", pad(x, {{1, 1}, {1, 1}}));
               },
               0});
  const int64_t b = small ? 2 : 8, h = small ? 2 : 32, s = small ? 64 : 2048,
                d = 128;
  w.push_back({"rope_bf16", [=](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {b, h, s, d});
                 Tensor c = g.input("cos", DType::bf16, {s, d});
                 Tensor sn = g.input("sin", DType::bf16, {s, d});
                 Tensor rotated = concat(
                     {-slice(x, -1, d / 2), slice(x, -1, 0, d / 2)}, -1);
                 g.output("y", x * c + rotated * sn);
               },
               0});
  const int64_t vocab = small ? 1000 : 8192, dim = small ? 64 : 2048,
                seq = small ? 32 : 4096, batch = small ? 2 : 8;
  w.push_back({"embedding_pos_bf16",
               [=](Graph &g) {
                 Tensor table = g.input("table", DType::bf16, {vocab, dim});
                 Tensor ids = g.input("ids", DType::i64, {batch, seq});
                 Tensor pos = g.input("pos", DType::bf16, {seq, dim});
                 g.output("y", gather(table, ids, 0) + pos);
               },
               0,
               [=](const Graph &g) { return withIds(g, "ids", vocab); }});
  w.push_back({"dropout_bf16", [=](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {m, n});
                 Tensor seed = g.input("seed", DType::i32, {});
                 g.output("y", dropout(x, seed, 0.1));
               },
               0});
  // Greedy decoding's pick over a vocabulary, and running sums down the
  // columns and along the rows.
  const int64_t picks = small ? 64 : 8192, classes = small ? 320 : 32000;
  w.push_back({"argmax_rows_bf16", [=](Graph &g) {
                 g.output("pick", argmax(g.input("logits", DType::bf16,
                                                 {picks, classes}),
                                         -1));
               },
               0});
  const int64_t lines = small ? 64 : 4096, length = small ? 256 : 16384;
  w.push_back({"cumsum_cols_f32", [=](Graph &g) {
                 g.output("y", cumsum(g.input("x", DType::f32,
                                              {lines, length}),
                                      0));
               },
               0});
  w.push_back({"cumsum_rows_f32", [=](Graph &g) {
                 g.output("y", cumsum(g.input("x", DType::f32,
                                              {length, lines}),
                                      1));
               },
               0});
  for (auto [rows, vocab] : {std::pair<int64_t, int64_t>{8192, 32000},
                             std::pair<int64_t, int64_t>{4096, 128256}}) {
    if (small) {
      rows = 64;
      vocab = vocab / 100;
    }
    w.push_back({"xent_" + std::to_string(vocab / 1000) + "k_bf16",
                 [=](Graph &g) { crossEntropy(g, rows, vocab); }, 0,
                 [=](const Graph &g) { return withIds(g, "labels", vocab); }});
  }
}

} // namespace kfuse::bench
