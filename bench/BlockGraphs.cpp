//===- BlockGraphs.cpp - transformer blocks written from kf ops -----------===//
//
// A pre-norm transformer block as a model writes it (LayerNorm with weight
// and bias, one fused QKV projection with bias split into heads, causal
// attention, the output projection with its residual, a GELU MLP with its
// residual), in bf16 with f32 statistics, and stacks of such blocks with
// their own weights; Llama-style blocks (RMSNorm, RoPE, grouped-query
// attention, SwiGLU) over a prompt and for one token against a KV cache:
// the graphs the compile-scaling, decode and block figures measure.
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

namespace {

Tensor rmsNorm(Tensor x, Tensor weight) {
  Tensor xf = cast(x, DType::f32);
  Tensor scale = rsqrt(reduceMean(xf * xf, {-1}, true) + 1e-6);
  return cast(xf * scale * weight, DType::bf16);
}

/// [1, 1, heads * Dh] as [1, heads, 1, Dh].
Tensor oneTokenHeads(Tensor t, int64_t heads, int64_t headDim) {
  return transpose(reshape(t, {1, 1, heads, headDim}), {0, 2, 1, 3});
}

Tensor project(Tensor x, Tensor w) {
  return matmul(x, w, {false, false, DType::f32});
}

} // namespace

Tensor rope(Tensor x, Tensor cos, Tensor sin, int64_t headDim) {
  Tensor rotated = concat(
      {-slice(x, -1, headDim / 2), slice(x, -1, 0, headDim / 2)}, -1);
  return cast(cast(x, DType::f32) * cos + cast(rotated, DType::f32) * sin,
              DType::bf16);
}

namespace {

struct DecodeHeads {
  Tensor q, k, v;
};

/// The new token's q, k (both rotated) and v heads from the block's input.
DecodeHeads decodeHeads(Graph &g, Tensor x, const DecodeShape &s) {
  int64_t d = s.dim, dh = s.dim / s.heads, kv = s.kvHeads * dh;
  Tensor cos = g.input("cos", DType::f32, {dh});
  Tensor sin = g.input("sin", DType::f32, {dh});
  Tensor h = rmsNorm(x, g.input("ln1", DType::f32, {d}));
  auto headsOf = [&](const char *weight, int64_t width, int64_t heads) {
    Tensor w = g.input(weight, DType::bf16, {d, width});
    return oneTokenHeads(cast(project(h, w), DType::bf16), heads, dh);
  };
  return {rope(headsOf("wq", d, s.heads), cos, sin, dh),
          rope(headsOf("wk", kv, s.kvHeads), cos, sin, dh),
          headsOf("wv", kv, s.kvHeads)};
}

/// The block after attention over `tokens` [B, S] of its input: the output
/// projection and residual, RMSNorm, the SwiGLU MLP and residual. Weights
/// are named `prefix` + their name.
Tensor afterAttention(Graph &g, Tensor x, Tensor o, int64_t dim, int64_t ffn,
                      Shape tokens, const std::string &prefix = "") {
  int64_t d = dim;
  auto weight = [&](const char *name, Shape shape) {
    return g.input(prefix + name, DType::bf16, shape);
  };
  o = reshape(transpose(o, {0, 2, 1, 3}), {tokens[0], tokens[1], d});
  Tensor x1 = x + cast(project(o, weight("wo", {d, d})), DType::bf16);
  Tensor h2 = rmsNorm(x1, g.input(prefix + "ln2", DType::f32, {d}));
  // Each projection rounded to bf16, as a bf16 nn.Linear returns it.
  Tensor gate = cast(project(h2, weight("w_gate", {d, ffn})), DType::bf16);
  Tensor up = cast(project(h2, weight("w_up", {d, ffn})), DType::bf16);
  Tensor mlp = silu(gate) * up;
  return x1 + cast(project(mlp, weight("w_down", {ffn, d})), DType::bf16);
}

Tensor afterAttention(Graph &g, Tensor x, Tensor o, const DecodeShape &s) {
  return afterAttention(g, x, o, s.dim, s.ffn, {1, 1});
}

/// A Llama-style block over a prompt: RMSNorm, q/k/v projections into
/// heads, RoPE on q and k from [S, Dh] tables, causal grouped-query
/// attention, then afterAttention.
Tensor llamaBlock(Graph &g, Tensor x, Tensor cos, Tensor sin,
                  const LlamaShape &s, int layer) {
  std::string prefix = "l" + std::to_string(layer) + "_";
  int64_t d = s.dim, dh = s.dim / s.heads;
  Tensor h = rmsNorm(x, g.input(prefix + "ln1", DType::f32, {d}));
  auto headsOf = [&](const char *weight, int64_t heads) {
    Tensor w = g.input(prefix + weight, DType::bf16, {d, heads * dh});
    Tensor t = cast(project(h, w), DType::bf16);
    return transpose(reshape(t, {s.batch, s.seq, heads, dh}), {0, 2, 1, 3});
  };
  Tensor q = rope(headsOf("wq", s.heads), cos, sin, dh);
  Tensor k = rope(headsOf("wk", s.kvHeads), cos, sin, dh);
  Tensor v = headsOf("wv", s.kvHeads);
  AttentionOptions causal;
  causal.causal = true;
  return afterAttention(g, x, attention(q, k, v, causal), d, s.ffn,
                        {s.batch, s.seq}, prefix);
}

} // namespace

