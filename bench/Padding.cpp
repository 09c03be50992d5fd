//===- Padding.cpp - kfuse-bench pad: kf-pad on against off ---------------===//
//
// Graphs whose buffers between kernels have rows that are not a whole
// number of 16-byte vectors, compiled with kf-pad on and off and timed in
// one run on the same device buffers. The two outputs are compared
// (relative error), so a fast wrong padded kernel shows.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include <cstdio>

namespace kfuse::bench {

namespace {

struct PadWorkload {
  std::string name;
  Fusion fusion;
  std::function<void(Graph &)> build;
  std::vector<int64_t> outShape;
};

std::vector<PadWorkload> padWorkloads() {
  std::vector<PadWorkload> w;
  // lm-head logits (rows of 50257 bf16) into a softmax: padded, the
  // matmul's output tile leaves in 16-byte vectors.
  w.push_back({"logits_softmax_50257",
               Fusion::Fused,
               [](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {8192, 768});
                 Tensor wt = g.input("w", DType::bf16, {50257, 768});
                 MatmulOptions o;
                 o.transposeB = true;
                 g.output("p", softmax(matmul(x, wt, o)));
               },
               {8192, 50257}});
  // softmax(Q K^T / 8) V materialised (the unfused baseline) at 4095
  // keys: padded, the probabilities' rows hold whole 16-byte chunks and
  // P V takes tensor cores.
  w.push_back({"unfused_attention_s4095",
               Fusion::Unfused,
               [](Graph &g) {
                 Tensor q = g.input("q", DType::bf16, {16, 4095, 64});
                 Tensor k = g.input("k", DType::bf16, {16, 4095, 64});
                 Tensor v = g.input("v", DType::bf16, {16, 4095, 64});
                 MatmulOptions scores;
                 scores.transposeB = true;
                 g.output("o",
                          matmul(softmax(matmul(q, k, scores) * 0.125), v));
               },
               {16, 4095, 64}});
  // The caller's B of 50257 columns (not transposed): copied into padded
  // rows, the matmul takes tensor cores; dense, the fallback.
  w.push_back({"matmul_b_50257_copied",
               Fusion::Fused,
               [](Graph &g) {
                 Tensor x = g.input("x", DType::bf16, {2048, 768});
                 Tensor wt = g.input("w", DType::bf16, {768, 50257});
                 g.output("y", matmul(x, wt));
               },
               {2048, 50257}});
  return w;
}

struct PadRow {
  double paddedMs = 0, denseMs = 0, error = 0;
  std::string kernels[2];
};

Expected<PadRow> measure(const PadWorkload &w) {
  Graph g(w.name);
  w.build(g);
  if (!g.status())
    return g.status().error();
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> inputs;
  uint64_t bytes = 0;
  KFUSE_RETURN_IF_ERROR(uploadRandomInputs(g, buffers, inputs, bytes));
  uint64_t elements = 1;
  for (int64_t d : w.outShape)
    elements *= d;
  PadRow row;
  std::vector<HostTensor> results;
  for (bool pad : {true, false}) {
    Expected<DeviceBuffer> out = DeviceBuffer::allocate(2 * elements);
    if (!out)
      return out.error();
    KFUSE_RETURN_IF_ERROR(out->fill(0xFF));
    DeviceTensor result = out->tensor(DType::bf16, Dims(w.outShape));
    CompileOptions options;
    options.fusion = w.fusion;
    options.padRows = pad;
    Expected<Executable> exe = Compiler(options).compile(g);
    if (!exe)
      return exe.error();
    Expected<double> ms = medianMs(
        [&] { return exe->run(inputs.data(), inputs.size(), &result, 1); });
    if (!ms)
      return ms.error();
    (pad ? row.paddedMs : row.denseMs) = *ms;
    Expected<std::string> fused = exe->dump(Stage::Fused);
    size_t padded = 0, mma = 0;
    for (size_t at = 0;
         fused && (at = fused->find("padded_rows", at)) != std::string::npos;
         ++at)
      ++padded;
    for (size_t at = 0;
         fused && (at = fused->find("#kf.mma_tiling", at)) != std::string::npos;
         ++at)
      ++mma;
    row.kernels[pad ? 0 : 1] =
        std::to_string(padded) + "p/" + std::to_string(mma) + "tc";
    Expected<HostTensor> host = download(*out, DType::bf16, w.outShape);
    if (!host)
      return host.error();
    results.push_back(host.take());
  }
  row.error = relativeError(results[0], results[1]);
  return row;
}

} // namespace

int runPadding(const std::string &only, bool list) {
  std::vector<PadWorkload> all = padWorkloads();
  if (list) {
    for (const PadWorkload &w : all)
      std::printf("%s\n", w.name.c_str());
    return 0;
  }
  std::printf("kernels: padded buffers (p) / tensor-core matmuls (tc)\n");
  std::printf("%-24s %-9s %-9s %10s %10s %8s %10s\n", "workload", "pad_krn",
              "dense_krn", "padded_ms", "dense_ms", "speedup", "err_vs_dns");
  return measureEach(all, only, measure,
                     [](const PadWorkload &w, const PadRow &r) {
                       std::printf("%-24s %-9s %-9s %10.4f %10.4f %8.2f "
                                   "%10.2g\n",
                                   w.name.c_str(), r.kernels[0].c_str(),
                                   r.kernels[1].c_str(), r.paddedMs,
                                   r.denseMs, r.denseMs / r.paddedMs, r.error);
                     });
}

} // namespace kfuse::bench
