//===- Fuse.cpp - kf-fuse: partition the graph into kernels ---------------===//
//
// Analyse: classify each op by the kernel kind that computes it (the rules
// of what may share a kernel are in FusionRules.cpp). Decide:
// walk the ops backwards; in fused mode a pointwise op joins its consumers'
// kernel when they all share one pointwise kernel. Rewrite: wrap each
// partition in a kf.kernel whose single result is the partition's root.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "ir/KFDialect.h"
#include "transforms/FusionRules.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>
#include <set>

namespace kfuse::kf {
#define GEN_PASS_DEF_KFFUSEPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::fusion;

namespace {

/// Siblings: two kernels over one space (pointwise of one shape, or rows of
/// one size) that read a common input become one multi-output kernel, so
/// the input is read once. Only when neither uses the other, and every
/// outside user of the earlier one comes after the later one (where the
/// merged kernel will stand).
class SiblingMerge {
public:
  SiblingMerge(Block &body, Partition &p, std::vector<Cluster> &clusters)
      : p(p), clusters(clusters) {
    for (Operation &op : body.without_terminator())
      if (p.kernelOf.count(&op))
        members[p.kernelOf[&op]].push_back(&op);
  }

  void run() {
    for (auto &[a, opsA] : members)
      for (auto &[b, opsB] : members)
        if (a < b && !opsA.empty() && !opsB.empty() && siblings(a, b))
          merge(a, b);
  }

private:
  /// A cluster that a row op joined keeps kind pointwise: two such must
  /// agree on their rows too, or one kernel would hold two row spaces.
  bool sameSpace(const Cluster &a, const Cluster &b) const {
    if (a.rows && b.rows)
      return a.rows->rows == b.rows->rows && a.rows->length == b.rows->length;
    return a.kind == KernelKind::pointwise &&
           b.kind == KernelKind::pointwise && a.elements == b.elements;
  }

  llvm::DenseSet<Value> inputsOf(int id) {
    llvm::DenseSet<Value> inputs;
    for (Operation *op : members[id])
      for (Value v : op->getOperands())
        if (!v.getDefiningOp() || p.kernelOf.lookup(v.getDefiningOp()) != id ||
            !p.kernelOf.count(v.getDefiningOp()))
          inputs.insert(v);
    return inputs;
  }

  bool uses(int user, int producer) {
    for (Operation *op : members[user])
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && p.kernelOf.count(def) && p.kernelOf[def] == producer)
          return true;
    return false;
  }

  /// Whether kernels `a` and `b` may become one: one space, neither using
  /// the other, a common input that is not a constant, and the earlier's
  /// outside users after the later.
  bool siblings(int a, int b) {
    if (!sameSpace(clusters[a], clusters[b]) || uses(a, b) || uses(b, a))
      return false;
    llvm::DenseSet<Value> inA = inputsOf(a);
    bool shares = llvm::any_of(inputsOf(b), [&](Value v) {
      return inA.contains(v) && !isa_and_nonnull<ConstantOp>(v.getDefiningOp());
    });
    if (!shares)
      return false;
    SmallVector<Operation *> &opsA = members[a], &opsB = members[b];
    auto [early, late] = opsA.back()->isBeforeInBlock(opsB.back())
                             ? std::pair{&opsA, &opsB}
                             : std::pair{&opsB, &opsA};
    Operation *place = late->back();
    return llvm::all_of(*early, [&](Operation *op) {
      return llvm::all_of(op->getUsers(), [&](Operation *user) {
        return place->isBeforeInBlock(user) || llvm::is_contained(*early, user);
      });
    });
  }

