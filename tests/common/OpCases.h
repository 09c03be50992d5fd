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

/// gtest prints a case by its name.
inline void PrintTo(const OpCase &c, std::ostream *os) { *os << c.name; }

} // namespace kfuse::testing

#endif // KFUSE_TESTS_OPCASES_H
