//===- Main.cpp - kfuse-bench ---------------------------------------------===//
//
//   kfuse-bench costs [--json FILE]      compile, cache and launch costs
//   kfuse-bench decode                   a one-token Llama block vs its floor
//   kfuse-bench decode-loop              256 growing KV lengths, compiles
//   kfuse-bench memory [--list] [--workload NAME[,NAME...]] [--json FILE]
//                                        memory-bound workloads vs floor
//   kfuse-bench matmul [--list] [--workload NAME|pairs]
//                                        tensor-core matmuls vs cuBLAS
//   kfuse-bench attention [--list] [--workload NAME[,NAME...]]
//                         [--peers PEERS.PY]
//                                        FlashAttention vs unfused and SDPA
//   kfuse-bench blocks [--list] [--workload NAME[,NAME...]] [--peers P]
//                                        transformer blocks vs torch.compile
//   kfuse-bench training [--list] [--workload NAME[,...]] [--peers P]
//                                        backward passes vs floor and torch
//   kfuse-bench sweep [--list] [--workload FAMILY|NAME[,...]] [--peers P]
//                     [--json FILE]      shapes around the bench rows vs
//                                        SDPA, torch and cuBLAS
//   kfuse-bench compile-scaling [LAYERS...]
//                                        compile time of block stacks to
//                                        PTX (no GPU needed)
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace kfuse::bench {

void Table::print() const {
  std::printf("%-66s %12s  %s\n", "measure", "median", "target");
  for (const Row &r : rows)
    std::printf("%-66s %9.3f %-2s  %s\n", r.what.c_str(), r.value,
                r.unit.c_str(), r.target.c_str());
}

std::string Table::json() const {
  std::string out = "[\n";
  for (size_t i = 0; i < rows.size(); ++i)
    out += "  {\"measure\": \"" + rows[i].what + "\", \"median\": " +
           std::to_string(rows[i].value) + ", \"unit\": \"" + rows[i].unit +
           "\"}" + (i + 1 < rows.size() ? ",\n" : "\n");
  return out + "]\n";
}

Expected<double> medianMs(const std::function<Status()> &once) {
  constexpr int kBatch = 5;
  Expected<std::vector<double>> times = timeOnDevice(
      [&]() -> Status {
        for (int i = 0; i < kBatch; ++i)
          KFUSE_RETURN_IF_ERROR(once());
        return Status::ok();
      },
      15);
  if (!times)
    return times.error();
  return median(*times) / kBatch;
}

Status uploadRandomInputs(const Graph &g, std::vector<DeviceBuffer> &buffers,
                          std::vector<DeviceTensor> &inputs, uint64_t &bytes) {
  uint64_t seed = 7;
  for (const TensorInfo &info : g.inputs()) {
    std::vector<int64_t> shape;
    for (const Dim &d : info.shape)
      shape.push_back(d.size());
    HostTensor t = HostTensor::random(info.dtype, shape, seed++);
    Expected<DeviceBuffer> b = DeviceBuffer::fromHost(t);
    if (!b)
      return b.error();
    bytes += t.sizeInBytes();
    inputs.push_back(b->tensor(info.dtype, Dims(shape)));
    buffers.push_back(b.take());
  }
  return Status::ok();
}

Expected<HostTensor> download(const DeviceBuffer &buffer, DType dtype,
                              std::vector<int64_t> shape) {
  HostTensor t(dtype, std::move(shape));
  KFUSE_RETURN_IF_ERROR(buffer.copyToHost(t.data(), t.sizeInBytes()));
  return t;
}

Status
timeFusedAndUnfused(const Graph &g, const std::vector<DeviceTensor> &inputs,
                    const DeviceTensor &result, double &fusedMs,
                    double &unfusedMs,
                    const std::function<void(Executable &)> &inspectFused,
                    const CompileOptions &base) {
  for (Fusion fusion : {Fusion::Fused, Fusion::Unfused}) {
    CompileOptions options = base;
    options.fusion = fusion;
    Expected<Executable> exe = Compiler(options).compile(g);
    if (!exe)
      return exe.error();
    Expected<double> ms = medianMs([&] {
      return exe->run(inputs.data(), inputs.size(), &result, 1);
    });
    if (!ms)
      return ms.error();
    (fusion == Fusion::Fused ? fusedMs : unfusedMs) = *ms;
    if (fusion == Fusion::Fused && inspectFused)
      inspectFused(*exe);
  }
  return Status::ok();
}

/// `g` compiled fused, timed on zeroed buffers (or on `values`' inputs);
/// its kernels and the bytes of its inputs and outputs.
Expected<double> timeOnZeros(
    const Graph &g, int &kernels, double &bytes, const CompileOptions &options,
    const std::function<std::vector<HostTensor>(const Graph &)> &values,
    std::vector<KernelProfile> *profile) {
  Expected<Buffers> buffers = buffersFor(g);
  if (!buffers)
    return buffers.error();
  if (values) {
    std::vector<HostTensor> host = values(g);
    for (size_t i = 0; i < host.size() && i < buffers->in.size(); ++i) {
      Expected<DeviceBuffer> b = DeviceBuffer::fromHost(host[i]);
      if (!b)
        return b.error();
      buffers->in[i] = b->tensor(host[i].dtype(), Dims(host[i].shape()));
      buffers->owned.push_back(b.take());
    }
  }
  Expected<Executable> exe = Compiler(options).compile(g);
  if (!exe)
    return exe.error();
  Expected<std::string> fused = exe->dump(Stage::Fused);
  if (!fused)
    return fused.error();
  kernels = 0;
  for (size_t at = fused->find("kf.kernel "); at != std::string::npos;
       at = fused->find("kf.kernel ", at + 1))
    ++kernels;
  bytes = double(buffers->bytes);
  if (profile) {
    Expected<std::vector<KernelProfile>> kernels =
        exe->profile(buffers->in.data(), buffers->in.size(),
                     buffers->out.data(), buffers->out.size(), 20);
    if (!kernels)
      return kernels.error();
    *profile = kernels.take();
  }
  return medianMs([&] {
    return exe->run(buffers->in.data(), buffers->in.size(),
                    buffers->out.data(), buffers->out.size());
  });
}

} // namespace kfuse::bench

