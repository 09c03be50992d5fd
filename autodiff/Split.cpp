//===- Split.cpp - a joint graph split into forward and backward ----------===//
//
// splitVJP() builds vjp()'s joint graph and cuts it where the forward
// ends: the forward graph is the slice of the joint that computes the
// forward's outputs; the backward is the rest. Each forward value the
// backward reads is either saved (an extra forward output) or recomputed
// (its op cloned into the backward), the saved ones a minimum cut
// (Planner). Both graphs are cloned into fresh functions and parsed back, so
// they are graphs like any other (names, symbolic dims, Tensors).
//
//===----------------------------------------------------------------------===//

#include "kfuse/Autodiff.h"
#include "autodiff/MinCut.h"
#include "frontend/GraphImpl.h"
#include "ir/KFDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <set>

using namespace mlir;

namespace kfuse {
namespace {

int64_t bytesOf(Value v) {
  auto type = mlir::cast<RankedTensorType>(v.getType());
  int64_t elements = 1;
  for (int64_t d : type.getShape())
    elements *= ShapedType::isDynamic(d) ? 4096 : d; // symbolic: "large"
  return elements * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// Ops the backward may compute again: element by element, index maps and
/// the counter-based random numbers. Contractions and reductions are saved.
bool recomputable(Operation *op) {
  return op->hasTrait<OpTrait::kf::Elementwise>() ||
         isa<kf::ConstantOp, kf::IotaOp, kf::BroadcastOp, kf::ReshapeOp,
             kf::TransposeOp, kf::SliceOp, kf::ConcatOp, kf::PadOp,
             kf::GatherOp, kf::TakeAlongAxisOp, kf::RandomOp>(op);
}

/// The ops `roots` are computed from, in the block, stopping at `stop`.
llvm::DenseSet<Operation *> sliceOf(ArrayRef<Value> roots,
                                    const llvm::DenseSet<Operation *> &stop) {
  llvm::DenseSet<Operation *> slice;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || stop.contains(op) || !slice.insert(op).second)
      continue;
    llvm::append_range(work, op->getOperands());
  }
  return slice;
}

/// The decisions of one split, on the joint graph's function. What to
/// save is a minimum cut (MinCut.h) of a graph with two nodes per forward
/// value, "computed" and "available", joined by an edge of its bytes (0
/// for a forward output, which the caller has anyway): a value that must
/// come from the forward (not recomputable, or read by a comparison) is
/// computed from the source; a value the backward reads is available to
/// the sink; a recomputable value is computed from its operands' available
/// nodes. The cut's edges are the values saved; values past it, on the
/// backward's side, are recomputed from them; inputs are free.
class Planner {
public:
  Planner(size_t numInputs, llvm::DenseSet<Operation *> forwardOps,
          ArrayRef<Value> forwardOutputs)
      : numInputs(numInputs), forwardOps(std::move(forwardOps)),
        forwardOutputs(forwardOutputs.begin(), forwardOutputs.end()) {}

  /// Forward value `v` is read by the backward; `exact`: as the forward
  /// computed it (saved, not recomputed).
  void require(Value v, bool exact = false) {
    required.push_back({v, exact});
    if (exact)
      exactValues.insert(v);
  }

  /// Decides every required value: saved, recomputed, or a forward input.
  void solve() {
    cutSavedSide();
    for (auto [v, exact] : required)
      take(v);
  }

  /// Whether a comparison reads `v` (as the forward computed it).
  bool isExact(Value v) const { return exactValues.contains(v); }

  /// Replaces what decisions says of `v` (or adds it).
  void redecide(Value v, StringRef what) {
    auto [it, added] = decisionOf.insert({v, decisions.size()});
    if (added)
      decisions.emplace_back();
    decisions[it->second] = describe(v, what);
  }

  size_t numInputs;
  llvm::DenseSet<Operation *> forwardOps, recomputed;
  llvm::SetVector<Value> saved;
  std::set<unsigned> inputsRead;
  std::vector<std::string> decisions;

private:
  bool isForwardValue(Value v) {
    Operation *op = v.getDefiningOp();
    return op && forwardOps.contains(op);
  }

