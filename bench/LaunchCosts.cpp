//===- LaunchCosts.cpp - run() kernel by kernel against one CUDA graph ----===//
//
// A decode step is a chain of small kernels; launched one by one, its time
// is the host's. For chains of 1, 2, 4 and 20 one-op kernels on 4096
// floats (compiled unfused), each way of launching (Launch::Kernels,
// Launch::Graph):
//  - host: the time run() takes to return, a cached specialisation, the
//    same buffers each call (median of 5,000 calls);
//  - moved: the same, the output alternating between two buffers (the
//    graph updates the nodes that write it);
//  - step: from an idle GPU, the device time of one run (CUDA events
//    around it, synchronised after each: what one decode step costs when
//    nothing else is queued);
//  - steady: wall time per run of 2,000 runs enqueued back to back.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include <chrono>
#include <cstdio>

namespace kfuse::bench {

namespace {

using Clock = std::chrono::steady_clock;

double usSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start)
      .count();
}

/// `kernels` pointwise ops one after another; unfused, a kernel each.
Graph chain(int kernels) {
  Graph g("chain_" + std::to_string(kernels));
  Tensor t = g.input("x", DType::f32, {4096});
  for (int k = 0; k < kernels; ++k)
    t = k % 2 ? exp(t * -1.0) : t + 0.5;
  g.output("y", t);
  return g;
}

struct LaunchFigures {
  double hostUs = 0, movedUs = 0, stepUs = 0, steadyUs = 0;
};

/// Median host microseconds of `calls` runs; every 256 calls the queue is
/// drained (not timed), so that the driver's queue never fills.
Expected<double> hostTime(const std::function<Status(int)> &run, int calls) {
  std::vector<double> us;
  for (int i = 0; i < calls; ++i) {
    Clock::time_point start = Clock::now();
    KFUSE_RETURN_IF_ERROR(run(i));
    us.push_back(usSince(start));
    if (i % 256 == 255)
      KFUSE_RETURN_IF_ERROR(synchronize());
  }
  KFUSE_RETURN_IF_ERROR(synchronize());
  return median(us);
}

Expected<LaunchFigures> measure(int kernels, Launch launch) {
  CompileOptions options;
  options.fusion = Fusion::Unfused;
  options.diskCache = false;
  options.launch = launch;
  Expected<Executable> exe = Compiler(options).compile(chain(kernels));
  if (!exe)
    return exe.error();
  auto x = DeviceBuffer::allocate(4096 * 4), y1 = DeviceBuffer::allocate(4096 * 4),
       y2 = DeviceBuffer::allocate(4096 * 4);
  if (!x || !y1 || !y2 || !x->fill(0))
    return Error(ErrorCode::DeviceError, "cannot allocate the buffers");
  DeviceTensor in = x->tensor(DType::f32, {4096});
  DeviceTensor out[2] = {y1->tensor(DType::f32, {4096}),
                         y2->tensor(DType::f32, {4096})};
  auto run = [&](int i) { return exe->run(&in, 1, &out[i % 2], 1); };
  auto same = [&](int) { return run(0); };
  KFUSE_RETURN_IF_ERROR(same(0)); // loads, builds the graph
  LaunchFigures f;
  Expected<double> host = hostTime(same, 5000);
  Expected<double> moved = host ? hostTime(run, 5000) : host;
  if (!moved)
    return moved.error();
  f.hostUs = *host;
  f.movedUs = *moved;
  Expected<std::vector<double>> step =
      timeOnDevice([&] { return same(0); }, 200, 10);
  if (!step)
    return step.error();
  f.stepUs = median(*step) * 1000;
  const int runs = 2000;
  Clock::time_point start = Clock::now();
  for (int i = 0; i < runs; ++i)
    KFUSE_RETURN_IF_ERROR(same(0));
  KFUSE_RETURN_IF_ERROR(synchronize());
  f.steadyUs = usSince(start) / runs;
  return f;
}

} // namespace

int runLaunchCosts(Table &table) {
  std::printf("\n%-8s %-8s %10s %10s %10s %10s %12s\n", "kernels", "launch",
              "host us", "moved us", "step us", "steady us", "host/kernel");
  for (int kernels : {1, 2, 4, 20}) {
    for (Launch launch : {Launch::Kernels, Launch::Graph}) {
      Expected<LaunchFigures> f = measure(kernels, launch);
      if (!f) {
        std::fprintf(stderr, "launch costs: %s\n", f.error().message().c_str());
        return 1;
      }
      const char *mode = launch == Launch::Graph ? "graph" : "kernels";
      std::printf("%-8d %-8s %10.2f %10.2f %10.2f %10.2f %12.2f\n", kernels,
                  mode, f->hostUs, f->movedUs, f->stepUs, f->steadyUs,
                  f->hostUs / kernels);
      std::string what = std::to_string(kernels) + "-kernel chain, " + mode;
      if (kernels == 1 && launch == Launch::Kernels)
        table.add({"host time of run() on a cached one-kernel graph",
                   f->hostUs, "us", "<= 5 us"});
      if (kernels == 20) {
        table.add({"host time of run(), " + what, f->hostUs, "us",
                   launch == Launch::Graph ? "<= 10 us" : ""});
        table.add({"host time of run(), " + what + ", output moved",
                   f->movedUs, "us", ""});
        table.add({"device time of one step from idle, " + what, f->stepUs,
                   "us", ""});
        table.add({"time per step back to back, " + what, f->steadyUs, "us",
                   ""});
      }
    }
  }
  return 0;
}

} // namespace kfuse::bench
