//===- Evaluator.cpp - the float64 reference evaluator --------------------===//
//
// Interprets kf graph IR on the CPU. Every value is a dense row-major
// buffer of doubles; i32 results wrap to 32 bits, i1 results are 0 or 1,
// and only casts (and outputs, when stored) round to 16- or 32-bit floats.
// This file is the semantics of the kf ops: the GPU code must agree with it.
//
//===----------------------------------------------------------------------===//

#include "frontend/GraphImpl.h"
#include "frontend/Interpreter.h"
#include "ir/KFDialect.h"
#include "ir/Numerics.h"
#include "kfuse/Evaluator.h"
#include "ir/SpecializeShapes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace kfuse::kf;

namespace kfuse::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Larger tensors are refused: the evaluator is an oracle for tests.
constexpr int64_t kMaxElements = int64_t(1) << 28;

double wrapI32(double v) {
  if (std::isnan(v))
    return 0;
  return static_cast<double>(static_cast<int32_t>(
      static_cast<uint32_t>(static_cast<int64_t>(v))));
}

/// Rounds `v` as storing it in `dtype` would.
double roundTo(Type dtype, double v) {
  if (dtype.isF32())
    return static_cast<float>(v);
  if (dtype.isBF16())
    return numerics::bf16ToFloat(
        numerics::floatToBF16(numerics::toFloatRoundOdd(v)));
  if (dtype.isF16())
    return numerics::f16ToFloat(
        numerics::floatToF16(numerics::toFloatRoundOdd(v)));
  if (dtype.isInteger(1))
    return v != 0.0;
  // Float to i32 or i64 truncates toward zero and saturates; NaN is 0.
  if (std::isnan(v))
    return 0;
  if (dtype.isInteger(64))
    return std::trunc(std::clamp(v, -0x1p63, 0x1p63));
  return std::trunc(std::clamp(v, -2147483648.0, 2147483647.0));
}