  /// What saving `v` costs: its bytes, and a byte more for a view (a
  /// reshape, transpose, slice or broadcast), which no forward kernel
  /// writes unless it is saved, so that of cuts saving as many bytes the
  /// one saving the viewed value wins (q, k and v split into heads out of
  /// one projection: the projection, which a matmul writes anyway).
  static int64_t savedBytes(Value v) {
    bool view = isa<kf::ReshapeOp, kf::TransposeOp, kf::SliceOp,
                    kf::BroadcastOp>(v.getDefiningOp());
    return bytesOf(v) + (view ? 1 : 0);
  }

  /// The forward values in block order, numbered: nodes 2 + 2i (computed)
  /// and 3 + 2i (available); 0 is the source, 1 the sink.
  void numberValues() {
    SmallVector<Operation *> ops(forwardOps.begin(), forwardOps.end());
    llvm::sort(ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : ops)
      for (Value v : op->getResults())
        index.insert({v, index.size()});
  }

  /// An exact value (one a comparison reads) whose op is reproduced
  /// exactly may be recomputed (the f32 cast of bf16 logits need not be
  /// saved), from operands that are then exact in turn.
  void propagateExactness() {
    SmallVector<Value> work(exactValues.begin(), exactValues.end());
    while (!work.empty()) {
      Operation *op = work.pop_back_val().getDefiningOp();
      if (!op || !forwardOps.contains(op) || !kf::isReproducedExactly(op))
        continue;
      for (Value operand : op->getOperands())
        if (isForwardValue(operand) && exactValues.insert(operand).second)
          work.push_back(operand);
    }
  }

  void cutSavedSide() {
    numberValues();
    propagateExactness();
    autodiff::MinCut cut(2 + 2 * index.size());
    auto computed = [&](Value v) { return 2 + 2 * index.lookup(v); };
    const int64_t inf = autodiff::MinCut::kInfinite;
    for (auto [v, i] : index) {
      Operation *op = v.getDefiningOp();
      cut.addEdge(computed(v), computed(v) + 1,
                  forwardOutputs.contains(v) ? 0 : savedBytes(v));
      if (!recomputable(op) ||
          (exactValues.contains(v) && !kf::isReproducedExactly(op))) {
        cut.addEdge(0, computed(v), inf);
        continue;
      }
      for (Value operand : op->getOperands())
        if (isForwardValue(operand))
          cut.addEdge(computed(operand) + 1, computed(v), inf);
    }
    for (auto [v, exact] : required)
      if (isForwardValue(v))
        cut.addEdge(computed(v) + 1, 1, inf);
    // Of cuts that save as many bytes, the one nearest the backward: it
    // saves the values the backward reads rather than ones it would
    // compute them from (the residual stream x + the attention's
    // projection, which the LayerNorm after it reads anyway, rather than
    // the projection, which a matmul's epilogue would add to x unwritten).
    std::vector<bool> side =
        cut.sourceSide(0, 1, autodiff::MinCut::Tie::nearSink);
    for (auto [v, i] : index)
      if (side[computed(v)])
        cutSaved.insert(v);
  }

