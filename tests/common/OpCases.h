//===- OpCases.h - one small graph per op, for PTX and GPU tests -*- C++ -*-===//
//
// Every kf op in several dtypes and awkward shapes (sizes 1, 7 and primes,
// broadcasts), each as a graph builder with the input shapes to run it on.
// The PTX tests compile each with ptxas; the GPU tests run each fused and
// unfused against the reference evaluator.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_TESTS_OPCASES_H
#define KFUSE_TESTS_OPCASES_H

#include "kfuse/kfuse.h"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace kfuse::testing {

struct OpCase {
  std::string name;
  std::function<void(Graph &)> build;
  /// Concrete input shapes (the graph may declare symbols).
  std::vector<std::vector<int64_t>> shapes;
};

std::vector<OpCase> allOpCases();
/// The indexing ops and the newer elementwise ones (IndexingCases.cpp);
/// allOpCases includes them.
void addIndexingCases(std::vector<OpCase> &cases);
/// Joint forward-and-backward graphs from kfuse::grad and kfuse::vjp
/// (GradientCases.cpp); allOpCases includes them.
void addGradientCases(std::vector<OpCase> &cases);

/// A seed from the system's entropy: every test run draws fresh inputs
/// (the failure message prints it, to replay).
uint64_t freshSeed();

/// Random inputs for a graph of static shapes, input i from seed + i.
std::vector<HostTensor> randomInputs(const Graph &g, uint64_t seed);

/// `g` compiled as the tests compile it: without the disk cache, `options`
/// otherwise.
inline Expected<Executable> compileUncached(const Graph &g,
                                            CompileOptions options = {}) {
  options.diskCache = false;
  return Compiler(options).compile(g);
}

/// LayerNorm over the last dim written from primitives, computed in f32
/// and returned in x's dtype.
Tensor layerNormOf(Tensor x, Tensor w, Tensor b);

/// gtest prints a case by its name.
inline void PrintTo(const OpCase &c, std::ostream *os) { *os << c.name; }

} // namespace kfuse::testing

#endif // KFUSE_TESTS_OPCASES_H
