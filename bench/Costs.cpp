//===- Costs.cpp - compile, cache-load and launch costs -------------------===//
//
// The figures of the JIT itself: cold in-process compiles (graph to loaded
// functions) of a one-op kernel, a heavy matmul, a FlashAttention kernel
// and a whole transformer block; disk-cache hits of each in a fresh
// process; the host time of run() (LaunchCosts.cpp: kernel by kernel
// against one CUDA graph).
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

/// bf16 4096^3 with a bias and GELU in its epilogue.
Graph heavyMatmul(const std::string &name) {
  Graph g(name);
  Tensor a = g.input("a", DType::bf16, {4096, 4096});
  Tensor b = g.input("b", DType::bf16, {4096, 4096});
  Tensor bias = g.input("bias", DType::f32, {4096});
  g.output("y", cast(gelu(matmul(a, b, {false, false, DType::f32}) + bias),
                     DType::bf16));
  return g;
}

/// FlashAttention at head dim 128 (B4 H16 S4096), bf16.
Graph flashAttention(const std::string &name) {
  Graph g(name);
  auto input = [&](const char *n) {
    return g.input(n, DType::bf16, {4, 16, 4096, 128});
  };
  Tensor q = input("q"), k = input("k"), v = input("v");
  g.output("o", attention(q, k, v, {}));
  return g;
}

} // namespace

Expected<Buffers> buffersFor(const Graph &g) {
  Buffers b;
  for (bool inputs : {true, false})
    for (const TensorInfo &t : inputs ? g.inputs() : g.outputs()) {
      uint64_t bytes = 0;
      std::vector<int64_t> shape = staticShape(t, bytes);
      Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(bytes);
      if (!buffer || !buffer->fill(0))
        return Error(ErrorCode::DeviceError, "cannot allocate " + t.name);
      (inputs ? b.in : b.out).push_back(buffer->tensor(t.dtype, Dims(shape)));
      b.bytes += bytes;
      b.owned.push_back(buffer.take());
    }
  return b;
}

/// The graphs costs are measured on: "one_op:N", "matmul", "attention",
/// "block", "stack32" (32 blocks, each with weights of its own); `variant`
/// names a graph of its own (a cache key of its own).
Expected<Graph> costGraph(const std::string &name, int variant) {
  std::string suffix = "_" + std::to_string(variant);
  if (name.rfind("one_op:", 0) == 0)
    return oneOp(std::atoll(name.c_str() + 7));
  if (name == "matmul")
    return heavyMatmul("matmul" + suffix);
  if (name == "attention")
    return flashAttention("attention" + suffix);
  if (name == "block")
    return preNormStack({4, 1024, 1024, 16}, 1, "block" + suffix);
  if (name == "stack32")
    return preNormStack({4, 1024, 1024, 16}, 32, "stack32" + suffix);
  return Error(ErrorCode::InvalidArgument, "no cost graph '" + name + "'");
}