  /// `v` for the backward, and what recomputing it reads.
  void take(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getArgNumber() < numInputs)
        inputsRead.insert(arg.getArgNumber());
      return;
    }
    Operation *op = v.getDefiningOp();
    if (!forwardOps.contains(op) || recomputed.contains(op) ||
        saved.contains(v))
      return;
    bool writtenTwice = writtenTwiceIfRecomputed(v);
    if (!cutSaved.contains(v) && !writtenTwice) {
      recomputed.insert(op);
      note(v, "recomputed");
      for (Value operand : op->getOperands())
        take(operand);
      return;
    }
    saved.insert(v);
    note(v, !recomputable(op) ? "saved: never recomputed"
            : exactValues.contains(v) && !kf::isReproducedExactly(op)
                ? "saved: a comparison reads it (a recomputed value may "
                  "round differently from the one it is compared with)"
            : forwardOutputs.contains(v)
                ? "saved: a forward output"
            : !cutSaved.contains(v)
                ? "saved: a forward kernel writes it for a matmul, and "
                  "the backward's recomputation would write it again"
                : "saved: recomputing it would need at least as many bytes saved");
  }

  /// Whether the forward writes `v` to memory for a matmul that reads it
  /// (a value computed in a kernel of its own, not a view or a cast of an
  /// input, which a matmul could read in place), and a matmul of the
  /// backward reads it too, through views or not: recomputing it would
  /// cost the backward a kernel writing it again (GELU's output, read by
  /// the down projection and by its weight gradient), where saving it
  /// costs only memory (what torch's partitioner saves there too).
  bool writtenTwiceIfRecomputed(Value v) {
    Operation *op = v.getDefiningOp();
    if (!recomputable(op) ||
        isa<kf::ConstantOp, kf::IotaOp, kf::BroadcastOp, kf::ReshapeOp,
            kf::TransposeOp, kf::SliceOp>(op) ||
        (isa<kf::CastOp>(op) && isa<BlockArgument>(op->getOperand(0))))
      return false;
    auto isMatmul = [](Operation *user) { return isa<kf::MatmulOp>(user); };
    auto forwardReaders = llvm::make_filter_range(
        v.getUsers(), [&](Operation *user) { return forwardOps.contains(user); });
    if (llvm::none_of(forwardReaders, isMatmul))
      return false;
    SmallVector<Value> work{v};
    while (!work.empty()) {
      for (Operation *user : work.pop_back_val().getUsers()) {
        if (forwardOps.contains(user))
          continue;
        if (isMatmul(user))
          return true;
        if (isa<kf::ReshapeOp, kf::TransposeOp>(user))
          work.push_back(user->getResult(0));
      }
    }
    return false;
  }

  static std::string describe(Value v, StringRef what) {
    std::string line;
    llvm::raw_string_ostream os(line);
    os << v.getDefiningOp()->getName() << " -> " << v.getType() << ": "
       << what;
    return line;
  }

  void note(Value v, StringRef what) {
    decisionOf[v] = decisions.size();
    decisions.push_back(describe(v, what));
  }

  llvm::DenseSet<Value> forwardOutputs, exactValues, cutSaved;
  llvm::DenseMap<Value, size_t> decisionOf;
  std::vector<std::pair<Value, bool>> required;
  llvm::MapVector<Value, size_t> index;
};

/// A graph computing `results` from `args` by clones of `ops` (in block
/// order), with these names.
Expected<Graph> cloneGraph(detail::GraphImpl &g, const std::string &name,
                           ArrayRef<Value> args,
                           ArrayRef<std::string> argNames,
                           ArrayRef<Operation *> ops, ArrayRef<Value> results,
                           ArrayRef<std::string> resultNames) {
  OpBuilder b(g.context.get());
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(
      b, loc, name,
      b.getFunctionType(ValueRange(args).getTypes(),
                        ValueRange(results).getTypes()));
  Block *entry = func.addEntryBlock();
  IRMapping map;
  for (auto [arg, clone] : llvm::zip_equal(args, entry->getArguments()))
    map.map(arg, clone);
  b.setInsertionPointToEnd(entry);
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (!map.contains(operand))
        return Error(ErrorCode::InvalidGraph,
                     "splitVJP: " + op->getName().getStringRef().str() +
                         " reads a value the " + name + " graph lacks");
    b.clone(*op, map);
  }
  SmallVector<Value> mapped;
  for (Value r : results)
    mapped.push_back(map.lookup(r));
  func::ReturnOp::create(b, loc, mapped);
  for (auto [i, arg] : llvm::enumerate(args)) {
    func.setArgAttr(i, "kf.name", b.getStringAttr(argNames[i]));
    if (ArrayAttr symbols = g.dimSymbols(g.shapes[g.ids.lookup(arg)]))
      func.setArgAttr(i, kf::kDimSymbolsAttr, symbols);
  }
  for (auto [i, resultName] : llvm::enumerate(resultNames))
    func.setResultAttr(i, "kf.name", b.getStringAttr(resultName));
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return Graph::fromMLIR(text, name);
}

