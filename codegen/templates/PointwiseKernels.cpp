//===- PointwiseKernels.cpp - elementwise kernels, vectorised -------------===//
//
// The pointwise template: every result at every element, each thread step
// loading 16-byte vectors of the streamed inputs before any math and
// storing whole vectors; and the copy into padded rows that kf-pad adds
// before a matmul or attention operand. PointwiseTemplate.h states what
// the plan relies on: which inputs are streamed.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "codegen/templates/KernelTemplates.h"
#include "codegen/templates/PointwiseTemplate.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Every result at every element; each thread step handles `unroll`
/// vectors of `vec` consecutive elements, loading every streamed input
/// before any math (which may branch) and storing a vector at a time.
class PointwiseKernel {
public:
  PointwiseKernel(KernelEmitter &e, int64_t items);
  LogicalResult emit();

private:
  /// The step of the output's order that launch step `item` computes.
  Value groupedStep(Value item);
  /// The linear indices of step `item`'s lanes, a vector per unroll.
  SmallVector<SmallVector<Value>> lanesOf(Value item);
  /// Every streamed input of step `item`, flattened (unroll, input, lane).
  SmallVector<Value> loadStreamed(Value item);
  /// Records `loaded` (from loadStreamed) as the elements at `lanes`, reads
  /// the broadcast inputs, then computes and stores every result.
  LogicalResult computeStep(ArrayRef<SmallVector<Value>> lanes,
                            ArrayRef<Value> loaded);
  /// Records the elements of broadcast `leaf` at one vector's `linears`:
  /// a vector load of a row vector, one load of a column's element, or
  /// element by element.
  LogicalResult readBroadcast(BroadcastOp leaf, ArrayRef<Value> linears);

  KernelEmitter &e;
  OpBuilder &b;
  YieldOp yield;
  ArrayRef<int64_t> shape;
  PointwiseTilingAttr tiling;
  int64_t vec, unroll, step, steps;
  SmallVector<BlockArgument> streamed;
  SmallVector<BroadcastOp> broadcastLeaves;
};

PointwiseKernel::PointwiseKernel(KernelEmitter &e, int64_t items)
    : e(e), b(e.builder()),
      yield(mlir::cast<YieldOp>(e.kernel().getBody().front().getTerminator())),
      shape(shapeOf(yield.getValues()[0])),
      tiling(e.kernel().getTilingAs<PointwiseTilingAttr>()),
      vec(tiling.getVector()), unroll(tiling.getUnroll()), step(vec * unroll),
      steps(items / step) {
  streamed = streamedInputs(e.kernel());
  // Inputs broadcast over the output (a row vector, a column scalar): read
  // together with the streamed ones, not between the math of two lanes,
  // where an opaque libdevice asm would keep LLVM from merging them into
  // one vector load.
  e.kernel().getBody().walk([&](BroadcastOp op) {
    if (isa<BlockArgument>(op.getInput()) && shapeOf(op.getResult()) == shape)
      broadcastLeaves.push_back(op);
  });
}

LogicalResult PointwiseKernel::emit() {
  return e.forEachItem(steps, false, [&](Value item) {
    Value step = groupedStep(item);
    return computeStep(lanesOf(step), loadStreamed(step));
  });
}

Value PointwiseKernel::groupedStep(Value item) {
  // Launch step `item` is thread item % block of chunk c = item / block;
  // chunk c is chunk c / groups of group c % groups, so that consecutive
  // blocks take the same chunk of every group (the verifier checks that
  // each group has the same whole number of chunks).
  int64_t groups = tiling.getGroups();
  if (groups == 1)
    return item;
  Location l = e.loc();
  int64_t block = e.kernel().getLaunchAttr().getBlock();
  int64_t chunksPerGroup = steps / block / groups;
  Value chunk = arith::DivUIOp::create(b, l, item, e.index(block));
  Value group = arith::RemUIOp::create(b, l, chunk, e.index(groups));
  Value inGroup = arith::DivUIOp::create(b, l, chunk, e.index(groups));
  Value source = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, group, e.index(chunksPerGroup)),
      inGroup);
  return arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, source, e.index(block)),
      arith::RemUIOp::create(b, l, item, e.index(block)));
}

