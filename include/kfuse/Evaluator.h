//===- kfuse/Evaluator.h - the float64 reference evaluator ------*- C++ -*-===//
//
// The oracle for every numeric test, and the definition of each op's
// semantics. It interprets the graph on the CPU, computing in float64;
// values are rounded to their dtype where a cast says so and when stored
// into an output (bf16/f16 round to nearest even). Edge cases: a softmax
// or attention row with nothing to attend gives 0; NaN and inf propagate;
// i32 arithmetic wraps, i32 division truncates and x / 0 is 0.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_EVALUATOR_H
#define KFUSE_EVALUATOR_H

#include "kfuse/DType.h"
#include "kfuse/Error.h"

#include <cstdint>
#include <vector>

namespace kfuse {

class Graph;

/// A dense row-major tensor in host memory, stored in its dtype.
class HostTensor {
public:
  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape);

  /// Random values: floats uniform in [-1, 1), i32 in [-8, 8], i1 fair coin.
  static HostTensor random(DType dtype, std::vector<int64_t> shape,
                           uint64_t seed);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  size_t numElements() const { return numElements_; }
  size_t sizeInBytes() const { return data_.size(); }
  void *data() { return data_.data(); }
  const void *data() const { return data_.data(); }

  /// Element `i` (row-major) as a double, and set it (rounding to dtype).
  double get(size_t i) const;
  void set(size_t i, double value);

private:
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  size_t numElements_ = 0;
  std::vector<unsigned char> data_;
};

/// Runs `graph` on `inputs` (one per graph input, in order) and returns one
/// HostTensor per output. Symbolic dims are bound from the inputs' shapes.
Expected<std::vector<HostTensor>> evaluate(const Graph &graph,
                                           const std::vector<HostTensor> &inputs);

struct EvaluateOptions {
  /// Round every op's float result to its dtype, as a graph run one op a
  /// kernel stores it (kfuse's unfused mode), instead of only at casts and
  /// outputs. Where a 16-bit graph takes a discrete decision on values that
  /// rounding moves (sin(x) <= x of bf16 x near 0; a cast to an integer of
  /// an f16 cos near 1), the two semantics differ by whole elements.
  bool roundEachOp = false;
};
Expected<std::vector<HostTensor>> evaluate(const Graph &graph,
                                           const std::vector<HostTensor> &inputs,
                                           const EvaluateOptions &options);

/// A tensor's values as float64, row-major.
struct Float64Tensor {
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// evaluate() with float64 inputs and outputs: nothing is rounded but what
/// a cast in the graph rounds, so finite differences of a graph of f32 ops
/// are those of its float64 semantics (kfuse::testing::checkGradients).
/// Values of integer or i1 inputs must be integers.
Expected<std::vector<Float64Tensor>>
evaluateFloat64(const Graph &graph, const std::vector<Float64Tensor> &inputs);

/// ||a - b|| / ||b|| over all elements; NaN or inf where either has one
/// that the other does not match exactly.
double relativeError(const HostTensor &actual, const HostTensor &expected);

} // namespace kfuse

#endif // KFUSE_EVALUATOR_H
