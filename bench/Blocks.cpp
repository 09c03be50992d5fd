//===- Blocks.cpp - kfuse-bench blocks: whole transformer blocks ----------===//
//
// Transformer blocks written from kf ops (bench/BlockGraphs.cpp), timed in
// one run: kfuse fused (one executable, launched as a CUDA graph), kfuse
// unfused, the floor, and PyTorch on the same block and shapes in bf16
// (bench/peers.py --block, a child process when python3 with torch is
// there): eager with attention written out (matmul, mask, softmax), eager
// with scaled_dot_product_attention, and torch.compile of the SDPA form.
//
// The floor is max(FLOPs / the peak rate, bytes / the copy bandwidth):
// FLOPs of the projections (2 M N K each) and of attention (4 B H S^2 D,
// halved for causal, as FlashAttention counts them); bytes of every input
// and output once. The kernels' own bytes (what each reads and writes)
// over those bytes say how much traffic the fusion left between kernels.
// A second table has the pieces of a model beside its blocks (token
// embedding with positions, cross-entropy at two vocabularies) against
// PyTorch eager and torch.compile (peers.py --workload-ms).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include <cstdio>
#include <memory>

namespace kfuse::bench {

namespace {

struct BlockWorkload {
  std::string name;
  std::function<Graph()> build;
  int layers;
  double flops;
  std::string peerSpec; ///< bench/peers.py --block's argument
};

double llamaFlops(const LlamaShape &s, int layers) {
  double tokens = double(s.batch) * s.seq, d = s.dim;
  double kv = double(s.kvHeads) * (s.dim / s.heads);
  double projections = 2 * tokens * d * (2 * d + 2 * kv + 3.0 * s.ffn);
  double attention = 2.0 * s.batch * s.seq * s.seq * d; // causal
  return layers * (projections + attention);
}

/// "prenorm_b4_s2048_d1024", "llama_x4_b4_s2048_d2048".
std::string workloadName(const char *kind, int layers, int64_t batch,
                         int64_t seq, int64_t dim) {
  return kind + (layers == 1 ? "" : "_x" + std::to_string(layers)) + "_b" +
         std::to_string(batch) + "_s" + std::to_string(seq) + "_d" +
         std::to_string(dim);
}

BlockWorkload preNorm(const BlockShape &s, int layers) {
  std::string name = workloadName("prenorm", layers, s.batch, s.seq, s.dim);
  return {name, [s, layers, name] { return preNormStack(s, layers, name); },
          layers, preNormFlops(s, layers),
          "prenorm," + joinInts({s.batch, s.seq, s.dim, s.heads, layers})};
}

BlockWorkload llama(const LlamaShape &s, int layers) {
  std::string name = workloadName("llama", layers, s.batch, s.seq, s.dim);
  return {name, [s, layers, name] { return llamaStack(s, layers, name); },
          layers, llamaFlops(s, layers),
          "llama," + joinInts({s.batch, s.seq, s.dim, s.heads, s.kvHeads, s.ffn,
                           layers})};
}

std::vector<BlockWorkload> blockWorkloads() {
  // The pre-norm block of gpu-machine.md's peers (d1024, 16 heads, B4
  // S2048) and issue 28's Llama configuration (2048 hidden, 32/4 heads,
  // 5632 MLP) at B4 S2048, one block and four.
  const BlockShape pre{4, 2048, 1024, 16};
  const LlamaShape ll{4, 2048, 2048, 32, 4, 5632};
  return {preNorm(pre, 1), preNorm(pre, 4), llama(ll, 1), llama(ll, 4)};
}

struct PeerTimes {
  double eagerMs = 0, sdpaMs = 0, compiledMs = 0;
};


/// PyTorch's medians from `peers.py --block`.
PeerTimes peerTimes(const std::string &peers, const std::string &spec) {
  std::vector<double> ms = peerNumbers(peers, "--block " + spec, 3);
  return {ms[0], ms[1], ms[2]};
}

/// The graph's one output, allocated; its bytes added to `ioBytes`.
Expected<std::pair<DeviceBuffer, DeviceTensor>>
allocateOutput(const Graph &g, uint64_t &ioBytes) {
  uint64_t bytes = 0;
  std::vector<int64_t> shape = staticShape(g.outputs()[0], bytes);
  ioBytes += bytes;
  Expected<DeviceBuffer> out = DeviceBuffer::allocate(bytes);
  if (!out)
    return out.error();
  DeviceTensor tensor = out->tensor(g.outputs()[0].dtype, Dims(shape));
  return std::pair{out.take(), tensor};
}

/// `exe`'s kernels, and the bytes they read and write together.
void countKernels(Executable &exe, size_t &kernels, uint64_t &bytes) {
  if (Expected<std::vector<KernelReport>> k = exe.kernels()) {
    kernels = k->size();
    for (const KernelReport &r : *k)
      bytes += r.bytes;
  }
}

struct BlockRow {
  size_t kernels = 0;
  uint64_t ioBytes = 0, kernelBytes = 0;
  double floorMs = 0, fusedMs = 0, unfusedMs = 0;
  PeerTimes peer;
  /// One block's kernels one by one (stacks repeat them).
  Expected<std::vector<KernelProfile>> profile = std::vector<KernelProfile>();
};

Expected<BlockRow> measure(const BlockWorkload &w, double peakTflops,
                           double copyGBs, const std::string &peers) {
  Graph g = w.build();
  if (!g.status())
    return g.status().error();
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> inputs;
  BlockRow row;
  if (Status st = uploadRandomInputs(g, buffers, inputs, row.ioBytes); !st)
    return st.error();
  auto out = allocateOutput(g, row.ioBytes);
  if (!out)
    return out.error();
  DeviceTensor outTensor = out->second;
  row.floorMs = std::max(w.flops / (peakTflops * 1e12),
                         row.ioBytes / (copyGBs * 1e9)) * 1e3;
  auto inspect = [&](Executable &exe) {
    countKernels(exe, row.kernels, row.kernelBytes);
    if (w.layers == 1)
      row.profile = exe.profile(inputs.data(), inputs.size(),
                                &outTensor, 1, 20);
  };
  if (Status st = timeFusedAndUnfused(g, inputs, outTensor, row.fusedMs,
                                      row.unfusedMs, inspect);
      !st)
    return st.error();
  row.peer = peerTimes(peers, w.peerSpec);
  return row;
}

double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : 0; }

/// The pieces of a model beside its blocks, from kfuse-bench memory's
/// workloads: the token embedding with positions added, cross-entropy
/// over 32k and 128k vocabularies. Memory-bound: floor = bytes of the
/// inputs and outputs / the copy bandwidth.
std::vector<Workload> modelPieces() {
  std::vector<Workload> all, pieces;
  addIndexingWorkloads(all, /*small=*/false);
  for (Workload &w : all)
    if (w.name == "embedding_pos_bf16" || w.name.rfind("xent_", 0) == 0)
      pieces.push_back(std::move(w));
  return pieces;
}

struct PieceRow {
  size_t kernels = 0;
  uint64_t ioBytes = 0, kernelBytes = 0;
  double floorMs = 0, fusedMs = 0, unfusedMs = 0, eagerMs = 0, compiledMs = 0;
};

Expected<PieceRow> measurePiece(const Workload &w, double copyGBs,
                                const std::string &peers) {
  Graph g(w.name);
  w.build(g);
  if (!g.status())
    return g.status().error();
  std::vector<HostTensor> host;
  if (w.inputs)
    host = w.inputs(g);
  uint64_t seed = 1;
  for (size_t i = host.size(); i < g.inputs().size(); ++i) {
    uint64_t bytes = 0;
    host.push_back(HostTensor::random(
        g.inputs()[i].dtype, staticShape(g.inputs()[i], bytes), seed++));
  }
  PieceRow row;
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> inputs;
  for (const HostTensor &t : host) {
    Expected<DeviceBuffer> b = DeviceBuffer::fromHost(t);
    if (!b)
      return b.error();
    inputs.push_back(b->tensor(t.dtype(), Dims(t.shape())));
    buffers.push_back(b.take());
    row.ioBytes += t.sizeInBytes();
  }
  auto out = allocateOutput(g, row.ioBytes);
  if (!out)
    return out.error();
  row.floorMs = row.ioBytes / (copyGBs * 1e9) * 1e3;
  auto inspect = [&](Executable &exe) {
    countKernels(exe, row.kernels, row.kernelBytes);
  };
  if (Status st = timeFusedAndUnfused(g, inputs, out->second, row.fusedMs,
                                      row.unfusedMs, inspect);
      !st)
    return st.error();
  std::vector<double> ms = peerNumbers(peers, "--workload-ms " + w.name, 2);
  row.eagerMs = ms[0];
  row.compiledMs = ms[1];
  return row;
}

int runPieces(const std::string &only, double copyGBs,
              const std::string &peers) {
  std::printf("\nmodel pieces: floor = bytes / %.0f GB/s\n", copyGBs);
  std::printf("%-26s %7s %8s %8s %8s %8s %8s %8s %8s %8s\n", "workload",
              "kernels", "bytes_x", "floor_ms", "kfuse_ms", "unfus_ms",
              "eager_ms", "comp_ms", "kf/floor", "comp/kf");
  return measureEach(
      modelPieces(), only,
      [&](const Workload &w) { return measurePiece(w, copyGBs, peers); },
      [](const Workload &w, const PieceRow &r) {
        std::printf("%-26s %7zu %8.2f %8.4f %8.4f %8.4f %8.4f %8.4f %8.3f "
                    "%8.3f\n",
                    w.name.c_str(), r.kernels, ratio(r.kernelBytes, r.ioBytes),
                    r.floorMs, r.fusedMs, r.unfusedMs, r.eagerMs,
                    r.compiledMs, ratio(r.fusedMs, r.floorMs),
                    ratio(r.compiledMs, r.fusedMs));
      });
}

} // namespace

