//===- embed.cpp - kfuse embedded in a program ----------------------------===//
//
// Builds LayerNorm followed by GELU through the C++ frontend, prints its kf
// IR, and checks the reference evaluator's output on random data: every
// row of the normalised activations has mean 0 and variance 1 before GELU.
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"

#include <cmath>
#include <cstdio>

int main() {
  kfuse::Graph g("layernorm_gelu");
  kfuse::Tensor x = g.input("x", kfuse::DType::f32, {"M", 512});
  kfuse::Tensor centered = x - kfuse::reduceMean(x, {-1}, /*keepDims=*/true);
  kfuse::Tensor var = kfuse::reduceMean(centered * centered, {-1}, true);
  kfuse::Tensor norm = centered * kfuse::rsqrt(var + 1e-5);
  g.output("norm", norm);
  g.output("y", kfuse::gelu(norm));
  if (!g.status()) {
    std::fprintf(stderr, "%s\n", g.status().message().c_str());
    return 1;
  }
  kfuse::Expected<std::string> ir = g.toMLIR();
  std::printf("%s\n", ir->c_str());

  const int64_t rows = 8, cols = 512;
  auto outputs = kfuse::evaluate(
      g, {kfuse::HostTensor::random(kfuse::DType::f32, {rows, cols}, 42)});
  if (!outputs) {
    std::fprintf(stderr, "%s\n", outputs.error().message().c_str());
    return 1;
  }
  const kfuse::HostTensor &normOut = (*outputs)[0];
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, sumSq = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double v = normOut.get(r * cols + c);
      sum += v;
      sumSq += v * v;
    }
    double mean = sum / cols, variance = sumSq / cols - mean * mean;
    if (std::fabs(mean) > 1e-5 || std::fabs(variance - 1) > 1e-3) {
      std::fprintf(stderr, "row %lld: mean %g variance %g\n", (long long)r,
                   mean, variance);
      return 1;
    }
  }
  std::printf("evaluated %lld rows: mean 0, variance 1 before GELU\n",
              (long long)rows);
  return 0;
}
