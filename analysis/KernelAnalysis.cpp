//===- KernelAnalysis.cpp - what a kf.kernel computes and how -------------===//
//
// The analyses of kf.kernel ops that several passes and the templates
// share: the spaces a kernel's work lies in (rows, columns, a tiled
// transpose), its work items, its attention op and whether FlashAttention
// takes it, and the row strides kf-pad chose.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"

#include "llvm/ADT/SmallPtrSet.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kfuse::kf;

int64_t kfuse::kf::paddedRowStride(Value value) {
  auto result = dyn_cast<OpResult>(value);
  auto kernel = result ? dyn_cast<KernelOp>(result.getOwner()) : KernelOp();
  if (!kernel)
    return 0;
  DenseI64ArrayAttr strides = kernel.getPaddedRowsAttr();
  if (!strides || int64_t(strides.size()) != kernel.getNumResults())
    return 0;
  return strides[result.getResultNumber()];
}

std::optional<BroadcastSplit> kfuse::kf::splitBroadcast(BroadcastOp op) {
  ArrayRef<int64_t> in = op.getInput().getType().getShape();
  ArrayRef<int64_t> out = op.getType().getShape();
  size_t rank = out.size(), offset = rank - in.size();
  auto padded = [&](size_t d) { return d < offset ? 1 : in[d - offset]; };
  auto spans = [&](size_t from, size_t to, bool equal) {
    for (size_t d = from; d < to; ++d)
      if (equal ? padded(d) != out[d] : padded(d) != 1)
        return false;
    return true;
  };
  for (size_t k = 0; k <= rank; ++k) {
    int64_t rest = 1;
    for (size_t d = k; d < rank; ++d)
      rest *= out[d];
    if (spans(0, k, false) && spans(k, rank, true))
      return BroadcastSplit{BroadcastSplit::trailing, rest};
    if (spans(0, k, true) && spans(k, rank, false))
      return BroadcastSplit{BroadcastSplit::leading, rest};
  }
  return std::nullopt;
}

std::optional<LeadingBroadcastReads>
kfuse::kf::leadingBroadcastReadsOf(KernelOp kernel) {
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  auto shape = cast<RankedTensorType>(yield.getValues()[0].getType());
  std::optional<LeadingBroadcastReads> widest;
  kernel.getBody().walk([&](BroadcastOp op) {
    std::optional<BroadcastSplit> split = splitBroadcast(op);
    if (!isa<BlockArgument>(op.getInput()) || op.getType().getShape() != shape.getShape() || !split ||
        split->kind != BroadcastSplit::trailing || split->rest == 0 ||
        split->rest == shape.getNumElements())
      return;
    if (!widest || split->rest > widest->rest)
      widest = LeadingBroadcastReads{shape.getNumElements() / split->rest,
                                     split->rest};
  });
  return widest;
}

int64_t kfuse::kf::rowStrideOf(Value value) {
  if (int64_t stride = paddedRowStride(value))
    return stride;
  auto type = mlir::cast<RankedTensorType>(value.getType());
  return type.getRank() ? type.getShape().back() : 1;
}

KernelKind kfuse::kf::kernelKindOf(Operation *op) {
  if (isa<ReduceOp, ArgReduceOp, CumsumOp, IndexAddOp>(op))
    return KernelKind::reduction;
  if (isa<SoftmaxOp>(op))
    return KernelKind::normalization;
  if (isa<MatmulOp>(op))
    return KernelKind::matmul;
  if (isa<AttentionOp>(op))
    return KernelKind::attention;
  if (isa<AttentionGradOp>(op))
    return KernelKind::attention_grad;
  return KernelKind::pointwise;
}