SmallVector<SmallVector<Value>> PointwiseKernel::lanesOf(Value item) {
  // Adjacent: step `item` takes vectors item * unroll + u. Interleaved:
  // step `item` is thread t = item % block of chunk item / block, a chunk
  // is unroll x block consecutive vectors, and the thread takes vectors
  // t + u * block of it, so that each warp access is one contiguous run.
  Location l = e.loc();
  int64_t block = e.kernel().getLaunchAttr().getBlock();
  bool interleave = tiling.getInterleave();
  Value base = arith::MulIOp::create(b, l, item, e.index(unroll));
  if (interleave)
    base = arith::AddIOp::create(
        b, l, item,
        arith::MulIOp::create(
            b, l, arith::DivUIOp::create(b, l, item, e.index(block)),
            e.index((unroll - 1) * block)));
  int64_t strideVectors = interleave ? block : 1;
  SmallVector<SmallVector<Value>> lanes(unroll);
  for (int64_t u = 0; u < unroll; ++u) {
    Value first = arith::MulIOp::create(
        b, l, arith::AddIOp::create(b, l, base, e.index(u * strideVectors)),
        e.index(vec));
    lanes[u].push_back(first);
    for (int64_t k = 1; k < vec; ++k)
      lanes[u].push_back(arith::AddIOp::create(b, l, first, e.index(k)));
  }
  return lanes;
}

LogicalResult PointwiseKernel::readBroadcast(BroadcastOp leaf,
                                             ArrayRef<Value> linears) {
  std::optional<BroadcastSplit> split = splitBroadcast(leaf);
  auto input = mlir::cast<BlockArgument>(leaf.getInput());
  Location l = e.loc();
  if (split && split->rest % vec == 0) {
    // A vector's lanes read consecutive elements of a row vector, or one
    // element of a column.
    SmallVector<Value> values =
        split->kind == BroadcastSplit::trailing
            ? e.loadVector(input,
                           Value(arith::RemUIOp::create(b, l, linears[0],
                                                        e.index(split->rest))),
                           vec)
            : SmallVector<Value>(vec, e.loadVector(input,
                                                   Value(arith::DivUIOp::create(
                                                       b, l, linears[0],
                                                       e.index(split->rest))),
                                                   1)[0]);
    for (auto [linear, value] : llvm::zip_equal(linears, values))
      e.setElement(leaf.getResult(), linear, value);
    return success();
  }
  for (Value linear : linears)
    if (failed(
            e.elementAt(leaf.getResult(), ElementIndex::linear(shape, linear))))
      return failure();
  return success();
}

SmallVector<Value> PointwiseKernel::loadStreamed(Value item) {
  SmallVector<Value> loaded;
  for (const SmallVector<Value> &linears : lanesOf(item))
    for (BlockArgument arg : streamed)
      llvm::append_range(loaded, e.loadVector(arg, linears[0], vec));
  return loaded;
}

LogicalResult PointwiseKernel::computeStep(ArrayRef<SmallVector<Value>> lanes,
                                           ArrayRef<Value> loaded) {
  const Value *next = loaded.begin();
  for (const SmallVector<Value> &linears : lanes) {
    for (BlockArgument arg : streamed)
      for (Value linear : linears)
        e.setElement(arg, linear, *next++);
    for (BroadcastOp leaf : broadcastLeaves)
      if (failed(readBroadcast(leaf, linears)))
        return failure();
  }
  // Every vector of the step computed before any is stored: loads through
  // index maps (a gathered row, a concat part in a branch) of all the
  // step's vectors are then in flight together, where a store between them
  // (which may alias, as far as LLVM knows) would order them.
  SmallVector<SmallVector<SmallVector<Value>>> results(lanes.size());
  for (auto [u, linears] : llvm::enumerate(lanes))
    for (Value value : yield.getValues()) {
      FailureOr<SmallVector<Value>> v = e.vectorAt(
          value, ElementIndex::linear(shapeOf(value), linears[0]), linears);
      if (failed(v))
        return failure();
      results[u].push_back(std::move(*v));
    }
  for (auto [u, linears] : llvm::enumerate(lanes))
    for (auto [i, values] : llvm::enumerate(results[u]))
      e.storeLanes(i, linears[0], values, tiling.getStreamStores());
  return success();
}

} // namespace

