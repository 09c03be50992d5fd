//===- BlockGraphs.cpp - transformer blocks written from kf ops -----------===//
//
// A pre-norm transformer block as a model writes it (LayerNorm with weight
// and bias, one fused QKV projection with bias split into heads, causal
// attention, the output projection with its residual, a GELU MLP with its
// residual), in bf16 with f32 statistics, and stacks of such blocks with
// their own weights: the graphs the compile-scaling figures and the
// whole-block work of issue 27 measure.
//
//===----------------------------------------------------------------------===//

#include "WorkloadGraphs.h"

namespace kfuse::bench {

namespace {

Tensor layerNorm(Tensor x, Tensor weight, Tensor bias) {
  Tensor xf = cast(x, DType::f32);
  Tensor centered = xf - reduceMean(xf, {-1}, true);
  Tensor var = reduceMean(centered * centered, {-1}, true);
  return cast(centered * rsqrt(var + 1e-5) * weight + bias, DType::bf16);
}

/// x @ w + b in bf16, accumulated in f32.
Tensor linear(Tensor x, Tensor w, Tensor b) {
  return cast(matmul(x, w, {false, false, DType::f32}) + b, DType::bf16);
}

/// [B, S, H * Dh] as [B, H, S, Dh].
Tensor heads(Tensor t, const BlockShape &s) {
  Tensor split = reshape(t, {s.batch, s.seq, s.heads, s.dim / s.heads});
  return transpose(split, {0, 2, 1, 3});
}

Tensor block(Graph &g, Tensor x, const BlockShape &s, int layer) {
  auto param = [&](const char *name, Shape shape, DType dtype) {
    return g.input("l" + std::to_string(layer) + "_" + name, dtype, shape);
  };
  int64_t d = s.dim;
  Tensor h = layerNorm(x, param("ln1_w", {d}, DType::f32),
                       param("ln1_b", {d}, DType::f32));
  Tensor qkv = linear(h, param("w_qkv", {d, 3 * d}, DType::bf16),
                      param("b_qkv", {3 * d}, DType::f32));
  Tensor q = heads(slice(qkv, -1, 0, d), s);
  Tensor k = heads(slice(qkv, -1, d, 2 * d), s);
  Tensor v = heads(slice(qkv, -1, 2 * d, 3 * d), s);
  AttentionOptions causal;
  causal.causal = true;
  Tensor o = transpose(attention(q, k, v, causal), {0, 2, 1, 3});
  o = reshape(o, {s.batch, s.seq, d});
  Tensor x1 = x + linear(o, param("w_o", {d, d}, DType::bf16),
                         param("b_o", {d}, DType::f32));
  Tensor h2 = layerNorm(x1, param("ln2_w", {d}, DType::f32),
                        param("ln2_b", {d}, DType::f32));
  Tensor up = gelu(linear(h2, param("w_up", {d, 4 * d}, DType::bf16),
                          param("b_up", {4 * d}, DType::f32)));
  return x1 + linear(up, param("w_down", {4 * d, d}, DType::bf16),
                     param("b_down", {d}, DType::f32));
}

} // namespace

Graph preNormStack(const BlockShape &s, int layers, const std::string &name) {
  Graph g(name.empty() ? "prenorm_x" + std::to_string(layers) : name);
  Tensor x = g.input("x", DType::bf16, {s.batch, s.seq, s.dim});
  for (int layer = 0; layer < layers; ++layer)
    x = block(g, x, s, layer);
  g.output("y", x);
  return g;
}

} // namespace kfuse::bench
