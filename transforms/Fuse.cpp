//===- Fuse.cpp - kf-fuse: partition the graph into kernels ---------------===//
//
// Analyse: classify each op by the kernel kind that computes it. Decide:
// walk the ops backwards; in fused mode a pointwise op joins its consumers'
// kernel when they all share one pointwise kernel. Rewrite: wrap each
// partition in a kf.kernel whose single result is the partition's root.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "analysis/MatmulTiling.h"
#include "analysis/StridedViews.h"
#include "ir/KFDialect.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFFUSEPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// A splat constant costs nothing to recompute: every kernel gets its own.
bool isFreeConstant(Operation *op) {
  auto constant = dyn_cast<ConstantOp>(op);
  return constant && isa<SplatElementsAttr>(constant.getValue());
}

int64_t numElements(Value v) {
  return mlir::cast<RankedTensorType>(v.getType()).getNumElements();
}


/// Whether `op` reads, directly or through pointwise ops, a row reduction
/// over rows other than `rows` (and more than one): per-row results (a loss
/// per row)
/// belong with the rows they were reduced from, not with a later reduction
/// of them (their mean), which would split the first row kernel.
bool readsOtherRows(Operation *op, RowSpace rows) {
  SmallVector<Operation *> worklist = {op};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Operation *next = worklist.pop_back_val();
    if (!seen.insert(next).second)
      continue;
    for (Value operand : next->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      if (std::optional<RowSpace> space =
              isa<ReduceOp>(def) ? rowOpSpace(def) : std::nullopt) {
        // (A single row's result is a scalar: broadcast anywhere.)
        if (space->rows > 1 &&
            (space->rows != rows.rows || space->length != rows.length))
          return true;
      } else if (kernelKindOf(def) == KernelKind::pointwise) {
        worklist.push_back(def);
      }
    }
  }
  return false;
}

/// An attention's mask or bias prologue computes a value of fewer than
/// 1/64 of the attention's output elements in a kernel of its own: every
/// such element would be recomputed at many scores.
constexpr int64_t kScoresPerPrologueValue = 64;

/// Elementwise math that costs tens of instructions (libdevice calls).
bool isTranscendental(Operation *op) {
  return isa<ExpOp, LogOp, SinOp, CosOp, TanhOp, ErfOp, GeluOp, SiluOp,
             SigmoidOp, PowOp>(op);
}

/// What a kernel under construction computes over.
struct Cluster {
  KernelKind kind;
  int64_t elements;              ///< of the root
  std::optional<RowSpace> rows;  ///< set once a row op joined
  Operation *root = nullptr;     ///< the op whose result the kernel yields
  bool onlyViews = false;        ///< every op is a reshape, transpose, slice
  bool writesOutputs = false;    ///< also writes graph outputs its ops read
};

/// Where `op`'s result goes in the attention kernel it may join: the q, k
/// and v operands it becomes through view ops alone (read in place by the
/// template's copies), and the attention operands it reaches through an op
/// that computes (a bit per operand number: 0 q, 1 k, 2 v, 3.. mask/bias).
/// The same for an attention's backward, whose copied operands are q, k, v
/// and dout (0-3; lse and delta count as computed).
struct AttentionReach {
  SmallVector<Value> viewed;
  unsigned viewedOperands = 0, computedOperands = 0;
};

constexpr unsigned kQueryBit = 1, kKeyValueBits = 6, kScoreOperandBits = ~7u;

AttentionReach attentionReach(Operation *op) {
  AttentionReach reach;
  SmallVector<std::pair<Value, bool>> worklist = {
      {op->getResult(0), !isViewOp(op)}};
  llvm::DenseSet<std::pair<Value, unsigned>> visited;
  while (!worklist.empty()) {
    auto [v, computed] = worklist.pop_back_val();
    if (!visited.insert({v, unsigned(computed)}).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<AttentionOp, AttentionGradOp>(user)) {
        unsigned bit = 1u << use.getOperandNumber();
        unsigned copied = isa<AttentionGradOp>(user) ? 4 : 3;
        if (computed || use.getOperandNumber() >= copied) {
          reach.computedOperands |= bit;
        } else {
          reach.viewedOperands |= bit;
          reach.viewed.push_back(v);
        }
        continue;
      }
      for (Value result : user->getResults())
        worklist.push_back({result, computed || !isViewOp(user)});
    }
  }
  return reach;
}

/// Whether the attention operands `op` becomes through views alone are
/// rows the templates' copies read in place: contiguous, 16-byte aligned.
bool readsCopyableRows(Operation *op, const AttentionReach &reach) {
  return llvm::all_of(reach.viewed, [&](Value operand) {
    std::optional<StridedView> view =
        stridedViewOf(operand, 0, op->getOperand(0));
    return view && isCopyableRowView(*view);
  });
}