std::optional<RowSpace> kfuse::kf::rowSpaceOf(KernelOp kernel) {
  std::optional<RowSpace> space;
  bool ok = true;
  auto addRows = [&](Value input) {
    ArrayRef<int64_t> shape = shapeOf(input);
    if (shape.empty()) {
      ok = false;
      return;
    }
    int64_t length = shape.back();
    int64_t rows = length ? mlir::cast<RankedTensorType>(input.getType())
                                    .getNumElements() /
                                length
                          : 0;
    if (space && (space->rows != rows || space->length != length))
      ok = false;
    space = RowSpace{rows, length};
  };
  kernel.getBody().walk([&](Operation *op) {
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (blockColumnPartialsOf(reduce.getResult()))
        return;
      int64_t rank = shapeOf(reduce.getInput()).size();
      if (reduce.getAxes().size() != 1 || reduce.getAxes()[0] != rank - 1 ||
          !isa<FloatType>(reduce.getType().getElementType()))
        ok = false;
      addRows(reduce.getInput());
    } else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      if (int64_t(softmax.getAxis()) != int64_t(shapeOf(softmax).size()) - 1)
        ok = false;
      addRows(softmax.getInput());
    } else if (isa<ArgReduceOp, CumsumOp>(op)) {
      Value input = op->getOperand(0);
      auto axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
      if (axis != int64_t(shapeOf(input).size()) - 1)
        ok = false;
      addRows(input);
    }
  });
  if (!ok || !space)
    return std::nullopt;
  return space;
}

std::optional<BlockColumnPartials>
kfuse::kf::blockColumnPartialsOf(Value v) {
  auto reduce = v.getDefiningOp<ReduceOp>();
  if (!reduce || reduce.getKind() != ReduceKind::sum || reduce.getKeepDims() ||
      reduce.getAxes() != ArrayRef<int64_t>{0, 2})
    return std::nullopt;
  auto reshape = reduce.getInput().getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  ArrayRef<int64_t> grouped = shapeOf(reshape.getResult());
  ArrayRef<int64_t> rows = shapeOf(reshape.getInput());
  if (grouped.size() != 4 || rows.empty() || grouped[3] != rows.back() ||
      !getElementTypeOrSelf(reshape.getInput().getType()).isF32())
    return std::nullopt;
  return BlockColumnPartials{reshape.getInput(), grouped[1], grouped[2]};
}

std::optional<ColumnPartialLayout>
kfuse::kf::columnPartialLayout(RowSpace space, int64_t sms) {
  // 8 columns a thread (a 16-byte vector of a 16-bit row): rows of a warp
  // to a block of them. Shorter rows would leave most lanes idle; at 16
  // columns a thread (rows of 5120 or 8192) the running sums beside the
  // row spilled under the 64 registers of two blocks an SM.
  if (space.length < 32 * 8 || space.length > kColumnPartialBlockThreads * 8)
    return std::nullopt;
  int64_t threads = 32;
  while (threads * 8 < space.length)
    threads *= 2;
  int64_t perBlock = kColumnPartialBlockThreads / threads;
  if (space.rows % perBlock)
    return std::nullopt;
  // Two blocks an SM at most (a block of 512 threads of up to 64
  // registers each), at least one, each over four groups or more.
  int64_t groups = space.rows / perBlock;
  for (int64_t blocks = std::min(groups / 4, 2 * sms); blocks >= sms;
       --blocks)
    if (groups % blocks == 0)
      return ColumnPartialLayout{threads, perBlock, blocks};
  return std::nullopt;
}

/// The one reduce `result` is computed from inside its kernel, of as many
/// elements; null if none or several.
static ReduceOp reduceFeeding(Value result) {
  SmallVector<Value> pending = {result};
  llvm::SmallPtrSet<Operation *, 8> seen;
  ReduceOp found;
  while (!pending.empty()) {
    Operation *op = pending.pop_back_val().getDefiningOp();
    if (!op || !seen.insert(op).second)
      continue;
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (found)
        return ReduceOp();
      found = reduce;
      continue;
    }
    llvm::append_range(pending, op->getOperands());
  }
  auto elements = [](Value v) {
    return mlir::cast<ShapedType>(v.getType()).getNumElements();
  };
  return found && elements(found.getResult()) == elements(result)
             ? found
             : ReduceOp();
}

SmallVector<ReduceOp> kfuse::kf::resultReducesOf(KernelOp kernel) {
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  SmallVector<ReduceOp> reduces;
  for (Value result : yield.getValues()) {
    ReduceOp reduce = reduceFeeding(result);
    if (!reduce)
      return {};
    reduces.push_back(reduce);
  }
  return reduces;
}

