//===- kfuse/Testing.h - regression-testing fusion --------------*- C++ -*-===//
//
// For users' regression tests, and ours: compile a graph fused and
// unfused, run both on the same fresh random inputs (outputs poisoned
// first), compare each with the float64 reference evaluator, and time both
// with CUDA events. Fused must match in values and not be slower.
//
//   auto report = kfuse::testing::checkFusion(graph);
//   ASSERT_TRUE(report) << report.error().message();
//   EXPECT_TRUE(report->passed()) << report->summary();
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_TESTING_H
#define KFUSE_TESTING_H

#include "kfuse/Compiler.h"
#include "kfuse/Graph.h"

#include <string>
#include <vector>

namespace kfuse::testing {

/// Relative-error bound for an output of `dtype` computed with reductions
/// over `reductionLength` elements: f32 1e-5 (2e-3 where its matmuls may
/// run in TF32), f16 2e-3, bf16 1e-2, growing with the square root of the
/// length past 64; integers and i1 exact.
double tolerance(DType dtype, int64_t reductionLength = 1,
                 bool allowTF32 = false);

/// The bound for a float `output` of `graph`: the tolerance of the least
/// precise of its dtype and the graph's float inputs' (an f32 loss of bf16
/// activations carries their rounding: fused and unfused round different
/// intermediates); integer and i1 outputs stay exact.
double outputTolerance(const Graph &graph, const TensorInfo &output,
                       int64_t reductionLength = 1, bool allowTF32 = false);

struct CheckOptions {
  /// Input shapes, required when the graph has symbolic dims.
  std::vector<std::vector<int64_t>> shapes;
  uint64_t seed = 0; ///< 0: a fresh random seed
  /// Longest reduction in the graph, for the tolerance.
  int64_t reductionLength = 1024;
  /// Compile both modes with CompileOptions::allowTF32 (and widen the f32
  /// tolerance to match).
  bool allowTF32 = false;
  int repetitions = 20;
  /// Fused may be this much slower than unfused before it counts (noise).
  double noiseMargin = 0.05;
  /// ... or this many milliseconds: a few-microsecond kernel's time is
  /// mostly launch jitter.
  double noiseFloorMs = 0.003;
  bool time = true;
};

struct OutputCheck {
  std::string name;
  DType dtype;
  double fusedError, unfusedError, tolerance;
  bool passed;
};

struct FusionReport {
  uint64_t seed;
  std::vector<OutputCheck> outputs;
  size_t fusedKernels = 0, unfusedKernels = 0;
  double fusedMs = 0, unfusedMs = 0; ///< medians; 0 when not timed
  bool valuesMatch = false;
  /// Within the noise margins; when not, both modes are timed a second
  /// time and the faster median of each decides.
  bool fusedNotSlower = false;
  bool passed() const { return valuesMatch && fusedNotSlower; }
  std::string summary() const;
};

Expected<FusionReport> checkFusion(const Graph &graph,
                                   const CheckOptions &options = {});

/// Test-only: launches a kernel that stores 1 TiB past the end of a live
/// allocation, as a miscompiled kernel would, and waits for it. Returns the
/// error the runtime reports (an illegal address). Afterwards the CUDA
/// context is unusable: every kfuse call that needs the GPU fails at once,
/// saying why, and nothing more is launched.
Status launchOutOfBoundsStore();

} // namespace kfuse::testing

#endif // KFUSE_TESTING_H
