//===- Rematerialize.cpp - kf-rematerialize: recompute cheap values -------===//
//
// A value computed element by element that several kernels read is
// written once and read back by each (kf-fuse puts an op with users in
// two kernels in a kernel of its own). Where computing it again reads
// fewer bytes than the value has (a broadcast of a row's statistic or a
// weight vector, a widening cast, an elementwise op of those and of a
// tensor no wider), each of its users gets a copy: each consumer's kernel
// computes its own, and the value never reaches memory. This is the
// recomputation side of the save-versus-recompute choice (as PyTorch's
// min-cut partitioner recomputes pointwise work between a forward and its
// backward); it matters most in joint forward-and-backward graphs, where
// the statistics a backward needs feed many consumers.
//
// Analyse: for each op (last first, so that the copies' operands are seen
// afterwards), the values its element-by-element cone reads (through other
// such ops, up to kMaxCone of them). Decide: an op with two users or more
// whose cone reads no more bytes than its result has. Rewrite: a clone
// before each user that can compute it in its kernel (not a matmul, say,
// whose template reads operands from memory), but the first when no user
// needs the value in memory anyway; and never for a value a comparison
// reads, unless the copy is exact (`compared`). The default pipeline runs
// it on every value; `attention-only` limits it to what attention
// kernels compute in place.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "analysis/MatmulTiling.h"
#include "ir/KFDialect.h"
#include "ir/KFTraits.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/SetVector.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFREMATERIALIZEPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Recomputing copies of deeper cones would repeat too much arithmetic.
constexpr int kMaxCone = 12;

/// Ops whose elements are computed from the same elements of their
/// operands (or from none): a copy in a consumer's kernel costs only its
/// reads.
bool computedInPlace(Operation *op) {
  return op->hasTrait<OpTrait::kf::Elementwise>() ||
         isa<BroadcastOp, ConstantOp, IotaOp, SelectOp>(op);
}

int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t bits = std::max<int64_t>(type.getElementTypeBitWidth(), 8);
  return type.getNumElements() * (bits / 8);
}

/// The values the element-by-element cone of `op` reads, or nullopt when
/// the cone has more than kMaxCone ops.
std::optional<llvm::SetVector<Value>> coneInputs(Operation *op) {
  llvm::SetVector<Value> inputs;
  llvm::SmallPtrSet<Operation *, 16> seen;
  SmallVector<Operation *> work = {op};
  while (!work.empty()) {
    Operation *next = work.pop_back_val();
    if (!seen.insert(next).second)
      continue;
    if (static_cast<int>(seen.size()) > kMaxCone)
      return std::nullopt;
    for (Value operand : next->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && computedInPlace(def))
        work.push_back(def);
      else
        inputs.insert(operand);
    }
  }
  return inputs;
}

/// Whether a comparison reads `v`, directly or through ops that reproduce
/// it exactly.
bool compared(Value v, int depth = 0) {
  return depth <= kMaxCone &&
         llvm::any_of(v.getUsers(), [&](Operation *user) {
           return isa<CompareOp>(user) ||
                  (isReproducedExactly(user) && user->getNumResults() == 1 &&
                   compared(user->getResult(0), depth + 1));
         });
}

bool readsFromMemory(OpOperand &use);

/// Whether copies of `op` for each of its users read fewer bytes than
/// writing its result once and reading it back. Not for a value a
/// comparison reads unless the copies are exact: a backward compares a
/// max with the values it was taken over (the max kernel's, stored
/// rounded), and a copy computed unrounded would equal none of them.
bool worthRecomputing(Operation *op) {
  if (!computedInPlace(op) || op->getNumResults() != 1 ||
      op->getResult(0).hasOneUse() || op->getResult(0).use_empty())
    return false;
  if (compared(op->getResult(0)) && !isReproducedExactly(op))
    return false;
  std::optional<llvm::SetVector<Value>> inputs = coneInputs(op);
  if (!inputs)
    return false;
  int64_t read = 0;
  for (Value v : *inputs)
    read += bytesOf(v);
  // Where every user computes the value in its kernel, it is not written
  // at all: n users reading the cone's inputs against one write and n
  // reads of the value (an f32 value computed from two bf16 tensors and
  // per-row statistics, read by three kernels of a LayerNorm backward).
  // Where some user reads it from memory, it is written anyway.
  int64_t result = bytesOf(op->getResult(0));
  llvm::SmallPtrSet<Operation *, 4> readers;
  for (OpOperand &use : op->getResult(0).getUses()) {
    if (readsFromMemory(use))
      return read <= result;
    readers.insert(use.getOwner());
  }
  int64_t n = readers.size();
  return read * n <= result * (n + 1);
}

/// Whether `use` is an attention's k or v, which the FlashAttention
/// template copies into shared memory (q it may compute instead).
bool copiedAttentionOperand(OpOperand &use) {
  return isa<AttentionOp>(use.getOwner()) &&
         (use.getOperandNumber() == 1 || use.getOperandNumber() == 2);
}

/// Whether every use of `op`'s result is an operand an attention kernel
/// computes in place (its mask or bias, at each score; q, once a block
/// into its Q tile), or an op computed in place whose uses all are,
/// `depth` ops down at most.
bool feedsOnlyAttentionPrologues(Operation *op, int depth = 0) {
  if (depth > kMaxCone)
    return false;
  return llvm::all_of(op->getResult(0).getUses(), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<AttentionOp>(user))
      return !copiedAttentionOperand(use);
    return computedInPlace(user) && user->getNumResults() == 1 &&
           feedsOnlyAttentionPrologues(user, depth + 1);
  });
}