double maxNaN(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double minNaN(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}

double unaryFn(Operation *op, double x) {
  return TypeSwitch<Operation *, double>(op)
      .Case([&](NegOp) { return -x; })
      .Case([&](AbsOp) { return std::fabs(x); })
      .Case([&](ReluOp) { return std::isnan(x) ? x : std::max(x, 0.0); })
      .Case([&](ExpOp) { return std::exp(x); })
      .Case([&](LogOp) { return std::log(x); })
      .Case([&](SqrtOp) { return std::sqrt(x); })
      .Case([&](RsqrtOp) { return 1.0 / std::sqrt(x); })
      .Case([&](SinOp) { return std::sin(x); })
      .Case([&](CosOp) { return std::cos(x); })
      .Case([&](TanhOp) { return std::tanh(x); })
      .Case([&](SigmoidOp) { return 1.0 / (1.0 + std::exp(-x)); })
      .Case([&](ErfOp) { return std::erf(x); })
      .Case([&](GeluOp) { return 0.5 * x * std::erfc(-x / M_SQRT2); })
      .Case([&](SiluOp) { return x / (1.0 + std::exp(-x)); })
      .Case([&](ReciprocalOp) { return 1.0 / x; })
      .Case([&](FloorOp) { return std::floor(x); })
      // Ties to even: the default rounding mode.
      .Case([&](RoundOp) { return std::nearbyint(x); })
      .Case([&](NotOp) { return double(x == 0); })
      .Case([&](StopGradientOp) { return x; })
      .Default([](Operation *) { return kNaN; });
}

/// lhs mod rhs with the sign of rhs (Python's %, torch.remainder).
template <typename T> T flooredMod(T r, T rhs) {
  return r != 0 && (r < 0) != (rhs < 0) ? r + rhs : r;
}

/// `integer`: i1, i32 or i64 operands; `wide`: i64 (which the interpreter
/// does not wrap afterwards; its values are exact up to 2^53).
double binaryFn(Operation *op, double a, double b, bool integer, bool wide) {
  if (integer) {
    auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    return TypeSwitch<Operation *, double>(op)
        .Case([&](AddOp) { return double(x + y); })
        .Case([&](SubOp) { return double(x - y); })
        .Case([&](MulOp) {
          uint64_t product = uint64_t(x) * uint64_t(y);
          return wide ? double(int64_t(product))
                      : wrapI32(double(product & 0xFFFFFFFFu));
        })
        .Case([&](DivOp) { return y == 0 ? 0.0 : double(x / y); })
        .Case([&](ModOp) { return y == 0 ? 0.0 : double(flooredMod(x % y, y)); })
        .Case([&](AndOp) { return double(x && y); })
        .Case([&](OrOp) { return double(x || y); })
        .Case([&](XorOp) { return double((x != 0) != (y != 0)); })
        .Case([&](MaxOp) { return double(std::max(x, y)); })
        .Case([&](MinOp) { return double(std::min(x, y)); })
        .Default([](Operation *) { return 0.0; });
  }
  return TypeSwitch<Operation *, double>(op)
      .Case([&](AddOp) { return a + b; })
      .Case([&](SubOp) { return a - b; })
      .Case([&](MulOp) { return a * b; })
      .Case([&](DivOp) { return a / b; })
      .Case([&](MaxOp) { return maxNaN(a, b); })
      .Case([&](MinOp) { return minNaN(a, b); })
      .Case([&](PowOp) { return std::pow(a, b); })
      .Case([&](ModOp) { return flooredMod(std::fmod(a, b), b); })
      .Default([](Operation *) { return kNaN; });
}

bool compareFn(ComparePredicate p, double a, double b) {
  switch (p) {
  case ComparePredicate::eq:
    return a == b;
  case ComparePredicate::ne:
    return a != b;
  case ComparePredicate::lt:
    return a < b;
  case ComparePredicate::le:
    return a <= b;
  case ComparePredicate::gt:
    return a > b;
  case ComparePredicate::ge:
    return a >= b;
  }
  return false;
}

/// Softmax of `n` values spaced `stride` apart, in place. A row that is all
/// -inf has nothing to attend and gives 0.
/// Softmax of the row in place; returns its log-sum-exp (-inf for a row
/// that is entirely -inf, which becomes 0).
double softmaxRow(double *x, int64_t n, int64_t stride) {
  double m = -kInf;
  for (int64_t i = 0; i < n; ++i)
    m = maxNaN(m, x[i * stride]);
  if (m == -kInf) {
    for (int64_t i = 0; i < n; ++i)
      x[i * stride] = 0;
    return -kInf;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += x[i * stride] = std::exp(x[i * stride] - m);
  for (int64_t i = 0; i < n; ++i)
    x[i * stride] /= sum;
  return m + std::log(sum);
}

} // namespace

LogicalResult Interpreter::run(Block &block, ArrayRef<Buffer> args,
                               SmallVectorImpl<Buffer> &results) {
  for (auto [arg, buffer] : llvm::zip(block.getArguments(), args))
    env[arg] = buffer;
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      for (Value v : op.getOperands())
        results.push_back(in(v));
      return success();
    }
    if (op.getNumResults() == 0)
      continue;
    FailureOr<Buffer> out = eval(&op);
    if (failed(out))
      return failure();
    Type dtype = mlir::cast<RankedTensorType>(op.getResult(0).getType())
                     .getElementType();
    if (dtype.isInteger(32))
      for (double &v : out->data)
        v = wrapI32(v);
    else if (roundEachOp && isa<FloatType>(dtype))
      for (double &v : out->data)
        v = roundTo(dtype, v);
    env[op.getResult(0)] = std::move(*out);
  }
  return success();
}

