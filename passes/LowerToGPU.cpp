//===- LowerToGPU.cpp - kf-lower-to-gpu: one gpu.func per kernel ----------===//
//
// Each kernel kind has a template that loops over the kernel's work items
// (as kf-tile recorded them) and asks the KernelEmitter for the elements it
// needs. These are the simple, correct templates: one thread per output
// element (pointwise, matmul, attention), per output of a reduction, or per
// softmax row. Faster templates replace them kind by kind.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "passes/KernelEmitter.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFLOWERTOGPUPASS
#include "passes/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

Value rootValue(KernelOp kernel) {
  return cast<YieldOp>(kernel.getBody().front().getTerminator()).getValues()[0];
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Every result at every index of the (common) result shape.
LogicalResult emitPointwise(KernelEmitter &e, int64_t items) {
  KernelOp kernel = e.kernel();
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  ArrayRef<int64_t> shape = shapeOf(yield.getValues()[0]);
  LogicalResult status = success();
  e.forEachItem(items, [&](Value item) -> LogicalResult {
    SmallVector<Value> idx = e.delinearize(item, shape);
    for (auto [i, value] : llvm::enumerate(yield.getValues())) {
      FailureOr<Value> v = e.elementAt(value, idx);
      if (failed(v))
        return failure();
      e.storeResult(i, idx, *v);
    }
    return success();
  }, status);
  return status;
}

/// Combines an accumulator with a value, for sum, mean, max and min.
Value combine(KernelEmitter &e, ReduceKind kind, Value acc, Value v) {
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

Value reductionInit(KernelEmitter &e, ReduceKind kind, Type type) {
  OpBuilder &b = e.builder();
  if (isa<FloatType>(type)) {
    double init = kind == ReduceKind::max   ? -INFINITY
                  : kind == ReduceKind::min ? INFINITY
                                            : 0.0;
    return e.f32(init);
  }
  int64_t init = kind == ReduceKind::max   ? INT32_MIN
                 : kind == ReduceKind::min ? INT32_MAX
                                           : 0;
  return arith::ConstantOp::create(b, e.loc(), b.getIntegerAttr(type, init));
}

/// One thread per output element, looping over the reduced elements.
LogicalResult emitReduction(KernelEmitter &e, int64_t items) {
  auto reduce = rootValue(e.kernel()).getDefiningOp<ReduceOp>();
  ArrayRef<int64_t> inShape = shapeOf(reduce.getInput());
  ArrayRef<int64_t> axes = reduce.getAxes();
  SmallVector<int64_t> reducedShape;
  int64_t count = 1;
  for (int64_t a : axes) {
    reducedShape.push_back(inShape[a]);
    count *= inShape[a];
  }
  Type type = KernelEmitter::computeType(reduce.getType().getElementType());
  LogicalResult status = success();
  e.forEachItem(items, [&](Value item) -> LogicalResult {
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
          FailureOr<Value> v = e.elementAt(reduce.getInput(), idx);
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
    e.storeResult(0, outIdx, result);
    return inner;
  }, status);
  return status;
}

/// One thread per row: max, sum of exponentials, then the normalised row.
/// A row that is all -inf has nothing to attend and becomes 0.
LogicalResult emitSoftmax(KernelEmitter &e, int64_t items) {
  auto softmax = rootValue(e.kernel()).getDefiningOp<SoftmaxOp>();
  ArrayRef<int64_t> shape = shapeOf(softmax);
  int64_t axis = softmax.getAxis(), n = shape[axis];
  SmallVector<int64_t> rowsShape(shape);
  rowsShape.erase(rowsShape.begin() + axis);
  OpBuilder &b = e.builder();
  Location l = e.loc();
  LogicalResult status = success();
  e.forEachItem(items, [&](Value row) -> LogicalResult {
    SmallVector<Value> rowIdx = e.delinearize(row, rowsShape);
    auto at = [&](Value j) {
      SmallVector<Value> idx(rowIdx);
      idx.insert(idx.begin() + axis, j);
      return idx;
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
    Value masked = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, max,
                                         e.f32(-INFINITY));
    e.loop(n, {}, [&](Value j, ValueRange) {
      Value p = math::ExpOp::create(
          b, l, arith::SubFOp::create(b, l, element(j), max));
      Value y = arith::SelectOp::create(
          b, l, masked, e.f32(0), arith::DivFOp::create(b, l, p, sum));
      e.storeResult(0, at(j), y);
      return SmallVector<Value>{};
    });
    return inner;
  }, status);
  return status;
}

/// One thread per output element: a dot product over K in f32.
LogicalResult emitMatmul(KernelEmitter &e, int64_t items) {
  auto matmul = rootValue(e.kernel()).getDefiningOp<MatmulOp>();
  ArrayRef<int64_t> aShape = shapeOf(matmul.getA()), bShape = shapeOf(matmul.getB());
  bool ta = matmul.getTransposeA(), tb = matmul.getTransposeB();
  size_t rank = aShape.size();
  int64_t k = ta ? aShape[rank - 2] : aShape[rank - 1];
  OpBuilder &b = e.builder();
  Location l = e.loc();
  LogicalResult status = success();
  e.forEachItem(items, [&](Value item) -> LogicalResult {
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
      FailureOr<Value> x = e.elementAt(matmul.getA(), aIdx);
      FailureOr<Value> y = e.elementAt(matmul.getB(), bIdx);
      if (failed(x) || failed(y)) {
        inner = failure();
        return SmallVector<Value>{c[0]};
      }
      return SmallVector<Value>{math::FmaOp::create(b, l, *x, *y, c[0])};
    })[0];
    e.storeResult(0, idx, acc);
    return inner;
  }, status);
  return status;
}

