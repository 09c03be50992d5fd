//===- LowerToGPU.cpp - kf-lower-to-gpu: one gpu.func per kernel ----------===//
//
// Each kernel kind has a template that loops over the kernel's work items
// (as kf-tile recorded them) and asks the KernelEmitter for the elements it
// needs: vectorised pointwise kernels, row kernels (RowKernels.cpp), column
// reductions and transposes through shared-memory tiles; and the simple
// templates still waiting for faster ones: one thread per output element
// for matmul and attention, per output of a reduction over other axes, per
// row of a softmax along another axis.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "codegen/templates/KernelTemplates.h"
#include "analysis/MatmulTiling.h"
#include "codegen/templates/PointwiseTemplate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFLOWERTOGPUPASS
#include "codegen/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

// The helpers the templates share (KernelTemplates.h).

Value kfuse::kf::rootValue(KernelOp kernel) {
  return mlir::cast<YieldOp>(kernel.getBody().front().getTerminator())
      .getValues()[0];
}

std::optional<unsigned> kfuse::kf::lseResultOf(KernelOp kernel,
                                               AttentionOp op) {
  if (!op.getLse())
    return std::nullopt;
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (v == op.getLse())
      return unsigned(i);
  return std::nullopt;
}

Value kfuse::kf::combine(KernelEmitter &e, ReduceKind kind, Value acc, Value v) {
  OpBuilder &b = e.builder();
  bool isFloat = isa<FloatType>(acc.getType());
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::mean:
    return isFloat ? Value(arith::AddFOp::create(b, e.loc(), acc, v))
                   : Value(arith::AddIOp::create(b, e.loc(), acc, v));
  case ReduceKind::max:
    return isFloat ? Value(arith::MaximumFOp::create(b, e.loc(), acc, v))
                   : Value(arith::MaxSIOp::create(b, e.loc(), acc, v));
  case ReduceKind::min:
    return isFloat ? Value(arith::MinimumFOp::create(b, e.loc(), acc, v))
                   : Value(arith::MinSIOp::create(b, e.loc(), acc, v));
  }
  return acc;
}

Value kfuse::kf::reductionInit(KernelEmitter &e, ReduceKind kind, Type type) {
  if (isa<FloatType>(type))
    return e.f32(kind == ReduceKind::max   ? -INFINITY
                 : kind == ReduceKind::min ? INFINITY
                                           : 0.0);
  return e.constant(type, kind == ReduceKind::max   ? INT32_MIN
                          : kind == ReduceKind::min ? INT32_MAX
                                                    : 0);
}

Value kfuse::kf::workgroupBuffer(KernelEmitter &e, int64_t floats) {
  OpBuilder &b = e.builder();
  return e.gpuFunc().addWorkgroupAttribution(
      MemRefType::get({floats}, b.getF32Type(), AffineMap(),
                      gpu::AddressSpaceAttr::get(b.getContext(),
                                                 gpu::AddressSpace::Workgroup)),
      e.loc());
}


namespace {

/// Every result at every element; each thread step handles `unroll`
/// vectors of `vec` consecutive elements, loading every streamed input
/// before any math (which may branch) and storing a vector at a time.
class PointwiseKernel {
public:
  PointwiseKernel(KernelEmitter &e, int64_t items);
  LogicalResult emit();

private:
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
  int64_t vec, unroll, step, steps;
  SmallVector<BlockArgument> streamed;
  SmallVector<BroadcastOp> broadcastLeaves;
};

PointwiseKernel::PointwiseKernel(KernelEmitter &e, int64_t items)
    : e(e), b(e.builder()),
      yield(mlir::cast<YieldOp>(e.kernel().getBody().front().getTerminator())),
      shape(shapeOf(yield.getValues()[0])),
      vec(configValue(e.kernel(), "vec", 1)),
      unroll(configValue(e.kernel(), "unroll", 1)), step(vec * unroll),
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
    return computeStep(lanesOf(item), loadStreamed(item));
  });
}