FailureOr<Buffer> Interpreter::eval(Operation *op) {
  for (Type t : op->getResultTypes()) {
    auto type = mlir::cast<RankedTensorType>(t);
    std::optional<int64_t> n = kf::shapes::elementCount(type.getShape());
    if (!n || *n > kMaxElements)
      return op->emitOpError() << "result " << type
                               << " is too large for the reference evaluator";
  }
  if (op->hasTrait<OpTrait::kf::SameOperandsAndResult>())
    return evalElementwise(op);
  return TypeSwitch<Operation *, FailureOr<Buffer>>(op)
      .Case([&](CompareOp c) {
        Buffer out = like(c.getResult());
        const Buffer &a = in(c.getLhs()), &b = in(c.getRhs());
        for (size_t i = 0; i < out.data.size(); ++i)
          out.data[i] = compareFn(c.getPredicate(), a.data[i], b.data[i]);
        return out;
      })
      .Case([&](SelectOp s) {
        Buffer out = like(s.getResult());
        const Buffer &c = in(s.getCond()), &a = in(s.getOnTrue()),
                     &b = in(s.getOnFalse());
        for (size_t i = 0; i < out.data.size(); ++i)
          out.data[i] = c.data[i] != 0 ? a.data[i] : b.data[i];
        return out;
      })
      .Case([&](CastOp c) {
        Buffer out = in(c.getInput());
        Type dtype = c.getType().getElementType();
        // An i64 narrowed to i32 wraps, as the kernels' truncation does (a
        // float saturates).
        bool wraps = dtype.isInteger(32) &&
                     c.getInput().getType().getElementType().isInteger(64);
        for (double &v : out.data)
          v = wraps ? wrapI32(v) : roundTo(dtype, v);
        return out;
      })
      .Case([&](ReshapeOp r) {
        Buffer out = in(r.getInput());
        out.shape = like(r.getResult()).shape;
        return out;
      })
      .Case([&](IotaOp iota) { return evalIota(iota); })
      .Case([&](SoftmaxOp s) { return evalSoftmax(s); })
      .Case([&](ConstantOp c) { return evalConstant(c); })
      .Case([&](BroadcastOp b) { return evalBroadcast(b); })
      .Case([&](TransposeOp t) { return evalTranspose(t); })
      .Case([&](ReduceOp r) { return evalReduce(r); })
      .Case([&](MatmulOp m) { return evalMatmul(m); })
      .Case([&](AttentionOp a) { return evalAttention(a); })
      .Case([&](AttentionGradOp a) { return evalAttentionGrad(a); })
      .Case([&](SliceOp s) { return evalSlice(s); })
      .Case([&](ConcatOp c) { return evalConcat(c); })
      .Case([&](PadOp p) { return evalPad(p); })
      .Case([&](GatherOp g) { return evalGather(g); })
      .Case([&](IndexAddOp a) { return evalIndexAdd(a); })
      .Case([&](TakeAlongAxisOp t) { return evalTakeAlongAxis(t); })
      .Case([&](RandomOp r) { return evalRandom(r); })
      .Case([&](ArgReduceOp r) { return evalArgReduce(r); })
      .Case([&](CumsumOp c) { return evalCumsum(c); })
      .Case([&](KernelOp k) { return evalKernel(k); })
      .Default([](Operation *op) -> FailureOr<Buffer> {
        return op->emitOpError("is not supported by the reference evaluator");
      });
}

Buffer Interpreter::evalElementwise(Operation *op) {
  Buffer out = like(op->getResult(0));
  Type dtype = mlir::cast<RankedTensorType>(op->getOperand(0).getType())
                   .getElementType();
  bool integer = dtype.isInteger(), wide = dtype.isInteger(64);
  if (op->getNumOperands() == 1) {
    const Buffer &x = in(op->getOperand(0));
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = unaryFn(op, x.data[i]);
  } else {
    const Buffer &a = in(op->getOperand(0)), &b = in(op->getOperand(1));
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = binaryFn(op, a.data[i], b.data[i], integer, wide);
  }
  return out;
}

Buffer Interpreter::evalIota(IotaOp op) {
  Buffer out = like(op.getResult());
  int64_t dim = op.getDim();
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    out.data[i] = static_cast<double>(index[dim]);
  });
  return out;
}

Buffer Interpreter::evalSoftmax(SoftmaxOp op) {
  Buffer out = in(op.getInput());
  int64_t axis = op.getAxis(), n = out.shape[axis];
  int64_t stride = stridesOf(out.shape)[axis];
  for (int64_t base = 0; base < static_cast<int64_t>(out.data.size()); ++base)
    if ((base / stride) % std::max<int64_t>(n, 1) == 0)
      softmaxRow(&out.data[base], n, stride);
  return out;
}

Buffer Interpreter::evalConstant(ConstantOp op) {
  Buffer out = like(op.getResult());
  auto attr = mlir::cast<DenseElementsAttr>(op.getValue());
  Type dtype = attr.getElementType();
  size_t i = 0;
  if (isa<FloatType>(dtype)) {
    for (const APFloat &v : attr.getValues<APFloat>())
      out.data[i++] = v.convertToDouble();
  } else {
    for (const APInt &v : attr.getValues<APInt>())
      out.data[i++] = dtype.isInteger(1) ? double(v.getZExtValue())
                                         : double(v.getSExtValue());
  }
  return out;
}

Buffer Interpreter::evalBroadcast(BroadcastOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput());
  SmallVector<int64_t, 4> strides = stridesOf(x.shape);
  size_t offset = out.shape.size() - x.shape.size();
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t src = 0;
    for (size_t d = 0; d < x.shape.size(); ++d)
      src += (x.shape[d] == 1 ? 0 : index[offset + d]) * strides[d];
    out.data[i] = x.data[src];
  });
  return out;
}