/// Whether the user of `use` reads the value from memory whatever
/// computes it, as kf-fuse's rules have it: the matmul template (also
/// through reshapes that regroup an operand's rows) and attention's k and
/// v stage operands through shared memory, the line kernels take no
/// prologue yet, and the caller gets outputs in memory. (Reductions over
/// any axes compute their prologues.)
bool readsFromMemory(OpOperand &use) {
  Operation *user = use.getOwner();
  if (isa<AttentionOp>(user))
    return copiedAttentionOperand(use);
  return isa<MatmulOp, ArgReduceOp, CumsumOp, func::ReturnOp>(user) ||
         isMatmulOperandView(user);
}

/// The users of `op`'s result that a copy would serve, in block order:
/// all that can compute it in their kernel, less the first when no user
/// needs the value in memory anyway (that one keeps the original).
SmallVector<Operation *> usersToCopyFor(Operation *op) {
  llvm::SetVector<Operation *> users;
  bool materialised = false, output = false;
  for (OpOperand &use : op->getResult(0).getUses()) {
    output |= use.getOwner()->hasTrait<OpTrait::IsTerminator>();
    if (readsFromMemory(use))
      materialised = true;
    else
      users.insert(use.getOwner());
  }
  // A value per row that the graph returns and one broadcast along the
  // rows reads: kf-fuse has the row kernel that reads it write it (a
  // normalisation's statistics, saved for the backward), with no copy.
  auto type = mlir::cast<RankedTensorType>(op->getResult(0).getType());
  bool onlyOutput =
      llvm::all_of(op->getResult(0).getUses(), [](OpOperand &use) {
        return !readsFromMemory(use) ||
               use.getOwner()->hasTrait<OpTrait::IsTerminator>();
      });
  auto broadcast =
      users.size() == 1 ? dyn_cast<BroadcastOp>(users.front()) : BroadcastOp();
  if (output && onlyOutput && broadcast && type.getRank() &&
      type.getShape().back() == 1 &&
      broadcast.getType().getNumElements() > type.getNumElements())
    return {};
  SmallVector<Operation *> sorted(users.begin(), users.end());
  llvm::sort(sorted, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  if (!materialised && !sorted.empty())
    sorted.erase(sorted.begin());
  return sorted;
}

/// One clone of `op` before each user `usersToCopyFor` picks, read by all
/// of that user's operands that read `op`.
void cloneForUsers(Operation *op) {
  Value original = op->getResult(0);
  for (Operation *user : usersToCopyFor(op)) {
    OpBuilder b(user);
    Value copy = b.clone(*op)->getResult(0);
    for (OpOperand &operand : user->getOpOperands())
      if (operand.get() == original && !readsFromMemory(operand))
        operand.set(copy);
  }
}

/// A view that matmuls or attentions read in place (rows regrouped, heads
/// split: the same bytes) costs nothing to repeat: each reader gets its
/// own, so that kf-fuse puts each in its reader's kernel rather than in a
/// copy kernel of its own (the activations of a Linear's input feed the
/// gradients of its weight and of its input).
void cloneViewForReaders(Operation *view) {
  Value original = view->getResult(0);
  llvm::SetVector<Operation *> users(view->user_begin(), view->user_end());
  SmallVector<Operation *> sorted(users.begin(), users.end());
  llvm::sort(sorted, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  for (Operation *user : llvm::drop_begin(sorted)) {
    OpBuilder b(user);
    Value copy = b.clone(*view)->getResult(0);
    user->replaceUsesOfWith(original, copy);
  }
}

/// Whether `op` is a reshape, transpose or slice that attention kernels
/// read in place: read only as the q, k or v of attentions (or the dout of
/// their backward), directly or through more such views. A training graph
/// reads the heads split out of one projection in the forward attention
/// and in its backward: each gets its own views, and no kernel copies the
/// heads out for both.
bool isAttentionOperandView(Operation *op) {
  if (!isViewOp(op))
    return false;
  return llvm::all_of(op->getResult(0).getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    unsigned copied = isa<AttentionGradOp>(user) ? 4
                      : isa<AttentionOp>(user)   ? 3
                                                 : 0;
    if (!copied)
      return isAttentionOperandView(user);
    // Only views the attention kernels' copies read in place: others are
    // copied by a kernel of their own, once rather than once a reader.
    std::optional<StridedView> view = stridedViewOf(use.get());
    return use.getOperandNumber() < copied && view &&
           isCopyableRowView(*view);
  });
}

struct KFRematerializePass
    : public kfuse::kf::impl::KFRematerializePassBase<KFRematerializePass> {
  using KFRematerializePassBase::KFRematerializePassBase;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      Block &body = func.getBody().front();
      SmallVector<Operation *> ops;
      for (Operation &op : body.without_terminator())
        ops.push_back(&op);
      for (Operation *op : llvm::reverse(ops)) {
        if (isMatmulOperandView(op) || isAttentionOperandView(op))
          cloneViewForReaders(op);
        else if (worthRecomputing(op) &&
                 (!attentionOnly || feedsOnlyAttentionPrologues(op)))
          cloneForUsers(op);
      }
    });
  }
};

} // namespace