namespace {

int runBlockTable(const std::vector<BlockWorkload> &all,
                  const std::string &only, double copyGBs,
                  const std::string &peers) {
  const double peakTflops = 679; // cuBLAS's 8192^3 on the H200, gpu-machine.md
  std::printf("floor = max(FLOPs / %.0f TFLOP/s, bytes / %.0f GB/s); peers "
              "from %s (0: not run); compiled = torch.compile of the SDPA "
              "form\n",
              peakTflops, copyGBs, peers.c_str());
  std::printf("%-26s %7s %7s %8s %8s %8s %8s %8s %8s %7s %8s %8s %8s\n",
              "workload", "kernels", "k/layer", "bytes_x", "floor_ms",
              "kfuse_ms", "unfus_ms", "eager_ms", "sdpa_ms", "comp_ms",
              "kf/floor", "comp/kf", "sdpa/kf");
  return measureEach(
      all, only,
      [&](const BlockWorkload &w) {
        return measure(w, peakTflops, copyGBs, peers);
      },
      [](const BlockWorkload &w, const BlockRow &r) {
        std::printf(
            "%-26s %7zu %7.1f %8.2f %8.4f %8.4f %8.4f %8.4f %8.4f %7.4f "
            "%8.3f %8.3f %8.3f\n",
            w.name.c_str(), r.kernels, double(r.kernels) / w.layers,
            ratio(r.kernelBytes, r.ioBytes), r.floorMs, r.fusedMs,
            r.unfusedMs, r.peer.eagerMs, r.peer.sdpaMs, r.peer.compiledMs,
            ratio(r.fusedMs, r.floorMs), ratio(r.peer.compiledMs, r.fusedMs),
            ratio(r.peer.sdpaMs, r.fusedMs));
        if (r.profile)
          for (const KernelProfile &k : *r.profile)
            std::printf("  %-32s %9.4f ms %7.0f TFLOP/s %6.0f GB/s  %s\n",
                        k.name.c_str(), k.ms, k.tflopPerSecond,
                        k.gbPerSecond, k.bound.c_str());
      });
}

} // namespace