Buffer Interpreter::evalTranspose(TransposeOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput());
  SmallVector<int64_t, 4> strides = stridesOf(x.shape);
  ArrayRef<int64_t> perm = op.getPerm();
  forEachIndex(out.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      src += index[d] * strides[perm[d]];
    out.data[i] = x.data[src];
  });
  return out;
}

Buffer Interpreter::evalReduce(ReduceOp op) {
  Buffer out = like(op.getResult());
  const Buffer &x = in(op.getInput());
  ArrayRef<int64_t> axes = op.getAxes();
  ReduceKind kind = op.getKind();
  double init = kind == ReduceKind::max   ? -kInf
                : kind == ReduceKind::min ? kInf
                                          : 0.0;
  std::fill(out.data.begin(), out.data.end(), init);
  // The output's strides over the input's dims: 0 along reduced axes.
  SmallVector<int64_t, 4> outStrides(x.shape.size(), 0);
  SmallVector<int64_t, 4> kept;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
      kept.push_back(d);
  SmallVector<int64_t, 4> keptShape;
  for (int64_t d : kept)
    keptShape.push_back(x.shape[d]);
  SmallVector<int64_t, 4> keptStrides = stridesOf(keptShape);
  for (auto [i, d] : llvm::enumerate(kept))
    outStrides[d] = keptStrides[i];
  int64_t count = 1;
  for (int64_t a : axes)
    count *= x.shape[a];
  forEachIndex(x.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t o = 0;
    for (size_t d = 0; d < index.size(); ++d)
      o += index[d] * outStrides[d];
    double &acc = out.data[o];
    double v = x.data[i];
    acc = kind == ReduceKind::max   ? maxNaN(acc, v)
          : kind == ReduceKind::min ? minNaN(acc, v)
                                    : acc + v;
  });
  if (kind == ReduceKind::mean)
    for (double &v : out.data)
      v = count ? v / double(count) : kNaN;
  return out;
}

Buffer Interpreter::evalMatmul(MatmulOp op) {
  Buffer out = like(op.getResult());
  const Buffer &a = in(op.getA()), &b = in(op.getB());
  size_t ra = a.shape.size(), rb = b.shape.size();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  size_t ro = out.shape.size();
  int64_t m = out.shape[ro - 2], n = out.shape[ro - 1];
  int64_t k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  // Split-K: partial s over [s chunk, (s + 1) chunk), stacked in front.
  int64_t chunk = op.getKChunk().value_or(k);
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < ra; ++d)
    batches *= a.shape[d];
  bool sharedB = rb == 2;
  for (int64_t k0 = 0, part = 0; k0 < k; k0 += chunk, ++part)
    for (int64_t batch = 0; batch < batches; ++batch) {
      const double *pa = a.data.data() + batch * m * k;
      const double *pb = b.data.data() + (sharedB ? 0 : batch * k * n);
      double *pc = out.data.data() + (part * batches + batch) * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t p = k0; p < std::min(k, k0 + chunk); ++p)
            acc += (ta ? pa[p * m + i] : pa[i * k + p]) *
                   (tb ? pb[j * k + p] : pb[p * n + j]);
          pc[i * n + j] = acc;
        }
    }
  return out;
}

Buffer Interpreter::evalAttention(AttentionOp op) {
  Buffer out = like(op.getResult());
  std::optional<Buffer> lse;
  if (op.getLse())
    lse = like(op.getLse());
  const Buffer &q = in(op.getQ()), &k = in(op.getK()), &v = in(op.getV());
  const Buffer *mask = op.getMask() ? &in(op.getMask()) : nullptr;
  const Buffer *bias = op.getBias() ? &in(op.getBias()) : nullptr;
  int64_t batches = q.shape[0], heads = q.shape[1], sq = q.shape[2],
          d = q.shape[3], kvHeads = k.shape[1], sk = k.shape[2],
          dv = v.shape[3];
  int64_t group = kvHeads ? heads / kvHeads : 1;
  double scale = op.getScale().convertToDouble();
  std::vector<double> scores(sk);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvh = h / group;
      const double *pk = k.data.data() + (b * kvHeads + kvh) * sk * d;
      const double *pv = v.data.data() + (b * kvHeads + kvh) * sk * dv;
      for (int64_t i = 0; i < sq; ++i) {
        const double *pq = q.data.data() + ((b * heads + h) * sq + i) * d;
        int64_t row = ((b * heads + h) * sq + i) * sk;
        for (int64_t j = 0; j < sk; ++j) {
          double s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += pq[c] * pk[j * d + c];
          s *= scale;
          if (bias)
            s += bias->data[row + j];
          if ((mask && mask->data[row + j] == 0) || (op.getCausal() && j > i))
            s = -kInf;
          scores[j] = s;
        }
        double rowLse = softmaxRow(scores.data(), sk, 1);
        if (lse)
          lse->data[(b * heads + h) * sq + i] = rowLse;
        double *po = out.data.data() + ((b * heads + h) * sq + i) * dv;
        for (int64_t c = 0; c < dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < sk; ++j)
            acc += scores[j] * pv[j * dv + c];
          po[c] = acc;
        }
      }
    }
  // The interpreter binds an op's first result; the second is bound here.
  if (lse)
    env[op.getLse()] = std::move(*lse);
  return out;
}

