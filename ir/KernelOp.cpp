//===- KernelOp.cpp - kf.kernel: its verifier and decision queries --------===//
//
// A kf.kernel's body is one kernel's worth of kf ops; its decision
// attributes (launch, tiling, pipeline) say how a template computes it.
// The verifier holds the decisions to each other and to the body, so that
// the passes after kf-tile and the templates can rely on them.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "ir/VerifierSupport.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

/// The kernel kinds whose templates take `tiling`.
static bool tilingFitsKind(Attribute tiling, KernelKind kind) {
  return llvm::TypeSwitch<Attribute, bool>(tiling)
      .Case<PointwiseTilingAttr, TransposeTilingAttr>(
          [&](auto) { return kind == KernelKind::pointwise; })
      .Case<RowTilingAttr>([&](auto) {
        return kind == KernelKind::reduction ||
               kind == KernelKind::normalization;
      })
      .Case<ColumnTilingAttr, ColumnScanTilingAttr, IndexAddTilingAttr>(
          [&](auto) { return kind == KernelKind::reduction; })
      .Case<MmaTilingAttr>([&](auto) { return kind == KernelKind::matmul; })
      .Case<FlashTilingAttr>(
          [&](auto) { return kind == KernelKind::attention; })
      .Case<FlashGradTilingAttr>(
          [&](auto) { return kind == KernelKind::attention_grad; })
      .Default([](Attribute) { return false; });
}

/// kf-pad's row strides: one per result, each 0 (dense) or at least the
/// length of the result's rows.
static LogicalResult verifyPaddedRows(KernelOp kernel) {
  std::optional<ArrayRef<int64_t>> strides = kernel.getPaddedRows();
  if (!strides)
    return success();
  if (strides->size() != kernel.getNumResults())
    return kernel.emitOpError()
           << "has " << strides->size() << " padded_rows strides for "
           << kernel.getNumResults() << " results";
  for (auto [i, stride] : llvm::enumerate(*strides)) {
    auto type = cast<RankedTensorType>(kernel.getResult(i).getType());
    if (stride != 0 && (type.getRank() < 2 || stride < type.getShape().back()))
      return kernel.emitOpError()
             << "pads the rows of result " << i << " (" << type
             << ") to a stride of " << stride
             << ": needs 0 or at least the row's length, at rank 2 or more";
  }
  return success();
}

/// A pointwise tiling in groups deals the blocks' chunks (a block's thread
/// step each) out among them: every group takes the same whole number.
static LogicalResult verifyPointwiseGroups(KernelOp kernel) {
  auto tiling = kernel.getTilingAs<PointwiseTilingAttr>();
  if (!tiling || tiling.getGroups() == 1 || !kernel.getLaunchAttr())
    return success();
  LaunchAttr launch = kernel.getLaunchAttr();
  int64_t chunk =
      tiling.getVector() * tiling.getUnroll() * launch.getBlock();
  if (launch.getItems() % (chunk * tiling.getGroups()) == 0)
    return success();
  return kernel.emitOpError()
         << "splits " << launch.getItems() << " elements into "
         << tiling.getGroups() << " groups of whole chunks of " << chunk
         << " (vector x unroll x block): they do not divide";
}

/// Unordered, the launch zeroes the sums' buffer and the threads add into
/// it: the kernel writes the sums and nothing in it reads them, and only
/// where the target allows unordered adds.
static LogicalResult verifyUnorderedIndexAdd(KernelOp kernel, Value sum) {
  if (!sum.hasOneUse() || !isa<YieldOp>(*sum.getUsers().begin()))
    return kernel.emitOpError("adds into its index_add's result: it must "
                              "be a result of the kernel, read by nothing "
                              "else in it");
  if (!TargetAttr::of(kernel).getUnorderedAdds())
    return kernel.emitOpError("adds in any order (index_add_tiling "
                              "unordered) but its target keeps sums "
                              "deterministic");
  return success();
}

