//===- RowKernels.cpp - kf-lower-to-gpu's template for row kernels -------===//
//
// A kernel whose reductions and softmaxes run along the last axis: one block
// per row, or per group of short rows, each row a warp's lanes or an aligned
// part of them (`rowsPerBlock`). Each reduction is a pass over the row's
// lanes and a block (or lane group) reduction; with `inRegisters` the lanes
// are unrolled and every element is loaded (and every prologue computed)
// once, kept in registers across the passes. With `inShared` the first pass
// copies the row's streamed inputs into shared memory, all of a thread's
// vectors in flight at once, and the later passes read each thread's own
// lanes back (no barrier: a thread reads only what it wrote). Otherwise each
// pass loops over the row again, from global memory, and a softmax uses the
// online normaliser so that the row is read twice, not three times; so does
// a max with the sum of exponentials it shifts (a log-sum-exp, a cross-
// entropy), read once for both.
//
// Rows that kf-pad padded are read a whole vector at a time: the lanes
// span the longest padded row, and lanes past the row's end are masked.
// A padded output is written to its whole stride, zeros past the row's
// end, as kf-pad promises its consumers.
//
// A kernel that also yields column partials (a LayerNorm backward's weight
// and bias gradients) loops over its rows: RowKernelPartials.cpp.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/RowKernel.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

RowKernel::RowKernel(KernelEmitter &e, RowSpace space, RowTilingAttr tiling)
    : e(e), b(e.builder()), l(e.loc()), space(space),
      threads(e.kernel().getLaunchAttr().getBlock() / tiling.getRowsPerBlock()),
      vec(tiling.getVector()), chunks(tiling.getChunks()),
      rowsPerBlock(tiling.getRowsPerBlock()), cluster(tiling.getCluster()),
      inRegisters(tiling.getInRegisters()), inShared(tiling.getInShared()),
      ragged(space.length != tiling.getCluster() * threads * vec * chunks),
      wholeVectors(space.length % vec == 0), body(e.kernel().getBody().front()),
      yield(mlir::cast<YieldOp>(body.getTerminator())) {}

LogicalResult RowKernel::emit() {
  if (inRegisters)
    planRounds();
  size_t widest = 1;
  for (auto &round : rounds)
    widest = std::max(widest, round.second.size());
  scratch = workgroupBuffer(e, 32 * widest);
  Value thread = gpu::ThreadIdOp::create(b, l, gpu::Dimension::x);
  tid = arith::RemUIOp::create(b, l, thread, e.index(threads));
  laneTid = tid;
  Value group = arith::DivUIOp::create(b, l, thread, e.index(threads));
  streamed = streamedRowInputs(e.kernel(), space);
  if (space.length > 1)
    for (BlockArgument arg : body.getArguments())
      if (mlir::cast<ShapedType>(arg.getType()).getNumElements() == space.rows)
        rowScalars.push_back(arg);
  if (inShared)
    allocateStage();
  for (auto [i, value] : llvm::enumerate(yield.getValues()))
    if (std::optional<BlockColumnPartials> p = blockColumnPartialsOf(value))
      partials.push_back({unsigned(i), p->source});
  if (!partials.empty() && cluster > 1)
    return e.kernel().emitOpError()
           << "sums column partials, which its blocks take whole rows for, "
              "but splits its rows over clusters of "
           << cluster << " blocks";
  if (!partials.empty())
    return emitWithPartials(group);
  if (cluster > 1)
    return emitClusterRows();
  int64_t groups = (space.rows + rowsPerBlock - 1) / rowsPerBlock;
  return e.forEachItem(groups, true, [&](Value item) -> LogicalResult {
    if (rowsPerBlock == 1)
      return emitRow(item);
    Value r = arith::AddIOp::create(
        b, l, arith::MulIOp::create(b, l, item, e.index(rowsPerBlock)), group);
    if (space.rows % rowsPerBlock) {
      rowExists = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, r,
                                        e.index(space.rows));
      r = arith::SelectOp::create(b, l, rowExists, r,
                                  e.index(space.rows - 1));
    }
    return emitRow(r);
  });
}