std::optional<RowSpace> kfuse::kf::leadingDimsSpace(ReduceOp reduce) {
  if (!isa<FloatType>(reduce.getType().getElementType()))
    return std::nullopt;
  ArrayRef<int64_t> axes = reduce.getAxes(), in = shapeOf(reduce.getInput());
  int64_t rows = 1;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis != static_cast<int64_t>(i))
      return std::nullopt; // not a prefix of the dims
    rows *= in[axis];
  }
  int64_t columns = 1;
  for (size_t d = axes.size(); d < in.size(); ++d)
    columns *= in[d];
  if (columns < 32)
    return std::nullopt;
  return RowSpace{rows, columns};
}

std::optional<RowSpace> kfuse::kf::columnSpaceOf(KernelOp kernel) {
  if (kernel.getKind() != KernelKind::reduction)
    return std::nullopt;
  SmallVector<ReduceOp> reduces = resultReducesOf(kernel);
  if (reduces.empty())
    return std::nullopt;
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  std::optional<RowSpace> space;
  for (auto [reduce, result] : llvm::zip_equal(reduces, yield.getValues())) {
    std::optional<RowSpace> own = leadingDimsSpace(reduce);
    // An epilogue over a sum of few rows (kf-split-k's partial products)
    // would leave most of the template's 32 row groups idle: a thread an
    // output (emitReduction) sums them.
    if (!own || (result != reduce.getResult() && own->rows < 32) ||
        (space && (space->rows != own->rows || space->length != own->length)))
      return std::nullopt;
    space = own;
  }
  return space;
}

TransposeOp kfuse::kf::tiledTransposeOf(KernelOp kernel) {
  if (kernel.getKind() != KernelKind::pointwise)
    return nullptr;
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  TransposeOp found;
  int count = 0;
  kernel.getBody().walk([&](TransposeOp t) {
    ++count;
    found = t;
  });
  if (count != 1 || !isa<BlockArgument>(found.getInput()) ||
      found.getType().getElementType().isInteger(1) ||
      yield.getValues().size() != 1 ||
      shapeOf(yield.getValues()[0]) != shapeOf(found.getResult()))
    return nullptr;
  ArrayRef<int64_t> perm = found.getPerm();
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return nullptr;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d)
      return nullptr;
  return found;
}

int64_t kfuse::kf::kernelWorkItems(KernelOp kernel) {
  if (kernel.getKind() == KernelKind::reduction ||
      kernel.getKind() == KernelKind::normalization)
    if (std::optional<RowSpace> rows = rowSpaceOf(kernel))
      return rows->rows;
  auto resultType = mlir::cast<RankedTensorType>(kernel.getResult(0).getType());
  int64_t elements = resultType.getNumElements();
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  // A running sum: one thread a line along its axis.
  if (auto cumsum = yield.getValues()[0].getDefiningOp<CumsumOp>()) {
    int64_t n = resultType.getDimSize(cumsum.getAxis());
    return n ? elements / n : 0;
  }
  if (kernel.getKind() != KernelKind::normalization)
    return elements;
  // A softmax along another axis: one thread per row (of the softmax, which
  // an elementwise epilogue may follow).
  auto softmaxes = kernel.getBody().getOps<SoftmaxOp>();
  if (softmaxes.empty())
    return elements;
  SoftmaxOp softmax = *softmaxes.begin();
  auto softmaxType = mlir::cast<RankedTensorType>(softmax.getType());
  int64_t rowLength = softmaxType.getDimSize(softmax.getAxis());
  return rowLength ? softmaxType.getNumElements() / rowLength : 0;
}

AttentionOp kfuse::kf::attentionOf(KernelOp kernel) {
  auto ops = kernel.getBody().getOps<AttentionOp>();
  return ops.empty() ? AttentionOp() : *ops.begin();
}

AttentionGradOp kfuse::kf::attentionGradOf(KernelOp kernel) {
  auto ops = kernel.getBody().getOps<AttentionGradOp>();
  return ops.empty() ? AttentionGradOp() : *ops.begin();
}

std::optional<SmallVector<int64_t, 4>>
kfuse::kf::attentionResultStrides(KernelOp kernel) {
  AttentionOp op = attentionOf(kernel);
  Value root = kernel.getBody().front().getTerminator()->getOperand(0);
  return op ? stridesWithin(op.getResult(), root) : std::nullopt;
}