/// The op's definition, row by row: each query row's probabilities from
/// its scores and lse, then its contributions to dq, dk and dv.
Buffer Interpreter::evalAttentionGrad(AttentionGradOp op) {
  Buffer dq = like(op.getDq()), dk = like(op.getDk()), dv = like(op.getDv());
  const Buffer &q = in(op.getQ()), &k = in(op.getK()), &v = in(op.getV()),
               &dout = in(op.getDout()), &lse = in(op.getLse()),
               &delta = in(op.getDelta());
  int64_t batches = q.shape[0], heads = q.shape[1], sq = q.shape[2],
          d = q.shape[3], kvHeads = k.shape[1], sk = k.shape[2],
          dvDim = v.shape[3];
  int64_t group = kvHeads ? heads / kvHeads : 1;
  double scale = op.getScale().convertToDouble();
  std::fill(dk.data.begin(), dk.data.end(), 0.0);
  std::fill(dv.data.begin(), dv.data.end(), 0.0);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t slice = b * kvHeads + h / group;
      const double *pk = k.data.data() + slice * sk * d;
      const double *pv = v.data.data() + slice * sk * dvDim;
      double *pdk = dk.data.data() + slice * sk * d;
      double *pdv = dv.data.data() + slice * sk * dvDim;
      for (int64_t i = 0; i < sq; ++i) {
        int64_t row = (b * heads + h) * sq + i;
        const double *pq = q.data.data() + row * d;
        const double *pdo = dout.data.data() + row * dvDim;
        double *pdq = dq.data.data() + row * d;
        std::fill(pdq, pdq + d, 0.0);
        for (int64_t j = 0; j < sk; ++j) {
          if ((op.getCausal() && j > i) || lse.data[row] == -kInf)
            continue;
          double s = 0, dp = 0;
          for (int64_t c = 0; c < d; ++c)
            s += pq[c] * pk[j * d + c];
          for (int64_t c = 0; c < dvDim; ++c)
            dp += pdo[c] * pv[j * dvDim + c];
          double p = std::exp(s * scale - lse.data[row]);
          double ds = p * (dp - delta.data[row]) * scale;
          for (int64_t c = 0; c < d; ++c) {
            pdq[c] += ds * pk[j * d + c];
            pdk[j * d + c] += ds * pq[c];
          }
          for (int64_t c = 0; c < dvDim; ++c)
            pdv[j * dvDim + c] += p * pdo[c];
        }
      }
    }
  // The interpreter binds an op's first result; the others are bound here.
  env[op.getDk()] = std::move(dk);
  env[op.getDv()] = std::move(dv);
  return dq;
}

FailureOr<Buffer> Interpreter::evalKernel(KernelOp op) {
  SmallVector<Buffer> args, results;
  for (Value v : op.getInputs())
    args.push_back(in(v));
  Interpreter inner(roundEachOp);
  if (failed(inner.run(op.getBody().front(), args, results)))
    return failure();
  // The interpreter keeps one buffer per op; a kernel's extra results are
  // bound here, its first is returned.
  for (auto [result, buffer] :
       llvm::zip(op.getResults().drop_front(), ArrayRef(results).drop_front()))
    env[result] = buffer;
  return results.front();
}