LogicalResult RowKernel::emitRow(Value r) {
  row = r;
  rowBase = arith::MulIOp::create(b, l, row, e.index(space.length));
  unrolled.clear();
  rowStaged = false;
  if (!prefetched.empty())
    for (auto [i, arg] : llvm::enumerate(rowScalars))
      e.setElement(arg, row, prefetched[chunks * streamed.size() + i]);
  if (inShared)
    stageRow();
  if (inRegisters)
    for (int64_t c = 0; c < chunks; ++c)
      unrolled.push_back(lanesOf(e.index(c)));
  computedSums.clear();
  for (Operation &op : body.without_terminator()) {
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (blockColumnPartialsOf(reduce.getResult()))
        continue; // accumulate() adds the row to its running sums
      if (inEarlierRound.contains(reduce))
        continue;
      ReduceOp sum = inRegisters ? ReduceOp() : shiftedExpSumOf(reduce);
      auto round = rounds.find(reduce);
      if (sum && reduce->isBeforeInBlock(sum)) {
        emitOnlineLogSumExp(reduce, sum);
        computedSums.insert(sum);
      } else if (!computedSums.contains(reduce) &&
                 failed(round == rounds.end() ? emitReduces({reduce})
                                              : emitReduces(round->second))) {
        return failure();
      }
    } else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      if (inRegisters)
        emitSoftmaxInRegisters(softmax);
      else
        emitOnlineSoftmax(softmax);
    }
    if (failed(status))
      return failure();
  }
  if (failed(storeOutputs()))
    return failure();
  return status;
}

RowLanes RowKernel::lanesOf(Value c, bool load) {
  RowLanes lanes;
  Value vecIndex = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, c, e.index(cluster * threads)),
      laneTid);
  Value first = arith::MulIOp::create(b, l, vecIndex, e.index(vec));
  lanes.first = first;
  // Whole vectors: one test a vector, and a vector past the row reads the
  // row's first, so that its lanes stay consecutive and inputs read at
  // them (a LayerNorm's weights) load as vectors.
  Value base = first, vectorValid;
  if (ragged && wholeVectors) {
    vectorValid = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, first,
                                        e.index(space.length));
    base = arith::SelectOp::create(b, l, vectorValid, first, e.index(0));
  }
  for (int64_t k = 0; k < vec; ++k) {
    Value column =
        k ? Value(arith::AddIOp::create(b, l, base, e.index(k))) : base;
    Value valid = vectorValid;
    if (!valid)
      valid = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, column,
                                    e.index(space.length));
    if (ragged && !wholeVectors) // keep loads inside the row; value masked
      column = arith::SelectOp::create(b, l, valid, column, e.index(0));
    lanes.columns.push_back(column);
    lanes.linears.push_back(arith::AddIOp::create(b, l, rowBase, column));
    lanes.valid.push_back(valid);
  }
  if (!load)
    return lanes;
  for (auto [i, arg] : llvm::enumerate(streamed)) {
    Value raw;
    if (rowStaged)
      raw = e.loadRaw(stage[i], lanes.first, vec);
    else if (!prefetched.empty())
      raw = prefetched[*getConstantIntValue(c) * streamed.size() + i];
    if (!raw) {
      e.loadLanes(arg, BufferIndex(lanes.linears[0], row, lanes.columns[0]),
                  lanes.linears);
      continue;
    }
    SmallVector<Value> values = e.computeLanes(raw);
    for (auto [linear, value] : llvm::zip_equal(lanes.linears, values))
      e.setElement(arg, linear, value);
  }
  return lanes;
}

void RowKernel::allocateStage() {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value bytes = gpu::DynamicSharedMemoryOp::create(
      b, l, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                            workgroup));
  int64_t span = threads * chunks * vec, offset = 0;
  for (BlockArgument arg : streamed) {
    Type dtype = mlir::cast<RankedTensorType>(arg.getType()).getElementType();
    stage.push_back(memref::ViewOp::create(
        b, l, MemRefType::get({span}, dtype, AffineMap(), workgroup), bytes,
        e.index(offset), ValueRange{}));
    offset += span * dtype.getIntOrFloatBitWidth() / 8;
  }
}

void RowKernel::stageRow() {
  SmallVector<std::pair<Value, Value>> copies;
  for (int64_t c = 0; c < chunks; ++c) {
    RowLanes lanes = lanesOf(e.index(c), false);
    for (BlockArgument arg : streamed) {
      Value memref = e.gpuFunc().getArgument(arg.getArgNumber());
      Value from = e.offsetOf(
          arg.getArgNumber(),
          BufferIndex(lanes.linears[0], row, lanes.columns[0]));
      // Staged at the thread's own slot, `first` (the stage spans every
      // thread's chunks): a vector past the row reads the row's first but
      // must not be stored over it, which another thread reads back.
      copies.push_back({e.loadRaw(memref, from, vec), lanes.first});
    }
  }
  // Every load before the first store: a thread's vectors all in flight.
  for (auto [k, copy] : llvm::enumerate(copies)) {
    auto type = mlir::cast<VectorType>(copy.first.getType());
    vector::StoreOp::create(
        b, l, copy.first, stage[k % streamed.size()], ValueRange{copy.second},
        /*nontemporal=*/false,
        llvm::MaybeAlign(type.getNumElements() *
                         type.getElementTypeBitWidth() / 8));
  }
  rowStaged = true;
}