/// Ordered, the template stores each result where it has each sum (what
/// reads the sums is an elementwise epilogue), and the launch takes a block
/// a tile.
static LogicalResult verifyOrderedIndexAdd(KernelOp kernel, IndexAddOp op,
                                           IndexAddTilingAttr tiling) {
  SmallVector<Operation *> readers(op.getResult().getUsers());
  while (!readers.empty()) {
    Operation *reader = readers.pop_back_val();
    if (isa<YieldOp>(reader))
      continue;
    if (!reader->hasTrait<OpTrait::kf::Elementwise>() && !isa<SelectOp>(reader))
      return kernel.emitOpError()
             << "sums an index_add in tiles and stores its results at each "
                "sum, but '"
             << reader->getName() << "' reads the sums: only elementwise "
                                     "ops may";
    llvm::append_range(readers, reader->getUsers());
  }
  // A vector of columns lies in one result row.
  if (int64_t post = op.getScatterSpace()[2]; post % tiling.getVector())
    return kernel.emitOpError()
           << "sums an index_add in vectors of " << tiling.getVector()
           << " columns, but its rows have " << post;
  LaunchAttr launch = kernel.getLaunchAttr();
  if (!launch)
    return success();
  int64_t tiles =
      op.getTileCount(tiling.getRowsPerBlock(), tiling.getColumnsPerBlock());
  int64_t bytes = tiling.getRowsPerBlock() * tiling.getSumsPerRow() * 4;
  if (launch.getBlock() != kIndexAddThreads || launch.getItems() != tiles ||
      launch.getSharedBytes() != bytes)
    return kernel.emitOpError()
           << "sums " << tiles << " tiles of " << tiling.getRowsPerBlock()
           << " x " << tiling.getColumnsPerBlock() << " in blocks of "
           << kIndexAddThreads << " threads and " << bytes
           << " bytes of shared sums, but its launch is " << launch;
  return success();
}

/// An index_add tiling's kernel computes one kf.index_add, unordered or in
/// tiles.
static LogicalResult verifyIndexAddTiling(KernelOp kernel) {
  auto tiling = kernel.getTilingAs<IndexAddTilingAttr>();
  if (!tiling)
    return success();
  auto ops = kernel.getBody().getOps<IndexAddOp>();
  if (ops.empty() || std::next(ops.begin()) != ops.end())
    return kernel.emitOpError("has an index_add_tiling but not one "
                              "kf.index_add");
  IndexAddOp op = *ops.begin();
  return tiling.getUnordered()
             ? verifyUnorderedIndexAdd(kernel, op.getResult())
             : verifyOrderedIndexAdd(kernel, op, tiling);
}

/// A row split over clusters: a launch of whole clusters, on a chip that
/// has them.
static LogicalResult verifyRowCluster(KernelOp kernel, RowTilingAttr rows) {
  int64_t cluster = rows.getCluster();
  if (cluster == 1)
    return success();
  if (!TargetAttr::of(kernel).hasClusters())
    return kernel.emitOpError()
           << "splits its rows over clusters of " << cluster
           << " blocks, which chip \"" << TargetAttr::of(kernel).getChip()
           << "\" does not have";
  // argmax's and cumsum's templates take each row in one block.
  if (!kernel.getBody().getOps<ArgReduceOp>().empty() ||
      !kernel.getBody().getOps<CumsumOp>().empty())
    return kernel.emitOpError()
           << "splits its rows over clusters of " << cluster
           << " blocks, but an argmax, argmin or cumsum takes a row in one "
              "block";
  int64_t grid = kernel.getLaunchAttr().getGrid();
  if (grid % cluster)
    return kernel.emitOpError()
           << "launches " << grid << " blocks in clusters of " << cluster
           << ": not a whole number of clusters";
  return success();
}

/// A row tiling's rows staged in shared memory have some, and a block
/// shared among several rows gives each an equal share of at most a warp,
/// or whole warps (a row's threads reduce with shuffles among a warp's
/// lanes, or over whole warps: blockReduce).
static LogicalResult verifyRowTiling(KernelOp kernel) {
  auto rows = kernel.getTilingAs<RowTilingAttr>();
  if (!rows)
    return success();
  if (rows.getInShared() && kernel.getLaunchAttr().getSharedBytes() == 0)
    return kernel.emitOpError(
        "stages its rows in shared memory but its launch has none");
  if (failed(verifyRowCluster(kernel, rows)))
    return failure();
  if (rows.getRowsPerBlock() <= 1)
    return success();
  int64_t block = kernel.getLaunchAttr().getBlock();
  int64_t share = block / rows.getRowsPerBlock();
  if (block % rows.getRowsPerBlock() || (share > 32 && share % 32))
    return kernel.emitOpError()
           << "shares a block of " << block << " threads among "
           << rows.getRowsPerBlock()
           << " rows: a row's threads must be an equal share of at most "
              "a warp, or whole warps";
  return success();
}