namespace {

/// Compile and load (first run) `g`; milliseconds.
Expected<double> compileAndLoad(const CompileOptions &options, const Graph &g,
                                Buffers &b) {
  Clock::time_point start = Clock::now();
  Expected<Executable> exe = Compiler(options).compile(g);
  if (!exe)
    return exe.error();
  Status s = exe->run(b.in.data(), b.in.size(), b.out.data(), b.out.size());
  if (!s)
    return s.error();
  double ms = msSince(start);
  KFUSE_RETURN_IF_ERROR(synchronize());
  return ms;
}

/// `name`'s cold compiles, `repetitions` graphs of their own; median ms.
Expected<double> coldCompile(const std::string &name, int repetitions,
                             int firstVariant) {
  CompileOptions cold;
  cold.diskCache = false;
  std::vector<double> ms;
  for (int i = 0; i < repetitions; ++i) {
    Expected<Graph> g = costGraph(name, firstVariant + i);
    if (!g)
      return g.error();
    Expected<Buffers> b = buffersFor(*g);
    if (!b)
      return b.error();
    Expected<double> t = compileAndLoad(cold, *g, *b);
    if (!t)
      return t.error();
    ms.push_back(*t);
  }
  return median(ms);
}

/// `name` compiled into the disk cache `dir` here, then loaded from there
/// by a child process, `repetitions` times; median ms of the child's
/// compile() + first run.
Expected<double> diskHit(const std::string &self, const std::string &dir,
                         const std::string &name, int repetitions,
                         int firstVariant) {
  CompileOptions disk;
  disk.cacheDir = dir;
  std::vector<double> loads;
  for (int i = 0; i < repetitions; ++i) {
    int variant = firstVariant + i;
    Expected<Graph> g = costGraph(name, variant);
    Expected<Buffers> b = g ? buffersFor(*g) : Expected<Buffers>(g.error());
    if (!b)
      return b.error();
    if (Expected<double> fill = compileAndLoad(disk, *g, *b); !fill)
      return fill.error();
    std::string command = self + " --child-load " + dir + " " + name + " " +
                          std::to_string(variant);
    FILE *child = popen(command.c_str(), "r");
    double ms = -1;
    if (!child || std::fscanf(child, "%lf", &ms) != 1 || pclose(child) != 0)
      return Error(ErrorCode::DeviceError,
                   "the child process failed: " + command);
    loads.push_back(ms);
  }
  return median(loads);
}

} // namespace

int childLoad(const std::string &cacheDir, const std::string &name,
              int variant) {
  Expected<Graph> g = costGraph(name, variant);
  Expected<Buffers> b = g ? buffersFor(*g) : Expected<Buffers>(g.error());
  if (!b || !device())
    return 2;
  CompileOptions options;
  options.cacheDir = cacheDir;
  uint64_t compilesBefore = cacheStats().compiles;
  Expected<double> ms = compileAndLoad(options, *g, *b);
  if (!ms || cacheStats().compiles != compilesBefore ||
      cacheStats().diskHits != 1)
    return 3;
  std::printf("%.4f\n", *ms);
  return 0;
}

int runCosts(const std::string &self, Table &table) {
  const int64_t n = 1 << 20;
  // Warm the process: driver, LLVM target registration, first context.
  if (!coldCompile("one_op:1000", 1, 0))
    return 1;
  struct Heavy {
    const char *name, *what, *coldTarget, *diskTarget;
    int repetitions;
  };
  const Heavy heavy[] = {
      {"", "one-op kernel", "<= 50 ms", "<= 5 ms", 15},
      {"matmul", "bf16 4096^3 matmul + bias + GELU", "<= 50 ms", "<= 5 ms", 3},
      {"attention", "FlashAttention D128", "<= 50 ms", "<= 5 ms", 3},
      {"block", "pre-norm transformer block", "<= 300 ms", "<= 5 ms", 3},
      {"stack32", "32 pre-norm blocks", "<= 1.5x one block", "", 1}};
  std::string dir = "/tmp/kfuse-bench-cache-" + std::to_string(getpid());
  for (const Heavy &h : heavy) {
    // One-op graphs differ by size: a cache key (and PTX) of their own.
    bool oneOp = std::string(h.name).empty();
    auto name = [&](int i) {
      return oneOp ? "one_op:" + std::to_string(n - 1 - i) : std::string(h.name);
    };
    std::vector<double> cold, disk;
    for (int i = 0; i < h.repetitions; ++i) {
      Expected<double> c = coldCompile(name(i), 1, i);
      Expected<double> d =
          c ? diskHit(self, dir, name(i + 100), 1, 100 + i) : c;
      if (!d) {
        std::fprintf(stderr, "%s: %s\n", h.what, d.error().message().c_str());
        return 1;
      }
      cold.push_back(*c);
      disk.push_back(*d);
    }
    table.add({std::string("cold compile, ") + h.what +
                   " (graph to loaded functions)",
               median(cold), "ms", h.coldTarget});
    table.add({std::string("disk-cache hit in a new process, ") + h.what +
                   " (compile() + first run)",
               median(disk), "ms", h.diskTarget});
  }
  std::system(("rm -rf " + dir).c_str());
  return runLaunchCosts(table);
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
