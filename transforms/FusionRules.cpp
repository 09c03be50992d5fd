//===- FusionRules.cpp - kf-fuse's rules: what may share a kernel ----------===//
//
// The legality half of kf-fuse: whether an op may join a kernel under
// construction (a Cluster), and why or why not, in the words that
// --explain-fusion prints. Fuse.cpp builds the partition from them.
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionRules.h"

#include "analysis/MatmulTiling.h"
#include "analysis/StridedViews.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>

using namespace mlir;
using namespace kfuse::kf;

namespace kfuse::kf::fusion {

/// A splat constant costs nothing to recompute: every kernel gets its own.
bool isFreeConstant(Operation *op) {
  auto constant = dyn_cast<ConstantOp>(op);
  return constant && isa<SplatElementsAttr>(constant.getValue());
}

int64_t numElements(Value v) {
  return mlir::cast<RankedTensorType>(v.getType()).getNumElements();
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

namespace {


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

/// Can attention `op` join `c` as its producer? Only where `c` is
/// reshapes and transposes of its result (the merge of heads after it),
/// which the attention's store writes in place.
std::pair<bool, std::string> canJoinAsAttention(AttentionOp op, Cluster &c) {
  if (c.kind != KernelKind::pointwise || !c.onlyViews)
    return {false, "attention kernels take no epilogue but reshapes and "
                   "transposes"};
  std::optional<SmallVector<int64_t, 4>> strides =
      stridesWithin(op.getResult(), c.root->getResult(0));
  if (!strides || strides->back() != 1 ||
      llvm::any_of(ArrayRef(*strides).drop_back(),
                   [](int64_t s) { return s % 2; }))
    return {false, "its result's view is not whole rows of the head dim"};
  c.kind = KernelKind::attention;
  return {true, "the merge of heads after it, stored in place"};
}

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
                  : prologueOfReduction
                      ? numElements((c.epilogueOf ? c.epilogueOf
                                                       : c.root)
                                        ->getOperand(0))
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

/// Whether `reduce` is one the column template takes: over the leading
/// dims of a static shape into 32 columns or more.
bool isColumnReduction(ReduceOp reduce) {
  return reduce.getInput().getType().hasStaticShape() &&
         !reduce.getAxes().empty() && leadingDimsSpace(reduce).has_value();
}

/// `op` (a column reduction or an index_add, `what`) into pointwise
/// cluster `c` over its result: the epilogue is computed where the template
/// stores each of `op`'s results (`each`), so it may read them only in
/// place.
std::pair<bool, std::string> canJoinWithEpilogue(Operation *op, Cluster &c,
                                                 StringRef what,
                                                 StringRef each) {
  if (c.kind != KernelKind::pointwise || c.rows ||
      c.elements != numElements(op->getResult(0)))
    return {false, (what + " joins only an elementwise epilogue over its "
                           "result").str()};
  if (!readInPlaceUpTo(op, c.root))
    return {false, "its consumers read its result out of place"};
  c.kind = KernelKind::reduction;
  c.epilogueOf = op;
  return {true, ("epilogue of " + what + ", computed at each " + each).str()};
}

/// A column reduction: its epilogue (a weight gradient's cast, which was a
/// kernel of its own) is computed at each column where the template
/// stores the sum.
std::pair<bool, std::string> canJoinAsColumnReduction(ReduceOp reduce,
                                                      Cluster &c) {
  return canJoinWithEpilogue(reduce, c, "a column reduction", "column");
}

/// An index_add: its epilogue (the cast of an embedding gradient to the
/// table's dtype, which would read an f32 copy) is computed where the
/// ordered template stores each sum. Unordered adds go straight into the
/// result's memory, from which nothing in the kernel reads.
std::pair<bool, std::string> canJoinAsIndexAdd(IndexAddOp op, Cluster &c) {
  if (TargetAttr::of(op).getUnorderedAdds())
    return {false, "its adds are unordered, atomics into its result"};
  // The template computes the epilogue on each sum it holds, in the
  // result's shape: no reshape between (as the ordered tiling's verifier
  // requires).
  std::function<bool(Operation *)> elementwiseUpToRoot = [&](Operation *at) {
    return llvm::all_of(at->getUsers(), [&](Operation *user) {
      return (user->hasTrait<OpTrait::kf::Elementwise>() ||
              isa<SelectOp>(user)) &&
             (user == c.root || elementwiseUpToRoot(user));
    });
  };
  if (!elementwiseUpToRoot(op))
    return {false, "its consumers reshape the sums, which the index_add "
                   "template stores in the result's shape"};
  return canJoinWithEpilogue(op, c, "an index_add", "sum");
}

/// A reduction or normalization into cluster `c`: more of a row kernel
/// over the same rows, or the row kept on chip for a pointwise consumer.
std::pair<bool, std::string> canJoinAsRowOp(Operation *op, KernelKind kind,
                                            Cluster &c) {
  if (auto scatter = dyn_cast<IndexAddOp>(op))
    return canJoinAsIndexAdd(scatter, c);
  std::optional<RowSpace> rows = rowOpSpace(op);
  auto reduce = dyn_cast<ReduceOp>(op);
  if (!rows && reduce && isColumnReduction(reduce))
    return canJoinAsColumnReduction(reduce, c);
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

} // namespace

/// Can `op` (whose users are all in `c`) be computed inside `c`? Returns
/// the reason either way; on success `c` may become a row cluster.
std::pair<bool, std::string> canJoin(Operation *op, Cluster &c) {
  KernelKind kind = kernelKindOf(op);
  if (c.kind == KernelKind::attention_grad)
    return canJoinAttentionGrad(op);
  // The attention template writes its result (and the log-sum-exp)
  // alone; the matmul template's epilogue stores values of its output's
  // shape, but none per row.
  if ((c.writesRowOutputs && kind == KernelKind::matmul) ||
      (c.writesOutputs && isa<AttentionOp>(op)))
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
    // kf-split-k moves the epilogue into a kernel summing the partial
    // products, which writes one result.
    auto matmul = mlir::cast<MatmulOp>(op);
    if (c.writesOutputs && splitKChunk(matmul, TargetAttr::of(op)))
      return {false, "its consumers' kernel also writes a graph output, "
                     "which a matmul whose K is split does not"};
    c.kind = KernelKind::matmul;
    return {true, "epilogue of a matmul, computed on its accumulators"};
  }
  return canJoinAsRowOp(op, kind, c);
}

bool isElementwiseOutput(Operation *op) {
  return op->hasTrait<OpTrait::kf::Elementwise>() || isa<MatmulOp>(op);
}

/// Can the kernel of cluster `c`, which `op` joins as `why` says, also
/// write `op`'s result (a graph output)? An elementwise kernel writes
/// values of its own shape. A row kernel writes values per
/// row beside its rows: a normalisation's statistics, which a training
/// forward saves for the backward. A cluster that no row op has joined
/// yet may take a value shaped [..., 1] of fewer elements; if no row op
/// over those rows joins later, findUnwritableOutputs undoes it.
/// (Row-shaped outputs keep their own kernels: most come from a matmul's
/// epilogue, which then keeps them.)
std::pair<bool, std::string> canAlsoWrite(Operation *op, Cluster &c,
                                          const std::string &why) {
  auto type = mlir::cast<RankedTensorType>(op->getResult(0).getType());
  int64_t elements = type.getNumElements();
  // An elementwise kernel stores any value of its own shape as well (a
  // matmul's pre-activation, saved for the backward, beside the
  // activation the next matmul reads).
  // (A matmul has made its cluster a matmul kernel by now.)
  bool elementwise = c.kind == KernelKind::pointwise ||
                     (c.kind == KernelKind::matmul && isa<MatmulOp>(op));
  if (elementwise && !c.rows && elements == c.elements &&
      isElementwiseOutput(op))
    return {true, why + ", and written out there (a graph output)"};
  c.writesRowOutputs = true;
  bool perRow = c.rows ? elements == c.rows->rows
                       : c.kind == KernelKind::pointwise && type.getRank() &&
                             type.getShape().back() == 1 &&
                             elements < c.elements &&
                             c.elements % elements == 0;
  if (!perRow || isa<ArgReduceOp, CumsumOp>(c.root))
    return {false, "it is a graph output"};
  return {true, why + ", and written out there (a graph output)"};
}

} // namespace kfuse::kf::fusion
