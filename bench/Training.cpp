//===- Training.cpp - kfuse-bench training: backward passes ---------------===//
//
// Issue 29's benchmark. Each row's forward graph is split by splitVJP into
// a forward that saves what the backward reads and the backward itself;
// both are compiled fused and timed on zeroed device buffers. The loss and
// normalisation rows time the backward against its floor (the bytes of its
// inputs and outputs / this run's copy bandwidth) and against PyTorch's
// backward of the same function, eager and under torch.compile
// (`bench/peers.py --training NAME`: torch.autograd.grad with the graph
// retained, so only the backward is timed). The attention rows time
// FlashAttention's backward against its FLOPs / 679 TFLOP/s and SDPA's. The pre-norm block row times
// forward + backward against FLOPs / 679 TFLOP/s (the backward's products
// counted twice the forward's) and against eager and torch.compile's
// forward + backward. Every row sets the bytes kfuse's forward saves for
// the backward beside those eager PyTorch saves (saved_tensors_hooks) and
// those torch.compile's forward leaves allocated (issue 29's activation
// memory).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include "kfuse/Autodiff.h"

#include <cstdio>

namespace kfuse::bench {

namespace {

struct TrainingWorkload {
  std::string name;
  std::function<Graph()> build;
  /// FLOPs of forward + backward, for the block; 0 for memory-bound rows.
  double flops = 0;
  /// Forward + backward (the block) or the backward alone.
  bool withForward = false;
  std::string peerArg; ///< bench/peers.py --training's argument
  /// CompileOptions::deterministic (off: attention's dq added up by its
  /// key blocks, kf-atomic-dq).
  bool deterministic = true;
  /// CompileOptions::attentionGradTma (the backward's TMA pipeline).
  bool attentionGradTma = true;
  /// The backward's inputs where zeros would not be representative (token
  /// ids over a vocabulary: zeros would send every update to one row).
  std::function<std::vector<HostTensor>(const Graph &)> inputs = {};
};

/// An embedding table's gradient alone (gather's VJP, kf.index_add) at a
/// model's vocabulary: [vocab, dim] bf16 rows looked up by [batch, seq]
/// uniform ids, of which every `padEvery`-th (0: none) is the padding id
/// 0, a hot row whose updates all go to one place (peers.py has the same).
TrainingWorkload embeddingBackward(const std::string &name, int64_t vocab,
                                   int64_t dim, int64_t batch, int64_t seq,
                                   int64_t padEvery) {
  auto build = [=] {
    Graph g(name);
    Tensor table = g.input("table", DType::bf16, {vocab, dim});
    g.output("y", gather(table, g.input("ids", DType::i64, {batch, seq}), 0));
    return g;
  };
  auto inputs = [=](const Graph &g) {
    std::vector<HostTensor> values = withIds(g, "ids", vocab);
    for (size_t i = 0; i < values.size(); ++i)
      if (padEvery && g.inputs()[i].name == "ids")
        for (size_t j = 0; j < values[i].numElements(); j += padEvery)
          values[i].set(j, 0.0);
    return values;
  };
  return {name, build, 0, false,
          "embedding," + joinInts({vocab, dim, batch, seq, padEvery}), true,
          true, inputs};
}

struct AttentionShape {
  int64_t batch, heads, seq, dim;
  bool causal;
};

/// The backward of a bf16 attention of shape `a`, against the backward's
/// FLOPs (five products of the forward's size, half of them for causal) /
/// 679 TFLOP/s.
TrainingWorkload attentionBackward(AttentionShape a, bool deterministic,
                                   bool tma) {
  std::string name = "attn_bwd_s" + std::to_string(a.seq) + "_d" +
                     std::to_string(a.dim) + (a.causal ? "_causal" : "") +
                     (deterministic ? "" : "_atomic") +
                     (deterministic && !tma ? "_cpasync" : "");
  double flops =
      10.0 * a.batch * a.heads * a.seq * a.seq * a.dim / (a.causal ? 2 : 1);
  auto build = [a, name] {
    Graph g(name);
    Shape shape = {a.batch, a.heads, a.seq, a.dim};
    Tensor q = g.input("q", DType::bf16, shape);
    Tensor k = g.input("k", DType::bf16, shape);
    Tensor v = g.input("v", DType::bf16, shape);
    AttentionOptions o;
    o.causal = a.causal;
    g.output("o", attention(q, k, v, o));
    return g;
  };
  return {name, build, flops, false,
          "attention," + joinInts({a.batch, a.heads, a.seq, a.dim,
                                   int64_t(a.causal)}),
          deterministic, tma};
}

std::vector<TrainingWorkload> trainingWorkloads() {
  std::vector<TrainingWorkload> all;
  // The memory-bound bench's normalisations and losses, by name (peers.py
  // has the same functions under the same names).
  // embedding_pos_bf16's table gradient is kf.index_add.
  for (const char *name : {"layernorm_bf16", "rmsnorm_bf16", "softmax_bf16",
                           "xent_32k_bf16", "xent_128k_bf16",
                           "embedding_pos_bf16"})
    for (const Workload &w : memoryBoundWorkloads(false))
      if (w.name == name)
        all.push_back({w.name,
                       [w] {
                         Graph g(w.name);
                         w.build(g);
                         return g;
                       },
                       0, false, w.name, true, true, w.inputs});
  // The embedding's table gradient with unordered adds (atomics).
  TrainingWorkload atomic = all.back();
  atomic.name += "_atomic";
  atomic.deterministic = false;
  all.push_back(atomic);
  // GPT-2's and Llama 3's vocabularies, and a batch half padding.
  all.push_back(embeddingBackward("embedding_gpt2_bf16", 50257, 768, 8,
                                  1024, 0));
  all.push_back(embeddingBackward("embedding_llama3_bf16", 128256, 4096, 4,
                                  2048, 0));
  all.push_back(embeddingBackward("embedding_padded_bf16", 32000, 4096, 8,
                                  2048, 2));
  // FlashAttention's backward alone (kf.attention_grad) against SDPA's,
  // deterministic with the TMA pipeline (the default), without it
  // (`_cpasync`), and not deterministic (`_atomic`: dq added up by the key
  // blocks, which keeps cp.async).
  for (AttentionShape a : {AttentionShape{4, 16, 2048, 64, true},
                           AttentionShape{4, 16, 2048, 64, false},
                           AttentionShape{4, 16, 2048, 128, true},
                           AttentionShape{4, 16, 2048, 128, false}})
    for (auto [deterministic, tma] :
         {std::pair{true, true}, std::pair{true, false},
          std::pair{false, false}})
      all.push_back(attentionBackward(a, deterministic, tma));
  // Head dim 256 (dk and dv in blocks of their own, one stage), as many
  // FLOPs as the d128 rows.
  for (bool causal : {true, false})
    all.push_back(
        attentionBackward(AttentionShape{4, 8, 2048, 256, causal}, true, true));
  const BlockShape block{4, 2048, 1024, 16};
  all.push_back({"prenorm_b4_s2048_d1024",
                 [block] { return preNormStack(block, 1, "prenorm_train"); },
                 3 * preNormFlops(block, 1), true,
                 "prenorm," + joinInts({block.batch, block.seq, block.dim,
                                        block.heads})});
  return all;
}

struct TrainingRow {
  double forwardMs = 0, backwardMs = 0, floorMs = 0, savedBytes = 0;
  int forwardKernels = 0, backwardKernels = 0;
  /// The block's forward and backward kernels one by one.
  std::vector<KernelProfile> forwardProfile, backwardProfile;
  /// eager and torch.compile ms; the bytes eager's forward saves and
  /// torch.compile's forward holds for the backward.
  std::vector<double> peer;
};

Expected<TrainingRow> measure(const TrainingWorkload &w, double copyGBs,
                              const std::string &peers) {
  Graph forward = w.build();
  if (!forward.status())
    return forward.status().error();
  Expected<TrainingGraphs> split = splitVJP(forward);
  if (!split)
    return split.error();
  TrainingRow row;
  double backwardBytes = 0, forwardBytes = 0;
  CompileOptions options;
  options.deterministic = w.deterministic;
  options.attentionGradTma = w.attentionGradTma;
  Expected<double> backward = timeOnZeros(
      split->backward, row.backwardKernels, backwardBytes, options, w.inputs,
      w.withForward ? &row.backwardProfile : nullptr);
  if (!backward)
    return backward.error();
  row.backwardMs = *backward;
  if (w.withForward) {
    Expected<double> ms =
        timeOnZeros(split->forward, row.forwardKernels, forwardBytes, {}, {},
                    &row.forwardProfile);
    if (!ms)
      return ms.error();
    row.forwardMs = *ms;
  }
  for (const TensorInfo &out : split->forward.outputs())
    if (out.name.rfind("saved_", 0) == 0) {
      uint64_t bytes = 0;
      staticShape(out, bytes);
      row.savedBytes += double(bytes);
    }
  row.floorMs = (w.flops ? w.flops / 679e12
                         : backwardBytes / (copyGBs * 1e9)) *
                1e3;
  row.peer = peerNumbers(peers, "--training " + w.peerArg, 4);
  return row;
}

} // namespace

int runTraining(const std::string &only, bool list, double copyGBs,
                const std::string &peers) {
  std::vector<TrainingWorkload> all = trainingWorkloads();
  if (list) {
    for (const TrainingWorkload &w : all)
      std::printf("%s\n", w.name.c_str());
    return 0;
  }
  std::printf("backward (the block: forward + backward) against floor = "
              "bytes / %.0f GB/s (the block: FLOPs / 679 TFLOP/s) and "
              "PyTorch's from %s (0: not run)\n",
              copyGBs, peers.c_str());
  std::printf("%-24s %7s %9s %9s %9s %9s %9s %8s %8s %9s %9s %9s\n",
              "workload", "kernels", "fwd_ms", "bwd_ms", "floor_ms",
              "eager_ms", "comp_ms", "kf/floor", "comp/kf", "saved_MB",
              "eager_MB", "comp_MB");
  return measureEach(
      all, only,
      [&](const TrainingWorkload &w) { return measure(w, copyGBs, peers); },
      [](const TrainingWorkload &w, const TrainingRow &r) {
        double kfuse = r.forwardMs + r.backwardMs;
        std::string kernels =
            std::to_string(r.forwardKernels) + "+" +
            std::to_string(r.backwardKernels);
        std::printf("%-24s %7s %9.4f %9.4f %9.4f %9.4f %9.4f %8.3f %8.3f "
                    "%9.1f %9.1f %9.1f\n",
                    w.name.c_str(), kernels.c_str(), r.forwardMs,
                    r.backwardMs, r.floorMs, r.peer[0], r.peer[1],
                    kfuse / r.floorMs, r.peer[1] ? r.peer[1] / kfuse : 0.0,
                    r.savedBytes / 1e6, r.peer[2] / 1e6, r.peer[3] / 1e6);
        for (auto [pass, kernels] :
             {std::pair{"forward", &r.forwardProfile},
              std::pair{"backward", &r.backwardProfile}})
          for (const KernelProfile &k : *kernels)
            std::printf("  %-8s %-40s %9.4f ms %7.0f TFLOP/s %6.0f GB/s  %s\n",
                        pass, k.name.c_str(), k.ms, k.tflopPerSecond,
                        k.gbPerSecond, k.bound.c_str());
      });
}

} // namespace kfuse::bench