static int usage() {
  std::fprintf(stderr,
               "usage: kfuse-bench costs [--json FILE]\n"
               "       kfuse-bench memory [--list] [--workload NAME[,...]] "
               "[--json FILE]\n"
               "       kfuse-bench matmul [--list] [--workload NAME|pairs]\n"
               "       kfuse-bench pad [--list] [--workload NAME[,...]]\n"
               "       kfuse-bench attention [--list] [--workload NAME[,...]] "
               "[--peers PEERS.PY]\n"
               "       kfuse-bench blocks [--list] [--workload NAME[,...]] "
               "[--peers PEERS.PY]\n"
               "       kfuse-bench training [--list] [--workload NAME[,...]] "
               "[--peers PEERS.PY]\n"
               "       kfuse-bench sweep [--list] [--workload "
               "FAMILY|NAME[,...]] [--peers PEERS.PY] [--json FILE]\n"
               "       kfuse-bench decode\n"
               "       kfuse-bench decode-loop\n"
               "       kfuse-bench compile-scaling [LAYERS...]\n");
  return 2;
}

int main(int argc, char **argv) {
  using namespace kfuse::bench;
  if (argc >= 5 && std::strcmp(argv[1], "--child-load") == 0)
    return childLoad(argv[2], argv[3], std::atoi(argv[4]));
  if (argc < 2)
    return usage();
  if (std::strcmp(argv[1], "compile-scaling") == 0) {
    std::vector<int> layers;
    for (int i = 2; i < argc; ++i)
      layers.push_back(std::atoi(argv[i]));
    if (layers.empty())
      layers = {1, 2, 4, 8, 16, 32};
    return runCompileScaling(layers);
  }
  std::string command = argv[1], json, only, peers = "bench/peers.py";
  bool list = false;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (arg == "--workload" && i + 1 < argc)
      only = argv[++i];
    else if (arg == "--peers" && i + 1 < argc)
      peers = argv[++i];
    else if (arg == "--list")
      list = true;
    else
      return usage();
  }
  if (command == "memory" && list) {
    MemoryTable table;
    return runMemoryBound("", true, table);
  }
  if (command == "matmul" && list)
    return runMatmuls("", true, 0);
  if (command == "pad" && list)
    return runPadding("", true);
  if (command == "attention" && list)
    return runAttention("", true, 0, peers);
  if (command == "blocks" && list)
    return runBlocks("", true, 0, peers);
  if (command == "training" && list)
    return runTraining("", true, 0, peers);
  if (command == "sweep" && list)
    return runSweep(only, true, 0, peers, json);
  // Cold compiles are cold: not from the driver's own cache of JIT-compiled
  // PTX (set before the driver starts).
  if (command == "costs")
    setenv("CUDA_CACHE_DISABLE", "1", 1);
  kfuse::Expected<kfuse::DeviceInfo> gpu = kfuse::device();
  if (!gpu) {
    std::fprintf(stderr, "kfuse-bench: %s\n", gpu.error().message().c_str());
    return 1;
  }
  std::printf("GPU: %s, %d SMs, sm_%d%d\n", gpu->name.c_str(),
              gpu->multiprocessors, gpu->computeMajor, gpu->computeMinor);
  if (command == "memory") {
    MemoryTable table;
    if (int rc = runMemoryBound(only, false, table))
      return rc;
    table.print();
    if (!json.empty())
      std::ofstream(json) << table.json();
    return 0;
  }
  if (command == "pad")
    return runPadding(only, false);
  if (command == "decode-loop")
    return runDecodeLoop();
  if (command == "matmul" || command == "attention" || command == "decode" ||
      command == "blocks" || command == "sweep" || command == "training") {
    kfuse::Expected<double> bandwidth = copyBandwidth();
    if (!bandwidth) {
      std::fprintf(stderr, "%s\n", bandwidth.error().message().c_str());
      return 1;
    }
    if (command == "decode")
      return runDecode(*bandwidth);
    if (command == "blocks")
      return runBlocks(only, false, *bandwidth, peers);
    if (command == "sweep")
      return runSweep(only, false, *bandwidth, peers, json);
    if (command == "training")
      return runTraining(only, false, *bandwidth, peers);
    return command == "matmul"
               ? runMatmuls(only, false, *bandwidth)
               : runAttention(only, false, *bandwidth, peers);
  }
  if (command != "costs")
    return usage();
  Table table;
  // The child processes run this binary again (popen goes through a shell,
  // so /proc/self/exe must be resolved here).
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0)
    return 1;
  if (int rc = runCosts(self, table))
    return rc;
  table.print();
  if (!json.empty())
    std::ofstream(json) << table.json();
  return 0;
}
