//===- Recipe.cpp - building recipes into graphs --------------------------===//

#include "Recipe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

namespace kfuse::fuzz {

int64_t Recipe::dimSize(int dim) const {
  const PoolDim &d = dims[dim];
  if (d.factorA < 0)
    return d.size;
  return dimSize(d.factorA) * dimSize(d.factorB);
}

static const char *kindName(NodeKind kind) {
  switch (kind) {
  case NodeKind::Input: return "input";
  case NodeKind::Scalar: return "scalar";
  case NodeKind::Iota: return "iota";
  case NodeKind::Unary: return "unary";
  case NodeKind::Binary: return "binary";
  case NodeKind::Select: return "select";
  case NodeKind::Cast: return "cast";
  case NodeKind::Broadcast: return "broadcast";
  case NodeKind::Transpose: return "transpose";
  case NodeKind::Reshape: return "reshape";
  case NodeKind::Reduce: return "reduce";
  case NodeKind::Matmul: return "matmul";
  case NodeKind::Softmax: return "softmax";
  case NodeKind::Attention: return "attention";
  case NodeKind::AttentionPrimitives: return "attention-primitives";
  case NodeKind::Slice: return "slice";
  case NodeKind::Pad: return "pad";
  case NodeKind::Concat: return "concat";
  case NodeKind::Gather: return "gather";
  case NodeKind::Line: return "line";
  case NodeKind::Random: return "random";
  case NodeKind::Loss: return "loss";
  case NodeKind::Heads: return "heads";
  }
  return "?";
}

std::string Recipe::str() const {
  std::ostringstream os;
  os << "recipe seed " << seed << ", dims";
  for (size_t i = 0; i < dims.size(); ++i)
    os << " d" << i << "=" << dimSize(int(i));
  os << "\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &n = nodes[i];
    os << "  %" << i << " = " << kindName(n.kind) << " op" << n.op << " "
       << dtypeName(n.dtype) << " (";
    for (int o : n.operands)
      os << " %" << o;
    os << " ) dims";
    for (int d : n.dims)
      os << " d" << d;
    os << " axes";
    for (int64_t a : n.axes)
      os << " " << a;
    os << (n.flag ? " flag" : "") << "\n";
  }
  os << "  outputs";
  for (int o : outputs)
    os << " %" << o;
  return os.str();
}

namespace {

Shape shapeOf(const Recipe &recipe, const std::vector<int> &dims) {
  Shape shape;
  for (int d : dims)
    shape.push_back(Dim(recipe.dimSize(d)));
  return shape;
}

int64_t product(const Shape &shape) {
  int64_t n = 1;
  for (const Dim &d : shape)
    n *= d.size();
  return n;
}

/// Ops with a restricted domain are built guarded, so that random inputs
/// stay in it (see the file comment of Recipe.h), and away from points
/// where rounding an intermediate to f16 would change the result wholly.
/// x * 0.75 + 0.3 of a float: away from the integers x often is.
Tensor steppable(Tensor x) {
  return isFloat(x.dtype()) ? x * 0.75 + 0.3 : x;
}

Tensor applyUnary(int op, Tensor x) {
  switch (op) {
  case 0: return neg(x);
  case 1: return abs(x);
  case 2: return relu(x);
  case 3: return exp(minimum(x, scalarLike(x, 4)));
  // |x| + 2, not + 1: log near 1 would cancel to 0 in f16.
  case 4: return log(abs(x) + 2.0);
  case 5: return sqrt(abs(x));
  case 6: return rsqrt(abs(x) + 1.0);
  case 7: return sin(x);
  case 8: return cos(x);
  case 9: return tanh(x);
  case 10: return sigmoid(x);
  case 11: return erf(x);
  // Where gelu's f32 cancellation costs under 1e-5 relative (below, the
  // 1 + erf(x / sqrt 2) of KernelEmitter.cpp loses digits as PyTorch's does).
  case 12: return gelu(maximum(x, scalarLike(x, -2.5)));
  case 13: return silu(x);
  case 14: return reciprocal(abs(x) + 1.0);
  // Saturated tanh, sigmoid and erf are exactly +-1 in f32 but not in
  // float64, and would sit on floor's steps: the affine map keeps them
  // (and multiples of 1/8) 0.05 or more from a step of floor and round.
  case 15: return floor(steppable(x));
  default: return round(steppable(x));
  }
}

Tensor applyBinary(int op, Tensor a, Tensor b) {
  bool floating = isFloat(a.dtype()) || isFloat(b.dtype());
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  // i32 division keeps its raw form: x / 0 is 0 by definition.
  case 3: return floating ? a / (abs(b) + 1.0) : a / b;
  case 4: return maximum(a, b);
  case 5: return minimum(a, b);
  case 6: return pow(abs(a) + 0.5, tanh(b) * 2.0);
  // As division: integers take any divisor (mod 0 is 0 by definition).
  // A float divisor grows with the dividend: the remainder of a large
  // dividend by a small divisor keeps the dividend's rounding and drops
  // its size (an f16 cumsum near 400, 0.25 off, taken mod 2.7 is 7% off:
  // seed 14700199), which no tolerance of the output's precision covers.
  default: {
    if (!floating)
      return mod(a, b);
    Tensor dividend = steppable(a);
    return mod(dividend, abs(b) + abs(dividend) * 0.5 + 1.0);
  }
  }
}

