//===- Autodiff.cpp - reverse-mode differentiation of kf graphs -----------===//
//
// vjp() copies the forward graph, marks the values that depend on the
// inputs differentiated, seeds the outputs' cotangents and walks the ops
// backwards, asking each op's rule (Rules.h) for its operands' cotangents
// and summing those of values used more than once. The backward is
// appended to the copy, so the forward's values are the backward's
// primals: what the compiler saves or recomputes is its fusion decision,
// not this builder's.
//
//===----------------------------------------------------------------------===//

#include "kfuse/Autodiff.h"
#include "autodiff/Rules.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace kfuse {
namespace autodiff {

FailureOr<Cotangents> vjpOf(Operation *op, ArrayRef<Tensor> results,
                            const RuleContext &ctx) {
  std::optional<Cotangents> cts = contractionVJP(op, results, ctx);
  Tensor g = results.empty() ? Tensor() : results[0];
  if (!cts && g.isValid())
    cts = elementwiseVJP(op, g, ctx);
  if (!cts && g.isValid())
    cts = shapeVJP(op, g, ctx);
  if (!cts) {
    ctx.graph.fail("vjp", "no vector-Jacobian rule for '" +
                              op->getName().getStringRef() + "'");
    return failure();
  }
  if (!ctx.graph.status)
    return failure();
  return *cts;
}

} // namespace autodiff

namespace {

using autodiff::Cotangents;
using autodiff::RuleContext;

bool isFloatValue(Value v) {
  std::optional<DType> dtype = fromMLIRType(v.getType());
  return dtype && isFloat(*dtype);
}

/// The float values that depend on `wrt`: the only ones a cotangent can
/// reach an input through.
llvm::DenseSet<Value> activeValues(Block &body, ArrayRef<Value> wrt) {
  llvm::DenseSet<Value> active(wrt.begin(), wrt.end());
  for (Operation &op : body.without_terminator()) {
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    for (Value result : op.getResults())
      if (isFloatValue(result))
        active.insert(result);
  }
  return active;
}

/// The cotangents of the forward's values, as the walk back finds them.
class Backward {
public:
  Backward(detail::GraphImpl &g, llvm::DenseSet<Value> active)
      : ctx(g), active(std::move(active)) {}

  void seed(Value v, Tensor ct) { accumulate(v, ct); }
  Tensor of(Value v) const { return cotangents.lookup(v); }

  LogicalResult run(ArrayRef<Operation *> forwardOps) {
    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Tensor> results;
      for (Value r : op->getResults())
        results.push_back(of(r));
      if (llvm::none_of(results, [](Tensor t) { return t.isValid(); }) ||
          llvm::none_of(op->getOperands(),
                        [&](Value v) { return active.contains(v); }))
        continue;
      FailureOr<Cotangents> operands = autodiff::vjpOf(op, results, ctx);
      if (failed(operands))
        return failure();
      for (auto [operand, ct] : llvm::zip(op->getOperands(), *operands))
        if (ct.isValid() && active.contains(operand))
          accumulate(operand, ct);
    }
    return success(ctx.graph.status.isOk());
  }

private:
  void accumulate(Value v, Tensor ct) {
    ct = autodiff::toF32(ct);
    Tensor &sum = cotangents[v];
    sum = sum.isValid() ? sum + ct : ct;
  }

  RuleContext ctx;
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Tensor> cotangents;
};