/// Can pointwise `op` join attention cluster `c`? The FlashAttention
/// template copies k and v straight into shared memory; q is copied too,
/// or computed into shared memory by its prologue (RoPE, a scale, casts)
/// once a block; a mask or bias is computed at each score.
std::pair<bool, std::string> canJoinAttention(Operation *op,
                                              const Cluster &c) {
  AttentionReach reach = attentionReach(op);
  if (reach.computedOperands & kKeyValueBits)
    return {false, "attention kernels take no prologue on k or v but "
                   "reshapes, transposes and slices"};
  if ((reach.computedOperands & kQueryBit) &&
      (reach.computedOperands & kScoreOperandBits))
    return {false, "it feeds both q's prologue and a mask or bias"};
  if (reach.viewedOperands) {
    // The template's copies read these by offset and strides: a chain of
    // reshapes, transposes and slices (the split into heads) is read in
    // place.
    if (reach.computedOperands & kScoreOperandBits)
      return {false, "a view of q, k or v that a mask or bias reads too"};
    if (!readsCopyableRows(op, reach))
      return {false, "the view of q, k or v is not rows the attention's "
                     "copies read (contiguous, 16-byte aligned)"};
    return {true, reach.computedOperands
                      ? "a view of k or v read in place, and of q's prologue"
                      : "a view of q, k or v that the attention reads in "
                        "place"};
  }
  if (reach.computedOperands & kQueryBit)
    return {true, "prologue on q, computed once a block into its Q tile"};
  // The prologue runs at every score. Values per query or per key (the
  // gathered sequence ids of a packed-sequence mask) are computed once in a
  // kernel of their own and read there instead.
  if (!isa<IotaOp, ConstantOp, BroadcastOp>(op) &&
      numElements(op->getResult(0)) * kScoresPerPrologueValue <= c.elements)
    return {false, "it has few elements next to the attention's scores: "
                   "computed once, not at every score"};
  return {true, "mask or bias prologue of an attention kernel"};
}

/// Can `op` join an attention backward's kernel? Its template copies q, k,
/// v and dout into shared memory by offset and strides: a chain of
/// reshapes, transposes and slices (q, k and v split into heads out of the
/// saved projection) is read in place; nothing is computed.
std::pair<bool, std::string> canJoinAttentionGrad(Operation *op) {
  const char *refusal = "FlashAttention's backward kernel takes no prologue "
                        "but views of q, k, v and dout: it copies its "
                        "operands from memory";
  AttentionReach reach = attentionReach(op);
  if (!isViewOp(op) || reach.computedOperands)
    return {false, refusal};
  if (!readsCopyableRows(op, reach))
    return {false, "the view of q, k, v or dout is not rows the "
                   "backward's copies read (contiguous, 16-byte aligned)"};
  return {true, "a view of q, k, v or dout that the attention's backward "
                "reads in place"};
}

/// Whether `op`'s result is read as a matmul's A or B, directly or
/// through reshapes.
bool feedsMatmulOperand(Operation *op) {
  return llvm::any_of(op->getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<MatmulOp>(user))
      return use.getOperandNumber() < 2;
    return isa<ReshapeOp>(user) && feedsMatmulOperand(user);
  });
}

/// A cast to a narrower float type of a matmul result that nothing else
/// reads. A kernel that already has its matmul or attention cannot take
/// the producing matmul too: the cast then belongs to that matmul's
/// epilogue, or the matmul writes its wide accumulators for the consumer
/// to round (the f32 gate of a bf16 SwiGLU: twice the bytes, both ways).
bool isNarrowingCastOfMatmul(Operation *op) {
  auto cast = dyn_cast<CastOp>(op);
  if (!cast)
    return false;
  Value in = cast.getOperand();
  auto from = getElementTypeOrSelf(in.getType());
  auto to = getElementTypeOrSelf(cast.getType());
  return isa<FloatType>(from) && isa<FloatType>(to) &&
         to.getIntOrFloatBitWidth() < from.getIntOrFloatBitWidth() &&
         in.getDefiningOp<MatmulOp>() && in.hasOneUse();
}