  /// `b`'s ops into kernel `a`, in block order.
  void merge(int a, int b) {
    SmallVector<Operation *> &opsA = members[a], &opsB = members[b];
    for (Operation *op : opsB)
      p.kernelOf[op] = a;
    p.decisions.push_back(
        {opsA.back(), opsB.back(), true, "siblings reading the same input"});
    opsA.append(opsB.begin(), opsB.end());
    llvm::sort(opsA,
               [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
    opsB.clear();
  }

  Partition &p;
  std::vector<Cluster> &clusters;
  std::map<int, SmallVector<Operation *>> members;
};

/// The users of `op` that decide its kernel: an attention's kernel writes
/// its log-sum-exp as a result of its own wherever it is read, so its
/// output's users alone.
SmallVector<Operation *> placingUsers(Operation *op) {
  if (auto attention = dyn_cast<AttentionOp>(op))
    return llvm::to_vector(attention.getResult().getUsers());
  return llvm::to_vector(op->getUsers());
}

/// The kernel that `op` joins in a fused partition (none: a kernel of its
/// own), the kernel of all its users when it can join it; `reason` says
/// why or why not.
std::optional<int>
joinedKernel(Operation &op, Partition &p, std::vector<Cluster> &clusters,
             const llvm::SmallPtrSetImpl<Operation *> &isolated,
             std::string &reason) {
  std::optional<int> target;
  bool output = false;
  reason = "it is a graph output";
  for (Operation *user : placingUsers(&op)) {
    if (user->hasTrait<OpTrait::IsTerminator>()) {
      output = true;
      continue;
    }
    auto it = p.kernelOf.find(user);
    if (it == p.kernelOf.end()) {
      reason = "it is a graph output";
      return std::nullopt;
    }
    if (target && *target != it->second) {
      reason = "its users are in different kernels";
      return std::nullopt;
    }
    target = it->second;
  }
  if (op.use_empty())
    reason = "it has no users";
  if (!target) {
    if (output)
      reason = "it is a graph output";
    return std::nullopt;
  }
  if (isolated.contains(&op)) {
    reason = "its consumer would read other rows of its result";
    return std::nullopt;
  }
  Cluster trial = clusters[*target];
  auto [ok, why] = canJoin(&op, trial);
  if (ok && output) {
    std::tie(ok, why) = canAlsoWrite(&op, trial, why);
    trial.writesOutputs = true;
  }
  reason = why;
  if (!ok)
    return std::nullopt;
  trial.onlyViews = trial.onlyViews && isViewOp(&op);
  clusters[*target] = trial;
  return target;
}

/// Whether `op` could join kernel `k` were the uses of it in `k` all it
/// had: a copy of it with those uses is tried, then erased (the rules
/// follow a view's uses to the attention operands it becomes).
bool copyJoins(Operation &op, int k, const Partition &p,
               const std::vector<Cluster> &clusters) {
  OpBuilder b(op.getContext());
  b.setInsertionPointAfter(&op);
  Operation *copy = b.clone(op);
  SmallVector<OpOperand *> moved;
  for (OpOperand &use : llvm::make_early_inc_range(op.getUses()))
    if (p.kernelOf.lookup(use.getOwner()) == k) {
      use.set(copy->getResult(0));
      moved.push_back(&use);
    }
  Cluster trial = clusters[k];
  bool joins = canJoin(copy, trial).first;
  for (OpOperand *use : moved)
    use->set(op.getResult(0));
  copy->erase();
  return joins;
}

/// Whether view `op`, read by ops of several kernels (none of them a graph
/// output), could join each of those kernels: each would then read it in
/// place, where else one kernel of its own copies it to memory for all
/// (the attention backward's dout, split into heads, is read by the
/// kernel of rowsum(dout * out) and by the attention's).
bool eachReaderTakesView(Operation &op, const Partition &p,
                         const std::vector<Cluster> &clusters,
                         const llvm::SmallPtrSetImpl<Operation *> &isolated) {
  if (!isViewOp(&op) || isolated.contains(&op))
    return false;
  // A view of a matmul's result is its epilogue's to store (the rows a
  // reshape keeps): kf-fuse-column-sums finds the column sums of the
  // product through it.
  Value source = op.getOperand(0);
  while (source.getDefiningOp() && isViewOp(source.getDefiningOp()))
    source = source.getDefiningOp()->getOperand(0);
  if (source.getDefiningOp<MatmulOp>())
    return false;
  std::set<int> kernels;
  for (Operation *user : op.getUsers()) {
    auto it = p.kernelOf.find(user);
    if (it == p.kernelOf.end())
      return false;
    kernels.insert(it->second);
  }
  return kernels.size() > 1 && llvm::all_of(kernels, [&](int k) {
           return copyJoins(op, k, p, clusters);
         });
}

/// One greedy pass; ops in `isolated` start kernels of their own.
Partition partitionOnce(Block &body, bool fused,
                        const llvm::SmallPtrSetImpl<Operation *> &isolated) {
  Partition p;
  std::vector<Cluster> clusters;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    // A constant is cloned into the kernels that read it, unless it is
    // itself an output: then a kernel must write it.
    if (isFreeConstant(&op) &&
        !llvm::any_of(op.getUsers(), [](Operation *user) {
          return user->hasTrait<OpTrait::IsTerminator>();
        }))
      continue;
    std::string reason = "unfused mode: one kernel per op";
    std::optional<int> target =
        fused ? joinedKernel(op, p, clusters, isolated, reason) : std::nullopt;
    if (fused && !target && eachReaderTakesView(op, p, clusters, isolated))
      p.sharedViews.push_back(&op);
    for (Operation *user : op.getUsers())
      if (p.kernelOf.count(user))
        p.decisions.push_back({&op, user, target.has_value(), reason});
    if (target) {
      p.kernelOf[&op] = *target;
      continue;
    }
    KernelKind kind = kernelKindOf(&op);
    Cluster c{kind, numElements(op.getResult(0)), rowOpSpace(&op), &op,
              isViewOp(&op)};
    p.kernelOf[&op] = clusters.size();
    clusters.push_back(c);
  }
  if (fused)
    SiblingMerge(body, p, clusters).run();
  return p;
}

/// Whether `op`, which reads a value computed from a row op of its kernel
/// (rows of `length`), reads it in place: a row kernel holds one row per
/// thread block, so an op may read the row it computes, not another.
/// Elementwise ops do; so does a broadcast of per-row values along the row
/// ([..., 1] to [..., length]), a reshape that keeps the last dim and one
/// that only adds or drops dims of size 1 of per-row values (a [rows, 1]
/// as [rows]; a whole row [length] as [length, 1] would make its columns
/// rows).
bool readsInPlace(Operation *op, int64_t length) {
  if (op->hasTrait<OpTrait::kf::Elementwise>() || isa<SelectOp>(op) ||
      kernelKindOf(op) != KernelKind::pointwise)
    return true;
  auto in = mlir::dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = mlir::dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || in.getRank() == 0 || out.getRank() == 0)
    return false;
  if (isa<BroadcastOp>(op))
    return in.getRank() == out.getRank() && in.getShape().back() == 1 &&
           in.getShape().drop_back() == out.getShape().drop_back();
  if (isa<ReshapeOp>(op)) {
    // Keeping the last dim, or only adding or dropping dims of size 1 (a
    // per-row [rows, 1] as [rows]), every element stays where it was.
    auto nonUnit = [](ArrayRef<int64_t> shape) {
      SmallVector<int64_t> dims;
      llvm::copy_if(shape, std::back_inserter(dims),
                    [](int64_t d) { return d != 1; });
      return dims;
    };
    bool perRow = in.getShape().back() != length || length == 1;
    return in.getShape().back() == out.getShape().back() ||
           (perRow && nonUnit(in.getShape()) == nonUnit(out.getShape()));
  }
  return false;
}

/// The row ops and matmuls of a kernel whose results are read out of place
/// (by a transpose, say): they must not share the kernel.
void findMisreadRowOps(Block &body, const Partition &p,
                       llvm::SmallPtrSetImpl<Operation *> &misread) {
  // For each op, the row ops of its kernel that it depends on.
  llvm::DenseMap<Operation *, llvm::SmallPtrSet<Operation *, 2>> rowInputs;
  for (Operation &op : body.without_terminator()) {
    auto it = p.kernelOf.find(&op);
    if (it == p.kernelOf.end())
      continue;
    llvm::SmallPtrSet<Operation *, 2> &mine = rowInputs[&op];
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      auto defKernel = def ? p.kernelOf.find(def) : p.kernelOf.end();
      if (defKernel == p.kernelOf.end() || defKernel->second != it->second)
        continue;
      if (rowOpSpace(def) || isa<MatmulOp>(def))
        mine.insert(def);
      for (Operation *row : rowInputs[def])
        mine.insert(row);
    }
    bool afterMatmul = llvm::any_of(
        mine, [](Operation *anchor) { return isa<MatmulOp>(anchor); });
    auto inPlace = [&](Operation *anchor) {
      return isa<MatmulOp>(anchor) || readsInPlace(&op, rowOpSpace(anchor)->length);
    };
    if (!mine.empty() && (afterMatmul ? !readsAccumulatorsInPlace(&op)
                                      : !llvm::all_of(mine, inPlace)))
      misread.insert(mine.begin(), mine.end());
  }
}

} // namespace