/// The backward ops whose operands must be the forward's values exactly:
/// comparisons (a max's backward finds the maximum by equality) and the
/// index maps between them and the forward.
llvm::DenseSet<Operation *> exactReaders(ArrayRef<Operation *> backwardOps) {
  llvm::DenseSet<Operation *> exact;
  for (Operation *op : llvm::reverse(backwardOps)) {
    bool feedsExact = isa<kf::CompareOp>(op) ||
                      llvm::any_of(op->getUsers(), [&](Operation *user) {
                        return exact.contains(user);
                      });
    if (feedsExact && (isa<kf::CompareOp, kf::ReshapeOp, kf::BroadcastOp,
                           kf::TransposeOp>(op)))
      exact.insert(op);
  }
  return exact;
}

SmallVector<Operation *> inBlockOrder(Block &body,
                                      const llvm::DenseSet<Operation *> &a,
                                      const llvm::DenseSet<Operation *> &b) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (a.contains(&op) || b.contains(&op))
      ops.push_back(&op);
  return ops;
}

} // namespace

namespace {

/// One split of a joint graph: the decisions (analyse), then the two
/// graphs (rewrite).
class Splitter {
public:
  Splitter(const Graph &forward, Graph &joint)
      : name(forward.name()), g(joint.impl()),
        body(g.func.getBody().front()), inputs(forward.inputs()),
        outputs(forward.outputs()), jointInputs(joint.inputs()),
        jointOutputs(joint.outputs()),
        results(body.getTerminator()->getOperands()),
        plan(inputs.size(), sliceOf(forwardResults(), {}),
             forwardResults()) {}

  ArrayRef<Value> forwardResults() const {
    return ArrayRef(results).take_front(outputs.size());
  }
  ArrayRef<Value> gradients() const {
    return ArrayRef(results).drop_front(outputs.size());
  }

  /// What the backward computes, and how it has each forward value.
  void decide() {
    backwardOps = sliceOf(gradients(), plan.forwardOps);
    SmallVector<Operation *> order = inBlockOrder(body, backwardOps, {});
    llvm::DenseSet<Operation *> exact = exactReaders(order);
    // What comparisons read first: saved, so later readers take it too.
    for (bool exactPass : {true, false})
      for (Operation *op : order)
        if (exact.contains(op) == exactPass)
          for (Value operand : op->getOperands())
            plan.require(operand, exactPass);
    for (Value gradient : gradients()) // a gradient that is a forward value
      plan.require(gradient);
    plan.solve();
    saveMaterializedViews();
    passInputsForSymbols();
  }

  /// The forward: its outputs, then the saved values no output already is.
  Expected<Graph> forwardGraph() {
    SmallVector<Value> args(body.getArguments().take_front(inputs.size()));
    std::vector<std::string> argNames, resultNames;
    for (const TensorInfo &in : inputs)
      argNames.push_back(in.name);
    for (const TensorInfo &out : outputs)
      resultNames.push_back(out.name);
    SmallVector<Value> outs(forwardResults());
    for (Value v : plan.saved) {
      const Value *output = llvm::find(forwardResults(), v);
      if (output != forwardResults().end()) {
        savedSources.push_back({BackwardInput::Source::forwardOutput,
                                size_t(output - forwardResults().begin())});
        continue;
      }
      savedSources.push_back(
          {BackwardInput::Source::saved, outs.size() - outputs.size()});
      resultNames.push_back("saved_" +
                            std::to_string(savedSources.back().index));
      outs.push_back(v);
    }
    return cloneGraph(g, name + "_forward", args, argNames,
                      inBlockOrder(body, plan.forwardOps, {}), outs,
                      resultNames);
  }