Tensor applyReduce(int op, Tensor x, const std::vector<int64_t> &axes,
                   bool keepDims) {
  switch (op) {
  case 0: return reduceSum(x, axes, keepDims);
  case 1: return reduceMax(x, axes, keepDims);
  case 2: return reduceMin(x, axes, keepDims);
  default: return reduceMean(x, axes, keepDims);
  }
}

/// softmax(q kT / sqrt(d) [masked causally]) v from primitive ops, the
/// spelling users write before kf-online-softmax exists.
Tensor attentionFromPrimitives(Graph &g, Tensor q, Tensor k, Tensor v,
                               bool causal) {
  Shape qs = q.shape(), ks = k.shape();
  double scale = 1.0 / std::sqrt(double(qs.back().size()));
  Tensor scores = matmul(q, k, {false, true, std::nullopt}) * scale;
  if (causal) {
    Shape s{qs[qs.size() - 2], ks[ks.size() - 2]};
    Tensor row = iota(g, s, 0), col = iota(g, s, 1);
    Tensor minusInf = scalarLike(scores, -INFINITY);
    scores = where(col <= row, scores, minusInf);
  }
  return matmul(softmax(scores, -1), v);
}

/// key <= query + offset over q's and k's positions, as [B, H, Sq, Sk]:
/// HuggingFace's causal mask at offset 0 (positions compared, not the
/// `causal` flag), bottom-right shifted otherwise.
Tensor positionMask(Graph &g, Tensor q, Tensor k, int64_t offset) {
  Shape qs = q.shape(), ks = k.shape();
  Shape scores{qs[2], ks[2]};
  Tensor query = iota(g, scores, 0, DType::i64);
  Tensor key = iota(g, scores, 1, DType::i64);
  return broadcastTo(key <= query + double(offset),
                     {qs[0], qs[1], qs[2], ks[2]});
}

/// x [B, Hkv, S, D] repeated for `heads` query heads as repeat_kv does it:
/// [B, Hkv, 1, S, D], broadcast along the group, merged. (Static shapes
/// only; x itself otherwise, which grouped-query attention reads alike.)
Tensor repeatedHeads(Tensor x, const Dim &heads) {
  Shape s = x.shape();
  bool known = !heads.isSymbolic() &&
               std::none_of(s.begin(), s.end(),
                            [](const Dim &d) { return d.isSymbolic(); });
  if (!known || heads.size() == s[1].size())
    return x;
  int64_t group = heads.size() / s[1].size();
  Tensor unit = reshape(x, {s[0], s[1], 1, s[2], s[3]});
  Tensor grouped = broadcastTo(unit, {s[0], s[1], Dim(group), s[2], s[3]});
  return reshape(grouped, {s[0], heads, s[2], s[3]});
}