/// One thread per output element (b, h, i, c): online softmax over the
/// keys with a running max, sum and accumulator, never storing the scores.
LogicalResult emitAttention(KernelEmitter &e, int64_t items) {
  auto attn = rootValue(e.kernel()).getDefiningOp<AttentionOp>();
  ArrayRef<int64_t> q = shapeOf(attn.getQ()), k = shapeOf(attn.getK());
  int64_t group = k[1] ? q[1] / k[1] : 1, keys = k[2], headDim = q[3];
  OpBuilder &b = e.builder();
  Location l = e.loc();
  LogicalResult status = success();
  e.forEachItem(items, [&](Value item) -> LogicalResult {
    SmallVector<Value> idx = e.delinearize(item, shapeOf(attn));
    Value bi = idx[0], h = idx[1], i = idx[2], c = idx[3];
    Value kvh = arith::DivUIOp::create(b, l, h, e.index(group));
    LogicalResult inner = success();
    auto element = [&](Value tensor, ValueRange at) -> Value {
      FailureOr<Value> v = e.elementAt(tensor, at);
      if (failed(v)) {
        inner = failure();
        return e.f32(0);
      }
      return *v;
    };
    Value negInf = e.f32(-INFINITY);
    SmallVector<Value> state = e.loop(
        keys, {negInf, e.f32(0), e.f32(0)}, [&](Value j, ValueRange s) {
          Value dot = e.loop(headDim, {e.f32(0)}, [&](Value d, ValueRange acc) {
            Value x = element(attn.getQ(), {bi, h, i, d});
            Value y = element(attn.getK(), {bi, kvh, j, d});
            return SmallVector<Value>{math::FmaOp::create(b, l, x, y, acc[0])};
          })[0];
          Value score = arith::MulFOp::create(
              b, l, dot, e.f32(attn.getScale().convertToDouble()));
          if (attn.getBias())
            score = arith::AddFOp::create(b, l, score,
                                          element(attn.getBias(), {bi, h, i, j}));
          Value skip = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                             score, negInf);
          if (attn.getMask()) {
            FailureOr<Value> keep =
                e.elementAt(attn.getMask(), ValueRange{bi, h, i, j});
            if (failed(keep))
              inner = failure();
            else
              skip = arith::OrIOp::create(
                  b, l, skip,
                  arith::XOrIOp::create(
                      b, l, *keep,
                      arith::ConstantOp::create(b, l, b.getBoolAttr(true))));
          }
          if (attn.getCausal())
            skip = arith::OrIOp::create(
                b, l, skip,
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, j, i));
          Value m = s[0], sum = s[1], acc = s[2];
          Value newMax = arith::MaximumFOp::create(b, l, m, score);
          Value alpha = math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, m, newMax));
          Value p = math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, score, newMax));
          Value v = element(attn.getV(), {bi, kvh, j, c});
          Value nextSum = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, sum, alpha), p);
          Value nextAcc = math::FmaOp::create(
              b, l, p, v, arith::MulFOp::create(b, l, acc, alpha));
          return SmallVector<Value>{
              arith::SelectOp::create(b, l, skip, m, newMax),
              arith::SelectOp::create(b, l, skip, sum, nextSum),
              arith::SelectOp::create(b, l, skip, acc, nextAcc)};
        });
    Value empty = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                        state[1], e.f32(0));
    Value out = arith::SelectOp::create(
        b, l, empty, e.f32(0), arith::DivFOp::create(b, l, state[2], state[1]));
    e.storeResult(0, idx, out);
    return inner;
  }, status);
  return status;
}

MemRefType memrefOf(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

LogicalResult lowerKernel(KernelOp kernel, gpu::GPUModuleOp module,
                          StringRef name) {
  SmallVector<Type> args;
  for (Value v : kernel.getInputs())
    args.push_back(memrefOf(v));
  for (Value v : kernel.getResults())
    args.push_back(memrefOf(v));
  DictionaryAttr config = kernel.getConfigAttr();
  if (!config || !config.getAs<IntegerAttr>("block") ||
      !config.getAs<IntegerAttr>("items"))
    return kernel.emitOpError("has no launch config: run kf-tile first");
  int64_t block = config.getAs<IntegerAttr>("block").getInt();
  int64_t items = config.getAs<IntegerAttr>("items").getInt();

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(b, kernel.getLoc(), name,
                                     b.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(block), 1, 1}));
  KernelEmitter emitter(kernel, func);
  LogicalResult status = failure();
  switch (kernel.getKind()) {
  case KernelKind::pointwise:
    status = emitPointwise(emitter, items);
    break;
  case KernelKind::reduction:
    status = emitReduction(emitter, items);
    break;
  case KernelKind::normalization:
    status = emitSoftmax(emitter, items);
    break;
  case KernelKind::matmul:
    status = emitMatmul(emitter, items);
    break;
  case KernelKind::attention:
    status = emitAttention(emitter, items);
    break;
  }
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