SmallVector<SmallVector<Value>> PointwiseKernel::lanesOf(Value item) {
  // Adjacent: step `item` takes vectors item * unroll + u. Interleaved:
  // step `item` is thread t = item % block of chunk item / block, a chunk
  // is unroll x block consecutive vectors, and the thread takes vectors
  // t + u * block of it, so that each warp access is one contiguous run.
  Location l = e.loc();
  int64_t block = configValue(e.kernel(), "block", 1);
  bool interleave = configValue(e.kernel(), "interleave", 0);
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
  for (const SmallVector<Value> &linears : lanes) {
    SmallVector<SmallVector<Value>> results(yield.getValues().size());
    for (Value linear : linears)
      for (auto [i, value] : llvm::enumerate(yield.getValues())) {
        FailureOr<Value> v =
            e.elementAt(value, ElementIndex::linear(shapeOf(value), linear));
        if (failed(v))
          return failure();
        results[i].push_back(*v);
      }
    for (auto [i, values] : llvm::enumerate(results))
      e.storeLanes(i, linears[0], values);
  }
  return success();
}

/// One thread per output element of a reduction over any axes, looping
/// over the reduced elements.
LogicalResult emitReduction(KernelEmitter &e, int64_t items) {
  // The reduction is the result, or (kf-split-k's epilogue kernels) feeds
  // elementwise ops of the result's shape.
  Value root = rootValue(e.kernel());
  auto reduce = root.getDefiningOp<ReduceOp>();
  if (!reduce)
    e.kernel().getBody().walk([&](ReduceOp op) { reduce = op; });
  if (!reduce || shapeOf(reduce) != shapeOf(root))
    return e.kernel().emitOpError(
        "has no reduction whose result has the kernel result's shape");
  ArrayRef<int64_t> inShape = shapeOf(reduce.getInput());
  ArrayRef<int64_t> axes = reduce.getAxes();
  SmallVector<int64_t> reducedShape;
  int64_t count = 1;
  for (int64_t a : axes) {
    reducedShape.push_back(inShape[a]);
    count *= inShape[a];
  }
  Type type = KernelEmitter::computeType(reduce.getType().getElementType());
  return e.forEachItem(items, false, [&](Value item) -> LogicalResult {
    SmallVector<Value> outIdx = e.delinearize(item, shapeOf(reduce));
    LogicalResult inner = success();
    SmallVector<Value> acc = e.loop(
        count, {reductionInit(e, reduce.getKind(), type)},
        [&](Value r, ValueRange carried) -> SmallVector<Value> {
          SmallVector<Value> reducedIdx = e.delinearize(r, reducedShape);
          SmallVector<Value> idx;
          size_t nextKept = 0, nextReduced = 0;
          for (size_t d = 0; d < inShape.size(); ++d) {
            if (llvm::is_contained(axes, static_cast<int64_t>(d))) {
              idx.push_back(reducedIdx[nextReduced++]);
              if (reduce.getKeepDims())
                ++nextKept;
            } else {
              idx.push_back(outIdx[nextKept++]);
            }
          }
          FailureOr<Value> v =
              e.elementAt(reduce.getInput(), ElementIndex::multi(inShape, idx));
          if (failed(v)) {
            inner = failure();
            return {carried[0]};
          }
          return {combine(e, reduce.getKind(), carried[0], *v)};
        });
    Value result = acc[0];
    if (reduce.getKind() == ReduceKind::mean)
      result = arith::DivFOp::create(e.builder(), e.loc(), result,
                                     e.f32(static_cast<double>(count)));
    if (failed(inner) || reduce.getResult() == root) {
      e.storeResult(0, item, result);
      return inner;
    }
    e.setElement(reduce.getResult(), item, result);
    FailureOr<Value> out =
        e.elementAt(root, ElementIndex::linear(shapeOf(root), item));
    if (failed(out))
      return failure();
    e.storeResult(0, item, *out);
    return success();
  });
}
/// A softmax along another axis: one thread per row, three passes.
LogicalResult emitSoftmax(KernelEmitter &e, int64_t items) {
  auto softmax = rootValue(e.kernel()).getDefiningOp<SoftmaxOp>();
  ArrayRef<int64_t> shape = shapeOf(softmax);
  int64_t axis = softmax.getAxis(), n = shape[axis];
  SmallVector<int64_t> rowsShape(shape);
  rowsShape.erase(rowsShape.begin() + axis);
  OpBuilder &b = e.builder();
  Location l = e.loc();
  return e.forEachItem(items, false, [&](Value row) -> LogicalResult {
    SmallVector<Value> rowIdx = e.delinearize(row, rowsShape);
    auto at = [&](Value j) {
      SmallVector<Value> idx(rowIdx);
      idx.insert(idx.begin() + axis, j);
      return ElementIndex::multi(shape, idx);
    };
    LogicalResult inner = success();
    auto element = [&](Value j) -> Value {
      FailureOr<Value> v = e.elementAt(softmax.getInput(), at(j));
      if (failed(v)) {
        inner = failure();
        return e.f32(0);
      }
      return *v;
    };
    Value max = e.loop(n, {e.f32(-INFINITY)}, [&](Value j, ValueRange c) {
      return SmallVector<Value>{
          arith::MaximumFOp::create(b, l, c[0], element(j))};
    })[0];
    Value sum = e.loop(n, {e.f32(0)}, [&](Value j, ValueRange c) {
      Value p = math::ExpOp::create(
          b, l, arith::SubFOp::create(b, l, element(j), max));
      return SmallVector<Value>{arith::AddFOp::create(b, l, c[0], p)};
    })[0];
    e.setSoftmaxStats(softmax, max, sum);
    e.loop(n, {}, [&](Value j, ValueRange) {
      ElementIndex idx = at(j);
      FailureOr<Value> y = e.elementAt(softmax, idx);
      if (failed(y))
        inner = failure();
      else
        e.storeResult(0, idx.getLinear(e), *y);
      return SmallVector<Value>{};
    });
    return inner;
  });
}

