//===- Attention.cpp - kfuse-bench attention: FlashAttention vs SDPA ------===//
//
// Attention written from primitives (bench/WorkloadGraphs.cpp), timed in
// one run: kfuse fused (kf-online-softmax makes it one FlashAttention
// kernel), kfuse unfused (the S x S scores materialised), the floor
// (FLOPs / the peak rate, or bytes / the copy bandwidth) and PyTorch's
// scaled_dot_product_attention on the same shapes (bench/peers.py
// --sdpa, a child process, when python3 with torch is there). FLOPs count
// 4 B H S^2 D, halved for causal (the masked half is skipped), as
// FlashAttention reports them.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include <cstdio>
#include <memory>

namespace kfuse::bench {

namespace {

struct AttentionWorkload {
  std::string name;
  AttentionShape shape;
};

std::vector<AttentionWorkload> attentionWorkloads() {
  return {
      {"attn_b4h16_s2048_d64", {4, 16, 16, 2048, 64, false}},
      {"attn_b4h16_s4096_d128", {4, 16, 16, 4096, 128, false}},
      {"attn_b4h16_s4096_d128_causal", {4, 16, 16, 4096, 128, true}},
      {"attn_gqa_h32kv8_s4096_d128", {2, 32, 8, 4096, 128, true}},
      // A full [B, H, S, S] bias: the fused kernel reads it at each score.
      {"attn_bias_b4h16_s2048_d64", {4, 16, 16, 2048, 64, false, true}},
      // The Llama block's attention (bench blocks), plain and with q
      // rotated by RoPE inside the kernel; SDPA's column times the plain
      // attention on both rows.
      {"attn_llama_h32kv4_s2048_d64", {4, 32, 4, 2048, 64, true}},
      {"attn_llama_h32kv4_s2048_d64_rope",
       {4, 32, 4, 2048, 64, true, false, true}},
      {"attn_gqa_h32kv8_s4096_d128_rope",
       {2, 32, 8, 4096, 128, true, false, true}},
  };
}

struct AttentionRow {
  double flops = 0, floorMs = 0, fusedMs = 0, unfusedMs = 0, sdpaMs = 0;
};

/// SDPA's median ms from `peers.py --sdpa`, or 0 when it cannot run.
double sdpaMs(const std::string &peers, const AttentionShape &s) {
  std::string command =
      "python3 " + peers + " --sdpa " + std::to_string(s.batch) + "," +
      std::to_string(s.heads) + "," + std::to_string(s.kvHeads) + "," +
      std::to_string(s.seq) + "," + std::to_string(s.headDim) + "," +
      (s.causal ? "1" : "0") + (s.bias ? ",1" : "") + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE *)> pipe(popen(command.c_str(), "r"),
                                              pclose);
  double ms = 0;
  if (!pipe || std::fscanf(pipe.get(), "%lf", &ms) != 1)
    return 0;
  return ms;
}

Expected<AttentionRow> measure(const AttentionWorkload &w, double peakTflops,
                               double copyGBs, const std::string &peers) {
  Graph g = attentionFromPrimitives(w.name, w.shape);
  if (!g.status())
    return g.status().error();
  const AttentionShape &s = w.shape;
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> inputs;
  uint64_t bytes = 0;
  if (Status st = uploadRandomInputs(g, buffers, inputs, bytes); !st)
    return st.error();
  Dims outShape({s.batch, s.heads, s.seq, s.headDim});
  uint64_t outBytes = 2 * s.batch * s.heads * s.seq * s.headDim;
  bytes += outBytes;
  Expected<DeviceBuffer> out = DeviceBuffer::allocate(outBytes);
  if (!out)
    return out.error();
  AttentionRow row;
  row.flops = 4.0 * s.batch * s.heads * s.seq * s.seq * s.headDim /
              (s.causal ? 2 : 1);
  row.floorMs = std::max(row.flops / (peakTflops * 1e12),
                         bytes / (copyGBs * 1e9)) * 1e3;
  if (Status st = timeFusedAndUnfused(g, inputs,
                                      out->tensor(DType::bf16, outShape),
                                      row.fusedMs, row.unfusedMs);
      !st)
    return st.error();
  row.sdpaMs = sdpaMs(peers, s);
  return row;
}

} // namespace

int runAttention(const std::string &only, bool list, double copyGBs,
                 const std::string &peers) {
  std::vector<AttentionWorkload> all = attentionWorkloads();
  if (list) {
    for (const AttentionWorkload &w : all)
      std::printf("%s\n", w.name.c_str());
    return 0;
  }
  const double peakTflops = 679; // cuBLAS's 8192^3 on the H200, gpu-machine.md
  std::printf("floor = max(FLOPs / %.0f TFLOP/s, bytes / %.0f GB/s); sdpa "
              "from %s (0: not run)\n",
              peakTflops, copyGBs, peers.c_str());
  std::printf("%-30s %9s %9s %9s %9s %7s %7s %8s %8s %9s\n", "workload",
              "floor_ms", "fused_ms", "unfus_ms", "sdpa_ms", "TFLOPs",
              "sdpaTF", "fused/fl", "sdpa/fus", "unfus/fus");
  return measureEach(
      all, only,
      [&](const AttentionWorkload &w) {
        return measure(w, peakTflops, copyGBs, peers);
      },
      [](const AttentionWorkload &w, const AttentionRow &r) {
        std::printf(
            "%-30s %9.4f %9.4f %9.4f %9.4f %7.0f %7.0f %8.3f %8.3f %9.1f\n",
            w.name.c_str(), r.floorMs, r.fusedMs, r.unfusedMs, r.sdpaMs,
            r.flops / (r.fusedMs * 1e9),
            r.sdpaMs ? r.flops / (r.sdpaMs * 1e9) : 0.0, r.fusedMs / r.floorMs,
            r.sdpaMs ? r.sdpaMs / r.fusedMs : 0.0, r.unfusedMs / r.fusedMs);
      });
}

} // namespace kfuse::bench
