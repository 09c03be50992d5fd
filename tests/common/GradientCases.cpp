//===- GradientCases.cpp - joint forward-and-backward graphs --------------===//
//
// Graphs made by kfuse::grad and kfuse::vjp from the pieces of a
// transformer (an MLP, a LayerNorm, cross-entropy, grouped-query causal
// attention, indexing), in f32 and 16-bit dtypes: the PTX tests compile
// them, the GPU tests run them fused and unfused against the evaluator.
// Each case's graph is the joint one; the forward's inputs come first.
//
//===----------------------------------------------------------------------===//

#include "OpCases.h"

namespace kfuse::testing {

namespace {

/// Replaces `g` with the joint graph of `forward` (loss: grad, else vjp).
void differentiate(Graph &g, const Graph &forward, const char *loss) {
  Expected<Graph> joint = loss ? grad(forward, loss) : vjp(forward);
  if (joint)
    g = joint.take();
  else // an invalid input makes the failure visible in g's status
    g.output("vjp_failed: " + joint.error().message(), Tensor());
}

} // namespace

void addGradientCases(std::vector<OpCase> &cases) {
  for (DType d : {DType::f32, DType::bf16}) {
    std::string suffix = std::string("_") + dtypeName(d);
    cases.push_back({"grad_mlp" + suffix,
                     [d](Graph &g) {
                       Graph f("mlp");
                       Tensor x = f.input("x", d, {64, 96});
                       Tensor w = f.input("w", d, {96, 128});
                       Tensor b = f.input("b", d, {128});
                       Tensor h = gelu(matmul(x, w) + b);
                       f.output("loss", reduceMean(cast(h, DType::f32)));
                       differentiate(g, f, "loss");
                     },
                     {{64, 96}, {96, 128}, {128}}});
    // PyTorch's LayerNorm -> Linear -> GELU -> Linear with a residual, its
    // weights in the input's dtype (python/tests' NormMLP): the LayerNorm
    // weight and bias gradients are summed over each 16 rows in the epilogue
    // of the matmul that makes the input gradient (kf-fuse-column-sums), at
    // fewer rows and columns than the tile and at whole tiles.
    for (auto [rows, width] : {std::pair<int64_t, int64_t>{64, 16},
                               {256, 128}})
      cases.push_back(
          {"grad_norm_mlp_" + std::to_string(rows) + "x" +
               std::to_string(width) + suffix,
           [d, rows = rows, width = width](Graph &g) {
             Graph f("norm_mlp");
             Tensor x = f.input("x", d, {rows, width});
             Tensor w = f.input("norm_w", d, {width});
             Tensor b = f.input("norm_b", d, {width});
             Tensor up = f.input("up_w", d, {width, 2 * width});
             Tensor upB = f.input("up_b", d, {2 * width});
             Tensor down = f.input("down_w", d, {2 * width, width});
             Tensor downB = f.input("down_b", d, {width});
             // In the input's dtype throughout, as PyTorch's bf16 module
             // is converted.
             Tensor centred = x - reduceMean(x, {-1}, true);
             Tensor var = reduceMean(centred * centred, {-1}, true);
             Tensor n = centred * rsqrt(var + 1e-5) * w + b;
             Tensor h = matmul(gelu(matmul(n, up) + upB), down) + downB;
             f.output("y", x + h);
             f.output("loss", reduceMean(cast(h * h, DType::f32)));
             differentiate(g, f, nullptr);
           },
           {{rows, width},
            {width},
            {width},
            {width, 2 * width},
            {2 * width},
            {2 * width, width},
            {width},
            {rows, width},
            {}}});
    cases.push_back({"grad_layernorm" + suffix,
                     [d](Graph &g) {
                       Graph f("layernorm");
                       Tensor x = f.input("x", d, {37, 96});
                       Tensor w = f.input("w", DType::f32, {96});
                       Tensor b = f.input("b", DType::f32, {96});
                       f.output("y", layerNormOf(x, w, b));
                       differentiate(g, f, nullptr);
                     },
                     {{37, 96}, {96}, {96}, {37, 96}}});
    // Rows enough for the weight and bias gradients to be summed in the
    // input gradient's row kernel (kf-fuse-column-sums: a block per
    // partial over 4 rows at once of 1000 columns, lanes past the row's
    // end; one row at a time of 4096 columns).
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4224, 1000},
                              {1056, 4096}})
      cases.push_back(
          {"grad_layernorm_" + std::to_string(cols) + "_column_partials" +
               suffix,
           [d, rows = rows, cols = cols](Graph &g) {
             Graph f("layernorm");
             Tensor x = f.input("x", d, {rows, cols});
             Tensor w = f.input("w", DType::f32, {cols});
             Tensor b = f.input("b", DType::f32, {cols});
             f.output("y", layerNormOf(x, w, b));
             differentiate(g, f, nullptr);
           },
           {{rows, cols}, {cols}, {cols}, {rows, cols}}});
    // Weights in the input's dtype: their gradients are rounded where one
    // kernel adds up both gradients' column partials.
    cases.push_back(
        {"grad_layernorm_4096_rounded_weight_grads" + suffix,
         [d](Graph &g) {
           Graph f("layernorm");
           Tensor x = f.input("x", d, {1056, 4096});
           Tensor w = cast(f.input("w", d, {4096}), DType::f32);
           Tensor b = cast(f.input("b", d, {4096}), DType::f32);
           f.output("y", layerNormOf(x, w, b));
           differentiate(g, f, nullptr);
         },
         {{1056, 4096}, {4096}, {4096}, {1056, 4096}}});
    // A softmax's backward reads y and dy along the row: a thread of a
    // row kernel holds both (kf-tile takes more threads a row for them).
    cases.push_back({"grad_softmax_4096" + suffix,
                     [d](Graph &g) {
                       Graph f("softmax");
                       f.output("y", softmax(f.input("x", d, {300, 4096})));
                       differentiate(g, f, nullptr);
                     },
                     {{300, 4096}, {300, 4096}}});
    // The loss through its primitives (the max's gradient found by
    // comparison) and through logsumexp (no gradient through the max: one
    // pass over the logits).
    for (bool throughLogsumexp : {false, true})
      cases.push_back(
          {std::string("grad_cross_entropy") +
               (throughLogsumexp ? "_logsumexp" : "") + suffix,
           [d, throughLogsumexp](Graph &g) {
             Graph f("xent");
             Tensor logits = f.input("logits", d, {13, 1000});
             Tensor labels = f.input("labels", DType::i64, {13, 1});
             Tensor z = cast(logits, DType::f32);
             Tensor lse;
             if (throughLogsumexp) {
               lse = logsumexp(z, {-1}, true);
             } else {
               Tensor m = reduceMax(z, {-1}, true);
               lse = log(reduceSum(exp(z - m), {-1}, true)) + m;
             }
             f.output("loss", reduceMean(lse - takeAlongAxis(z, labels, 1)));
             differentiate(g, f, "loss");
           },
           {{13, 1000}, {13, 1}}});
  }
  for (DType d : {DType::f16, DType::bf16})
    cases.push_back({std::string("grad_attention_gqa_causal_") + dtypeName(d),
                     [d](Graph &g) {
                       Graph f("attention");
                       Tensor q = f.input("q", d, {1, 4, 64, 32});
                       Tensor k = f.input("k", d, {1, 2, 64, 32});
                       Tensor v = f.input("v", d, {1, 2, 64, 32});
                       AttentionOptions o;
                       o.causal = true;
                       f.output("o", attention(q, k, v, o));
                       differentiate(g, f, nullptr);
                     },
                     {{1, 4, 64, 32},
                      {1, 2, 64, 32},
                      {1, 2, 64, 32},
                      {1, 4, 64, 32}}});
  // FlashAttention's backward kernel (kf.attention_grad): several blocks of
  // 128 rows, a partial last tile, grouped heads, different query and key
  // lengths, a value head dim that is not the key's, padded head dims,
  // head dims up to 256 (dk and dv in blocks of their own; one stage, of
  // the TMA where the query length is a multiple of 4, else of cp.async).
  struct FlashCase {
    const char *name;
    int64_t batch, heads, kvHeads, sq, sk, d, dv;
    bool causal;
  };
  for (FlashCase c : {FlashCase{"s200_d64_causal", 2, 4, 2, 200, 200, 64, 64, true},
                      FlashCase{"cross_d128_dv96", 1, 2, 1, 77, 150, 128, 96, false},
                      FlashCase{"causal_s300_d40", 1, 3, 3, 300, 300, 40, 40, true},
                      FlashCase{"gqa_causal_s320_d128", 1, 4, 2, 320, 320, 128, 128, true},
                      FlashCase{"gqa_s200_d192", 1, 4, 2, 200, 200, 192, 192, false},
                      FlashCase{"causal_s260_d256", 1, 2, 1, 260, 260, 256, 256, true},
                      FlashCase{"causal_s130_d256", 1, 2, 2, 130, 130, 256, 256, true},
                      FlashCase{"cross_d256_dv64", 1, 2, 1, 77, 150, 256, 64, false}})
    for (DType d : {DType::f16, DType::bf16})
      cases.push_back(
          {std::string("grad_attention_flash_") + c.name + "_" + dtypeName(d),
           [c, d](Graph &g) {
             Graph f("attention");
             Tensor q = f.input("q", d, {c.batch, c.heads, c.sq, c.d});
             Tensor k = f.input("k", d, {c.batch, c.kvHeads, c.sk, c.d});
             Tensor v = f.input("v", d, {c.batch, c.kvHeads, c.sk, c.dv});
             AttentionOptions o;
             o.causal = c.causal;
             f.output("o", attention(q, k, v, o));
             differentiate(g, f, nullptr);
           },
           {{c.batch, c.heads, c.sq, c.d},
            {c.batch, c.kvHeads, c.sk, c.d},
            {c.batch, c.kvHeads, c.sk, c.dv},
            {c.batch, c.heads, c.sq, c.dv}}});
  // Attention over q, k and v split into heads out of one projection
  // ([B, S, 3 H D]), as a transformer block computes them: the backward
  // kernel reads its operands as views of the saved projection in place.
  for (DType d : {DType::f16, DType::bf16})
    cases.push_back(
        {std::string("grad_attention_flash_split_heads_") + dtypeName(d),
         [d](Graph &g) {
           Graph f("attention");
           Tensor qkv = f.input("qkv", d, {2, 200, 3 * 4 * 64});
           auto heads = [&](int64_t which) {
             Tensor part = slice(qkv, 2, which * 256, (which + 1) * 256);
             return transpose(reshape(part, {2, 200, 4, 64}), {0, 2, 1, 3});
           };
           AttentionOptions o;
           o.causal = true;
           f.output("o", attention(heads(0), heads(1), heads(2), o));
           differentiate(g, f, nullptr);
         },
         {{2, 200, 768}, {2, 4, 200, 64}}});
  cases.push_back({"grad_indexing_f32",
                   [](Graph &g) {
                     Graph f("indexing");
                     Tensor table = f.input("table", DType::f32, {11, 8});
                     Tensor ids = f.input("ids", DType::i32, {3, 5});
                     Tensor e = gather(table, ids, 0);         // [3, 5, 8]
                     Tensor s = concat({slice(e, 2, 0, 4), slice(e, 2, 4) * 2.0},
                                       1);                     // [3, 10, 4]
                     Tensor p = pad(cumsum(s, 1), {{0, 0}, {1, 0}, {0, 2}});
                     f.output("y", softmax(p, -1));
                     differentiate(g, f, nullptr);
                   },
                   {{11, 8}, {3, 5}, {3, 11, 6}}});
}

Tensor layerNormOf(Tensor x, Tensor w, Tensor b) {
  Tensor xf = cast(x, DType::f32);
  Tensor mean = reduceMean(xf, {-1}, true);
  Tensor d = xf - mean;
  Tensor var = reduceMean(d * d, {-1}, true);
  return cast(d * rsqrt(var + 1e-5) * w + b, x.dtype());
}

} // namespace kfuse::testing