/// Names of `infos` picked by `names` (all float ones when empty), or an
/// error naming the one missing or not float.
Expected<std::vector<size_t>> pick(const std::vector<TensorInfo> &infos,
                                   const std::vector<std::string> &names,
                                   const char *what) {
  std::vector<size_t> picked;
  if (names.empty()) {
    for (size_t i = 0; i < infos.size(); ++i)
      if (isFloat(infos[i].dtype))
        picked.push_back(i);
    return picked;
  }
  for (const std::string &name : names) {
    auto it = llvm::find_if(infos,
                            [&](const TensorInfo &t) { return t.name == name; });
    if (it == infos.end())
      return Error(ErrorCode::InvalidArgument,
                   std::string("vjp: the graph has no ") + what + " named '" +
                       name + "'");
    if (!isFloat(it->dtype))
      return Error(ErrorCode::InvalidArgument,
                   std::string("vjp: ") + what + " '" + name + "' is " +
                       dtypeName(it->dtype) + "; only floats have gradients");
    picked.push_back(it - infos.begin());
  }
  return picked;
}

/// The error for a gradient's name that the graph already uses.
Status checkUnused(const std::vector<TensorInfo> &infos,
                   const std::string &name, const char *what) {
  for (const TensorInfo &t : infos)
    if (t.name == name)
      return Error(ErrorCode::InvalidArgument,
                   "vjp: the gradient's name '" + name + "' is already an " +
                       what + " of the graph");
  return Status::ok();
}

Expected<Graph> buildVJP(const Graph &forward, const VJPOptions &options,
                         const std::string *scalarLoss) {
  if (!forward.status())
    return forward.status().error();
  Expected<std::string> text = forward.toMLIR();
  if (!text)
    return text.error();
  Expected<Graph> joint = Graph::fromMLIR(*text, forward.name());
  if (!joint)
    return joint.error();
  detail::GraphImpl &g = joint->impl();
  std::vector<TensorInfo> inputs = forward.inputs(), outputs = forward.outputs();
  Expected<std::vector<size_t>> ys = pick(outputs, options.outputs, "output");
  if (!ys)
    return ys.error();
  Expected<std::vector<size_t>> xs = pick(inputs, options.wrt, "input");
  if (!xs)
    return xs.error();
  for (size_t y : *ys)
    if (!scalarLoss)
      KFUSE_RETURN_IF_ERROR(
          checkUnused(inputs, "grad_" + outputs[y].name, "input"));
  for (size_t x : *xs)
    KFUSE_RETURN_IF_ERROR(
        checkUnused(outputs, "grad_" + inputs[x].name, "output"));

  Block &body = g.func.getBody().front();
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(&op);
  SmallVector<Value> wrt;
  for (size_t x : *xs)
    wrt.push_back(body.getArgument(x));
  Backward backward(g, activeValues(body, wrt));
  SmallVector<Value> results(body.getTerminator()->getOperands());
  for (size_t y : *ys) {
    const TensorInfo &out = outputs[y];
    Tensor seed = scalarLoss ? g.scalar(1.0, DType::f32)
                             : joint->input("grad_" + out.name, out.dtype,
                                            out.shape);
    backward.seed(results[y], seed);
  }
  if (failed(backward.run(forwardOps)))
    return g.status.error();
  for (auto [i, x] : llvm::enumerate(*xs)) {
    const TensorInfo &in = inputs[x];
    Tensor ct = backward.of(wrt[i]);
    Tensor gradient =
        ct.isValid() ? cast(ct, in.dtype)
                     : broadcastTo(g.scalar(0.0, in.dtype), in.shape);
    joint->output("grad_" + in.name, gradient);
  }
  if (!g.status)
    return g.status.error();
  return std::move(*joint);
}

} // namespace

Expected<Graph> vjp(const Graph &forward, const VJPOptions &options) {
  return buildVJP(forward, options, nullptr);
}

Expected<Graph> grad(const Graph &forward, const std::string &loss,
                     std::vector<std::string> wrt) {
  for (const TensorInfo &out : forward.outputs())
    if (out.name == loss && !out.shape.empty())
      return Error(ErrorCode::InvalidArgument,
                   "grad: the loss '" + loss + "' is " +
                       shapeString(out.shape) +
                       "; grad() takes a rank-0 output (vjp() takes any)");
  return buildVJP(forward, {{loss}, std::move(wrt)}, &loss);
}

} // namespace kfuse