/// The indexing nodes: slice, pad, concat, gather; and cumsum, argmax,
/// argmin.
Tensor applyIndexing(const Recipe &r, const Node &n, Tensor x, Tensor y) {
  int64_t axis = n.axes.empty() ? 0 : n.axes[0];
  switch (n.kind) {
  case NodeKind::Slice: {
    int64_t size = r.dimSize(n.dims[axis]), start = n.axes[1],
            step = n.axes[2];
    return slice(x, axis, start, size ? start + (size - 1) * step + 1 : start,
                 step);
  }
  case NodeKind::Pad: {
    std::vector<std::pair<int64_t, int64_t>> widths(x.rank(), {0, 0});
    widths[axis] = {n.axes[1], n.axes[2]};
    return pad(x, widths, n.value);
  }
  case NodeKind::Concat:
    return concat({x, y}, axis);
  case NodeKind::Gather: {
    if (n.op == 2)
      return indexAdd(x, y, axis, n.axes[1]);
    Tensor index = mod(y, scalarLike(y, double(x.shape()[axis].size())));
    return n.op == 1 ? takeAlongAxis(x, index, axis) : gather(x, index, axis);
  }
  case NodeKind::Line:
    if (n.op == 0)
      return cumsum(x, axis);
    return cast(n.op == 1 ? argmax(x, axis, n.flag) : argmin(x, axis, n.flag),
                DType::i32);
  case NodeKind::Random:
    return n.op == 0 ? rand(x, shapeOf(r, n.dims), n.dtype)
                     : dropout(x, y, n.value);
  case NodeKind::Loss: {
    Tensor labels = mod(y, scalarLike(y, double(x.shape().back().size())));
    // Through logsumexp (a max without gradient) or its primitives.
    Tensor lse;
    if (n.op) {
      lse = logsumexp(x, {-1}, true);
    } else {
      Tensor m = reduceMax(x, {-1}, true);
      lse = log(reduceSum(exp(x - m), {-1}, true)) + m;
    }
    Tensor loss = lse - takeAlongAxis(x, labels, -1);
    return n.flag ? reduceMean(loss) : loss;
  }
  case NodeKind::Heads: {
    Shape s = x.shape(), split(s.begin(), s.end() - 1);
    int64_t heads = axis, rank = int64_t(s.size());
    split.push_back(Dim(heads));
    split.push_back(Dim(s.back().size() / heads));
    std::vector<int64_t> perm(rank + 1);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 1], perm[rank]); // [.., S, H, D] -> [.., H, S, D]
    return transpose(reshape(x, split), perm);
  }
  default:
    return {};
  }
}

/// A Select's condition: a compare, perhaps joined with a second compare of
/// `a` with `c` and negated.
Tensor selectMask(const Node &n, Tensor a, Tensor b, Tensor c) {
  Tensor mask = compare(Compare(n.op & kCompareBits), a, b);
  if (int logic = (n.op >> kLogicShift) & 3) {
    Tensor second =
        compare(Compare((n.op >> kSecondCompareShift) & kCompareBits), a, c);
    mask = logic == 1   ? logicalAnd(mask, second)
           : logic == 2 ? logicalOr(mask, second)
                        : logicalXor(mask, second);
  }
  return (n.op & kNegateMask) ? logicalNot(mask) : mask;
}

