#include "kfuse/kfuse.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
using namespace kfuse;
using Clock = std::chrono::steady_clock;
int main(int argc, char **argv) {
  int kernels = argc > 1 ? std::atoi(argv[1]) : 1;
  bool graph = argc > 2 && std::string(argv[2]) == "graph";
  int calls = argc > 3 ? std::atoi(argv[3]) : 200000;
  Graph g("chain");
  Tensor t = g.input("x", DType::f32, {4096});
  for (int k = 0; k < kernels; ++k)
    t = k % 2 ? exp(t * -1.0) : t + 0.5;
  g.output("y", t);
  CompileOptions options;
  options.fusion = Fusion::Unfused;
  options.diskCache = false;
  options.launch = graph ? Launch::Graph : Launch::Kernels;
  auto exe = Compiler(options).compile(g);
  if (!exe) { std::printf("%s\n", exe.error().message().c_str()); return 1; }
  auto x = DeviceBuffer::allocate(4096 * 4), y = DeviceBuffer::allocate(4096 * 4), y2 = DeviceBuffer::allocate(4096 * 4);
  DeviceTensor in = x->tensor(DType::f32, {4096});
  DeviceTensor out[2] = {y->tensor(DType::f32, {4096}), y2->tensor(DType::f32, {4096})};
  for (int moved = 0; moved < 2; ++moved) {
    std::vector<double> batches;
    for (int b = 0; b < 5; ++b) {
      auto start = Clock::now();
      for (int i = 0; i < calls / 5; ++i)
        if (Status s = exe->run(&in, 1, &out[moved ? i % 2 : 0], 1); !s) { std::printf("%s\n", s.message().c_str()); return 1; }
      batches.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / (calls / 5));
    }
    std::sort(batches.begin(), batches.end());
    std::printf("%d kernels %s %s: %.3f us a run\n", kernels, graph ? "graph" : "kernels", moved ? "moved" : "same", batches[2]);
  }
}