  /// The backward: the inputs it reads, the saved values, the cotangents.
  Expected<Graph> backwardGraph(std::vector<BackwardInput> &sources) {
    SmallVector<Value> args;
    std::vector<std::string> argNames, gradNames;
    auto take = [&](Value v, std::string argName, BackwardInput source) {
      args.push_back(v);
      argNames.push_back(std::move(argName));
      sources.push_back(source);
    };
    for (unsigned i : plan.inputsRead)
      take(body.getArgument(i), inputs[i].name,
           {BackwardInput::Source::forwardInput, i});
    for (auto [v, source] : llvm::zip_equal(plan.saved, savedSources))
      take(v,
           source.source == BackwardInput::Source::saved
               ? "saved_" + std::to_string(source.index)
               : "fwd_" + outputs[source.index].name,
           source);
    for (size_t i = inputs.size(); i < jointInputs.size(); ++i)
      take(body.getArgument(i), jointInputs[i].name,
           {BackwardInput::Source::cotangent, i - inputs.size()});
    for (size_t i = outputs.size(); i < jointOutputs.size(); ++i)
      gradNames.push_back(jointOutputs[i].name);
    return cloneGraph(g, name + "_backward", args, argNames,
                      inBlockOrder(body, backwardOps, plan.recomputed),
                      gradients(), gradNames);
  }

  std::vector<std::string> takeDecisions() {
    return std::move(plan.decisions);
  }

private:
  /// A saved value that the forward reads only through reshapes and
  /// transposes into a matmul operand (an attention's output, its heads
  /// merged for the output projection) is saved as that view: the forward
  /// writes the view anyway, and the value too only to save it (the
  /// attention stores the view directly when nothing else reads its
  /// result). The backward reads the value back through the inverse views,
  /// in place, where it copied the view again for its own matmul.
  void saveMaterializedViews() {
    SmallVector<Value> order(plan.saved.begin(), plan.saved.end());
    bool changed = false;
    for (Value &v : order) {
      SmallVector<Operation *> chain = viewChainToMatmul(v);
      if (chain.empty())
        continue;
      Value view = chain.back()->getResult(0);
      readThroughInverseViews(chain);
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "saved as its view " << view.getType() << " that a matmul reads, "
         << "which the forward writes anyway; the backward reads it back "
            "through the inverse views";
      plan.redecide(v, text);
      for (Operation *op : chain)
        plan.redecide(op->getResult(0),
                      op == chain.back() ? "saved: the view of a value saved "
                                           "as it"
                                         : "read back through inverse views");
      v = view;
      changed = true;
    }
    if (!changed)
      return;
    plan.saved.clear();
    plan.saved.insert(order.begin(), order.end());
  }

  /// The reshapes and transposes, one a transpose, through which the
  /// forward reads saved value `v` (each value of the chain read by the
  /// next alone) into a matmul operand; empty if there are none.
  SmallVector<Operation *> viewChainToMatmul(Value v) {
    auto isStatic = [](Value x) {
      return mlir::cast<RankedTensorType>(x.getType()).hasStaticShape();
    };
    auto isOutput = [&](Value x) {
      return llvm::is_contained(forwardResults(), x);
    };
    if (isOutput(v) || plan.isExact(v) || !isStatic(v))
      return {};
    SmallVector<Operation *> chain;
    bool transposes = false;
    for (Value at = v;;) {
      SmallVector<OpOperand *> reads;
      for (OpOperand &use : at.getUses())
        if (plan.forwardOps.contains(use.getOwner()))
          reads.push_back(&use);
      if (reads.size() != 1)
        return {};
      Operation *user = reads.front()->getOwner();
      if (isa<kf::MatmulOp>(user))
        return transposes && reads.front()->getOperandNumber() < 2
                   ? chain
                   : SmallVector<Operation *>();
      if (!isa<kf::ReshapeOp, kf::TransposeOp>(user) ||
          isOutput(user->getResult(0)) || !isStatic(user->getResult(0)))
        return {};
      transposes |= isa<kf::TransposeOp>(user);
      chain.push_back(user);
      at = user->getResult(0);
    }
  }