/// A column scan's thread reads and writes its columns as one vector a
/// row: the columns (the dims after the cumsum's axis) are a multiple of
/// their count, so that no vector straddles a row or the columns' end.
static LogicalResult verifyColumnScanTiling(KernelOp kernel) {
  auto scan = kernel.getTilingAs<ColumnScanTilingAttr>();
  if (!scan || scan.getColumnsPerThread() == 1)
    return success();
  for (CumsumOp op : kernel.getBody().getOps<CumsumOp>()) {
    ArrayRef<int64_t> shape = op.getType().getShape();
    int64_t columns = 1;
    for (int64_t d = op.getAxis() + 1; d < int64_t(shape.size()); ++d)
      columns *= shape[d];
    if (columns % scan.getColumnsPerThread())
      return kernel.emitOpError()
             << "scans " << columns << " columns " << scan.getColumnsPerThread()
             << " a thread: the columns must be a multiple of them";
  }
  return success();
}

/// dqAtomic: the launch zeroes dq's buffer and the blocks add into it, so
/// dq is the kernel's own f32 result, not an input to anything else in it.
static LogicalResult verifyAtomicDq(KernelOp kernel) {
  auto grad = kernel.getTilingAs<FlashGradTilingAttr>();
  auto ops = kernel.getBody().getOps<AttentionGradOp>();
  if (!grad || !grad.getDqAtomic() || ops.empty())
    return success();
  Value dq = (*ops.begin()).getDq();
  if (!getElementTypeOrSelf(dq.getType()).isF32() || !dq.hasOneUse() ||
      !isa<YieldOp>(*dq.getUsers().begin()))
    return kernel.emitOpError(
        "adds dq into memory (dqAtomic): dq must be f32 and a result of "
        "the kernel, used by nothing else");
  return success();
}

/// A pipeline is the one its tiling's template takes, and a TMA pipeline
/// only where that template has one.
static LogicalResult verifyPipeline(KernelOp kernel) {
  Attribute tiling = kernel.getTilingAttr(),
            pipeline = kernel.getPipelineAttr();
  auto mma = kernel.getTilingAs<MmaTilingAttr>();
  auto grad = kernel.getTilingAs<FlashGradTilingAttr>();
  if (isa_and_nonnull<MmaPipelineAttr>(pipeline) != bool(pipeline && mma) ||
      isa_and_nonnull<FlashPipelineAttr>(pipeline) !=
          bool(pipeline && kernel.getTilingAs<FlashTilingAttr>()) ||
      isa_and_nonnull<FlashGradPipelineAttr>(pipeline) !=
          bool(pipeline && grad))
    return kernel.emitOpError()
           << "has " << pipeline << " for tiling " << tiling;
  if (auto p = kernel.getPipelineAs<FlashGradPipelineAttr>();
      p && p.getTma() && grad.getDqAtomic())
    return kernel.emitOpError(
        "has a TMA pipeline for a dqAtomic attention_grad: the atomic "
        "template's warpgroups exchange dS^T at block barriers");
  if (auto p = kernel.getPipelineAs<MmaPipelineAttr>();
      p && p.getTma() && !mma.getWgmma())
    return kernel.emitOpError("has a TMA pipeline for an mma.sync tiling: "
                              "the warp-specialised pipeline needs wgmma");
  if (auto p = kernel.getPipelineAs<MmaPipelineAttr>();
      p && !p.getTma() && mma.getEdgeN())
    return kernel.emitOpError()
           << "has edgeN = " << mma.getEdgeN()
           << " without a TMA pipeline: only the warp-specialised template "
              "computes narrower edge tiles";
  return success();
}

/// An mma tiling's kernel has a kf.matmul, with TF32 tiles exactly for f32
/// operands.
static LogicalResult verifyMmaTiling(KernelOp kernel) {
  auto mma = kernel.getTilingAs<MmaTilingAttr>();
  if (!mma)
    return success();
  auto matmuls = kernel.getBody().getOps<MatmulOp>();
  if (matmuls.empty())
    return kernel.emitOpError("has an mma_tiling but no kf.matmul");
  Type dtype = getElementTypeOrSelf((*matmuls.begin()).getA().getType());
  if (dtype.isF32() != mma.getTf32())
    return kernel.emitOpError()
           << "has " << dtype
           << " operands and tf32 = " << (mma.getTf32() ? "true" : "false")
           << ": TF32 tiles are for f32 operands, and f32 needs them";
  return success();
}