/// The graph outputs that joined a kernel reading them (canAlsoWrite) whose
/// kernel did not become a row kernel over rows of their elements, nor is
/// an elementwise kernel (a matmul's epilogue perhaps) of their shape: the
/// template could not write them there.
static void
findUnwritableOutputs(Block &body, const Partition &p,
                      llvm::SmallPtrSetImpl<Operation *> &unwritable) {
  std::map<int, SmallVector<Operation *>> groups;
  for (Operation &op : body.without_terminator())
    if (auto it = p.kernelOf.find(&op); it != p.kernelOf.end())
      groups[it->second].push_back(&op);
  for (auto &[id, ops] : groups) {
    std::optional<RowSpace> rows;
    for (Operation *op : ops)
      if (!rows)
        rows = rowOpSpace(op);
    bool elementwise = llvm::all_of(ops, [](Operation *op) {
      KernelKind kind = kernelKindOf(op);
      return kind == KernelKind::pointwise || kind == KernelKind::matmul;
    });
    int64_t elements = 0;
    for (Operation *op : ops)
      elements = std::max(elements, numElements(op->getResult(0)));
    for (Operation *op : ops) {
      if (elementwise && !rows && numElements(op->getResult(0)) == elements &&
          isElementwiseOutput(op))
        continue;
      bool output = llvm::any_of(placingUsers(op), [](Operation *user) {
        return user->hasTrait<OpTrait::IsTerminator>();
      });
      bool readInside = llvm::any_of(op->getUsers(), [&](Operation *user) {
        auto it = p.kernelOf.find(user);
        return it != p.kernelOf.end() && it->second == id;
      });
      if (output && readInside &&
          (!rows || numElements(op->getResult(0)) != rows->rows))
        unwritable.insert(op);
    }
  }
}

