//===- PerOutputKernels.cpp - one thread per output -----------------------===//
//
// The templates for what no faster template takes: one thread per output
// element of a reduction over other axes, per row of a softmax along
// another axis, per output of a matmul (f32 without TF32, unaligned or
// odd operand rows) and of an attention (f32, or without sm_90).
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "analysis/MatmulTiling.h"
#include "codegen/templates/KernelTemplates.h"

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// The index into `reduce`'s input of the element at output index
/// `outIdx` and reduced index `reducedIdx`.
SmallVector<Value> inputIndex(ReduceOp reduce, ArrayRef<Value> outIdx,
                              ArrayRef<Value> reducedIdx) {
  ArrayRef<int64_t> axes = reduce.getAxes();
  SmallVector<Value> idx;
  size_t nextKept = 0, nextReduced = 0;
  for (size_t d = 0; d < shapeOf(reduce.getInput()).size(); ++d) {
    if (llvm::is_contained(axes, static_cast<int64_t>(d))) {
      idx.push_back(reducedIdx[nextReduced++]);
      if (reduce.getKeepDims())
        ++nextKept;
    } else {
      idx.push_back(outIdx[nextKept++]);
    }
  }
  return idx;
}

/// Item `item` of result `index`: the sum `reduce` computes there, looping
/// over the reduced elements, then through the elementwise ops between it
/// and `root`, the value the result yields (kf-split-k's epilogue kernels:
/// item i of the result reads item i of the sum, a GPT-2 projection's
/// [B*S, N] sum reshaped to [B, S, N] for its residual add). An op between
/// them that reads the sum elsewhere is refused where the emitter meets it.
LogicalResult emitReducedItem(KernelEmitter &e, ReduceOp reduce, Value root,
                              unsigned index, Value item) {
  ArrayRef<int64_t> inShape = shapeOf(reduce.getInput());
  ArrayRef<int64_t> axes = reduce.getAxes();
  SmallVector<int64_t> reducedShape;
  int64_t count = 1;
  for (int64_t a : axes) {
    reducedShape.push_back(inShape[a]);
    count *= inShape[a];
  }
  Type type = KernelEmitter::computeType(reduce.getType().getElementType());
  SmallVector<Value> outIdx = e.delinearize(item, shapeOf(reduce));
  LogicalResult inner = success();
  SmallVector<Value> acc = e.loop(
      count, {reductionInit(e, reduce.getKind(), type)},
      [&](Value r, ValueRange carried) -> SmallVector<Value> {
        SmallVector<Value> idx = inputIndex(
            reduce, outIdx, e.delinearize(r, reducedShape));
        FailureOr<Value> v =
            e.elementAt(reduce.getInput(), ElementIndex::multi(inShape, idx));
        if (failed(v)) {
          inner = failure();
          return {carried[0]};
        }
        return {combine(e, reduce.getKind(), carried[0], *v)};
      });
  if (failed(inner))
    return failure();
  Value result = acc[0];
  if (reduce.getKind() == ReduceKind::mean)
    result = arith::DivFOp::create(e.builder(), e.loc(), result,
                                   e.f32(static_cast<double>(count)));
  if (reduce.getResult() != root) {
    e.setElement(reduce.getResult(), item, result);
    FailureOr<Value> out =
        e.elementAt(root, ElementIndex::linear(shapeOf(root), item));
    if (failed(out))
      return failure();
    result = *out;
  }
  e.storeResult(index, item, result);
  return success();
}

} // namespace

/// One thread per output element of a reduction over any axes: item i of
/// every result (kf-fuse-column-sums merges sums of one partial layout into
/// one kernel, whose results then have as many elements each).
LogicalResult kfuse::kf::emitReduction(KernelEmitter &e, int64_t items) {
  KernelOp kernel = e.kernel();
  SmallVector<ReduceOp> reduces = resultReducesOf(kernel);
  if (reduces.empty())
    return kernel.emitOpError("has a result that no reduction with as many "
                              "elements computes");
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  ValueRange roots = yield.getValues();
  for (Value root : roots)
    if (mlir::cast<ShapedType>(root.getType()).getNumElements() !=
        mlir::cast<ShapedType>(roots[0].getType()).getNumElements())
      return kernel.emitOpError()
             << "has reductions of different sizes (" << roots[0].getType()
             << ", " << root.getType() << "), which one thread an output "
             << "does not compute together";
  return e.forEachItem(items, false, [&](Value item) -> LogicalResult {
    for (auto [index, reduce, root] : llvm::enumerate(reduces, roots))
      if (failed(emitReducedItem(e, reduce, root, index, item)))
        return failure();
    return success();
  });
}

/// A softmax along another axis: one thread per row, three passes.
LogicalResult kfuse::kf::emitSoftmax(KernelEmitter &e, int64_t items) {
  auto softmax = rootValue(e.kernel()).getDefiningOp<SoftmaxOp>();
  if (!softmax || e.kernel()->getNumResults() != 1)
    return e.kernel().emitOpError(
        "a softmax along an axis other than the last is computed only as a "
        "kernel's one result");
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
LogicalResult kfuse::kf::emitMatmul(KernelEmitter &e, int64_t items) {
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
    // Every result has the output's elements (the epilogue's values that
    // are graph outputs too, a pre-activation beside its activation).
    if (failed(storeResultsAt(e, item)))
      return failure();
    return inner;
  });
}

namespace {

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
      e.storeResult(0, resultPosition(item, idx),
                    arith::SelectOp::create(
                        b, l, empty, e.f32(0),
                        arith::DivFOp::create(b, l, state[2], state[1])));
      if (std::optional<unsigned> lse = lseResultOf(e.kernel(), attn))
        storeLse(*lse, item, idx[3], state, empty);
      return status;
    });
  }

private:
  /// Where output `item` (at `idx`) goes in the kernel's result: there,
  /// or where the reshapes and transposes the kernel yields put it.
  Value resultPosition(Value item, ArrayRef<Value> idx) {
    if (rootValue(e.kernel()) == attn.getResult())
      return item;
    std::optional<SmallVector<int64_t, 4>> strides =
        attentionResultStrides(e.kernel());
    if (!strides) {
      status = e.kernel().emitOpError(
          "yields a view of its attention result that is not reshapes and "
          "transposes");
      return item;
    }
    Value at = e.index(0);
    for (auto [i, stride] : llvm::zip_equal(idx, *strides))
      at = arith::AddIOp::create(
          b, l, at, arith::MulIOp::create(b, l, i, e.index(stride)));
    return at;
  }

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

} // namespace

LogicalResult kfuse::kf::emitAttention(KernelEmitter &e, int64_t items) {
  return PerOutputAttention(e, attentionOf(e.kernel())).emit(items);
}

