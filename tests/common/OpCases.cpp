//===- OpCases.cpp - one small graph per op -------------------------------===//

#include "OpCases.h"

#include <cmath>
#include <random>

namespace kfuse::testing {

namespace {

using Unary = Tensor (*)(Tensor);
using Binary = Tensor (*)(Tensor, Tensor);

void addUnary(std::vector<OpCase> &cases, const std::string &name, Unary fn,
              std::vector<DType> dtypes) {
  for (DType d : dtypes)
    cases.push_back({name + "_" + dtypeName(d),
                     [fn, d](Graph &g) {
                       g.output("y", fn(g.input("x", d, {"N", 7})));
                     },
                     {{13, 7}}});
}

void addBinary(std::vector<OpCase> &cases, const std::string &name, Binary fn,
               std::vector<DType> dtypes) {
  for (DType d : dtypes)
    cases.push_back({name + "_" + dtypeName(d),
                     [fn, d](Graph &g) {
                       // A column broadcast against a row.
                       Tensor a = g.input("a", d, {5, 1});
                       Tensor b = g.input("b", d, {1, 11});
                       g.output("y", fn(a, b));
                     },
                     {{5, 1}, {1, 11}}});
}

} // namespace

std::vector<OpCase> allOpCases() {
  std::vector<OpCase> cases;
  const std::vector<DType> floats = {DType::f32, DType::f16, DType::bf16};
  const std::vector<DType> numeric = {DType::f32, DType::bf16, DType::i32,
                                      DType::i64};
  addUnary(cases, "neg", neg, numeric);
  addUnary(cases, "abs", abs, numeric);
  addUnary(cases, "relu", relu, numeric);
  addUnary(cases, "exp", exp, floats);
  addUnary(cases, "log", log, floats);
  addUnary(cases, "sqrt", sqrt, floats);
  addUnary(cases, "rsqrt", rsqrt, floats);
  addUnary(cases, "sin", sin, floats);
  addUnary(cases, "cos", cos, floats);
  addUnary(cases, "tanh", tanh, floats);
  addUnary(cases, "sigmoid", sigmoid, floats);
  addUnary(cases, "erf", erf, floats);
  addUnary(cases, "gelu", gelu, floats);
  addUnary(cases, "silu", silu, floats);
  addUnary(cases, "reciprocal", reciprocal, floats);
  addBinary(cases, "add", add, numeric);
  addBinary(cases, "sub", sub, numeric);
  addBinary(cases, "mul", mul, numeric);
  addBinary(cases, "div", div, numeric);
  addBinary(cases, "maximum", maximum, numeric);
  addBinary(cases, "minimum", minimum, numeric);
  addBinary(cases, "pow", pow, floats);

  for (DType d : {DType::f32, DType::f16, DType::i32})
    cases.push_back({std::string("compare_select_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor a = g.input("a", d, {1000003});
                       Tensor b = g.input("b", d, {1000003});
                       g.output("lt", a < b);
                       g.output("sel", where(a >= b, a, b));
                     },
                     {{1000003}, {1000003}}});
  cases.push_back({"compare_i1", [](Graph &g) {
                     Tensor a = g.input("a", DType::i1, {33});
                     Tensor b = g.input("b", DType::i1, {33});
                     g.output("eq", compare(Compare::eq, a, b));
                     g.output("ne", compare(Compare::ne, a, b));
                   },
                   {{33}, {33}}});
  for (DType from : {DType::f32, DType::f16, DType::bf16, DType::i32,
                     DType::i1, DType::i64})
    cases.push_back({std::string("cast_from_") + dtypeName(from),
                     [from](Graph &g) {
                       Tensor x = g.input("x", from, {3, 17});
                       for (DType to : {DType::f32, DType::f16, DType::bf16,
                                        DType::i32, DType::i1, DType::i64})
                         g.output(dtypeName(to), cast(x * 4.0, to));
                     },
                     {{3, 17}}});
  cases.push_back({"constant_iota", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {4, 9});
                     g.output("y", x * 2.5 + iota(g, {4, 9}, 1, DType::f32));
                     g.output("i", iota(g, {4, 9}, 0) * 3.0);
                   },
                   {{4, 9}}});
  cases.push_back({"broadcast", [](Graph &g) {
                     g.output("y", broadcastTo(g.input("x", DType::bf16, {1, 7}),
                                               {3, 5, 7}));
                   },
                   {{1, 7}}});
  cases.push_back({"reshape_transpose", [](Graph &g) {
                     Tensor x = g.input("x", DType::f16, {6, 35});
                     g.output("t", transpose(reshape(x, {2, 3, 5, 7}),
                                             {3, 1, 0, 2}));
                   },
                   {{6, 35}}});
  for (DType d : {DType::f32, DType::bf16, DType::i32})
    cases.push_back({std::string("transpose_tiles_") + dtypeName(d),
                     [d](Graph &g) {
                       // Not multiples of the 32x32 tiles, with a batch.
                       Tensor x = g.input("x", d, {3, 70, 45});
                       Tensor z = g.input("z", d, {3, 45, 70});
                       g.output("y", transpose(x, {0, 2, 1}) + z);
                     },
                     {{3, 70, 45}, {3, 45, 70}}});
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back({std::string("column_sum_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {1000, 77});
                       g.output("sum", reduceSum(x, {0}));
                       g.output("max", reduceMax(x, {0}, true));
                       g.output("mean", reduceMean(x, {0}));
                     },
                     {{1000, 77}}});
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back({std::string("reduce_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {"M", 7, 129});
                       g.output("sum", reduceSum(x, {2}));
                       g.output("max", reduceMax(x, {0, 2}, true));
                       g.output("min", reduceMin(x, {1}));
                       g.output("mean", reduceMean(x, {0, 1}));
                     },
                     {{3, 7, 129}}});
  // Few long rows (kf-split-reduction): 6 rows of 3 x 2^16 in 24 chunks
  // of 8192 each; a whole tensor's reductions as one row of 509 x 2048
  // in 64 chunks (16-bit partial sums in f32).
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back({std::string("split_rows_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {6, 3 * 65536});
                       g.output("sum", reduceSum(x * x, {1}));
                       g.output("max", reduceMax(x, {1}, true));
                       g.output("mean", reduceMean(x, {1}));
                     },
                     {{6, 3 * 65536}}});
  for (DType d : {DType::f32, DType::bf16})
    cases.push_back({std::string("whole_tensor_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {509, 2048});
                       g.output("mean", reduceMean(abs(x) + 0.5, {0, 1}));
                       g.output("min", reduceMin(x, {0, 1}, true));
                     },
                     {{509, 2048}}});
  cases.push_back({"reduce_i32", [](Graph &g) {
                     Tensor x = g.input("x", DType::i32, {9, 31});
                     g.output("sum", reduceSum(x, {1}));
                     g.output("max", reduceMax(x));
                   },
                   {{9, 31}}});
  for (DType d : floats)
    cases.push_back({std::string("softmax_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {"M", 1000});
                       g.output("rows", softmax(x * 4.0));
                       g.output("cols", softmax(x, 0));
                     },
                     {{37, 1000}}});
  // Short rows that share blocks (row_tiling's rowsPerBlock), enough of
  // them for the grouping, a row count that leaves the last block's group
  // short, and row lengths past the threads' vectors (whole vectors
  // masked): f32 8 rows of 8 threads a block, bf16 LayerNorm with its
  // weights 4 rows a warp each, f16 8 rows of 4 threads.
  cases.push_back({"grouped_rows_f32", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {4229, 100});
                     g.output("softmax", softmax(x * 4.0));
                     g.output("sum", reduceSum(x, {1}));
                   },
                   {{4229, 100}}});
  cases.push_back({"grouped_rows_layernorm_bf16", [](Graph &g) {
                     Tensor x = g.input("x", DType::bf16, {2111, 1000});
                     g.output("y", layerNormOf(x, g.input("w", DType::bf16, {1000}),
                                               g.input("b", DType::bf16, {1000})));
                   },
                   {{2111, 1000}, {1000}, {1000}}});
  // A training forward's normalisations, which save their statistics for
  // the backward: the row kernel writes them beside its rows, for rows in
  // registers, several rows a block, and long rows (split over a cluster's
  // blocks on Hopper, staged in shared memory without clusters: the first
  // block of the cluster writes them).
  for (auto [name, rows, cols] :
       {std::tuple<const char *, int64_t, int64_t>{
            "saved_statistics_layernorm_bf16", 515, 1024},
        {"saved_statistics_grouped_rows_bf16", 2111, 96},
        {"saved_statistics_staged_rows_bf16", 40, 24576}})
    cases.push_back({name,
                     [rows = rows, cols = cols](Graph &g) {
                       Tensor x = cast(g.input("x", DType::bf16, {rows, cols}),
                                       DType::f32);
                       Tensor mean = reduceMean(x, {1}, true);
                       Tensor centred = x - mean;
                       Tensor var = reduceMean(centred * centred, {1}, true);
                       Tensor rstd = rsqrt(var + 1e-5);
                       g.output("y", cast(centred * rstd, DType::bf16));
                       g.output("mean", mean);
                       g.output("rstd", rstd);
                     },
                     {{rows, cols}}});
  cases.push_back({"grouped_rows_rms_f16", [](Graph &g) {
                     Tensor x = cast(g.input("x", DType::f16, {4500, 6}), DType::f32);
                     g.output("y", cast(x * rsqrt(reduceMean(x * x, {1}, true) + 1e-6),
                                        DType::f16));
                   },
                   {{4500, 6}}});
  // Rows too long for registers whose kernel passes over them three times
  // (mean, variance, output), two streamed inputs (x and a residual): on
  // Hopper split over a cluster of 4 blocks (row_tiling's cluster), else
  // staged in shared memory by the first pass (inShared).
  cases.push_back({"staged_rows_bf16", [](Graph &g) {
                     Tensor x = g.input("x", DType::bf16, {300, 24576});
                     Tensor r = g.input("r", DType::bf16, {300, 24576});
                     Tensor w = g.input("w", DType::bf16, {24576});
                     g.output("y", layerNormOf(x + r, w, w));
                   },
                   {{300, 24576}, {300, 24576}, {24576}}});
  // Rows too long for one block's registers, read twice or more: f32 40000
  // in vectors of 4 split over a cluster of 4 blocks on Hopper; else, and
  // 40003 (one element a lane) always, the looped row kernel, with the
  // online normaliser for softmax; 40003 is ragged against any thread
  // count.
  for (int64_t n : {40000, 40003})
    cases.push_back({"long_rows_" + std::to_string(n),
                     [n](Graph &g) {
                       Tensor x = g.input("x", DType::f32, {3, n});
                       Tensor centered = x - reduceMean(x, {1}, true);
                       g.output("softmax", softmax(x * 8.0));
                       g.output("norm", centered *
                                            rsqrt(reduceMean(centered * centered,
                                                             {1}, true) +
                                                  1e-5));
                     },
                     {{3, n}}});
  // Rows split over clusters (Hopper): a bf16 softmax of 65536 columns over
  // 4 blocks of 512 threads, 32 values each, its max and sum combined
  // across the blocks; an f16 softmax scaled by weights over 20000 columns
  // on 4 blocks, the last of which holds no lane of the row (its max is
  // -inf, its sum 0). An f16 RMSNorm of such rows stays staged in shared
  // memory (rows enough that kf-split-reduction leaves its mean whole).
  cases.push_back({"cluster_rows_softmax_bf16",
                   [](Graph &g) {
                     Tensor x = g.input("x", DType::bf16, {5, 65536});
                     g.output("y", softmax(x * 8.0));
                   },
                   {{5, 65536}}});
  cases.push_back(
      {"cluster_rows_softmax_f16",
       [](Graph &g) {
         Tensor x = cast(g.input("x", DType::f16, {600, 20000}), DType::f32);
         Tensor w = cast(g.input("w", DType::f16, {20000}), DType::f32);
         g.output("y", cast(softmax(x * 4.0) * w, DType::f16));
       },
       {{600, 20000}, {20000}}});
  cases.push_back(
      {"long_rows_rmsnorm_f16",
       [](Graph &g) {
         Tensor x = cast(g.input("x", DType::f16, {600, 20000}), DType::f32);
         Tensor w = cast(g.input("w", DType::f16, {20000}), DType::f32);
         Tensor rms = rsqrt(reduceMean(x * x, {1}, true) + 1e-6);
         g.output("y", cast(x * rms * w, DType::f16));
       },
       {{600, 20000}, {20000}}});
  // A normalisation whose rows leave flattened (GPT-2's LayerNorm feeding
  // Conv1D's addmm over x.view(-1, d)): the row kernel's per-row values
  // are found through the reshape, in registers and looped.
  for (DType d : floats)
    cases.push_back({std::string("norm_flattened_") + dtypeName(d),
                     [d](Graph &g) {
                       for (auto [name, n] : {std::pair{"x", int64_t(96)},
                                              std::pair{"long", int64_t(40000)}}) {
                         Tensor x = g.input(name, d, {2, 3, n});
                         Tensor centered = x - reduceMean(x, {2}, true);
                         Tensor y = centered * rsqrt(reduceMean(centered * centered,
                                                                {2}, true) +
                                                     1e-5);
                         g.output(std::string(name) + "_rows",
                                  reshape(y, {6, n}));
                       }
                     },
                     {{2, 3, 96}, {2, 3, 40000}}});
  for (DType d : floats)
    cases.push_back({std::string("matmul_") + dtypeName(d),
                     [d](Graph &g) {
                       MatmulOptions tb;
                       tb.transposeB = true;
                       Tensor a = g.input("a", d, {"M", 67});
                       Tensor b = g.input("b", d, {67, 13});
                       Tensor c = g.input("c", d, {13, 67});
                       g.output("ab", matmul(a, b));
                       g.output("abt", matmul(a, c, tb));
                     },
                     {{31, 67}, {67, 13}, {13, 67}}});
  // A Linear over flattened tokens whose epilogue leaves through a reshape
  // back to [B, S, N] (GPT-2's Conv1D: addmm over x.view(-1, d)): bias,
  // residual and GELU (erf and tanh forms) computed on the accumulators.
  for (DType d : floats)
    cases.push_back({std::string("matmul_flattened_epilogue_") + dtypeName(d),
                     [d](Graph &g) {
                       Tensor x = g.input("x", d, {3, 37, 64});
                       Tensor w = g.input("w", d, {64, 80});
                       Tensor bias = g.input("bias", d, {80});
                       Tensor residual = g.input("residual", d, {3, 37, 80});
                       Tensor y = matmul(reshape(x, {111, 64}), w) + bias;
                       Tensor r = reshape(y, {3, 37, 80});
                       g.output("y", gelu(r + residual));
                       // GPT-2's GELU: tanh form, x^3 as a product.
                       Tensor cube = pow(r, scalarLike(r, 3.0));
                       Tensor t = tanh((r + cube * 0.044715) * 0.7978845608);
                       g.output("gelu_tanh", r * 0.5 * (t + 1.0));
                     },
                     {{3, 37, 64}, {64, 80}, {80}, {3, 37, 80}}});
  // The same at sizes kf-split-k splits (8 tiles of 256 x 256 over K =
  // 1024): the kernel summing the K chunks ends in the residual add after
  // the reshape (transformers' GPT-2 at 256 wide failed to compile).
  cases.push_back({"matmul_split_k_reshaped_epilogue_bf16",
                   [](Graph &g) {
                     Tensor x = g.input("x", DType::bf16, {2, 128, 1024});
                     Tensor w = g.input("w", DType::bf16, {1024, 256});
                     Tensor bias = g.input("bias", DType::bf16, {256});
                     Tensor residual =
                         g.input("residual", DType::bf16, {2, 128, 256});
                     Tensor y = matmul(reshape(x, {256, 1024}), w) + bias;
                     g.output("y", residual + reshape(y, {2, 128, 256}));
                   },
                   {{2, 128, 1024}, {1024, 256}, {256}, {2, 128, 256}}});
  // A Linear's weight gradient, [B * S, K]^T [B * S, N]: both operands are
  // reshapes of [B, S, .] activations that the matmul kernel reads in
  // place, at sizes kf-split-k splits (the partials kernel takes the
  // reshapes along); and a Gram matrix X^T X of one such view.
  cases.push_back({"matmul_weight_grad_of_views_bf16",
                   [](Graph &g) {
                     MatmulOptions o;
                     o.transposeA = true;
                     o.resultType = DType::f32;
                     Tensor x = g.input("x", DType::bf16, {2, 2048, 128});
                     Tensor dy = g.input("dy", DType::bf16, {2, 2048, 256});
                     g.output("dw", matmul(reshape(x, {4096, 128}),
                                           reshape(dy, {4096, 256}), o));
                   },
                   {{2, 2048, 128}, {2, 2048, 256}}});
  // A Linear's backward as training graphs have it: the f32 product
  // through the activation's derivative (an input read at each element),
  // summed over all rows for the bias gradient and rounded for the next
  // matmul. kf-fuse-column-sums puts both sums and the rounding in the
  // matmul kernel: at whole tiles (each thread's sums computed with the
  // epilogue), and with partial tiles of both M and N (computed apart,
  // where the pair lies inside).
  for (auto [name, batch, rows, cols] :
       {std::tuple<const char *, int64_t, int64_t, int64_t>{
            "matmul_bias_grad_bf16", 2, 1024, 2048},
        {"matmul_bias_grad_edges_bf16", 3, 48, 392}})
    cases.push_back({name,
                     [batch = batch, rows = rows, cols = cols](Graph &g) {
                       MatmulOptions o;
                       o.transposeB = true;
                       o.resultType = DType::f32;
                       Tensor dy = g.input("dy", DType::bf16, {batch, rows, 256});
                       Tensor w = g.input("w", DType::bf16, {cols, 256});
                       Tensor h = g.input("h", DType::bf16, {batch, rows, cols});
                       Tensor product = matmul(dy, w, o);
                       Tensor dh = product * sigmoid(cast(h, DType::f32));
                       g.output("dh", cast(dh, DType::bf16));
                       g.output("dbias", reduceSum(dh, {0, 1}));
                       g.output("dscale",
                                reduceSum(product * cast(h, DType::f32), {0, 1}));
                     },
                     {{batch, rows, 256}, {cols, 256}, {batch, rows, cols}}});
  // The same through a Linear over flattened rows: the matmul kernel's
  // result is the [B * S, N] product reshaped back to [B, S, N].
  cases.push_back({"matmul_bias_grad_reshaped_bf16", [](Graph &g) {
                     MatmulOptions o;
                     o.transposeB = true;
                     o.resultType = DType::f32;
                     Tensor dy = g.input("dy", DType::bf16, {2, 128, 64});
                     Tensor w = g.input("w", DType::bf16, {96, 64});
                     Tensor h = g.input("h", DType::bf16, {2, 128, 96});
                     Tensor product = reshape(matmul(reshape(dy, {256, 64}), w, o),
                                              {2, 128, 96});
                     Tensor dh = product * cast(h, DType::f32);
                     g.output("dh", cast(dh, DType::bf16));
                     g.output("dbias", reduceSum(dh, {0, 1}));
                   },
                   {{2, 128, 64}, {96, 64}, {2, 128, 96}}});
  // The f32 product read by more than its column sum: the matmul kernel
  // keeps writing it, beside the partial sums.
  cases.push_back({"matmul_column_sum_beside_f32_bf16", [](Graph &g) {
                     MatmulOptions o;
                     o.resultType = DType::f32;
                     Tensor a = g.input("a", DType::bf16, {512, 128});
                     Tensor b = g.input("b", DType::bf16, {128, 384});
                     Tensor product = matmul(a, b, o);
                     g.output("rowsum", reduceSum(product, {1}));
                     g.output("colsum", reduceSum(product, {0}));
                   },
                   {{512, 128}, {128, 384}}});
  cases.push_back({"matmul_gram_of_view_bf16",
                   [](Graph &g) {
                     MatmulOptions o;
                     o.transposeA = true;
                     Tensor x = g.input("x", DType::bf16, {3, 40, 72});
                     Tensor flat = reshape(x, {120, 72});
                     g.output("gram", matmul(flat, flat, o));
                   },
                   {{3, 40, 72}}});
  // Rows regrouped the other way: a [B * S, K] input as the batched
  // [B, S, K] operand of a shared weight, with a GELU epilogue.
  cases.push_back({"matmul_batched_of_view_bf16",
                   [](Graph &g) {
                     Tensor x = g.input("x", DType::bf16, {256, 64});
                     Tensor w = g.input("w", DType::bf16, {64, 96});
                     g.output("y", gelu(matmul(reshape(x, {2, 128, 64}), w)));
                   },
                   {{256, 64}, {64, 96}}});
  cases.push_back({"matmul_batched_f32_out", [](Graph &g) {
                     MatmulOptions o;
                     o.transposeA = true;
                     o.resultType = DType::f32;
                     Tensor a = g.input("a", DType::bf16, {3, 40, 9});
                     Tensor b = g.input("b", DType::bf16, {3, 40, 5});
                     g.output("c", matmul(a, b, o));
                   },
                   {{3, 40, 9}, {3, 40, 5}}});
  for (bool causal : {false, true})
    cases.push_back({std::string("attention_") + (causal ? "causal" : "full"),
                     [causal](Graph &g) {
                       AttentionOptions o;
                       o.causal = causal;
                       Tensor q = g.input("q", DType::f16, {2, 4, 19, 32});
                       Tensor k = g.input("k", DType::f16, {2, 2, 23, 32});
                       Tensor v = g.input("v", DType::f16, {2, 2, 23, 16});
                       g.output("o", attention(q, k, v, o));
                     },
                     {{2, 4, 19, 32}, {2, 2, 23, 32}, {2, 2, 23, 16}}});
  cases.push_back({"attention_mask_bias", [](Graph &g) {
                     AttentionOptions o;
                     o.mask = g.input("m", DType::i1, {1, 1, 9, 9});
                     o.bias = g.input("bias", DType::f32, {9, 9});
                     Tensor q = g.input("q", DType::f32, {1, 2, 9, 8});
                     g.output("o", attention(q, q, q, o));
                   },
                   {{1, 1, 9, 9}, {9, 9}, {1, 2, 9, 8}}});
  // Masks as HuggingFace builds them: a causal term from positions (which
  // canonicalizes to `causal`), and-ed with same-packed-sequence ids (which
  // stays a mask); keys and values repeated per query head (read as their
  // kv heads); and a bottom-right shifted term, which is no causal mask.
  for (DType d : {DType::f16, DType::bf16})
    cases.push_back(
        {std::string("attention_position_masks_") + dtypeName(d),
         [d](Graph &g) {
           int64_t s = 70;
           Tensor q = g.input("q", d, {2, 4, s, 32});
           Tensor k = g.input("k", d, {2, 2, s, 32});
           Tensor v = g.input("v", d, {2, 2, s, 32});
           Tensor starts = g.input("starts", DType::f32, {2, s});
           auto repeated = [&](Tensor x) {
             Tensor unit = reshape(x, {2, 2, 1, s, 32});
             return reshape(broadcastTo(unit, {2, 2, 2, s, 32}), {2, 4, s, 32});
           };
           Tensor query = reshape(iota(g, {s}, 0, DType::i64) + 0.0, {1, 1, s, 1});
           Tensor key = reshape(iota(g, {s}, 0, DType::i64), {1, 1, 1, s});
           Tensor ids = cumsum(cast(starts > scalarLike(starts, 0.6), DType::i32), 1);
           Tensor same = compare(Compare::eq, reshape(ids, {2, 1, s, 1}),
                                 reshape(ids, {2, 1, 1, s}));
           AttentionOptions o;
           o.mask = broadcastTo(logicalAnd(key <= query, same), {2, 4, s, s});
           g.output("o", attention(q, repeated(k), repeated(v), o));
           AttentionOptions shifted;
           shifted.mask = broadcastTo(key <= query + 3.0, {2, 4, s, s});
           g.output("o_shifted", attention(q, k, v, shifted));
         },
         {{2, 4, 70, 32}, {2, 2, 70, 32}, {2, 2, 70, 32}, {2, 70}}});
  // q, k and v split into heads by slices, reshapes and transposes: of a
  // packed projection (GPT-2's c_attn) and of a kv-heads input (GQA), read
  // in place by the attention; and a slice 68 elements in, whose rows are
  // not 16-byte aligned, copied by a kernel of its own. In f32 (the
  // one-thread-per-output template), heads merged after the attention.
  for (DType d : {DType::f16, DType::bf16})
    cases.push_back(
        {std::string("attention_head_views_") + dtypeName(d),
         [d](Graph &g) {
           int64_t s = 70, h = 4, hd = 32;
           Tensor x = g.input("x", d, {2 * s, 64});
           Tensor w = g.input("w", d, {64, 3 * h * hd});
           Tensor kv = g.input("kv", d, {2, s, 4 * hd + 8});
           Tensor qkv = reshape(matmul(x, w), {2, s, 3 * h * hd});
           auto heads = [&](Tensor t, int64_t start, int64_t n) {
             Tensor part = slice(t, 2, start, start + n * hd);
             return transpose(reshape(part, {2, s, n, hd}), {0, 2, 1, 3});
           };
           AttentionOptions causal;
           causal.causal = true;
           // Heads merged after it ([B, S, H * D]): stored in place.
           Tensor o = attention(heads(qkv, 0, h), heads(qkv, h * hd, h),
                                heads(qkv, 2 * h * hd, h), causal);
           g.output("o", reshape(transpose(o, {0, 2, 1, 3}), {2, s, h * hd}));
           // (Queries at other columns: a view read by two attentions
           // would be copied once for both.)
           Tensor k2 = heads(kv, 0, 2);
           g.output("o_gqa",
                    attention(heads(qkv, 8, h), k2, heads(kv, 2 * hd, 2)));
           g.output("o_offset", attention(heads(qkv, 16, h), heads(kv, 8, 2),
                                          heads(kv, 68, 2)));
         },
         {{140, 64}, {64, 384}, {2, 70, 136}}});
  cases.push_back(
      {"attention_merged_heads_f32",
       [](Graph &g) {
         Tensor q = g.input("q", DType::f32, {2, 3, 20, 16});
         Tensor k = g.input("k", DType::f32, {2, 3, 24, 16});
         Tensor v = g.input("v", DType::f32, {2, 3, 24, 8});
         Tensor o = attention(q, k, v);
         g.output("o", reshape(transpose(o, {0, 2, 1, 3}), {2, 20, 24}));
       },
       {{2, 3, 20, 16}, {2, 3, 24, 16}, {2, 3, 24, 8}}});
  cases.push_back({"siblings", [](Graph &g) {
                     // Fused into one pointwise and one row kernel, each
                     // with two results.
                     Tensor x = g.input("x", DType::bf16, {40, 96});
                     g.output("exp", exp(x));
                     g.output("sin", sin(x) * 2.0);
                     g.output("sum", reduceSum(cast(x, DType::f32), {1}));
                     g.output("max", reduceMax(cast(x, DType::f32), {1}, true));
                   },
                   {{40, 96}}});
  cases.push_back({"chain_with_broadcasts", [](Graph &g) {
                     Tensor x = g.input("x", DType::f32, {"M", 256});
                     Tensor w = g.input("w", DType::f32, {256});
                     Tensor b = g.input("b", DType::f32, {"M", 1});
                     Tensor y = sigmoid(tanh(x * w + b) * 0.5 - 1.0);
                     g.output("y", exp(y) / (reciprocal(y + 2.0) + 1.0));
                   },
                   {{100, 256}, {256}, {100, 1}}});
  addIndexingCases(cases);
  addGradientCases(cases);
  return cases;
}

uint64_t freshSeed() {
  std::random_device seeds;
  return (uint64_t(seeds()) << 32) | seeds();
}

std::vector<HostTensor> randomInputs(const Graph &g, uint64_t seed) {
  std::vector<HostTensor> inputs;
  std::vector<TensorInfo> infos = g.inputs();
  for (size_t i = 0; i < infos.size(); ++i) {
    std::vector<int64_t> shape;
    for (const Dim &d : infos[i].shape)
      shape.push_back(d.size());
    inputs.push_back(HostTensor::random(infos[i].dtype, shape, seed + i));
  }
  return inputs;
}

} // namespace kfuse::testing
