//===- Check.h - one fuzzed graph, fused against unfused against float64 -===//
//
// Without a GPU a graph is compiled fused and unfused, both PTX modules are
// assembled by ptxas, and the evaluator runs it (small graphs). With a GPU
// both modes run on fresh random inputs (outputs poisoned by runOnHost) and
// every output is compared with the evaluator. A reference that is not
// finite makes the graph degenerate: counted, not compared, since NaN never
// passes.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_TESTS_FUZZ_CHECK_H
#define KFUSE_TESTS_FUZZ_CHECK_H

#include "Recipe.h"

#include <string>

namespace kfuse::fuzz {

struct CheckConfig {
  bool gpu = false;
  std::string ptxas; ///< CPU mode: the assembler; empty skips assembling
  std::string arch = "sm_90";
  uint64_t inputSeed = 1;
  /// Random graphs chain many ops, each of which may round differently in
  /// a fused kernel than in the evaluator: the per-dtype tolerance of
  /// kfuse::testing times this.
  double toleranceFactor = 4;
};

struct CheckResult {
  enum Kind { Passed, Degenerate, Failed } kind = Passed;
  /// For a failure, its class ("mismatch fused", "ptxas unfused", ...):
  /// shrinking keeps a candidate only when it fails in the same class.
  std::string failure;
  std::string detail;
};

CheckResult checkGraph(const BuiltGraph &built, const CheckConfig &config);

} // namespace kfuse::fuzz

#endif // KFUSE_TESTS_FUZZ_CHECK_H
