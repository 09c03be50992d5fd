//===- GradCheck.cpp - gradients against finite differences ---------------===//
//
// The oracle for every vector-Jacobian rule: the joint graph's gradients,
// evaluated in float64, against central differences of the forward's
// outputs weighted by the same cotangents, also in float64 (the evaluator
// rounds nothing but casts), so a step of 1e-6 leaves errors near 1e-9
// for smooth functions.
//
//===----------------------------------------------------------------------===//

#include "kfuse/Autodiff.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace kfuse {
namespace {

/// The shapes the check runs at: given, or the graph's static ones.
Expected<std::vector<std::vector<int64_t>>>
inputShapes(const std::vector<TensorInfo> &inputs,
            const GradientCheckOptions &options) {
  if (!options.shapes.empty()) {
    if (options.shapes.size() != inputs.size())
      return Error(ErrorCode::InvalidArgument,
                   "checkGradients: " + std::to_string(options.shapes.size()) +
                       " shapes for " + std::to_string(inputs.size()) +
                       " inputs");
    return options.shapes;
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const TensorInfo &in : inputs) {
    std::vector<int64_t> shape;
    for (const Dim &d : in.shape) {
      if (d.isSymbolic())
        return Error(ErrorCode::InvalidArgument,
                     "checkGradients: input '" + in.name + "' is " +
                         shapeString(in.shape) + "; give its shape");
      shape.push_back(d.size());
    }
    shapes.push_back(shape);
  }
  return shapes;
}

Float64Tensor randomTensor(std::vector<int64_t> shape, bool floating,
                           const GradientCheckOptions &options,
                           std::mt19937_64 &rng) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::uniform_real_distribution<double> real(options.low, options.high);
  std::uniform_int_distribution<int> integer(0, 2);
  Float64Tensor t{std::move(shape), std::vector<double>(count)};
  for (double &v : t.values)
    v = floating ? real(rng) : integer(rng);
  return t;
}

/// sum over the outputs y of <cotangent_y, y(inputs)>.
Expected<double> weightedOutputs(const Graph &forward,
                                 const std::vector<Float64Tensor> &inputs,
                                 const std::vector<int> &cotangentOf,
                                 const std::vector<Float64Tensor> &cotangents) {
  Expected<std::vector<Float64Tensor>> outs = evaluateFloat64(forward, inputs);
  if (!outs)
    return outs.error();
  double sum = 0;
  for (size_t y = 0; y < outs->size(); ++y) {
    if (cotangentOf[y] < 0)
      continue;
    const std::vector<double> &w = cotangents[cotangentOf[y]].values;
    for (size_t i = 0; i < w.size(); ++i)
      sum += w[i] * (*outs)[y].values[i];
  }
  return sum;
}

/// ||a - b|| / ||b||, or over 1e-3 per element where b is smaller: a zero
/// gradient's finite differences are rounding noise (a softmax's sum), and
/// noise over noise is not an error.
double relativeDistance(const std::vector<double> &a,
                        const std::vector<double> &b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  double floor = 1e-6 * double(a.size());
  return std::sqrt(diff / std::max(norm, floor));
}

/// The weighted outputs' central difference along each element of input x.
Expected<std::vector<double>>
finiteDifferences(const Graph &forward, const std::vector<Float64Tensor> &values,
                  size_t x, const std::vector<int> &cotangentOf,
                  const std::vector<Float64Tensor> &cotangents, double step) {
  std::vector<double> differences;
  for (size_t e = 0; e < values[x].values.size(); ++e) {
    double f[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<Float64Tensor> moved = values;
      moved[x].values[e] += side ? -step : step;
      Expected<double> sum =
          weightedOutputs(forward, moved, cotangentOf, cotangents);
      if (!sum)
        return sum.error();
      f[side] = *sum;
    }
    differences.push_back((f[0] - f[1]) / (2 * step));
  }
  return differences;
}

} // namespace

Expected<std::vector<GradientCheck>>
checkGradients(const Graph &forward, const GradientCheckOptions &options) {
  Expected<Graph> joint = vjp(forward, options.vjp);
  if (!joint)
    return joint.error();
  std::vector<TensorInfo> inputs = forward.inputs(), outputs = forward.outputs();
  Expected<std::vector<std::vector<int64_t>>> shapes =
      inputShapes(inputs, options);
  if (!shapes)
    return shapes.error();
  std::mt19937_64 rng(options.seed);
  std::vector<Float64Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto fixed = options.values.find(inputs[i].name);
    values.push_back(fixed != options.values.end()
                         ? fixed->second
                         : randomTensor((*shapes)[i], isFloat(inputs[i].dtype),
                                        options, rng));
  }
  Expected<std::vector<Float64Tensor>> outs = evaluateFloat64(forward, values);
  if (!outs)
    return outs.error();

  // The joint graph's extra inputs are grad_<y>, in its order.
  std::vector<TensorInfo> jointInputs = joint->inputs();
  std::vector<int> cotangentOf(outputs.size(), -1);
  std::vector<Float64Tensor> cotangents, jointValues = values;
  for (size_t j = inputs.size(); j < jointInputs.size(); ++j)
    for (size_t y = 0; y < outputs.size(); ++y)
      if (jointInputs[j].name == "grad_" + outputs[y].name) {
        cotangentOf[y] = static_cast<int>(cotangents.size());
        cotangents.push_back(randomTensor((*outs)[y].shape, true, options, rng));
        jointValues.push_back(cotangents.back());
      }
  Expected<std::vector<Float64Tensor>> gradients =
      evaluateFloat64(*joint, jointValues);
  if (!gradients)
    return gradients.error();

  std::vector<TensorInfo> jointOutputs = joint->outputs();
  std::vector<GradientCheck> checks;
  for (size_t o = outputs.size(); o < jointOutputs.size(); ++o) {
    std::string name = jointOutputs[o].name.substr(sizeof("grad_") - 1);
    size_t x = 0;
    while (inputs[x].name != name)
      ++x;
    Expected<std::vector<double>> differences = finiteDifferences(
        forward, values, x, cotangentOf, cotangents, options.step);
    if (!differences)
      return differences.error();
    double error = relativeDistance((*gradients)[o].values, *differences);
    checks.push_back({name, error, error <= options.tolerance});
  }
  return checks;
}

} // namespace kfuse
