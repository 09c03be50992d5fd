//===- Costs.cpp - compile, cache-load and launch costs -------------------===//
//
// The figures of the JIT itself: a cold in-process compile of a one-op
// kernel (graph to loaded function), a disk-cache hit in a fresh process,
// and the host time of run() on a cached one-kernel graph.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "WorkloadGraphs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace kfuse::bench {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// exp(x) over n elements: one kernel, a distinct cache key per n.
Graph oneOp(int64_t n) {
  Graph g("one_op");
  g.output("y", exp(g.input("x", DType::f32, {n})));
  return g;
}

/// Compile and load (first run) one graph; milliseconds.
Expected<double> compileAndLoad(const CompileOptions &options, int64_t n,
                                DeviceBuffer &x, DeviceBuffer &y) {
  Clock::time_point start = Clock::now();
  Expected<Executable> exe = Compiler(options).compile(oneOp(n));
  if (!exe)
    return exe.error();
  Status s = exe->run({{x.data(), DType::f32, {n}}}, {{y.data(), DType::f32, {n}}});
  if (!s)
    return s.error();
  return msSince(start);
}

} // namespace

int childLoad(const std::string &cacheDir, int64_t n) {
  auto x = DeviceBuffer::allocate(n * 4), y = DeviceBuffer::allocate(n * 4);
  if (!x || !y || !device())
    return 2;
  CompileOptions options;
  options.cacheDir = cacheDir;
  uint64_t compilesBefore = cacheStats().compiles;
  Expected<double> ms = compileAndLoad(options, n, *x, *y);
  if (!ms || cacheStats().compiles != compilesBefore ||
      cacheStats().diskHits != 1)
    return 3;
  std::printf("%.4f\n", *ms);
  return 0;
}

int runCosts(const std::string &self, Table &table) {
  const int64_t n = 1 << 20;
  auto x = DeviceBuffer::allocate(n * 4), y = DeviceBuffer::allocate(n * 4);
  if (!x || !y || !x->fill(0x3F))
    return 1;
  // Warm the process: driver, LLVM target registration, first context.
  CompileOptions cold;
  cold.diskCache = false;
  if (!compileAndLoad(cold, 1000, *x, *y))
    return 1;
  std::vector<double> compiles;
  for (int i = 0; i < 15; ++i) {
    Expected<double> ms = compileAndLoad(cold, n - 1 - i, *x, *y);
    if (!ms) {
      std::fprintf(stderr, "%s\n", ms.error().message().c_str());
      return 1;
    }
    compiles.push_back(*ms);
  }
  table.add({"cold compile, one-op kernel (graph to loaded function)",
             median(compiles), "ms", "<= 50 ms"});

  std::string dir = "/tmp/kfuse-bench-cache-" + std::to_string(getpid());
  CompileOptions disk;
  disk.cacheDir = dir;
  std::vector<double> loads;
  for (int i = 0; i < 7; ++i) {
    int64_t size = n - 100 - i;
    if (!compileAndLoad(disk, size, *x, *y)) // fills the disk cache
      return 1;
    std::string command = self + " --child-load " + dir + " " +
                          std::to_string(size);
    FILE *child = popen(command.c_str(), "r");
    double ms = -1;
    if (!child || std::fscanf(child, "%lf", &ms) != 1 || pclose(child) != 0) {
      std::fprintf(stderr, "the child process failed: %s\n", command.c_str());
      return 1;
    }
    loads.push_back(ms);
  }
  std::system(("rm -rf " + dir).c_str());
  table.add({"disk-cache hit in a new process (compile() + first run)",
             median(loads), "ms", "<= 5 ms"});

  Expected<Executable> exe = Compiler(cold).compile(oneOp(1024));
  if (!exe)
    return 1;
  DeviceTensor in{x->data(), DType::f32, {1024}}, out{y->data(), DType::f32, {1024}};
  std::vector<double> hostUs;
  for (int i = 0; i < 10000; ++i) {
    Clock::time_point start = Clock::now();
    Status s = exe->run(&in, 1, &out, 1);
    hostUs.push_back(msSince(start) * 1000);
    if (!s)
      return 1;
    // Keep the launch queue short; not timed.
    if (i % 256 == 255 && !synchronize())
      return 1;
  }
  if (!synchronize())
    return 1;
  table.add({"host time of run() on a cached one-kernel graph (10,000 calls)",
             median(hostUs), "us", "<= 5 us"});
  return 0;
}

int runCompileScaling(const std::vector<int> &layerCounts) {
  // GPT-2-medium-sized blocks; the sizes matter little to compile time.
  const BlockShape shape{4, 1024, 1024, 16};
  CompileOptions options;
  options.diskCache = false;
  // LLVM's one-time set-up (targets, libdevice) is not a layer's cost.
  if (Expected<Executable> warm = Compiler(options).compile(oneOp(1000));
      !warm || !warm->dump(Stage::PTX))
    return 1;
  std::printf("%-8s %8s %12s %14s %12s\n", "layers", "kernels", "functions",
              "to PTX (ms)", "per layer");
  for (int layers : layerCounts) {
    Graph g = preNormStack(shape, layers);
    Clock::time_point start = Clock::now();
    Expected<Executable> exe = Compiler(options).compile(g);
    Expected<std::string> ptx =
        exe ? exe->dump(Stage::PTX) : Expected<std::string>(exe.error());
    if (!ptx) {
      std::fprintf(stderr, "%s\n", ptx.error().message().c_str());
      return 1;
    }
    double ms = msSince(start);
    size_t functions = 0;
    for (size_t at = ptx->find(".entry"); at != std::string::npos;
         at = ptx->find(".entry", at + 1))
      ++functions;
    Expected<std::vector<KernelReport>> kernels = exe->kernels();
    std::printf("%-8d %8zu %12zu %14.1f %12.1f\n", layers,
                kernels ? kernels->size() : size_t(0), functions, ms,
                ms / layers);
  }
  return 0;
}

} // namespace kfuse::bench