Value RowKernel::overRow(Value acc, LaneFn fn) {
  if (inRegisters) {
    for (const RowLanes &lanes : unrolled)
      for (int64_t k = 0; k < vec; ++k)
        acc = fn(acc, lanes, k);
    return acc;
  }
  return e.loop(chunks, {acc}, [&](Value c, ValueRange carried) {
    RowLanes lanes = lanesOf(c);
    Value a = carried[0];
    for (int64_t k = 0; k < vec; ++k)
      a = fn(a, lanes, k);
    return SmallVector<Value>{a};
  })[0];
}

Value RowKernel::element(Value tensor, const RowLanes &lanes, int64_t k) {
  ElementIndex idx = ElementIndex::rowElement(shapeOf(tensor), lanes.linears[k],
                                              row, lanes.columns[k]);
  FailureOr<Value> v = failure();
  if ((!ragged || wholeVectors) && k == 0 && vec > 1) {
    // Rows of whole vectors: a vector's lanes asked for together, so that
    // index maps (a gathered row, a slice) read their operand a vector at
    // a time. The other lanes are then found computed.
    FailureOr<SmallVector<Value>> vector =
        e.vectorAt(tensor, idx, lanes.linears);
    if (succeeded(vector))
      v = (*vector)[0];
  } else {
    v = e.elementAt(tensor, idx);
  }
  if (failed(v)) {
    status = failure();
    return e.f32(0);
  }
  return *v;
}

Value RowKernel::threadPartial(Value tensor, ReduceKind kind, Value identity,
                               function_ref<Value(Value)> map) {
  return overRow(identity, [&](Value acc, const RowLanes &lanes, int64_t k) {
    Value v = map(element(tensor, lanes, k));
    if (ragged)
      v = arith::SelectOp::create(b, l, lanes.valid[k], v, identity);
    return combine(e, kind, acc, v);
  });
}

SmallVector<Value>
RowKernel::rowReduce(ArrayRef<Value> partials, ArrayRef<Value> identities,
                     function_ref<Value(unsigned, Value, Value)> combine) {
  SmallVector<Value> reduced =
      e.blockReduce(partials, identities, scratch, threads, combine);
  if (cluster == 1)
    return reduced;
  return clusterReduce(reduced, combine);
}

Value RowKernel::rowReduce(Value partial, Value identity,
                           function_ref<Value(Value, Value)> combine) {
  return rowReduce(
      ArrayRef<Value>{partial}, ArrayRef<Value>{identity},
      [&](unsigned, Value x, Value y) { return combine(x, y); })[0];
}

Value RowKernel::reduceRow(Value tensor, ReduceKind kind, Type type,
                           function_ref<Value(Value)> map) {
  Value identity = reductionInit(e, kind, type);
  Value partial = threadPartial(tensor, kind, identity, map);
  return rowReduce(partial, identity,
                   [&](Value x, Value y) { return combine(e, kind, x, y); });
}

LogicalResult RowKernel::emitReduces(ArrayRef<ReduceOp> round) {
  SmallVector<Value> partials, identities;
  for (ReduceOp reduce : round) {
    Type type = KernelEmitter::computeType(reduce.getType().getElementType());
    if (!isa<FloatType>(type))
      return reduce.emitOpError("row kernels reduce floats only");
    identities.push_back(reductionInit(e, reduce.getKind(), type));
    partials.push_back(threadPartial(reduce.getInput(), reduce.getKind(),
                                     identities.back(),
                                     [](Value x) { return x; }));
  }
  SmallVector<Value> reduced =
      rowReduce(partials, identities, [&](unsigned i, Value x, Value y) {
        return combine(e, ReduceOp(round[i]).getKind(), x, y);
      });
  for (auto [i, v] : llvm::enumerate(reduced)) {
    ReduceOp reduce = round[i];
    if (reduce.getKind() == ReduceKind::mean)
      v = arith::DivFOp::create(b, l, v,
                                e.f32(static_cast<double>(space.length)));
    e.setElement(reduce.getResult(), row, v);
  }
  return success();
}