LogicalResult kfuse::kf::emitPointwise(KernelEmitter &e, int64_t items) {
  return PointwiseKernel(e, items).emit();
}

/// A pointwise kernel whose result kf-pad padded (its copy of a matmul
/// operand): a thread step writes `vec` consecutive elements of a padded
/// row, computed where the row has them and zero past its end.
LogicalResult kfuse::kf::emitPaddedRows(KernelEmitter &e, int64_t items) {
  KernelOp kernel = e.kernel();
  Value root = rootValue(kernel);
  ArrayRef<int64_t> shape = shapeOf(root);
  int64_t length = shape.back();
  int64_t vec = kernel.getTilingAs<PointwiseTilingAttr>().getVector();
  int64_t stride = paddedRowStride(kernel.getResult(0));
  OpBuilder &b = e.builder();
  Location l = e.loc();
  Type type = KernelEmitter::computeType(getElementTypeOrSelf(root.getType()));
  return e.forEachItem(items / vec, false, [&](Value step) -> LogicalResult {
    Value first = arith::MulIOp::create(b, l, step, e.index(vec));
    Value row = arith::DivUIOp::create(b, l, first, e.index(stride));
    Value column0 = arith::RemUIOp::create(b, l, first, e.index(stride));
    Value rowBase = arith::MulIOp::create(b, l, row, e.index(length));
    SmallVector<Value> values;
    for (int64_t k = 0; k < vec; ++k) {
      Value column = arith::AddIOp::create(b, l, column0, e.index(k));
      Value inside = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                           column, e.index(length));
      auto ifOp = scf::IfOp::create(b, l, TypeRange{type}, inside, true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value linear = arith::AddIOp::create(b, l, rowBase, column);
      FailureOr<Value> v = e.elementAt(
          root, ElementIndex::rowElement(shape, linear, row, column));
      if (failed(v))
        return failure();
      scf::YieldOp::create(b, l, *v);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, l, e.constant(type, 0));
      values.push_back(ifOp.getResult(0));
    }
    e.storeLanes(0,
                 BufferIndex(arith::AddIOp::create(b, l, rowBase, column0), row,
                             column0),
                 values);
    return success();
  });
}

bool kfuse::kf::usesPointwiseTemplate(KernelOp kernel) {
  return kernel.getKind() == KernelKind::pointwise &&
         !kernel.getTilingAs<TransposeTilingAttr>() &&
         !paddedRowStride(kernel.getResult(0));
}

/// Whether every use of `arg`, transitively, reads it at the element it
/// computes: elementwise ops and reshapes (same linear index) up to the
/// yield. An index map (a gather, a slice, a transpose) would read other
/// elements, which a thread step does not load and an in-place output may
/// already have overwritten.
static bool readOnlyInPlace(BlockArgument arg) {
  SmallVector<Value> worklist = {arg};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    for (Operation *user : worklist.pop_back_val().getUsers()) {
      if (isa<YieldOp>(user) || !seen.insert(user).second)
        continue;
      if (!user->hasTrait<OpTrait::kf::Elementwise>() && !isa<ReshapeOp>(user))
        return false;
      worklist.push_back(user->getResult(0));
    }
  }
  return true;
}

SmallVector<BlockArgument> kfuse::kf::streamedInputs(KernelOp kernel) {
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  ArrayRef<int64_t> shape = shapeOf(yield.getValues()[0]);
  SmallVector<BlockArgument> streamed;
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    if (mlir::cast<RankedTensorType>(arg.getType()).getShape() == shape &&
        readOnlyInPlace(arg))
      streamed.push_back(arg);
  return streamed;
}
