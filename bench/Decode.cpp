//===- Decode.cpp - one token through a Llama-style block ------------------===//
//
// The overhead-bound regime: a decode step reads every weight once (354 MB
// at Llama-7B's sizes) in about twenty kernels, several of them a few
// microseconds long. Launched kernel by kernel, the GPU waits on the host
// between them; as one CUDA graph, it does not. For KV caches of a few
// lengths: the kernels, the device time of one step from an idle GPU
// (median of 50) each way, the same as a graph with the attention over
// chunks of its keys (CompileOptions::splitKeys, flash-decoding), and the
// floor (the bytes of every input and output once, at the copy bandwidth
// measured in the same run).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include <chrono>
#include <cstdio>

namespace kfuse::bench {

namespace {

Expected<double> stepMs(const Graph &g, Launch launch, Buffers &b,
                        size_t &kernels, bool splitKeys = false) {
  CompileOptions options;
  options.launch = launch;
  options.splitKeys = splitKeys;
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
  std::printf("%-26s %8s %10s %12s %10s %10s %10s %10s %10s\n",
              "llama-7b decode step", "kernels", "floor ms", "kernels ms",
              "graph ms", "x floor", "graph gain", "split ms", "x floor");
  for (int64_t cached : {511, 2047, 4095}) {
    Graph g = llamaDecodeStep({4096, 32, 8, 11008, cached});
    Expected<Buffers> b = buffersFor(g);
    if (!g.status() || !b) {
      std::fprintf(stderr, "decode: %s\n",
                   !g.status() ? g.status().message().c_str()
                               : b.error().message().c_str());
      return 1;
    }
    size_t kernels = 0, splitKernels = 0;
    Expected<double> byKernel = stepMs(g, Launch::Kernels, *b, kernels);
    Expected<double> byGraph =
        byKernel ? stepMs(g, Launch::Graph, *b, kernels) : byKernel;
    Expected<double> split =
        byGraph ? stepMs(g, Launch::Graph, *b, splitKernels, true) : byGraph;
    if (!split) {
      std::fprintf(stderr, "decode: %s\n", split.error().message().c_str());
      return 1;
    }
    double floorMs = b->bytes / (copyGBs * 1e9) * 1e3;
    std::printf("%-26s %8zu %10.4f %12.4f %10.4f %10.2f %10.2f %10.4f %10.2f\n",
                ("KV cache " + std::to_string(cached + 1)).c_str(), kernels,
                floorMs, *byKernel, *byGraph, *byGraph / floorMs,
                *byKernel / *byGraph, *split, *split / floorMs);
  }
  return 0;
}

namespace {

/// One step of the two-graph decode: the new token's heads, then
/// attention over `cached` positions and the rest of the block.
void setCached(Buffers &ab, int64_t cached) {
  for (int cache : {2, 3}) // cache_k, cache_v: [1, kv heads, cached, dh]
    ab.in[cache].shape = Dims({1, ab.in[cache].shape[1], cached,
                               ab.in[cache].shape[3]});
}

Status decodeStep(Executable &heads, Executable &attend, Buffers &hb,
                  Buffers &ab, int64_t cached) {
  setCached(ab, cached);
  KFUSE_RETURN_IF_ERROR(
      heads.run(hb.in.data(), hb.in.size(), hb.out.data(), hb.out.size()));
  return attend.run(ab.in.data(), ab.in.size(), ab.out.data(), ab.out.size());
}

Expected<double> decodeStepMs(Executable &heads, Executable &attend,
                              Buffers &hb, Buffers &ab, int64_t cached) {
  Expected<std::vector<double>> ms = timeOnDevice(
      [&] { return decodeStep(heads, attend, hb, ab, cached); }, 50, 5);
  if (!ms)
    return ms.error();
  return median(*ms);
}

/// The attention graph's kernels one by one (median of 50 each), run-time
/// length against exact: where a difference in a step comes from.
void printKernelTimes(Executable &dynamic, Executable &exact, Buffers &ab,
                      int64_t cached) {
  setCached(ab, cached);
  Expected<std::vector<KernelProfile>> a =
      dynamic.profile(ab.in.data(), ab.in.size(), ab.out.data(), ab.out.size(),
                      50);
  Expected<std::vector<KernelProfile>> b =
      exact.profile(ab.in.data(), ab.in.size(), ab.out.data(), ab.out.size(),
                    50);
  if (!a || !b || a->size() != b->size())
    return;
  for (size_t k = 0; k < a->size(); ++k)
    std::printf("  KV %lld kernel %-28s %10.4f %10.4f ms\n", (long long)cached,
                (*a)[k].name.c_str(), (*a)[k].ms, (*b)[k].ms);
}

Expected<Executable> compileDecode(const Graph &g,
                                   std::vector<std::string> dynamic) {
  CompileOptions options;
  options.diskCache = false; // every compile counted is a compile
  options.dynamicDims = std::move(dynamic);
  return Compiler(options).compile(g);
}

} // namespace

int runDecodeLoop() {
  const DecodeShape s{4096, 32, 8, 11008, 0};
  const int64_t first = 512, steps = 256, last = first + steps - 1;
  Graph headsGraph = llamaDecodeHeads(s);
  Graph attendGraph = llamaDecodeAttend(s, "L");
  Expected<Buffers> hb = buffersFor(headsGraph);
  Expected<Buffers> ab = buffersFor(llamaDecodeAttend(s, last));
  Expected<Executable> heads = compileDecode(headsGraph, {});
  Expected<Executable> attend = compileDecode(attendGraph, {"L"});
  if (!hb || !ab || !heads || !attend) {
    std::fprintf(stderr, "decode-loop: cannot set up: %s\n",
                 !heads    ? heads.error().message().c_str()
                 : !attend ? attend.error().message().c_str()
                           : "no device memory");
    return 1;
  }
  ab->in[1].data = hb->out[0].data; // q
  uint64_t before = cacheStats().compiles;
  auto start = std::chrono::steady_clock::now();
  for (int64_t cached = first; cached <= last; ++cached)
    if (Status st = decodeStep(*heads, *attend, *hb, *ab, cached); !st) {
      std::fprintf(stderr, "decode-loop: %s\n", st.message().c_str());
      return 1;
    }
  if (Status st = synchronize(); !st)
    return 1;
  double loopMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  std::printf("decode loop, KV cache %lld..%lld (%lld steps, Llama-7B "
              "block): %llu compiles, %.0f ms in all, compiles included\n",
              (long long)first, (long long)last, (long long)steps,
              (unsigned long long)(cacheStats().compiles - before), loopMs);
  std::printf("%-10s %14s %14s %8s\n", "KV cache", "run-time ms", "exact ms",
              "ratio");
  for (int64_t cached : {first, first + 88, first + 188, last}) {
    Expected<Executable> exact =
        compileDecode(llamaDecodeAttend(s, cached), {});
    Expected<double> dynamicMs =
        decodeStepMs(*heads, *attend, *hb, *ab, cached);
    Expected<double> exactMs =
        exact ? decodeStepMs(*heads, *exact, *hb, *ab, cached)
              : Expected<double>(exact.error());
    if (!dynamicMs || !exactMs) {
      std::fprintf(stderr, "decode-loop: %s\n",
                   (!dynamicMs ? dynamicMs.error() : exactMs.error())
                       .message()
                       .c_str());
      return 1;
    }
    std::printf("%-10lld %14.4f %14.4f %8.3f\n", (long long)cached,
                *dynamicMs, *exactMs, *dynamicMs / *exactMs);
    if (cached == first + 88) {
      printKernelTimes(*attend, *exact, *ab, cached);
      // The same compile in an executable of its own, whose CUDA graph is
      // built at this length (the loop's was updated at every step).
      Expected<Executable> fresh = compileDecode(attendGraph, {"L"});
      Expected<double> freshMs =
          fresh ? decodeStepMs(*heads, *fresh, *hb, *ab, cached)
                : Expected<double>(fresh.error());
      Expected<double> againMs =
          decodeStepMs(*heads, *attend, *hb, *ab, cached);
      if (freshMs && againMs)
        std::printf("  KV %lld: a fresh executable %.4f ms, the loop's again "
                    "%.4f ms\n",
                    (long long)cached, *freshMs, *againMs);
    }
  }
  return 0;
}

} // namespace kfuse::bench