Graph llamaDecodeStep(const DecodeShape &s) {
  Graph g("llama_decode_L" + std::to_string(s.cached));
  int64_t dh = s.dim / s.heads;
  Tensor x = g.input("x", DType::bf16, {1, 1, s.dim});
  Tensor cacheK = g.input("cache_k", DType::bf16, {1, s.kvHeads, s.cached, dh});
  Tensor cacheV = g.input("cache_v", DType::bf16, {1, s.kvHeads, s.cached, dh});
  DecodeHeads t = decodeHeads(g, x, s);
  Tensor o = attention(t.q, concat({cacheK, t.k}, 2), concat({cacheV, t.v}, 2));
  g.output("y", afterAttention(g, x, o, s));
  g.output("k", t.k);
  g.output("v", t.v);
  return g;
}

Graph llamaStack(const LlamaShape &s, int layers, const std::string &name) {
  Graph g(name.empty() ? "llama_x" + std::to_string(layers) : name);
  int64_t dh = s.dim / s.heads;
  Tensor x = g.input("x", DType::bf16, {s.batch, s.seq, s.dim});
  Tensor cos = g.input("cos", DType::f32, {s.seq, dh});
  Tensor sin = g.input("sin", DType::f32, {s.seq, dh});
  for (int layer = 0; layer < layers; ++layer)
    x = llamaBlock(g, x, cos, sin, s, layer);
  g.output("y", x);
  return g;
}

Graph llamaDecodeHeads(const DecodeShape &s) {
  Graph g("llama_decode_heads");
  DecodeHeads t = decodeHeads(g, g.input("x", DType::bf16, {1, 1, s.dim}), s);
  g.output("q", t.q);
  g.output("k", t.k);
  g.output("v", t.v);
  return g;
}

Graph llamaDecodeAttend(const DecodeShape &s, Dim cached) {
  Graph g("llama_decode_attend");
  int64_t dh = s.dim / s.heads;
  Tensor x = g.input("x", DType::bf16, {1, 1, s.dim});
  Tensor q = g.input("q", DType::bf16, {1, s.heads, 1, dh});
  Tensor cacheK = g.input("cache_k", DType::bf16, {1, s.kvHeads, cached, dh});
  Tensor cacheV = g.input("cache_v", DType::bf16, {1, s.kvHeads, cached, dh});
  g.output("y", afterAttention(g, x, attention(q, cacheK, cacheV), s));
  return g;
}

} // namespace kfuse::bench
