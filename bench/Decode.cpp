//===- Decode.cpp - one token through a Llama-style block ------------------===//
//
// The overhead-bound regime: a decode step reads every weight once (354 MB
// at Llama-7B's sizes) in about twenty kernels, several of them a few
// microseconds long. Launched kernel by kernel, the GPU waits on the host
// between them; as one CUDA graph, it does not. For KV caches of a few
// lengths: the kernels, the device time of one step from an idle GPU
// (median of 50) each way, and the floor (the bytes of every input and
// output once, at the copy bandwidth measured in the same run).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include <cstdio>

namespace kfuse::bench {

namespace {

Expected<double> stepMs(const Graph &g, Launch launch, Buffers &b,
                        size_t &kernels) {
  CompileOptions options;
  options.launch = launch;
  Expected<Executable> exe = Compiler(options).compile(g);
  if (!exe)
    return exe.error();
  Expected<std::vector<KernelReport>> reports = exe->kernels();
  kernels = reports ? reports->size() : 0;
  Expected<std::vector<double>> ms = timeOnDevice(
      [&] {
        return exe->run(b.in.data(), b.in.size(), b.out.data(), b.out.size());
      },
      50, 5);
  if (!ms)
    return ms.error();
  return median(*ms);
}

} // namespace

int runDecode(double copyGBs) {
  std::printf("%-26s %8s %10s %12s %10s %10s %10s\n", "llama-7b decode step",
              "kernels", "floor ms", "kernels ms", "graph ms", "x floor",
              "graph gain");
  for (int64_t cached : {511, 2047, 4095}) {
    Graph g = llamaDecodeStep({4096, 32, 8, 11008, cached});
    Expected<Buffers> b = buffersFor(g);
    if (!g.status() || !b) {
      std::fprintf(stderr, "decode: %s\n",
                   !g.status() ? g.status().message().c_str()
                               : b.error().message().c_str());
      return 1;
    }
    size_t kernels = 0;
    Expected<double> byKernel = stepMs(g, Launch::Kernels, *b, kernels);
    Expected<double> byGraph =
        byKernel ? stepMs(g, Launch::Graph, *b, kernels) : byKernel;
    if (!byGraph) {
      std::fprintf(stderr, "decode: %s\n", byGraph.error().message().c_str());
      return 1;
    }
    double floorMs = b->bytes / (copyGBs * 1e9) * 1e3;
    std::printf("%-26s %8zu %10.4f %12.4f %10.4f %10.2f %10.2f\n",
                ("KV cache " + std::to_string(cached + 1)).c_str(), kernels,
                floorMs, *byKernel, *byGraph, *byGraph / floorMs,
                *byKernel / *byGraph);
  }
  return 0;
}

} // namespace kfuse::bench