bool kfuse::kf::copiesAttentionOperand(KernelOp kernel, Value operand) {
  if (isa<BlockArgument>(operand))
    return true;
  std::optional<StridedView> view = attentionOperandView(kernel, operand);
  return view && isCopyableRowView(*view);
}

bool kfuse::kf::attentionComputesQuery(KernelOp kernel) {
  AttentionOp op = attentionOf(kernel);
  return op && !copiesAttentionOperand(kernel, op.getQ());
}

std::optional<StridedView> kfuse::kf::attentionOperandView(KernelOp kernel,
                                                           Value operand) {
  std::optional<StridedView> view = stridedViewOf(operand);
  auto arg = view ? dyn_cast<BlockArgument>(view->root) : BlockArgument();
  if (!arg || arg.getOwner()->getParentOp() != kernel.getOperation())
    return std::nullopt;
  int64_t rowStride = rowStrideOf(kernel.getInputs()[arg.getArgNumber()]);
  auto type = mlir::cast<RankedTensorType>(arg.getType());
  if (type.getRank() >= 2 && rowStride != type.getShape().back())
    view = stridedViewOf(operand, rowStride);
  return view;
}

std::optional<std::string>
kfuse::kf::flashAttentionRefusal(KernelOp kernel, bool aligned, bool wgmma,
                                 ArrayRef<std::pair<Value, int64_t>> assumed) {
  AttentionOp op = attentionOf(kernel);
  Type dtype = mlir::cast<RankedTensorType>(op.getQ().getType()).getElementType();
  if (!dtype.isBF16() && !dtype.isF16())
    return std::string("its operands are not bf16/f16");
  if (!aligned)
    return std::string("its buffers are not known to be 16-byte aligned");
  if (!wgmma)
    return std::string("the FlashAttention template needs sm_90 (wgmma)");
  // k and v are copied; q may be computed (attentionComputesQuery).
  for (Value operand : {op.getK(), op.getV()})
    if (!copiesAttentionOperand(kernel, operand))
      return std::string("k or v is computed in the kernel");

  int64_t d = shapeOf(op.getQ())[3], dv = shapeOf(op.getV())[3];
  if (d > 256 || dv > 256 || d == 0 || dv == 0)
    return "head dims " + std::to_string(d) + " and " + std::to_string(dv) +
           " are not in 1..256";
  // Rows of whole 4-byte words: cp.async copies 4, 8 or 16 bytes.
  for (Value operand : {op.getQ(), op.getK(), op.getV()}) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg)
      continue; // a view: rows 16 bytes apart
    auto it = llvm::find_if(assumed, [&](auto &e) { return e.first == arg; });
    int64_t stride = it != assumed.end()
                         ? it->second
                         : rowStrideOf(kernel.getInputs()[arg.getArgNumber()]);
    if (stride % 2)
      return "head dims " + std::to_string(d) + " and " + std::to_string(dv) +
             " leave rows of odd length, not copied into padded rows";
  }
  for (Value operand : {op.getQ(), op.getK()})
    for (int64_t dim : shapeOf(operand))
      if (dim == 0)
        return std::string("it is empty");
  return std::nullopt;
}

BlockArgument kfuse::kf::stagedScoresInput(KernelOp kernel) {
  AttentionOp op = attentionOf(kernel);
  SmallVector<Value> pending;
  for (Value operand : {op.getMask(), op.getBias()})
    if (operand)
      pending.push_back(operand);
  if (pending.empty())
    return BlockArgument();
  ArrayRef<int64_t> scores =
      mlir::cast<RankedTensorType>(pending[0].getType()).getShape();
  if (scores.back() % 8)
    return BlockArgument();
  SmallVector<BlockArgument> found;
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    auto type = mlir::cast<RankedTensorType>(value.getType());
    if (type.getShape() != scores)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      // Staged in the shared buffer of q's dtype.
      if (type.getElementType() == getElementTypeOrSelf(op.getQ().getType()) &&
          !llvm::is_contained(found, arg))
        found.push_back(arg);
    } else if (Operation *def = value.getDefiningOp();
               def && def->hasTrait<OpTrait::kf::Elementwise>()) {
      llvm::append_range(pending, def->getOperands());
    }
  }
  return found.size() == 1 ? found[0] : BlockArgument();
}

