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
  /// --gradients: check the backward (CheckGradients.cpp) instead.
  bool gradients = false;
  /// --backward: check the graph's joint vjp() graph instead, as any
  /// graph (fused and unfused against the evaluator).
  bool backward = false;
  /// ||vjp - finite differences|| / ||finite differences|| allowed.
  double gradientTolerance = 1e-5;
};

struct CheckResult {
  enum Kind { Passed, Degenerate, Failed } kind = Passed;
  /// For a failure, its class ("mismatch fused", "ptxas unfused", ...):
  /// shrinking keeps a candidate only when it fails in the same class.
  std::string failure;
  std::string detail;
};

CheckResult checkGraph(const BuiltGraph &built, const CheckConfig &config);
/// The graph's gradients against float64 finite differences, and
/// splitVJP's two graphs against the joint one (CheckGradients.cpp).
CheckResult checkBackward(const BuiltGraph &built, const CheckConfig &config);
/// The joint vjp() graph of `built` with its inputs' shapes (cotangents
/// after the forward inputs), or why it has none.
Expected<BuiltGraph> backwardGraph(const BuiltGraph &built);
/// checkBackward with config.gradients, checkGraph of the backwardGraph
/// with config.backward, else checkGraph.
CheckResult check(const BuiltGraph &built, const CheckConfig &config);

/// For an integer output computed by casting a computed float: whether
/// `actual` differs from `expected` only as rounding that float in
/// `leastPrecise` can make it. Kernels may keep an intermediate in f32 (as
/// the evaluator keeps it in f64) or store it in its own dtype (an unfused
/// kernel rounds a bf16 matmul result): where the rounding crosses an
/// integer, truncation lands one apart. Each such element may be off by 1
/// plus the rounding at its size, and there are few of them: about
/// sum |e| u / 2 (u the unit roundoff of `leastPrecise`) on uniformly
/// placed fractions, with four standard deviations and two to spare. A
/// cast that rounds to nearest instead of truncating flips about half.
bool plausibleRoundingFlips(const HostTensor &actual, const HostTensor &expected,
                            DType leastPrecise);

} // namespace kfuse::fuzz

#endif // KFUSE_TESTS_FUZZ_CHECK_H