/// The tensor node `n` computes from `values` (the earlier nodes').
Tensor apply(Graph &g, const Recipe &r, const Node &n,
             const std::vector<Tensor> &values, int &inputCount) {
  auto operand = [&](size_t i) { return values[n.operands[i]]; };
  switch (n.kind) {
  case NodeKind::Input: {
    Shape shape = shapeOf(r, n.dims);
    for (size_t d = 0; r.symbolic && d < shape.size(); ++d)
      if (shape[d].size() > 1)
        shape[d] = Dim("d" + std::to_string(n.dims[d]));
    return g.input("in" + std::to_string(inputCount++), n.dtype, shape);
  }
  case NodeKind::Scalar:
    return g.constant(n.value, n.dtype);
  case NodeKind::Iota:
    return iota(g, shapeOf(r, n.dims), n.axes[0], n.dtype);
  case NodeKind::Unary:
    return applyUnary(n.op, operand(0));
  case NodeKind::Binary:
    return applyBinary(n.op, operand(0), operand(1));
  case NodeKind::Select:
    return where(selectMask(n, operand(0), operand(1),
                            n.operands.size() > 4 ? operand(4) : Tensor()),
                 operand(2), operand(3));
  case NodeKind::Cast:
    return cast(operand(0), n.dtype);
  case NodeKind::Broadcast:
    return broadcastTo(operand(0), shapeOf(r, n.dims));
  case NodeKind::Transpose:
    return transpose(operand(0), n.axes);
  case NodeKind::Reshape: {
    Shape s = operand(0).shape(), merged;
    for (size_t i = 0; i < s.size(); ++i) {
      if (int64_t(i) == n.axes[0] + 1)
        continue;
      int64_t size = s[i].size();
      if (int64_t(i) == n.axes[0] && i + 1 < s.size())
        size *= s[i + 1].size();
      merged.push_back(Dim(size));
    }
    return reshape(operand(0), merged);
  }
  case NodeKind::Reduce:
    return applyReduce(n.op, operand(0), n.axes, n.flag);
  case NodeKind::Matmul:
    return matmul(operand(0), operand(1),
                  {(n.op & kTransposeA) != 0, n.flag, std::nullopt});
  case NodeKind::Softmax:
    return softmax(operand(0), n.axes[0]);
  case NodeKind::Attention: {
    AttentionOptions options;
    options.causal = n.flag;
    size_t next = 3;
    if (n.op & kMask)
      options.mask = operand(next++);
    if (n.op & kBias)
      options.bias = operand(next++);
    if (n.op & kScale)
      options.scale = n.value;
    Tensor q = operand(0), k = operand(1), v = operand(2);
    if (n.op & kPositionMask) {
      Tensor positions = positionMask(g, q, k, n.axes[0]);
      options.mask =
          options.mask.isValid() ? logicalAnd(options.mask, positions)
                                 : positions;
    }
    if (n.op & kRepeatKV) {
      k = repeatedHeads(k, q.shape()[1]);
      v = repeatedHeads(v, q.shape()[1]);
    }
    if (n.op & kRotateQ) {
      int64_t half = q.shape()[3].size() / 2;
      Tensor rotated = concat({-slice(q, -1, half), slice(q, -1, 0, half)}, -1);
      q = q * operand(next) + rotated * operand(next + 1);
    }
    return attention(q, k, v, options);
  }
  case NodeKind::AttentionPrimitives:
    return attentionFromPrimitives(g, operand(0), operand(1), operand(2),
                                   n.flag);
  default:
    return applyIndexing(r, n, operand(0),
                         n.operands.size() > 1 ? operand(1) : Tensor());
  }
}

int64_t reductionLengthOf(const Node &n, const std::vector<Tensor> &values) {
  auto shape = [&](size_t i) { return values[n.operands[i]].shape(); };
  switch (n.kind) {
  case NodeKind::Reduce: {
    Shape s = shape(0);
    if (n.axes.empty())
      return product(s);
    int64_t len = 1;
    for (int64_t a : n.axes)
      len *= s[a < 0 ? a + int64_t(s.size()) : a].size();
    return len;
  }
  case NodeKind::Softmax: {
    Shape s = shape(0);
    int64_t a = n.axes[0];
    return s[a < 0 ? a + int64_t(s.size()) : a].size();
  }
  case NodeKind::Line: {
    Shape s = shape(0);
    return n.op == 0 ? s[n.axes[0]].size() : 1;
  }
  case NodeKind::Loss: {
    Shape s = shape(0);
    return s.back().size() * (n.flag ? product(s) / s.back().size() : 1);
  }
  case NodeKind::Matmul:
    return shape(0).back().size();
  case NodeKind::Attention:
  case NodeKind::AttentionPrimitives: {
    Shape q = shape(0), k = shape(1);
    return q.back().size() * k[k.size() - 2].size();
  }
  default:
    return 1;
  }
}

