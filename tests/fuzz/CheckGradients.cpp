//===- CheckGradients.cpp - a fuzzed graph's backward against float64 -----===//
//
// kfuse-fuzz --gradients: each random graph's vjp() against central finite
// differences in float64 (kfuse::checkGradients), and splitVJP's forward
// then backward against the joint graph. Graphs that round to 16 bits or
// take discrete decisions (casts to integers, compares) have no useful
// finite differences: they count as degenerate, as do graphs whose values
// are not finite.
//
//===----------------------------------------------------------------------===//

#include "Check.h"

#include "kfuse/Autodiff.h"
#include "kfuse/Testing.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kfuse::fuzz {
namespace {

CheckResult degenerate(std::string why) {
  return {CheckResult::Degenerate, "", std::move(why)};
}

CheckResult failed(std::string what, std::string detail) {
  return {CheckResult::Failed, std::move(what), std::move(detail)};
}

Float64Tensor widened(const HostTensor &t) {
  Float64Tensor out{t.shape(), std::vector<double>(t.numElements())};
  for (size_t i = 0; i < t.numElements(); ++i)
    out.values[i] = t.get(i);
  return out;
}

/// ||a - b|| / ||b||, NaN where either is not finite.
double distance(const Float64Tensor &a, const Float64Tensor &b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.values.size(); ++i) {
    diff += (a.values[i] - b.values[i]) * (a.values[i] - b.values[i]);
    norm += b.values[i] * b.values[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

/// splitVJP's two graphs, evaluated one after the other, against vjp()'s
/// joint graph on the same inputs and cotangents, all in float64 (nothing
/// rounded between them, so they agree to float64 rounding).
CheckResult checkSplit(const BuiltGraph &built, uint64_t seed) {
  Expected<Graph> joint = vjp(built.graph);
  Expected<TrainingGraphs> split = splitVJP(built.graph);
  if (!joint || !split)
    return failed("split", (joint ? split.error() : joint.error()).message());
  std::vector<Float64Tensor> inputs;
  for (const HostTensor &t : randomInputs(built, seed))
    inputs.push_back(widened(t));
  Expected<std::vector<Float64Tensor>> forward =
      evaluateFloat64(split->forward, inputs);
  if (!forward)
    return failed("split", "forward graph: " + forward.error().message());
  std::vector<Float64Tensor> cotangents;
  std::vector<TensorInfo> outputs = built.graph.outputs();
  for (size_t i = 0; i < outputs.size(); ++i)
    if (isFloat(outputs[i].dtype))
      cotangents.push_back(widened(HostTensor::random(
          DType::f32, (*forward)[i].shape, seed + 1000 + i)));
  std::vector<Float64Tensor> jointInputs = inputs, backwardInputs;
  jointInputs.insert(jointInputs.end(), cotangents.begin(), cotangents.end());
  for (const BackwardInput &in : split->backwardInputs) {
    using S = BackwardInput::Source;
    backwardInputs.push_back(
        in.source == S::forwardInput    ? inputs[in.index]
        : in.source == S::forwardOutput ? (*forward)[in.index]
        : in.source == S::saved ? (*forward)[outputs.size() + in.index]
                                : cotangents[in.index]);
  }
  Expected<std::vector<Float64Tensor>> want =
      evaluateFloat64(*joint, jointInputs);
  Expected<std::vector<Float64Tensor>> grads =
      evaluateFloat64(split->backward, backwardInputs);
  if (!want || !grads)
    return failed("split", (want ? "backward graph: " + grads.error().message()
                                 : "joint graph: " + want.error().message()));
  std::vector<TensorInfo> jointOutputs = joint->outputs();
  for (size_t i = 0; i < grads->size(); ++i) {
    double error = distance((*grads)[i], (*want)[outputs.size() + i]);
    if (std::isnan(error))
      return degenerate("a gradient is not finite");
    if (!(error <= 1e-9))
      return failed("split", jointOutputs[outputs.size() + i].name +
                                 ": relative error " + std::to_string(error));
  }
  return {};
}

} // namespace

CheckResult checkBackward(const BuiltGraph &built, const CheckConfig &config) {
  if (built.leastPrecise != DType::f32 || built.discrete)
    return degenerate("16-bit rounding or discrete decisions");
  std::vector<TensorInfo> inputs = built.graph.inputs();
  if (std::none_of(inputs.begin(), inputs.end(),
                   [](const TensorInfo &in) { return isFloat(in.dtype); }))
    return degenerate("no float input");
  GradientCheckOptions options;
  options.shapes = built.inputShapes;
  options.seed = config.inputSeed;
  options.tolerance = config.gradientTolerance;
  Expected<std::vector<GradientCheck>> checks =
      checkGradients(built.graph, options);
  if (!checks)
    return failed("vjp", checks.error().message());
  for (const GradientCheck &c : *checks) {
    if (std::isnan(c.error))
      return degenerate("values not finite");
    if (!c.passed)
      return failed("gradient", c.input + ": relative error " +
                                    std::to_string(c.error));
  }
  return checkSplit(built, config.inputSeed);
}

Expected<BuiltGraph> backwardGraph(const BuiltGraph &built) {
  Expected<Graph> joint = vjp(built.graph);
  if (!joint)
    return joint.error();
  // Symbols take the sizes the forward inputs bind them to.
  std::map<std::string, int64_t> symbols;
  std::vector<TensorInfo> forwardInputs = built.graph.inputs();
  for (size_t i = 0; i < forwardInputs.size(); ++i)
    for (size_t d = 0; d < forwardInputs[i].shape.size(); ++d)
      if (forwardInputs[i].shape[d].isSymbolic())
        symbols[forwardInputs[i].shape[d].symbol()] = built.inputShapes[i][d];
  BuiltGraph backward{joint.take()};
  backward.reductionLength = built.reductionLength;
  backward.discrete = built.discrete;
  backward.leastPrecise = built.leastPrecise;
  backward.inputShapes = built.inputShapes;
  std::vector<TensorInfo> inputs = backward.graph.inputs();
  for (size_t i = forwardInputs.size(); i < inputs.size(); ++i) {
    backward.inputShapes.emplace_back();
    for (const Dim &d : inputs[i].shape)
      backward.inputShapes.back().push_back(
          d.isSymbolic() ? symbols.at(d.symbol()) : d.size());
  }
  // A gradient sums over what its operand was broadcast against, a
  // matmul's over M or N: up to the largest value's elements.
  for (const std::vector<int64_t> &shape : built.nodeShapes) {
    int64_t elements = 1;
    for (int64_t d : shape)
      elements *= d;
    backward.reductionLength = std::max(backward.reductionLength, elements);
  }
  return backward;
}

CheckResult check(const BuiltGraph &built, const CheckConfig &config) {
  if (config.gradients)
    return checkBackward(built, config);
  if (!config.backward)
    return checkGraph(built, config);
  Expected<BuiltGraph> backward = backwardGraph(built);
  if (!backward)
    return degenerate("no backward: " + backward.error().message());
  return checkGraph(*backward, config);
}

} // namespace kfuse::fuzz
