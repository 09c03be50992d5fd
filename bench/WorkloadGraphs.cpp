//===- WorkloadGraphs.cpp - the memory-bound workloads --------------------===//

#include "WorkloadGraphs.h"

#include <cmath>

namespace kfuse::bench {

Tensor layernorm(Graph &g, Tensor x, DType dtype, int64_t n) {
  Tensor xf = cast(x, DType::f32);
  Tensor centered = xf - reduceMean(xf, {-1}, true);
  Tensor var = reduceMean(centered * centered, {-1}, true);
  Tensor gamma = cast(g.input("gamma", dtype, {n}), DType::f32);
  Tensor beta = cast(g.input("beta", dtype, {n}), DType::f32);
  return cast(centered * rsqrt(var + 1e-5) * gamma + beta, dtype);
}

Tensor rmsnorm(Graph &g, Tensor x, DType dtype, int64_t n) {
  Tensor xf = cast(x, DType::f32);
  Tensor w = cast(g.input("w", dtype, {n}), DType::f32);
  return cast(xf * rsqrt(reduceMean(xf * xf, {-1}, true) + 1e-6) * w, dtype);
}

std::vector<Workload> memoryBoundWorkloads(bool small) {
  // Full size: larger than the L2 cache. Small: for tests.
  const int64_t n26 = small ? 12345 * 4 : int64_t(1) << 26;
  const int64_t m = small ? 96 : 8192, n = small ? 1024 : 8192;
  const int64_t m2 = small ? 200 : 16384, n2 = small ? 512 : 4096;
  std::vector<Workload> w;
  w.push_back({"sin2_cos2_f32", [=](Graph &g) {
                 Tensor x = g.input("x", DType::f32, {n26});
                 g.output("y", sin(x) * sin(x) + cos(x) * cos(x));
               },
               0.147 / 0.127});
  w.push_back({"cos_cos_f32", [=](Graph &g) {
                 g.output("y", cos(cos(g.input("x", DType::f32, {n26}))));
               },
               0.143 / 0.127});
  w.push_back({"gelu_bf16", [=](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {n26});
                 Tensor wt = g.input("w", DType::bf16, {n26});
                 g.output("y", gelu(x * wt + 1.0));
               },
               0.116 / 0.095});
  w.push_back({"softmax_f32", [=](Graph &g) {
                 g.output("y", softmax(g.input("x", DType::f32, {m, n})));
               },
               0.152 / 0.127});
  w.push_back({"layernorm_f32", [=](Graph &g) {
                 Tensor x = g.input("x", DType::f32, {m, n});
                 g.output("y", layernorm(g, x, DType::f32, n));
               },
               0.133 / 0.127});
  w.push_back({"rmsnorm_f32", [=](Graph &g) {
                 Tensor x = g.input("x", DType::f32, {m, n});
                 g.output("y", rmsnorm(g, x, DType::f32, n));
               },
               0.131 / 0.127});
  w.push_back({"row_sum_f32", [=](Graph &g) {
                 g.output("y", reduceSum(g.input("x", DType::f32, {m, n}),
                                         {1}));
               },
               0.069 / 0.064});
  w.push_back({"softmax_bf16", [=](Graph &g) {
                 g.output("y", softmax(g.input("x", DType::bf16, {m2, n2})));
               },
               0.159 / 0.064});
  w.push_back({"layernorm_bf16", [=](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {m2, n2});
                 g.output("y", layernorm(g, x, DType::bf16, n2));
               },
               0.098 / 0.064});
  w.push_back({"rmsnorm_bf16", [=](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {m2, n2});
                 g.output("y", rmsnorm(g, x, DType::bf16, n2));
               },
               0});
  w.push_back({"column_sum_f32", [=](Graph &g) {
                 g.output("y", reduceSum(g.input("x", DType::f32, {m, n}),
                                         {0}));
               },
               0});
  w.push_back({"transpose_add_f32", [=](Graph &g) {
                 Tensor x = g.input("x", DType::f32, {m, n});
                 Tensor z = g.input("z", DType::f32, {n, m});
                 g.output("y", transpose(x, {1, 0}) + z);
               },
               0});
  w.push_back({"chain10_f32", [=](Graph &g) {
                 // Ten elementwise ops, a row and a column broadcast.
                 Tensor x = g.input("x", DType::f32, {m, n});
                 Tensor row = g.input("row", DType::f32, {n});
                 Tensor col = g.input("col", DType::f32, {m, 1});
                 Tensor y = x * row + col;  // 2 ops
                 y = tanh(y) * 0.5 - 1.0;   // 5
                 y = abs(y) + x;            // 7
                 y = sigmoid(y) * y;        // 9
                 g.output("y", relu(y));    // 10
               },
               0});
  addIndexingWorkloads(w, small);
  return w;
}


} // namespace kfuse::bench

namespace kfuse::bench {

namespace {

/// [B, Hkv, S, D] with each head repeated `group` times: [B, Hkv * group,
/// S, D].
Tensor repeatHeads(Tensor x, const AttentionShape &s) {
  int64_t group = s.heads / s.kvHeads;
  if (group == 1)
    return x;
  Tensor one = reshape(x, {s.batch, s.kvHeads, 1, s.seq, s.headDim});
  Tensor wide =
      broadcastTo(one, {s.batch, s.kvHeads, group, s.seq, s.headDim});
  return reshape(wide, {s.batch, s.heads, s.seq, s.headDim});
}

} // namespace

Graph attentionFromPrimitives(const std::string &name,
                              const AttentionShape &s) {
  Graph g(name);
  Tensor q = g.input("q", DType::bf16, {s.batch, s.heads, s.seq, s.headDim});
  if (s.ropeQ)
    q = rope(q, g.input("cos", DType::f32, {s.seq, s.headDim}),
             g.input("sin", DType::f32, {s.seq, s.headDim}), s.headDim);
  Tensor k = g.input("k", DType::bf16, {s.batch, s.kvHeads, s.seq, s.headDim});
  Tensor v = g.input("v", DType::bf16, {s.batch, s.kvHeads, s.seq, s.headDim});
  MatmulOptions qk;
  qk.transposeB = true;
  qk.resultType = DType::f32;
  Tensor scores = matmul(q, repeatHeads(k, s), qk) *
                  (1.0 / std::sqrt(double(s.headDim)));
  if (s.bias)
    scores = scores + cast(g.input("bias", DType::bf16,
                                   {s.batch, s.heads, s.seq, s.seq}),
                           DType::f32);
  if (s.causal) {
    Tensor rows = iota(g, {s.seq, s.seq}, 0), cols = iota(g, {s.seq, s.seq}, 1);
    scores = where(rows >= cols, scores, scalarLike(scores, -INFINITY));
  }
  Tensor p = cast(softmax(scores, -1), DType::bf16);
  g.output("out", matmul(p, repeatHeads(v, s)));
  return g;
}

} // namespace kfuse::bench