SmallVector<BlockArgument> kfuse::kf::streamedRowInputs(KernelOp kernel,
                                                       RowSpace space) {
  SmallVector<BlockArgument> streamed;
  for (BlockArgument arg : kernel.getBody().getArguments()) {
    auto type = mlir::cast<RankedTensorType>(arg.getType());
    if (type.getRank() > 0 &&
        type.getNumElements() == space.rows * space.length &&
        type.getShape().back() == space.length &&
        llvm::all_of(arg.getUsers(), [](Operation *user) {
          // A column partial reads the row where it stands too. (A
          // reshape the kernel yields has no user with a result.)
          auto partial = dyn_cast<ReshapeOp>(user);
          Operation *sum = partial && partial->hasOneUse()
                               ? *partial->getUsers().begin()
                               : nullptr;
          return user->hasTrait<OpTrait::kf::Elementwise>() ||
                 isa<ReduceOp, SoftmaxOp>(user) ||
                 (sum && sum->getNumResults() == 1 &&
                  blockColumnPartialsOf(sum->getResult(0)));
        }))
      streamed.push_back(arg);
  }
  return streamed;
}

int64_t kfuse::kf::loopedRowPasses(KernelOp kernel, RowSpace space) {
  Block &body = kernel.getBody().front();
  int64_t passes = 0;
  llvm::SmallPtrSet<Operation *, 2> sharedSums;
  for (Operation &op : body.without_terminator()) {
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (ReduceOp sum = shiftedExpSumOf(reduce);
          sum && reduce->isBeforeInBlock(sum))
        sharedSums.insert(sum);
      passes += !sharedSums.contains(reduce);
    }
    passes += isa<SoftmaxOp>(op);
  }
  for (Value v : body.getTerminator()->getOperands())
    if (mlir::cast<RankedTensorType>(v.getType()).getNumElements() !=
        space.rows)
      return passes + 1;
  return passes;
}

ReduceOp kfuse::kf::shiftedExpSumOf(ReduceOp max) {
  int64_t rank = max.getInput().getType().getRank();
  if (max.getKind() != ReduceKind::max || !max.getKeepDims() ||
      max.getAxes() != ArrayRef<int64_t>{rank - 1})
    return {};
  for (Operation *user : max->getUsers()) {
    auto shift = dyn_cast<BroadcastOp>(user);
    if (!shift || shift.getType() != max.getInput().getType())
      continue;
    for (Operation *sub : shift->getUsers()) {
      auto diff = dyn_cast<SubOp>(sub);
      if (!diff || diff.getLhs() != max.getInput() ||
          diff.getRhs() != shift.getResult() || !diff->hasOneUse())
        continue;
      auto exp = dyn_cast<ExpOp>(*diff->getUsers().begin());
      if (!exp)
        continue;
      for (Operation *reduceUser : exp->getUsers())
        if (auto sum = dyn_cast<ReduceOp>(reduceUser);
            sum && sum.getKind() == ReduceKind::sum &&
            sum.getAxes() == max.getAxes() &&
            sum->getBlock() == max->getBlock())
          return sum;
    }
  }
  return {};
}

std::optional<RowSpace> kfuse::kf::rowOpSpace(Operation *op) {
  Value input;
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    int64_t rank = reduce.getInput().getType().getRank();
    if (reduce.getAxes().size() != 1 || reduce.getAxes()[0] != rank - 1 ||
        !isa<FloatType>(reduce.getType().getElementType()))
      return std::nullopt;
    input = reduce.getInput();
  } else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    if (int64_t(softmax.getAxis()) != softmax.getType().getRank() - 1)
      return std::nullopt;
    input = softmax.getInput();
  } else {
    return std::nullopt;
  }
  int64_t length = mlir::cast<RankedTensorType>(input.getType()).getShape().back();
  if (length == 0)
    return std::nullopt;
  return RowSpace{
      mlir::cast<RankedTensorType>(input.getType()).getNumElements() / length,
      length};
}