namespace {

/// Checks the inputs against the graph's declared dtypes and ranks.
Status checkInputs(const detail::GraphImpl &g,
                   const std::vector<HostTensor> &inputs) {
  auto argTypes = g.func.getArgumentTypes();
  if (inputs.size() != argTypes.size())
    return Error(ErrorCode::InvalidArgument,
                 "evaluate: the graph takes " +
                     std::to_string(argTypes.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  for (auto [i, type] : llvm::enumerate(argTypes)) {
    DType expected = *fromMLIRType(type);
    if (inputs[i].dtype() != expected)
      return Error(ErrorCode::InvalidArgument,
                   "evaluate: input '" + g.inputNames[i] + "' must be " +
                       dtypeName(expected) + ", got " +
                       dtypeName(inputs[i].dtype()));
  }
  return Status::ok();
}

} // namespace
} // namespace kfuse::detail

namespace kfuse {
using namespace kfuse::detail;

namespace {

/// Binds the symbols from the inputs' shapes and interprets the graph.
Expected<SmallVector<Buffer>> interpret(const GraphImpl &g,
                                        SmallVector<Buffer> args,
                                        bool roundEachOp = false) {
  OwningOpRef<func::FuncOp> func(g.func.clone());
  std::string diagnostics;
  ScopedDiagnosticHandler handler(g.context.get(), [&](Diagnostic &d) {
    diagnostics += (diagnostics.empty() ? "" : "\n") + d.str();
    return success();
  });
  SmallVector<SmallVector<int64_t, 4>> shapes;
  for (const Buffer &b : args)
    shapes.push_back(b.shape);
  if (failed(kf::specializeShapes(*func, shapes)))
    return Error(ErrorCode::InvalidArgument, "evaluate: " + diagnostics);
  SmallVector<Buffer> results;
  Interpreter interpreter(roundEachOp);
  if (failed(interpreter.run(func->getBody().front(), args, results)))
    return Error(ErrorCode::InvalidGraph, "evaluate: " + diagnostics);
  return results;
}

} // namespace

Expected<std::vector<HostTensor>>
evaluate(const Graph &graph, const std::vector<HostTensor> &inputs) {
  return evaluate(graph, inputs, EvaluateOptions());
}

Expected<std::vector<HostTensor>> evaluate(const Graph &graph,
                                           const std::vector<HostTensor> &inputs,
                                           const EvaluateOptions &options) {
  const detail::GraphImpl &g = graph.impl();
  if (!g.status)
    return g.status.error();
  KFUSE_RETURN_IF_ERROR(checkInputs(g, inputs));
  SmallVector<Buffer> args;
  for (const HostTensor &t : inputs) {
    Buffer b;
    b.shape.assign(t.shape().begin(), t.shape().end());
    b.data.resize(t.numElements());
    for (size_t i = 0; i < t.numElements(); ++i)
      b.data[i] = t.get(i);
    args.push_back(std::move(b));
  }
  Expected<SmallVector<Buffer>> results =
      interpret(g, std::move(args), options.roundEachOp);
  if (!results)
    return results.error();
  std::vector<HostTensor> outputs;
  for (auto [buffer, type] : llvm::zip(*results, g.func.getResultTypes())) {
    HostTensor t(*fromMLIRType(type),
                 std::vector<int64_t>(buffer.shape.begin(), buffer.shape.end()));
    for (size_t i = 0; i < buffer.data.size(); ++i)
      t.set(i, buffer.data[i]);
    outputs.push_back(std::move(t));
  }
  return outputs;
}

Expected<std::vector<Float64Tensor>>
evaluateFloat64(const Graph &graph, const std::vector<Float64Tensor> &inputs) {
  const detail::GraphImpl &g = graph.impl();
  if (!g.status)
    return g.status.error();
  if (inputs.size() != g.func.getNumArguments())
    return Error(ErrorCode::InvalidArgument,
                 "evaluateFloat64: the graph takes " +
                     std::to_string(g.func.getNumArguments()) +
                     " inputs, got " + std::to_string(inputs.size()));
  SmallVector<Buffer> args;
  for (auto [i, t] : llvm::enumerate(inputs)) {
    std::optional<int64_t> count = kf::shapes::elementCount(t.shape);
    if (!count || *count != static_cast<int64_t>(t.values.size()))
      return Error(ErrorCode::InvalidArgument,
                   "evaluateFloat64: input '" + g.inputNames[i] + "' has " +
                       std::to_string(t.values.size()) +
                       " values for its shape");
    args.push_back({SmallVector<int64_t, 4>(t.shape.begin(), t.shape.end()),
                    t.values});
  }
  Expected<SmallVector<Buffer>> results = interpret(g, std::move(args));
  if (!results)
    return results.error();
  std::vector<Float64Tensor> outputs;
  for (Buffer &b : *results)
    outputs.push_back({std::vector<int64_t>(b.shape.begin(), b.shape.end()),
                       std::move(b.data)});
  return outputs;
}

} // namespace kfuse