bool RowKernel::needsRowValueFrom(Value v, Operation *op) const {
  SmallVector<Value> pending = {v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!pending.empty()) {
    Operation *def = pending.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !seen.insert(def).second)
      continue;
    if (isa<ReduceOp, SoftmaxOp>(def) && !def->isBeforeInBlock(op))
      return true;
    llvm::append_range(pending, def->getOperands());
  }
  return false;
}

void RowKernel::planRounds() {
  // A LayerNorm backward's two sums (kf-separate-row-sums made them
  // independent) then wait on one round of shuffles and barriers, not on
  // two in a row.
  SmallVector<ReduceOp> open;
  for (auto reduce : body.getOps<ReduceOp>()) {
    if (blockColumnPartialsOf(reduce.getResult()) ||
        !isa<FloatType>(KernelEmitter::computeType(
            reduce.getType().getElementType())))
      continue;
    auto joinable = llvm::find_if(open, [&](ReduceOp first) {
      return !needsRowValueFrom(reduce.getInput(), first);
    });
    if (joinable == open.end()) {
      open.push_back(reduce);
      continue;
    }
    SmallVector<ReduceOp> &round = rounds[*joinable];
    if (round.empty())
      round.push_back(*joinable);
    round.push_back(reduce);
    inEarlierRound.insert(reduce);
  }
}

/// sum * exp(from - to), with an empty sum (from = -inf) staying 0.
static Value rescaleSum(KernelEmitter &e, Value sum, Value from, Value to) {
  OpBuilder &b = e.builder();
  Location l = e.loc();
  Value empty = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, from,
                                      e.f32(-INFINITY));
  Value factor = emitExp2Approx(
      b, l,
      arith::MulFOp::create(b, l, arith::SubFOp::create(b, l, from, to),
                            e.f32(M_LOG2E)));
  return arith::SelectOp::create(b, l, empty, e.f32(0),
                                 arith::MulFOp::create(b, l, sum, factor));
}

/// A row too long for registers: the online normaliser reads it once for
/// the max and the sum together. A vector's lanes share one rescale of the
/// running sum: one exponential an element and one a vector, not two an
/// element (which made long rows issue-bound on the H200).
std::pair<Value, Value> RowKernel::onlineMaxAndSum(Value x) {
  Value negInf = e.f32(-INFINITY), zero = e.f32(0);
  auto maximum = [&](Value a, Value c) -> Value {
    return arith::MaximumFOp::create(b, l, a, c);
  };
  SmallVector<Value> state = e.loop(
      chunks, {negInf, zero}, [&](Value c, ValueRange carried) {
        RowLanes lanes = lanesOf(c);
        SmallVector<Value> values;
        Value next = carried[0];
        for (int64_t k = 0; k < vec; ++k) {
          Value v = element(x, lanes, k);
          if (ragged)
            v = arith::SelectOp::create(b, l, lanes.valid[k], v, negInf);
          values.push_back(v);
          next = maximum(next, v);
        }
        Value s = rescaleSum(e, carried[1], carried[0], next);
        for (Value v : values)
          s = arith::AddFOp::create(b, l, s, rescaleSum(e, e.f32(1), v, next));
        return SmallVector<Value>{next, s};
      });
  Value max = rowReduce(state[0], negInf, maximum);
  Value sum = rowReduce(rescaleSum(e, state[1], state[0], max), zero,
                        [&](Value x, Value y) -> Value {
                          return arith::AddFOp::create(b, l, x, y);
                        });
  return {max, sum};
}

/// The softmax's statistics online; its output is a second read.
void RowKernel::emitOnlineSoftmax(SoftmaxOp softmax) {
  auto [max, sum] = onlineMaxAndSum(softmax.getInput());
  e.setSoftmaxStats(softmax, max, sum);
}

void RowKernel::emitOnlineLogSumExp(ReduceOp max, ReduceOp sum) {
  auto [m, s] = onlineMaxAndSum(max.getInput());
  e.setElement(max.getResult(), row, m);
  e.setElement(sum.getResult(), row, s);
}

