//===- WorkloadGraphs.h - the memory-bound workloads ------------*- C++ -*-===//
//
// The graphs of kfuse-bench's memory-bound workloads, at full size (larger
// than the L2 cache) for the benchmark and small for the GPU tests.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_BENCH_WORKLOADGRAPHS_H
#define KFUSE_BENCH_WORKLOADGRAPHS_H

#include "kfuse/kfuse.h"

#include <functional>
#include <string>
#include <vector>

namespace kfuse::bench {

struct Workload {
  std::string name;
  std::function<void(Graph &)> build;
  /// torch.compile time over floor on the H200 (gpu-machine.md), 0 if none.
  double torchCompileRatio;
  /// The inputs to time on, where uniform [-1, 1] data (integers in
  /// [-8, 8]) would not be representative (token ids over a vocabulary).
  std::function<std::vector<HostTensor>(const Graph &)> inputs = {};
};

std::vector<Workload> memoryBoundWorkloads(bool small);

/// LayerNorm and RMSNorm of x [..., n] in f32, with inputs "gamma" and
/// "beta" (or "w") of `dtype`, cast back to `dtype`: as PyTorch's
/// F.layer_norm (eps 1e-5) and Llama's RMSNorm (eps 1e-6) compute them.
Tensor layernorm(Graph &g, Tensor x, DType dtype, int64_t n);
Tensor rmsnorm(Graph &g, Tensor x, DType dtype, int64_t n);
/// The indexing ops' workloads (IndexingWorkloads.cpp): slices, concat,
/// pad, RoPE, an embedding lookup, dropout and cross-entropy; appended by
/// memoryBoundWorkloads.
void addIndexingWorkloads(std::vector<Workload> &w, bool small);
/// Random data for every input of `g` but the one named `idsName`, which
/// gets uniform token ids in [0, vocab) (IndexingWorkloads.cpp).
std::vector<HostTensor> withIds(const Graph &g, const std::string &idsName,
                                int64_t vocab);

/// Attention as a model writes it from primitives: q [B, H, S, D], k and v
/// [B, Hkv, S, D] in bf16, their heads repeated H / Hkv times, scores
/// Q K^T / sqrt(D) in f32 (masked causally to -inf), softmax, P cast to
/// bf16, times V. kf-online-softmax makes it one kernel; unfused it
/// materialises the S x S scores.
struct AttentionShape {
  int64_t batch, heads, kvHeads, seq, headDim;
  bool causal;
  /// A bf16 [B, H, S, S] input added to the scaled scores.
  bool bias = false;
  /// q rotated by RoPE ([S, D] f32 cos and sin tables) before the scores.
  bool ropeQ = false;
};
Graph attentionFromPrimitives(const std::string &name, const AttentionShape &s);

/// x [B, heads, S, Dh] rotated by the positions' cos and sin ([S, Dh] or,
/// for one token, [Dh]; f32), rotate-half written from slice and concat;
/// back in bf16 (BlockGraphs.cpp).
Tensor rope(Tensor x, Tensor cos, Tensor sin, int64_t headDim);

/// A pre-norm transformer block's sizes (BlockGraphs.cpp).
struct BlockShape {
  int64_t batch, seq, dim, heads;
};
/// `layers` pre-norm blocks (LayerNorm, fused QKV projection split into
/// heads, causal attention, output projection and residual, GELU MLP and
/// residual), each with its own weights (inputs l<i>_*), on a bf16 input x;
/// named `name`, or prenorm_x<layers>.
Graph preNormStack(const BlockShape &s, int layers,
                   const std::string &name = "");

/// One token through a Llama-style block (BlockGraphs.cpp): RMSNorm, the
/// q, k, v projections, RoPE, grouped-query attention over a KV cache of
/// `cached` positions and the new one, the output projection and residual,
/// RMSNorm, a SwiGLU MLP and residual; bf16 weights, f32 accumulation.
/// Outputs y and the new position's k and v (for the cache).
struct DecodeShape {
  int64_t dim, heads, kvHeads, ffn, cached;
};
Graph llamaDecodeStep(const DecodeShape &s);

/// Llama-style prefill blocks (RMSNorm, RoPE, grouped-query causal
/// attention, SwiGLU), each layer with weights of its own.
struct LlamaShape {
  int64_t batch, seq, dim, heads, kvHeads, ffn;
};
Graph llamaStack(const LlamaShape &s, int layers, const std::string &name = "");
/// The same step in two graphs, as a server with a preallocated KV cache
/// runs it: the new token's q, k, v heads (which the caller writes into
/// its cache), then attention over the `cached` positions of the cache,
/// the new one included, and the rest of the block. `cached` may be
/// symbolic: the growing length of a generation loop.
Graph llamaDecodeHeads(const DecodeShape &s);
Graph llamaDecodeAttend(const DecodeShape &s, Dim cached);

} // namespace kfuse::bench

#endif // KFUSE_BENCH_WORKLOADGRAPHS_H