/// Can `op` (whose users are all in `c`) be computed inside `c`? Returns
/// the reason either way; on success `c` may become a row cluster.
/// Can attention `op` join `c` as its producer? Only where `c` is
/// reshapes and transposes of its result (the merge of heads after it),
/// which the attention's store writes in place.
std::pair<bool, std::string> canJoinAsAttention(AttentionOp op, Cluster &c) {
  if (c.kind != KernelKind::pointwise || !c.onlyViews)
    return {false, "attention kernels take no epilogue but reshapes and "
                   "transposes"};
  if (op.getLse() && !op.getLse().use_empty())
    return {false, "its log-sum-exp is read too"};
  std::optional<SmallVector<int64_t, 4>> strides =
      stridesWithin(op.getResult(), c.root->getResult(0));
  if (!strides || strides->back() != 1 ||
      llvm::any_of(ArrayRef(*strides).drop_back(),
                   [](int64_t s) { return s % 2; }))
    return {false, "its result's view is not whole rows of the head dim"};
  c.kind = KernelKind::attention;
  return {true, "the merge of heads after it, stored in place"};
}

bool readsAccumulatorsInPlace(Operation *op);

/// Whether `op`'s result reaches `root` (the consumer cluster's) through
/// views that read a matmul's accumulators in place alone.
bool readInPlaceUpTo(Operation *op, Operation *root) {
  return llvm::all_of(op->getUsers(), [&](Operation *user) {
    return readsAccumulatorsInPlace(user) &&
           (user == root || readInPlaceUpTo(user, root));
  });
}

/// A pointwise op into cluster `c`: an epilogue, a prologue or more of a
/// pointwise kernel.
std::pair<bool, std::string> canJoinAsPointwise(Operation *op, Cluster &c) {
  // A copy of views that the matmul's epilogue cannot store in place (a
  // split into heads) copies the narrower values.
  if (((c.kind == KernelKind::matmul || c.kind == KernelKind::attention) ||
       (c.onlyViews && !readInPlaceUpTo(op, c.root))) &&
      isNarrowingCastOfMatmul(op))
    return {false, "a narrowing cast of a matmul's result stays in that "
                   "matmul's epilogue, which then writes the narrower "
                   "type"};
  if (c.kind == KernelKind::attention)
    return canJoinAttention(op, c);
  // The template copies a matmul's operands straight into shared memory
  // (rows regrouped by a reshape are the same bytes); ops of its epilogue
  // are computed on the accumulators.
  if (c.kind == KernelKind::matmul && feedsMatmulOperand(op))
    return isMatmulOperandView(op)
               ? std::pair{true, std::string("a reshape of a matmul operand "
                                             "that keeps its rows, read in "
                                             "place")}
               : std::pair{false, std::string("matmul kernels take no "
                                              "prologue but reshapes that "
                                              "keep the rows of a 16-bit "
                                              "operand")};
  if (c.rows && readsOtherRows(op, *c.rows))
    return {false, "it reads the results of a row kernel over other rows, "
                   "whose kernel it joins"};
  // A reduction over other axes computes its prologue at each element it
  // reads: its input's.
  bool prologueOfReduction = c.kind == KernelKind::reduction && !c.rows;
  int64_t elements = numElements(op->getResult(0));
  int64_t space = c.rows                ? c.rows->rows * c.rows->length
                  : prologueOfReduction ? numElements(c.root->getOperand(0))
                                        : c.elements;
  if (isTranscendental(op) && elements * 64 <= space)
    return {false, "it would recompute '" +
                       op->getName().getStringRef().str() + "' " +
                       std::to_string(space / std::max<int64_t>(elements, 1)) +
                       " times"};
  return {true, c.rows                ? "pointwise prologue of a row kernel"
                : prologueOfReduction ? "pointwise prologue of a reduction"
                                      : "pointwise into pointwise"};
}

/// A reduction or normalization into cluster `c`: more of a row kernel
/// over the same rows, or the row kept on chip for a pointwise consumer.
std::pair<bool, std::string> canJoinAsRowOp(Operation *op, KernelKind kind,
                                            Cluster &c) {
  std::optional<RowSpace> rows = rowOpSpace(op);
  if (!rows)
    return {false, std::string(stringifyKernelKind(kind)) +
                       " kernels are not fused with others yet"};
  // With rows of one element a per-row value has the shape of a row, so a
  // consumer could read the result as a row: a second pass over the data
  // that a row kernel does not make. (Such a reduction is a copy anyway.)
  if (rows->length == 1)
    return {false, "its rows have one element"};
  if (c.rows) {
    if (c.rows->rows != rows->rows || c.rows->length != rows->length)
      return {false, "its rows differ from the consumer's"};
    return {true, "reduction over the same rows"};
  }
  if (c.kind != KernelKind::pointwise)
    return {false, "the consumer is not pointwise"};
  if (c.elements != rows->rows * rows->length && c.elements != rows->rows)
    return {false, "the consumer is neither over the rows nor per row"};
  c.rows = rows;
  return {true, "the row is kept on chip for the consumer"};
}