/// Whether each element of `n` adds up many elements of an operand, so
/// that one flipped decision upstream moves a whole row of its result.
bool contracts(const Node &n) {
  switch (n.kind) {
  case NodeKind::Reduce:
  case NodeKind::Matmul:
  case NodeKind::Softmax:
  case NodeKind::Attention:
  case NodeKind::AttentionPrimitives:
  case NodeKind::Loss:
    return true;
  case NodeKind::Line:
    return n.op == 0;
  case NodeKind::Gather:
    return n.op == 2;
  default:
    return false;
  }
}

} // namespace

Expected<BuiltGraph> build(const Recipe &recipe) {
  BuiltGraph built{Graph("fuzz_" + std::to_string(recipe.seed))};
  Graph &g = built.graph;
  std::vector<Tensor> values;
  // Whether each node's value depends on a discrete decision.
  std::vector<bool> decided;
  int inputs = 0;
  for (const Node &n : recipe.nodes) {
    for (int o : n.operands)
      if (o < 0 || o >= int(values.size()))
        return Error(ErrorCode::InvalidGraph, "recipe: operand out of order");
    Tensor t = apply(g, recipe, n, values, inputs);
    if (!g.status())
      return g.status().error();
    auto computedFloat = [&](int node) {
      NodeKind kind = recipe.nodes[node].kind;
      return isFloat(values[node].dtype()) && kind != NodeKind::Input &&
             kind != NodeKind::Scalar && kind != NodeKind::Iota;
    };
    bool decides = false;
    if (n.kind == NodeKind::Cast && !isFloat(n.dtype) &&
        computedFloat(n.operands[0]))
      decides = true;
    // A position picked among computed values flips with their rounding.
    if (n.kind == NodeKind::Line && n.op != 0 && computedFloat(n.operands[0]))
      decides = true;
    // A Select's compared operands: 0, 1 and the second compare's 4.
    for (size_t i = 0; n.kind == NodeKind::Select && i < n.operands.size(); ++i)
      if ((i < 2 || i == 4) && computedFloat(n.operands[i]))
        decides = true;
    // floor, round and mod step where rounding moves a value.
    bool steps = (n.kind == NodeKind::Unary && n.op >= 15) ||
                 (n.kind == NodeKind::Binary && n.op == 7);
    if (steps && std::any_of(n.operands.begin(), n.operands.end(), computedFloat))
      decides = true;
    built.discrete |= decides;
    bool readsDecided = std::any_of(n.operands.begin(), n.operands.end(),
                                    [&](int o) { return decided[o]; });
    decided.push_back(decides || readsDecided);
    built.discreteSpreads |= readsDecided && contracts(n);
    built.reductionLength =
        std::max(built.reductionLength, reductionLengthOf(n, values));
    built.maxElements = std::max(built.maxElements, product(t.shape()));
    if (n.kind == NodeKind::Input) {
      built.inputShapes.emplace_back();
      for (int d : n.dims)
        built.inputShapes.back().push_back(recipe.dimSize(d));
    }
    built.nodeDTypes.push_back(t.dtype());
    if (t.dtype() == DType::bf16 ||
        (t.dtype() == DType::f16 && built.leastPrecise == DType::f32))
      built.leastPrecise = t.dtype();
    built.nodeShapes.emplace_back();
    for (const Dim &d : t.shape())
      built.nodeShapes.back().push_back(
          d.isSymbolic() ? recipe.dimSize(std::stoi(d.symbol().substr(1)))
                         : d.size());
    values.push_back(t);
  }
  for (size_t i = 0; i < recipe.outputs.size(); ++i)
    g.output("out" + std::to_string(i), values[recipe.outputs[i]]);
  if (!g.status())
    return g.status().error();
  return built;
}

std::vector<HostTensor> randomInputs(const BuiltGraph &built, uint64_t seed) {
  std::vector<HostTensor> inputs;
  std::vector<TensorInfo> infos = built.graph.inputs();
  for (size_t i = 0; i < infos.size(); ++i)
    inputs.push_back(
        HostTensor::random(infos[i].dtype, built.inputShapes[i], seed++));
  return inputs;
}

} // namespace kfuse::fuzz
