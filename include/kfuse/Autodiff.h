//===- kfuse/Autodiff.h - reverse-mode differentiation ----------*- C++ -*-===//
//
// Gradients of kf graphs, as graphs. vjp() builds one graph that computes
// the forward and the backward together (a joint graph, which the compiler
// fuses like any other):
//
//   kfuse::Graph g("mlp");
//   auto x = g.input("x", kfuse::DType::f32, {"B", 256});
//   auto w = g.input("w", kfuse::DType::f32, {256, 64});
//   g.output("loss", kfuse::reduceMean(kfuse::gelu(kfuse::matmul(x, w))));
//   auto joint = kfuse::grad(g, "loss", {"w"});
//   // joint: inputs x, w; outputs loss, grad_w.
//
// Every op has a vector-Jacobian rule (autodiff/ says where). Conventions:
// - Cotangents flow in f32 whatever the forward dtype (PyTorch keeps 16-bit
//   gradients in 16 bits between kernels; inside a fused kernel f32 costs
//   nothing); a matmul's or attention's backward casts them to its operands'
//   dtype so tensor cores run it, accumulating in f32; 16-bit attention's
//   backward gives its gradients in its dtype (as PyTorch's SDPA). Each
//   grad_<x> output has x's dtype.
// - Integer and i1 values carry no gradient; floor, round, compares and the
//   random numbers are constant (gradient 0); stopGradient passes none
//   back (logsumexp takes its max through it).
// - Where a function has no derivative, the rule picks PyTorch's: relu'(0)
//   = 0, abs'(0) = 0, max/min of equal operands split the gradient in
//   halves (a reduction's max among equal elements in equal parts).
// - gather's and take_along_axis's backward adds the cotangents into the
//   positions read (a scatter-add), built from compares as a one-hot sum;
//   indices out of range receive nothing. For gather the one-hot sum is a
//   matmul whose cost grows with the indexed dim (an embedding table's
//   rows): correct, and slow for large tables until a scatter-add kernel
//   replaces it.
// - attention's backward recomputes the probabilities from q and k: for
//   f16/bf16 operands of static shapes, head dims multiples of 8 up to 128,
//   no mask or bias and no cotangent of the log-sum-exp, FlashAttention's
//   backward (kf.attention_grad: one kernel, tile by tile, from the
//   forward's log-sum-exp, which the forward then computes too); otherwise
//   from matmuls and a softmax (the S x S scores are materialised).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_AUTODIFF_H
#define KFUSE_AUTODIFF_H

#include "kfuse/Error.h"
#include "kfuse/Evaluator.h"
#include "kfuse/Graph.h"

#include <map>
#include <string>
#include <vector>

namespace kfuse {

struct VJPOptions {
  /// The outputs to differentiate; empty: every float output.
  std::vector<std::string> outputs;
  /// The inputs to differentiate with respect to; empty: every float input.
  std::vector<std::string> wrt;
};

/// The vector-Jacobian product of `forward` as one graph. Its inputs are
/// the forward's, then a cotangent "grad_<y>" (y's dtype and shape) per
/// differentiated output y; its outputs the forward's, then "grad_<x>" per
/// input x differentiated: the sum over the outputs of grad_y^T dy/dx (zeros
/// where no output depends on x). Errors name the output or input.
Expected<Graph> vjp(const Graph &forward, const VJPOptions &options = {});

/// The gradient of the rank-0 float output `loss`: vjp() with the loss's
/// cotangent 1, so the graph takes no grad_<loss> input.
Expected<Graph> grad(const Graph &forward, const std::string &loss,
                     std::vector<std::string> wrt = {});

/// Where a backward graph's input comes from (TrainingGraphs::backward).
struct BackwardInput {
  enum class Source { forwardInput, forwardOutput, saved, cotangent };
  Source source;
  /// Into the forward graph's inputs or outputs, the saved values, or the
  /// cotangents (the differentiated outputs, in order).
  size_t index;
};

/// A training step's two graphs, from vjp() split where the forward ends.
struct TrainingGraphs {
  /// The forward's inputs; its outputs, then "saved_<i>" for each value
  /// the backward reads and does not recompute.
  Graph forward;
  /// Inputs as `backwardInputs` says (the forward inputs it reads, forward
  /// outputs, saved values, then every cotangent); outputs "grad_<x>" per
  /// input differentiated, as vjp() has them.
  Graph backward;
  std::vector<BackwardInput> backwardInputs;
  /// One line per forward value the backward reads: saved or recomputed,
  /// and why (what --explain-fusion says of the joint compile).
  std::vector<std::string> decisions;
};

/// vjp() as a forward that saves what the backward needs and a backward
/// that takes it. A value computed element by element, by an index map
/// (broadcast, reshape, transpose, slice, pad, concat, gather) or by the
/// counter-based random op (the same numbers again) may be recomputed in
/// the backward; matmuls, attention, reductions, softmax and cumsum, and
/// values a comparison reads, are saved, never recomputed. What is saved
/// is a minimum cut: the fewest bytes from which the backward recomputes
/// everything else it reads (forward inputs and outputs cost nothing).
/// Recomputation fuses into the backward's kernels: a saved activation
/// becomes a re-read of what it was made from.
Expected<TrainingGraphs> splitVJP(const Graph &forward,
                                  const VJPOptions &options = {});

struct GradientCheckOptions {
  VJPOptions vjp;
  /// Input shapes, required when the graph has symbolic dims.
  std::vector<std::vector<int64_t>> shapes;
  /// Values for inputs by name (indices in range, positive operands of
  /// log); the others are drawn at random (integers in [0, 2]).
  std::map<std::string, Float64Tensor> values;
  uint64_t seed = 1;
  /// Central differences with step `step` on float64 values; float inputs
  /// are drawn uniform in [low, high).
  double step = 1e-6, low = -1, high = 1;
  double tolerance = 1e-6;
};

struct GradientCheck {
  std::string input; ///< the input differentiated
  /// ||vjp - finite differences|| / ||finite differences||, the norm at
  /// least 1e-3 per element (a zero gradient's differences are noise).
  double error;
  bool passed;
};

/// torch.autograd.gradcheck for kf graphs: evaluates vjp(forward) on random
/// inputs and cotangents in float64 (evaluateFloat64) and compares each
/// grad_<x> with central finite differences of the cotangent-weighted
/// outputs. For graphs of f32 ops (16-bit casts round, and rounding has no
/// useful finite differences). One check per differentiated input.
Expected<std::vector<GradientCheck>>
checkGradients(const Graph &forward, const GradientCheckOptions &options = {});

} // namespace kfuse

#endif // KFUSE_AUTODIFF_H
