// Uses the installed kfuse: builds sigmoid(x) + 1 and checks one value.
#include <kfuse/kfuse.h>

#include <cmath>
#include <cstdio>

int main() {
  kfuse::Graph g("consumer");
  g.output("y", kfuse::sigmoid(g.input("x", kfuse::DType::f32, {2})) + 1.0);
  kfuse::HostTensor x(kfuse::DType::f32, {2});
  x.set(0, 0.0);
  x.set(1, 2.0);
  auto y = kfuse::evaluate(g, {x});
  if (!y) {
    std::fprintf(stderr, "%s\n", y.error().message().c_str());
    return 1;
  }
  double expected = 1.0 + 1.0 / (1.0 + std::exp(-2.0));
  if ((*y)[0].get(0) != 1.5 || std::fabs((*y)[0].get(1) - expected) > 1e-6) {
    std::fprintf(stderr, "wrong values %g %g\n", (*y)[0].get(0), (*y)[0].get(1));
    return 1;
  }
  std::printf("kfuse %s installed and working\n", kfuse::version());
  return 0;
}