/// The partition of `body` as it is.
static Partition partitionAsIs(Block &body, bool fused) {
  llvm::SmallPtrSet<Operation *, 4> isolated;
  for (;;) {
    Partition p = partitionOnce(body, fused, isolated);
    size_t before = isolated.size();
    findMisreadRowOps(body, p, isolated);
    findUnwritableOutputs(body, p, isolated);
    if (isolated.size() == before)
      return p;
  }
}

/// Gives each kernel but the first that reads one of `p.sharedViews` a
/// copy of the view of its own (none where siblings merged its readers'
/// kernels since); whether it made any. A copy's operand, where a view
/// too, may be shared in turn by the next partition.
static bool copySharedViews(const Partition &p) {
  bool copied = false;
  for (Operation *view : p.sharedViews) {
    std::map<int, SmallVector<OpOperand *>> usesByKernel;
    for (OpOperand &use : view->getUses())
      usesByKernel[p.kernelOf.lookup(use.getOwner())].push_back(&use);
    OpBuilder b(view->getContext());
    b.setInsertionPointAfter(view);
    for (auto &[kernel, uses] : llvm::drop_begin(usesByKernel)) {
      Operation *copy = b.clone(*view);
      for (OpOperand *use : uses)
        use->set(copy->getResult(0));
      copied = true;
    }
  }
  return copied;
}

Partition kfuse::kf::partitionForFusion(Block &body, bool fused) {
  // A chain of views shared by k kernels is copied one view a round; a
  // copy has fewer uses than its view, so the rounds end. The bound only
  // guards a compile against a rule change that would make them cycle
  // (a partition with views left shared is as valid, a copy kernel more).
  constexpr int kMaxRounds = 64;
  for (int round = 0;; ++round) {
    Partition p = partitionAsIs(body, fused);
    if (round == kMaxRounds || !copySharedViews(p))
      return p;
  }
}