int runBlocks(const std::string &only, bool list, double copyGBs,
              const std::string &peers) {
  std::vector<BlockWorkload> blocks = blockWorkloads();
  std::vector<Workload> pieces = modelPieces();
  if (list) {
    for (const BlockWorkload &w : blocks)
      std::printf("%s\n", w.name.c_str());
    for (const Workload &w : pieces)
      std::printf("%s\n", w.name.c_str());
    return 0;
  }
  auto named = [&](const auto &w) { return namedIn(w.name, only); };
  bool anyBlock = std::any_of(blocks.begin(), blocks.end(), named);
  bool anyPiece = std::any_of(pieces.begin(), pieces.end(), named);
  if (anyBlock || !anyPiece)
    if (int rc = runBlockTable(blocks, only, copyGBs, peers))
      return rc;
  return anyPiece ? runPieces(only, copyGBs, peers) : 0;
}

double preNormFlops(const BlockShape &s, int layers) {
  double tokens = double(s.batch) * s.seq, d = s.dim;
  double projections = 2 * tokens * d * (3 * d + d + 4 * d + 4 * d);
  double attention = 2.0 * s.batch * s.seq * s.seq * d; // causal
  return layers * (projections + attention);
}

std::vector<double> peerNumbers(const std::string &peers,
                                const std::string &args, size_t count) {
  std::string command = "python3 " + peers + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE *)> pipe(popen(command.c_str(), "r"),
                                              pclose);
  std::vector<double> values(count, 0.0);
  for (size_t i = 0; pipe && i < count; ++i)
    if (std::fscanf(pipe.get(), "%lf", &values[i]) != 1)
      return std::vector<double>(count, 0.0);
  return values;
}

} // namespace kfuse::bench