/// A row in registers: the max, then each exponential once (kept for the
/// output) and their sum.
void RowKernel::emitSoftmaxInRegisters(SoftmaxOp softmax) {
  Value max = reduceRow(softmax.getInput(), ReduceKind::max, b.getF32Type(),
                        [](Value x) { return x; });
  SmallVector<Value> exps;
  // exp(x - max) as 2^(x log2 e - max log2 e): one FMA and one MUFU.EX2.
  // The rounding of max log2 e scales every term of the row alike, and
  // cancels in the normalisation (softmax bf16 1.24x -> 1.07x its HBM
  // floor on the H200, where libdevice's expf made the kernel issue-bound).
  Value shift = arith::MulFOp::create(b, l, max, e.f32(-M_LOG2E));
  Value sum = reduceRow(
      softmax.getInput(), ReduceKind::sum, b.getF32Type(),
      [&](Value x) -> Value {
        Value p = emitExp2Approx(
            b, l, math::FmaOp::create(b, l, x, e.f32(M_LOG2E), shift));
        exps.push_back(p);
        return p;
      });
  e.setSoftmaxStats(softmax, max, sum, shift);
  Value masked = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, max,
                                       e.f32(-INFINITY));
  Value inverse = arith::DivFOp::create(b, l, e.f32(1), sum);
  size_t next = 0;
  for (const RowLanes &lanes : unrolled)
    for (int64_t k = 0; k < vec; ++k)
      e.setElement(softmax.getResult(), lanes.linears[k],
                   arith::SelectOp::create(
                       b, l, masked, e.f32(0),
                       arith::MulFOp::create(b, l, exps[next++], inverse)));
}

LogicalResult RowKernel::storeOutputs() {
  std::optional<OpBuilder::InsertionGuard> insideRows;
  if (rowExists) {
    insideRows.emplace(b);
    auto guard = scf::IfOp::create(b, l, rowExists);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
  }
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    if (isPartial(i))
      continue; // storePartials() writes them after the last row
    auto type = mlir::cast<RankedTensorType>(value.getType());
    if (type.getNumElements() == space.rows) {
      FailureOr<Value> v =
          e.elementAt(value, ElementIndex::linear(type.getShape(), row));
      if (failed(v))
        return failure();
      // The row's first thread: of its cluster's first block.
      Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                          laneTid, e.index(0));
      auto guard = scf::IfOp::create(b, l, first);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      e.storeResult(i, row, *v);
      continue;
    }
    unsigned argNumber = e.kernel().getInputs().size() + i;
    if (int64_t stride = e.paddedStride(argNumber)) {
      storePadded(i, value, stride);
      continue;
    }
    SmallVector<Value> vector;
    overRow(e.index(0), [&](Value acc, const RowLanes &lanes, int64_t k) {
      Value v = element(value, lanes, k);
      if (!ragged || wholeVectors) {
        vector.push_back(v);
        if (k + 1 < vec)
          return acc;
        std::optional<OpBuilder::InsertionGuard> insideRow;
        if (ragged) {
          insideRow.emplace(b);
          auto guard = scf::IfOp::create(b, l, lanes.valid[0]);
          b.setInsertionPoint(guard.thenBlock()->getTerminator());
        }
        e.storeLanes(i, BufferIndex(lanes.linears[0], row, lanes.columns[0]),
                     vector);
        vector.clear();
        return acc;
      }
      auto guard = scf::IfOp::create(b, l, lanes.valid[k]);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      e.storeResult(i, BufferIndex(lanes.linears[k], row, lanes.columns[k]), v);
      return acc;
    });
  }
  return success();
}

void RowKernel::storePadded(unsigned i, Value value, int64_t stride) {
  SmallVector<Value> vector;
  overRow(e.index(0), [&](Value acc, const RowLanes &lanes, int64_t k) {
    Value v = element(value, lanes, k);
    vector.push_back(arith::SelectOp::create(b, l, lanes.valid[k], v,
                                             e.constant(v.getType(), 0)));
    if (k + 1 < vec)
      return acc;
    // kf-tile made `vec` divide the stride: a vector that starts inside the
    // padded row ends inside it.
    Value inside = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                         lanes.first, e.index(stride));
    auto guard = scf::IfOp::create(b, l, inside);
    OpBuilder::InsertionGuard insertion(b);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    e.storeLanes(i, BufferIndex(lanes.linears[0], row, lanes.first), vector);
    vector.clear();
    return acc;
  });
}


LogicalResult kfuse::kf::emitRows(KernelEmitter &e, RowSpace space) {
  return RowKernel(e, space, e.kernel().getTilingAs<RowTilingAttr>()).emit();
}