  /// The backward's readers of the values `chain` reads (its first operand
  /// and the values between its views) read them back from the chain's
  /// last value through inverse views, built right after it; the chain is
  /// not recomputed.
  void readThroughInverseViews(ArrayRef<Operation *> chain) {
    OpBuilder b(chain.back()->getContext());
    b.setInsertionPointAfter(chain.back());
    Value back = chain.back()->getResult(0);
    SmallVector<Operation *> inverses;
    for (Operation *op : llvm::reverse(chain)) {
      plan.recomputed.erase(op);
      Value in = op->getOperand(0);
      Operation *inverse = inverseView(b, op, back);
      backwardOps.insert(inverse);
      inverses.push_back(inverse);
      in.replaceUsesWithIf(inverse->getResult(0), [&](OpOperand &use) {
        return use.getOwner() != inverse &&
               backwardOps.contains(use.getOwner());
      });
      back = inverse->getResult(0);
    }
    // Inverses nothing reads, from the one nearest the value.
    for (Operation *inverse : llvm::reverse(inverses))
      if (inverse->use_empty()) {
        backwardOps.erase(inverse);
        inverse->erase();
      }
  }

  /// The view undoing reshape or transpose `op`, of `from` (its result's
  /// shape).
  static Operation *inverseView(OpBuilder &b, Operation *op, Value from) {
    Type type = op->getOperand(0).getType();
    if (auto transpose = dyn_cast<kf::TransposeOp>(op)) {
      ArrayRef<int64_t> perm = transpose.getPerm();
      SmallVector<int64_t> inverse(perm.size());
      for (auto [i, p] : llvm::enumerate(perm))
        inverse[p] = int64_t(i);
      return kf::TransposeOp::create(b, op->getLoc(), type, from,
                                     b.getDenseI64ArrayAttr(inverse));
    }
    return kf::ReshapeOp::create(b, op->getLoc(), type, from,
                                 /*dim_symbols=*/nullptr);
  }

  /// A symbolic dim the backward needs is bound by one of its inputs: a
  /// forward input that alone has it is passed too.
  void passInputsForSymbols() {
    llvm::DenseSet<int64_t> bound;
    auto bind = [&](Value v) {
      for (int64_t d : g.shapes[g.ids.lookup(v)])
        if (kf::shapes::isSymbolic(d))
          bound.insert(d);
    };
    for (Value v : plan.saved)
      bind(v);
    for (unsigned i : plan.inputsRead)
      bind(body.getArgument(i));
    for (size_t i = inputs.size(); i < jointInputs.size(); ++i)
      bind(body.getArgument(i));
    for (unsigned i = 0; i < inputs.size(); ++i)
      for (int64_t d : g.shapes[g.ids.lookup(body.getArgument(i))])
        if (kf::shapes::isSymbolic(d) && !bound.contains(d)) {
          plan.inputsRead.insert(i);
          bind(body.getArgument(i));
        }
  }

  std::string name;
  detail::GraphImpl &g;
  Block &body;
  std::vector<TensorInfo> inputs, outputs, jointInputs, jointOutputs;
  SmallVector<Value> results;
  Planner plan;
  llvm::DenseSet<Operation *> backwardOps;
  /// Per saved value: a forward output, or saved_<i>.
  std::vector<BackwardInput> savedSources;
};

} // namespace

Expected<TrainingGraphs> splitVJP(const Graph &forward,
                                  const VJPOptions &options) {
  Expected<Graph> joint = vjp(forward, options);
  if (!joint)
    return joint.error();
  Splitter splitter(forward, *joint);
  splitter.decide();
  Expected<Graph> fwd = splitter.forwardGraph();
  if (!fwd)
    return fwd.error();
  TrainingGraphs split;
  Expected<Graph> bwd = splitter.backwardGraph(split.backwardInputs);
  if (!bwd)
    return bwd.error();
  split.forward = fwd.take();
  split.backward = bwd.take();
  split.decisions = splitter.takeDecisions();
  return split;
}

} // namespace kfuse