/// The decision attributes agree with each other and with the kernel: a
/// tiling for its kind under a launch, a pipeline for its tiling, and each
/// tiling's own conditions.
static LogicalResult verifyDecisions(KernelOp kernel) {
  Attribute tiling = kernel.getTilingAttr(),
            pipeline = kernel.getPipelineAttr();
  auto emitError = [&] {
    return kernel.emitOpError("has an invalid decision: ");
  };
  for (Attribute decision :
       {Attribute(kernel.getLaunchAttr()), tiling, pipeline})
    if (failed(verifyDecisionAttr(decision, emitError)))
      return failure();
  if ((tiling || pipeline) && !kernel.getLaunchAttr())
    return kernel.emitOpError("has a tiling or pipeline but no launch");
  if (tiling && !tilingFitsKind(tiling, kernel.getKind()))
    return kernel.emitOpError()
           << "of kind " << stringifyKernelKind(kernel.getKind())
           << " cannot take " << tiling;
  return success(succeeded(verifyPointwiseGroups(kernel)) &&
                 succeeded(verifyIndexAddTiling(kernel)) &&
                 succeeded(verifyRowTiling(kernel)) &&
                 succeeded(verifyColumnScanTiling(kernel)) &&
                 succeeded(verifyAtomicDq(kernel)) &&
                 succeeded(verifyPipeline(kernel)) &&
                 succeeded(verifyMmaTiling(kernel)));
}

/// `runtime_extents` holds (input, dim) pairs of the kernel's inputs, each
/// once; only the FlashAttention template takes one today: the key length
/// (dim 2 of its K operand, a kernel argument, with V of the same keys).
static LogicalResult verifyRuntimeExtents(KernelOp kernel) {
  DenseI64ArrayAttr extents = kernel.getRuntimeExtentsAttr();
  if (!extents)
    return success();
  ArrayRef<int64_t> pairs = extents.asArrayRef();
  if (pairs.empty() || pairs.size() % 2)
    return kernel.emitOpError("has runtime_extents that are not (input, dim) "
                              "pairs");
  auto attention = kernel.getBody().getOps<AttentionOp>();
  if (!kernel.getTilingAs<FlashTilingAttr>() || attention.empty())
    return kernel.emitOpError("has runtime_extents, which only the "
                              "FlashAttention template takes");
  auto keys = dyn_cast<BlockArgument>((*attention.begin()).getK());
  for (size_t i = 0; i < pairs.size(); i += 2)
    if (!keys || pairs[i] != keys.getArgNumber() || pairs[i + 1] != 2)
      return kernel.emitOpError()
             << "has runtime extent (" << pairs[i] << ", " << pairs[i + 1]
             << "): the FlashAttention template takes the key length only, "
                "dim 2 of its K input";
  return success();
}

int64_t KernelOp::runtimeExtentIndex(unsigned input, int64_t dim) {
  DenseI64ArrayAttr extents = getRuntimeExtentsAttr();
  if (!extents)
    return -1;
  ArrayRef<int64_t> pairs = extents.asArrayRef();
  for (size_t i = 0; i + 1 < pairs.size(); i += 2)
    if (pairs[i] == input && pairs[i + 1] == dim)
      return i / 2;
  return -1;
}

SmallVector<unsigned> KernelOp::resultsAddedInto() {
  if (auto scatter = getTilingAs<IndexAddTilingAttr>()) {
    if (!scatter.getUnordered())
      return {};
    // The verifier holds the kernel to its index_add, yielded directly.
    SmallVector<unsigned> added;
    auto yield = cast<YieldOp>(getBody().front().getTerminator());
    for (auto [i, v] : llvm::enumerate(yield.getValues()))
      if (v.getDefiningOp<IndexAddOp>())
        added.push_back(i);
    return added;
  }
  auto grad = getTilingAs<FlashGradTilingAttr>();
  auto ops = getBody().getOps<AttentionGradOp>();
  if (!grad || !grad.getDqAtomic() || ops.empty())
    return {};
  // The verifier holds dq to a result of the kernel, yielded directly.
  Value dq = (*ops.begin()).getDq();
  for (OpOperand &use : dq.getUses())
    if (isa<YieldOp>(use.getOwner()))
      return {use.getOperandNumber()};
  return {};
}

bool KernelOp::copiesWithTma() {
  if (auto mma = getPipelineAs<MmaPipelineAttr>())
    return mma.getTma();
  if (auto grad = getPipelineAs<FlashGradPipelineAttr>())
    return grad.getTma();
  auto flash = getPipelineAs<FlashPipelineAttr>();
  return flash && flash.getTma();
}

bool KernelOp::usesWgmma() {
  if (auto mma = getTilingAs<MmaTilingAttr>())
    return mma.getWgmma();
  return getTilingAs<FlashTilingAttr>() || getTilingAs<FlashGradTilingAttr>();
}

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError() << "block arguments must match the inputs: "
                         << body.getNumArguments() << " arguments for "
                         << getInputs().size() << " inputs";
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in kf.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "kf.yield gives " << yield.getValues().size()
                         << " values that must match the "
                         << getNumResults() << " results' types";
  if (failed(verifyPaddedRows(*this)) || failed(verifyRuntimeExtents(*this)))
    return failure();
  return verifyDecisions(*this);
}