/// One thread per output element: a dot product over K in f32, then the
/// kernel's elementwise epilogue.
LogicalResult emitMatmul(KernelEmitter &e, int64_t items) {
  MatmulOp matmul = matmulOf(e.kernel());
  ArrayRef<int64_t> aShape = shapeOf(matmul.getA()),
                    bShape = shapeOf(matmul.getB());
  bool ta = matmul.getTransposeA(), tb = matmul.getTransposeB();
  size_t rank = aShape.size();
  int64_t k = ta ? aShape[rank - 2] : aShape[rank - 1];
  OpBuilder &b = e.builder();
  Location l = e.loc();
  return e.forEachItem(items, false, [&](Value item) -> LogicalResult {
    SmallVector<Value> idx = e.delinearize(item, shapeOf(matmul));
    Value i = idx[rank - 2], j = idx[rank - 1];
    ArrayRef<Value> batch = ArrayRef<Value>(idx).drop_back(2);
    LogicalResult inner = success();
    Value acc = e.loop(k, {e.f32(0)}, [&](Value p, ValueRange c) {
      SmallVector<Value> aIdx(batch), bIdx;
      aIdx.append(ta ? SmallVector<Value>{p, i} : SmallVector<Value>{i, p});
      if (bShape.size() == rank)
        bIdx.assign(batch.begin(), batch.end());
      bIdx.append(tb ? SmallVector<Value>{j, p} : SmallVector<Value>{p, j});
      FailureOr<Value> x =
          e.elementAt(matmul.getA(), ElementIndex::multi(aShape, aIdx));
      FailureOr<Value> y =
          e.elementAt(matmul.getB(), ElementIndex::multi(bShape, bIdx));
      if (failed(x) || failed(y)) {
        inner = failure();
        return SmallVector<Value>{c[0]};
      }
      return SmallVector<Value>{math::FmaOp::create(b, l, *x, *y, c[0])};
    })[0];
    e.setElement(matmul.getResult(), item, acc);
    FailureOr<Value> out = e.elementAt(
        rootValue(e.kernel()),
        ElementIndex::linear(shapeOf(rootValue(e.kernel())), item));
    if (failed(out))
      return failure();
    e.storeResult(0, item, *out);
    return inner;
  });
}