namespace {

/// The kind of a kernel of `ops`: a row kernel is a normalization when its
/// root is row-shaped, a reduction when it is per row.
KernelKind kernelKindFor(ArrayRef<Operation *> ops) {
  if (llvm::any_of(ops, [](Operation *op) { return isa<MatmulOp>(op); }))
    return KernelKind::matmul;
  if (llvm::any_of(ops, [](Operation *op) { return isa<AttentionOp>(op); }))
    return KernelKind::attention;
  if (llvm::any_of(ops, [](Operation *op) { return isa<AttentionGradOp>(op); }))
    return KernelKind::attention_grad;
  bool rowOps = false, pointwise = true;
  for (Operation *op : ops) {
    KernelKind kind = kernelKindOf(op);
    pointwise &= kind == KernelKind::pointwise;
    rowOps |= rowOpSpace(op).has_value();
  }
  if (pointwise)
    return KernelKind::pointwise;
  // A column reduction or an index_add with its elementwise epilogue.
  if (!rowOps && llvm::any_of(ops, [](Operation *op) {
        return isa<ReduceOp, IndexAddOp>(op);
      }))
    return KernelKind::reduction;
  if (ops.size() == 1 || !rowOps)
    return kernelKindOf(ops.back());
  // A row kernel: per-row root (a reduction) or row-shaped (a normalization).
  std::optional<RowSpace> rows;
  for (Operation *op : ops)
    if (!rows)
      rows = rowOpSpace(op);
  return numElements(ops.back()->getResult(0)) == rows->rows
             ? KernelKind::reduction
             : KernelKind::normalization;
}

/// The results of a kernel made of `ops` (`inside` holds them): every op
/// with a user outside (one root, or several when siblings were merged),
/// in program order; then the graph outputs that ops of the kernel read
/// too, so that the templates find the root (or the siblings' roots)
/// first. An attention with a log-sum-exp yields it second: the templates
/// write O (or the view of O that the kernel stores, its heads merged) and
/// the log-sum-exp as results 0 and 1.
SmallVector<Value>
kernelResults(ArrayRef<Operation *> ops,
              const llvm::SmallPtrSetImpl<Operation *> &inside) {
  SmallVector<Value> outputs, alsoRead;
  Value lse;
  for (Operation *op : ops) {
    auto attention = dyn_cast<AttentionOp>(op);
    for (Value result : op->getResults()) {
      if (attention && result == attention.getLse()) {
        lse = result;
        continue;
      }
      auto isInside = [&](Operation *user) { return inside.contains(user); };
      // An attention writes O (result 0) even where nothing reads it.
      bool unreadO = attention && result.use_empty();
      if (!unreadO && llvm::all_of(result.getUsers(), isInside))
        continue;
      (llvm::any_of(result.getUsers(), isInside) ? alsoRead : outputs)
          .push_back(result);
    }
  }
  llvm::append_range(outputs, alsoRead);
  if (lse)
    outputs.insert(outputs.begin() + std::min<size_t>(1, outputs.size()), lse);
  return outputs;
}

/// Wraps `ops` (in program order, the last one the root) in a kf.kernel.
void buildKernel(ArrayRef<Operation *> ops, KernelKind kind) {
  Operation *root = ops.back();
  llvm::SmallPtrSet<Operation *, 16> inside(ops.begin(), ops.end());
  SmallVector<Value> outputs = kernelResults(ops, inside);
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> constants;
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && inside.contains(def))
        continue;
      if (def && isFreeConstant(def))
        constants.insert(def);
      else
        inputs.insert(operand);
    }
  OpBuilder b(root);
  auto kernel =
      KernelOp::create(b, root->getLoc(), ValueRange(outputs).getTypes(),
                       inputs.getArrayRef(), kind);
  Block *block = b.createBlock(&kernel.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, block->addArgument(input.getType(), input.getLoc()));
  for (Operation *constant : constants)
    b.clone(*constant, mapping);
  for (Operation *op : ops)
    b.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(mapping.lookup(v));
  YieldOp::create(b, root->getLoc(), yielded);
  for (auto [v, result] : llvm::zip(outputs, kernel.getResults()))
    v.replaceAllUsesWith(result);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

struct KFFusePass : public kfuse::kf::impl::KFFusePassBase<KFFusePass> {
  using KFFusePassBase::KFFusePassBase;

  void runOnOperation() override {
    if (mode != "fused" && mode != "unfused") {
      getOperation().emitError() << "kf-fuse: mode must be fused or unfused, "
                                    "got '"
                                 << mode << "'";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      Block &body = func.getBody().front();
      Partition partition = partitionForFusion(body, mode == "fused");
      // Group in program order; the last op of a group is its root.
      std::map<int, SmallVector<Operation *>> groups;
      for (Operation &op : body.without_terminator())
        if (partition.kernelOf.count(&op))
          groups[partition.kernelOf[&op]].push_back(&op);
      for (auto &[id, ops] : groups)
        buildKernel(ops, kernelKindFor(ops));
      // Constants now live inside the kernels that read them.
      for (Operation &op : llvm::make_early_inc_range(body))
        if (isFreeConstant(&op) && op.use_empty())
          op.erase();
    }
  }
};

} // namespace