std::pair<bool, std::string> canJoin(Operation *op, Cluster &c) {
  KernelKind kind = kernelKindOf(op);
  if (c.kind == KernelKind::attention_grad)
    return canJoinAttentionGrad(op);
  // The matmul and attention templates write their result (and the
  // log-sum-exp) alone.
  if (c.writesOutputs && (kind == KernelKind::matmul || isa<AttentionOp>(op)))
    return {false, "its consumers' kernel also writes a graph output, "
                   "which the " +
                       std::string(stringifyKernelKind(kind)) +
                       " template does not"};
  if (auto attention = dyn_cast<AttentionOp>(op))
    return canJoinAsAttention(attention, c);
  if (kind == KernelKind::pointwise)
    return canJoinAsPointwise(op, c);
  if (kind == KernelKind::matmul) {
    if (c.kind != KernelKind::pointwise || c.rows ||
        c.elements != numElements(op->getResult(0)))
      return {false, "a matmul joins only an elementwise epilogue over its "
                     "output"};
    c.kind = KernelKind::matmul;
    return {true, "epilogue of a matmul, computed on its accumulators"};
  }
  return canJoinAsRowOp(op, kind, c);
}

/// Can the kernel of cluster `c`, which `op` joins as `why` says, also
/// write `op`'s result (a graph output)? A row kernel writes values per
/// row beside its rows: a normalisation's statistics, which a training
/// forward saves for the backward. A cluster that no row op has joined
/// yet may take a value shaped [..., 1] of fewer elements; if no row op
/// over those rows joins later, findUnwritableOutputs undoes it.
/// (Row-shaped outputs keep their own kernels: most come from a matmul's
/// epilogue, which then keeps them.)
std::pair<bool, std::string> canAlsoWrite(Operation *op, const Cluster &c,
                                          const std::string &why) {
  auto type = mlir::cast<RankedTensorType>(op->getResult(0).getType());
  int64_t elements = type.getNumElements();
  bool perRow = c.rows ? elements == c.rows->rows
                       : c.kind == KernelKind::pointwise && type.getRank() &&
                             type.getShape().back() == 1 &&
                             elements < c.elements &&
                             c.elements % elements == 0;
  if (!perRow || isa<ArgReduceOp, CumsumOp>(c.root))
    return {false, "it is a graph output"};
  return {true, why + ", and written out there (a graph output)"};
}

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
  for (Operation *user : op.getUsers()) {
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

/// Whether `op` reads a matmul's result where the matmul template has it:
/// a thread holds accumulators of its own output elements only. A reshape
/// that keeps the last dim (a Linear's [B * S, N] product as [B, S, N])
/// keeps every element's linear index, row and column.
bool readsAccumulatorsInPlace(Operation *op) {
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
    ArrayRef<int64_t> out = reshape.getType().getShape();
    return !in.empty() && !out.empty() && in.back() == out.back() &&
           !ShapedType::isDynamic(in.back());
  }
  return op->hasTrait<OpTrait::kf::Elementwise>() || isa<SelectOp>(op);
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
/// kernel did not become a row kernel over rows of their elements: the
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
    for (Operation *op : ops) {
      bool output = llvm::any_of(op->getUsers(), [](Operation *user) {
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

Partition kfuse::kf::partitionForFusion(Block &body, bool fused) {
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

/// Wraps `ops` (in program order, the last one the root) in a kf.kernel.
void buildKernel(ArrayRef<Operation *> ops, KernelKind kind) {
  Operation *root = ops.back();
  llvm::SmallPtrSet<Operation *, 16> inside(ops.begin(), ops.end());
  // The results: every op with a user outside (one root, or several when
  // siblings were merged), in program order; then the graph outputs that
  // ops of the kernel read too, so that the templates find the root (or
  // the siblings' roots) first.
  // An attention with a log-sum-exp yields both: the templates write O and
  // the log-sum-exp as results 0 and 1.
  SmallVector<Value> outputs, alsoRead;
  for (Operation *op : ops) {
    auto attention = dyn_cast<AttentionOp>(op);
    bool both = attention && attention.getLse();
    for (Value result : op->getResults()) {
      auto isInside = [&](Operation *user) { return inside.contains(user); };
      if (!both && llvm::all_of(result.getUsers(), isInside))
        continue;
      (!both && llvm::any_of(result.getUsers(), isInside) ? alsoRead : outputs)
          .push_back(result);
    }
  }
  llvm::append_range(outputs, alsoRead);
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