/// One thread per output element (b, h, i, c) of an attention: online
/// softmax over the keys with a running max, sum and accumulator, never
/// storing the scores.
class PerOutputAttention {
public:
  PerOutputAttention(KernelEmitter &e, AttentionOp attn)
      : e(e), attn(attn), b(e.builder()), l(e.loc()) {}

  LogicalResult emit(int64_t items) {
    ArrayRef<int64_t> q = shapeOf(attn.getQ()), k = shapeOf(attn.getK());
    int64_t group = k[1] ? q[1] / k[1] : 1;
    return e.forEachItem(items, false, [&](Value item) -> LogicalResult {
      SmallVector<Value> idx = e.delinearize(item, shapeOf(attn.getResult()));
      Value kvh = arith::DivUIOp::create(b, l, idx[1], e.index(group));
      Value negInf = e.f32(-INFINITY);
      SmallVector<Value> state =
          e.loop(k[2], {negInf, e.f32(0), e.f32(0)},
                 [&](Value j, ValueRange s) { return step(s, idx, kvh, j); });
      Value empty = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                          state[1], e.f32(0));
      e.storeResult(0, item,
                    arith::SelectOp::create(
                        b, l, empty, e.f32(0),
                        arith::DivFOp::create(b, l, state[2], state[1])));
      if (std::optional<unsigned> lse = lseResultOf(e.kernel(), attn))
        storeLse(*lse, item, idx[3], state, empty);
      return status;
    });
  }

private:
  Value element(Value tensor, ArrayRef<Value> at) {
    FailureOr<Value> v =
        e.elementAt(tensor, ElementIndex::multi(shapeOf(tensor), at));
    if (failed(v)) {
      status = failure();
      return e.f32(0);
    }
    return *v;
  }

  /// Key j of output (bi, h, i, c) (`idx`): the state (max, sum, acc)
  /// moves on unless the score is dropped (masked, after the query when
  /// causal, or -inf).
  SmallVector<Value> step(ValueRange s, ArrayRef<Value> idx, Value kvh,
                          Value j) {
    Value bi = idx[0], h = idx[1], i = idx[2], c = idx[3];
    Value dot = e.loop(
        shapeOf(attn.getQ())[3], {e.f32(0)}, [&](Value d, ValueRange acc) {
          Value x = element(attn.getQ(), {bi, h, i, d});
          Value y = element(attn.getK(), {bi, kvh, j, d});
          return SmallVector<Value>{math::FmaOp::create(b, l, x, y, acc[0])};
        })[0];
    Value score = arith::MulFOp::create(
        b, l, dot, e.f32(attn.getScale().convertToDouble()));
    if (attn.getBias())
      score = arith::AddFOp::create(b, l, score,
                                    element(attn.getBias(), {bi, h, i, j}));
    Value skip = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, score,
                                       e.f32(-INFINITY));
    if (attn.getMask())
      skip = arith::OrIOp::create(
          b, l, skip,
          arith::XOrIOp::create(
              b, l, element(attn.getMask(), {bi, h, i, j}),
              arith::ConstantOp::create(b, l, b.getBoolAttr(true))));
    if (attn.getCausal())
      skip = arith::OrIOp::create(
          b, l, skip,
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, j, i));
    Value m = s[0], sum = s[1], acc = s[2];
    Value newMax = arith::MaximumFOp::create(b, l, m, score);
    Value alpha =
        math::ExpOp::create(b, l, arith::SubFOp::create(b, l, m, newMax));
    Value p =
        math::ExpOp::create(b, l, arith::SubFOp::create(b, l, score, newMax));
    Value v = element(attn.getV(), {bi, kvh, j, c});
    Value nextSum =
        arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, sum, alpha), p);
    Value nextAcc = math::FmaOp::create(
        b, l, p, v, arith::MulFOp::create(b, l, acc, alpha));
    return {arith::SelectOp::create(b, l, skip, m, newMax),
            arith::SelectOp::create(b, l, skip, sum, nextSum),
            arith::SelectOp::create(b, l, skip, acc, nextAcc)};
  }

  /// The row's log-sum-exp, max + ln sum, from the thread of its first
  /// value dim.
  void storeLse(unsigned result, Value item, Value c, ArrayRef<Value> state,
                Value empty) {
    auto first = scf::IfOp::create(
        b, l,
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, c, e.index(0)),
        false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    Value logSum = arith::AddFOp::create(b, l, state[0],
                                         math::LogOp::create(b, l, state[1]));
    Value row = arith::DivUIOp::create(b, l, item,
                                       e.index(shapeOf(attn.getResult())[3]));
    e.storeResult(
        result, row,
        arith::SelectOp::create(b, l, empty, e.f32(-INFINITY), logSum));
  }

  KernelEmitter &e;
  AttentionOp attn;
  OpBuilder &b;
  Location l;
  LogicalResult status = success();
};

LogicalResult emitAttention(KernelEmitter &e, int64_t items) {
  return PerOutputAttention(e,
                            rootValue(e.kernel()).getDefiningOp<AttentionOp>())
      .emit(items);
}

/// A pointwise kernel whose result kf-pad padded (its copy of a matmul
/// operand): a thread step writes `vec` consecutive elements of a padded
/// row, computed where the row has them and zero past its end.
LogicalResult emitPaddedRows(KernelEmitter &e, int64_t items) {
  KernelOp kernel = e.kernel();
  Value root = rootValue(kernel);
  ArrayRef<int64_t> shape = shapeOf(root);
  int64_t length = shape.back(), vec = configValue(kernel, "vec", 1);
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

/// Kernel arguments are flat: one bare pointer each, to rows of kf-pad's
/// stride where it padded them.
MemRefType memrefOf(Value tensor) {
  auto type = mlir::cast<RankedTensorType>(tensor.getType());
  int64_t elements = type.getNumElements();
  if (int64_t stride = paddedRowStride(tensor))
    elements = elements / type.getShape().back() * stride;
  return MemRefType::get({elements}, type.getElementType());
}

} // namespace

bool kfuse::kf::usesPointwiseTemplate(KernelOp kernel) {
  return kernel.getKind() == KernelKind::pointwise &&
         !configValue(kernel, "tiled_transpose") &&
         !paddedRowStride(kernel.getResult(0));
}

SmallVector<BlockArgument> kfuse::kf::streamedInputs(KernelOp kernel) {
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  ArrayRef<int64_t> shape = shapeOf(yield.getValues()[0]);
  SmallVector<BlockArgument> streamed;
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    if (mlir::cast<RankedTensorType>(arg.getType()).getShape() == shape &&
        llvm::all_of(arg.getUsers(), [](Operation *user) {
          return user->hasTrait<OpTrait::kf::Elementwise>();
        }))
      streamed.push_back(arg);
  return streamed;
}

namespace {

/// Only the row and tensor-core matmul templates address padded rows (by
/// row and column), and the padded-rows template writes them; kf-pad pads
/// nothing else.
LogicalResult checkPaddedBuffers(KernelOp kernel) {
  bool rowTemplate = (kernel.getKind() == KernelKind::reduction ||
                      kernel.getKind() == KernelKind::normalization) &&
                     rowSpaceOf(kernel) && !configValue(kernel, "columns");
  bool mmaTemplate = configValue(kernel, "mma") != 0;
  if (rowTemplate || mmaTemplate)
    return success();
  bool paddedCopy = kernel.getKind() == KernelKind::pointwise &&
                    kernel.getNumResults() == 1 &&
                    !configValue(kernel, "tiled_transpose");
  // The FlashAttention template reads q, k and v by row stride.
  SmallVector<Value> addressedByRow;
  if (configValue(kernel, "flash")) {
    AttentionOp op = attentionOf(kernel);
    for (Value operand : {op.getQ(), op.getK(), op.getV()})
      addressedByRow.push_back(
          kernel
              .getInputs()[mlir::cast<BlockArgument>(operand).getArgNumber()]);
  }
  SmallVector<Value> buffers(kernel.getInputs());
  if (!paddedCopy)
    llvm::append_range(buffers, kernel.getResults());
  for (Value v : buffers)
    if (paddedRowStride(v) && !llvm::is_contained(addressedByRow, v))
      return kernel.emitOpError()
             << "has a buffer with padded rows (" << v.getType()
             << "), which its template does not address";
  return success();
}

/// The body of the emitter's kernel, by the template its kind and config
/// pick: `items` (threads or blocks) of work.
LogicalResult emitBody(KernelEmitter &e, int64_t items) {
  KernelOp kernel = e.kernel();
  std::optional<RowSpace> rows = rowSpaceOf(kernel);
  switch (kernel.getKind()) {
  case KernelKind::pointwise:
    if (usesPointwiseTemplate(kernel))
      return PointwiseKernel(e, items).emit();
    if (configValue(kernel, "tiled_transpose"))
      return emitTiledTranspose(e, tiledTransposeOf(kernel));
    return emitPaddedRows(e, items);
  case KernelKind::reduction:
    if (configValue(kernel, "columns"))
      return emitColumns(e, *columnSpaceOf(kernel));
    return rows ? emitRows(e, *rows) : emitReduction(e, items);
  case KernelKind::normalization:
    return rows ? emitRows(e, *rows) : emitSoftmax(e, items);
  case KernelKind::matmul:
    return configValue(kernel, "mma")
               ? emitTensorCoreMatmul(e, matmulOf(kernel))
               : emitMatmul(e, items);
  case KernelKind::attention:
    return configValue(kernel, "flash")
               ? emitFlashAttention(e, attentionOf(kernel))
               : emitAttention(e, items);
  }
  llvm_unreachable("unknown kernel kind");
}

LogicalResult lowerKernel(KernelOp kernel, gpu::GPUModuleOp module,
                          StringRef name) {
  SmallVector<Type> args;
  for (Value v : kernel.getInputs())
    args.push_back(memrefOf(v));
  for (Value v : kernel.getResults())
    args.push_back(memrefOf(v));
  unsigned buffers = args.size();
  if (configValue(kernel, "tma"))
    args.append(tmaOperands(kernel).size(),
                LLVM::LLVMPointerType::get(kernel.getContext()));
  DictionaryAttr config = kernel.getConfigAttr();
  if (!config || !config.getAs<IntegerAttr>("block") ||
      !config.getAs<IntegerAttr>("items"))
    return kernel.emitOpError("has no launch config: run kf-tile first");
  if (failed(checkPaddedBuffers(kernel)))
    return failure();
  int64_t block = configValue(kernel, "block");
  int64_t items = configValue(kernel, "items");

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(b, kernel.getLoc(), name,
                                     b.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(block), 1, 1}));
  // The alignment fact the runtime checked: every buffer starts on a
  // 16-byte boundary, so LLVM may merge accesses into 16-byte vectors.
  if (int64_t align = configValue(kernel, "aligned"))
    for (unsigned i = 0; i < buffers; ++i)
      func.setArgAttr(i, "llvm.align", b.getI64IntegerAttr(align));
  // The TMA tensor maps come by value (kf-grid-constants).
  if (args.size() > buffers)
    func->setAttr(kTensorMapArgs, b.getI64IntegerAttr(args.size() - buffers));
  KernelEmitter emitter(kernel, func);
  LogicalResult status = emitBody(emitter, items);
  gpu::ReturnOp::create(emitter.builder(), kernel.getLoc());
  kernel->setAttr("gpu_func", b.getStringAttr(name));
  return status;
}

struct KFLowerToGPUPass
    : public kfuse::kf::impl::KFLowerToGPUPassBase<KFLowerToGPUPass> {
  using KFLowerToGPUPassBase::KFLowerToGPUPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "kf_kernels");
    int counter = 0;
    WalkResult walk = module.walk([&](KernelOp kernel) {
      std::string name = "k" + std::to_string(counter++) + "_" +
                         stringifyKernelKind(kernel.getKind()).str();
      if (failed(lowerKernel(kernel, gpuModule, name)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
