//===- Generate.cpp - random recipes --------------------------------------===//
//
// The generator keeps each node's shape as dim-pool indices, so operands
// fit by construction: a broadcast partner is a suffix of the shape with
// some dims replaced by the pool's size-1 dim, a matmul's K is the left
// operand's last pool dim. Dtypes come from building the graph as it grows.
//
//===----------------------------------------------------------------------===//

#include "Recipe.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace kfuse::fuzz {

namespace {

/// Sizes dims are drawn from: 1, primes, powers of two and their
/// neighbours; a few large ones.
constexpr int64_t kSizes[] = {1,   2,   3,   5,    7,    8,    13,   16,
                              17,  31,  32,  61,   64,   100,  127,  128,
                              255, 256, 257, 509,  512,  1000, 1024, 1031,
                              2048, 4099};
constexpr int64_t kLargeSizes[] = {65537, 131072, 262147, 1048579};
constexpr int kUnaryOps = 17, kBinaryOps = 8, kReduceOps = 4, kCompares = 6;
constexpr DType kFloatTypes[] = {DType::f32, DType::f16, DType::bf16};

class Generator {
public:
  Generator(uint64_t seed, const GenerateOptions &options)
      : rng(seed), options(options) {
    recipe.seed = seed;
    one = addDim(1);
    int base = 2 + int(pick(3));
    for (int i = 0; i < base; ++i)
      addDim(kSizes[pick(std::size(kSizes))]);
    if (chance(0.1))
      addDim(kLargeSizes[pick(std::size(kLargeSizes))]);
  }

  Recipe run();

private:
  using PoolShape = std::vector<int>;

  uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng); }

  int addDim(int64_t size) {
    recipe.dims.push_back({size});
    return int(recipe.dims.size()) - 1;
  }
  int64_t elements(const PoolShape &s) const {
    int64_t n = 1;
    for (int d : s)
      n *= recipe.dimSize(d);
    return n;
  }
  bool fits(const PoolShape &s) const {
    return elements(s) <= options.maxElements;
  }

  /// Appends `node` with pool shape `shape`; false (and nothing appended)
  /// when the graph rejects it, which would be a generator bug.
  bool add(Node node, PoolShape shape);
  /// A recent node, more often the last ones: chains are what fusion eats.
  int pickValue() {
    size_t n = shapes.size();
    size_t back = std::min<size_t>(n - 1, pick(3) == 0 ? pick(n) : pick(3));
    return int(n - 1 - back);
  }
  DType dtypeOf(int node) const { return dtypes[node]; }
  bool isFloatNode(int node) const { return isFloat(dtypeOf(node)); }

  int newInput(PoolShape shape, DType dtype);
  PoolShape randomShape(int maxRank);
  PoolShape partnerShape(const PoolShape &of);
  bool broadcastsTo(const PoolShape &from, const PoolShape &to) const {
    return from.size() <= to.size() &&
           std::equal(from.rbegin(), from.rend(), to.rbegin(),
                      [&](int x, int y) { return x == y || x == one; });
  }
  int partnerFor(int a);

  void addUnary();
  void addBinary();
  void addSelect();
  void addCast();
  void addBroadcast();
  void addTranspose();
  void addReshape();
  void addReduce();
  void addMatmul();
  void addSoftmax();
  void addAttention();
  void addSlice();
  void addPad();
  void addConcat();
  void addGather();
  void addIndexAdd();
  void addLine();
  void addRandom();
  void addLoss();
  void addHeads();

  std::mt19937_64 rng;
  GenerateOptions options;
  Recipe recipe;
  int one;
  std::vector<PoolShape> shapes;
  std::vector<DType> dtypes;
};

bool Generator::add(Node node, PoolShape shape) {
  Recipe single = recipe;
  single.nodes.push_back(node);
  single.outputs.clear();
  Expected<BuiltGraph> built = build(single);
  if (!built)
    return false;
  dtypes.push_back(built->nodeDTypes.back());
  recipe.nodes.push_back(std::move(node));
  shapes.push_back(std::move(shape));
  return true;
}

int Generator::newInput(PoolShape shape, DType dtype) {
  Node n;
  n.kind = NodeKind::Input;
  n.dtype = dtype;
  n.dims = shape;
  add(n, shape);
  return int(recipe.nodes.size()) - 1;
}

Generator::PoolShape Generator::randomShape(int maxRank) {
  PoolShape s;
  int rank = 1 + int(pick(maxRank));
  for (int i = 0; i < rank; ++i) {
    int d = 1 + int(pick(recipe.dims.size() - 1));
    s.push_back(recipe.dimSize(d) > 1 ? d : one);
    if (!fits(s))
      s.back() = one;
  }
  return s;
}

/// A shape that broadcasts against `of` to `of`.
Generator::PoolShape Generator::partnerShape(const PoolShape &of) {
  if (of.empty())
    return of;
  size_t keep = chance(0.6) ? of.size() : 1 + pick(of.size());
  PoolShape s(of.end() - keep, of.end());
  for (int &d : s)
    if (chance(0.25))
      d = one;
  return s;
}

/// An operand to combine with node `a`: an earlier node of a fitting
/// shape, a scalar, or a new input.
int Generator::partnerFor(int a) {
  const PoolShape sa = shapes[a]; // a copy: adding nodes moves shapes
  std::vector<int> fitting;
  for (size_t i = 0; i < shapes.size(); ++i)
    if (int(i) != a && broadcastsTo(shapes[i], sa))
      fitting.push_back(int(i));
  if (!fitting.empty() && chance(0.4))
    return fitting[pick(fitting.size())];
  if (chance(0.15)) {
    Node n;
    n.kind = NodeKind::Scalar;
    n.dtype = chance(0.8) ? dtypeOf(a) : DType::f32;
    n.value = double(int(pick(17)) - 8) / 4.0;
    add(n, {});
    return int(recipe.nodes.size()) - 1;
  }
  DType dtype = chance(0.7) ? dtypeOf(a)
                : chance(0.8) ? kFloatTypes[pick(3)]
                              : DType::i32;
  return newInput(partnerShape(sa), dtype);
}

void Generator::addUnary() {
  Node n;
  n.kind = NodeKind::Unary;
  n.op = int(pick(kUnaryOps));
  n.operands = {pickValue()};
  add(n, shapes[n.operands[0]]);
}

void Generator::addBinary() {
  int a = pickValue();
  int b = partnerFor(a);
  Node n;
  n.kind = NodeKind::Binary;
  n.op = int(pick(kBinaryOps));
  n.operands = chance(0.5) ? std::vector<int>{a, b} : std::vector<int>{b, a};
  add(n, shapes[a]);
}

void Generator::addSelect() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (!shape.empty() && chance(0.3)) {
    // A mask from positions, as causal and padding masks are written.
    Node iotaNode;
    iotaNode.kind = NodeKind::Iota;
    iotaNode.dims = shape;
    iotaNode.axes = {int64_t(pick(shape.size()))};
    iotaNode.dtype = chance(0.7) ? DType::i32 : DType::f32;
    add(iotaNode, shape);
    a = int(recipe.nodes.size()) - 1;
  }
  Node n;
  n.kind = NodeKind::Select;
  n.op = int(pick(kCompares));
  int b = partnerFor(a);
  int onTrue = chance(0.5) ? pickValue() : partnerFor(a);
  if (!broadcastsTo(shapes[onTrue], shape))
    onTrue = partnerFor(a);
  int onFalse = partnerFor(a);
  n.operands = {a, b, onTrue, onFalse};
  if (chance(0.3)) { // masks joined as attention's padding and causal ones
    n.op |= (1 + int(pick(3))) << kLogicShift;
    n.op |= int(pick(kCompares)) << kSecondCompareShift;
    n.operands.push_back(partnerFor(a));
  }
  if (chance(0.15))
    n.op |= kNegateMask;
  add(n, shape);
}

void Generator::addCast() {
  int a = pickValue();
  constexpr DType kTargets[] = {DType::f32, DType::f16, DType::bf16, DType::i32};
  Node n;
  n.kind = NodeKind::Cast;
  n.dtype = kTargets[pick(4)];
  n.operands = {a};
  add(n, shapes[a]);
}

void Generator::addBroadcast() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  auto isOne = [&](int d) { return d == one; };
  auto unit = std::find_if(shape.begin(), shape.end(), isOne);
  int d = 1 + int(pick(recipe.dims.size() - 1));
  if (unit != shape.end() && chance(0.5))
    *unit = d;
  else
    shape.insert(shape.begin(), d);
  if (!fits(shape) || shape.size() > 5)
    return;
  Node n;
  n.kind = NodeKind::Broadcast;
  n.dims = shape;
  n.operands = {a};
  add(n, shape);
}

void Generator::addTranspose() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.size() < 2)
    return;
  std::vector<int64_t> perm(shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  PoolShape permuted;
  for (int64_t p : perm)
    permuted.push_back(shape[p]);
  Node n;
  n.kind = NodeKind::Transpose;
  n.axes = perm;
  n.operands = {a};
  add(n, permuted);
}

void Generator::addReshape() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.size() < 2)
    return;
  int64_t axis = int64_t(pick(shape.size() - 1));
  recipe.dims.push_back({0, shape[axis], shape[axis + 1]});
  PoolShape merged = shape;
  merged[axis] = int(recipe.dims.size()) - 1;
  merged.erase(merged.begin() + axis + 1);
  Node n;
  n.kind = NodeKind::Reshape;
  n.axes = {axis};
  n.operands = {a};
  add(n, merged);
}

void Generator::addReduce() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty())
    return;
  Node n;
  n.kind = NodeKind::Reduce;
  n.op = int(pick(kReduceOps));
  n.flag = chance(0.5);
  n.operands = {a};
  int64_t rank = int64_t(shape.size());
  if (chance(0.1)) {
    n.axes.clear(); // all dims
  } else {
    for (int64_t d = 0; d < rank; ++d)
      if (chance(0.35))
        n.axes.push_back(chance(0.3) ? d - rank : d);
    if (n.axes.empty())
      n.axes.push_back(chance(0.7) ? rank - 1 : int64_t(pick(rank)));
  }
  PoolShape reduced;
  for (int64_t d = 0; d < rank; ++d) {
    bool axis = n.axes.empty() ||
                std::count(n.axes.begin(), n.axes.end(), d) ||
                std::count(n.axes.begin(), n.axes.end(), d - rank);
    if (!axis)
      reduced.push_back(shape[d]);
    else if (n.flag)
      reduced.push_back(one);
  }
  add(n, reduced);
}

void Generator::addMatmul() {
  int a = pickValue();
  PoolShape sa = shapes[a];
  if (sa.size() < 2 || sa.size() > 4 || !isFloatNode(a))
    return;
  int nDim = 1 + int(pick(recipe.dims.size() - 1));
  // a is [..., M, K], or [..., K, M] read transposed.
  bool transposeA = chance(0.25);
  int kDim = transposeA ? sa[sa.size() - 2] : sa.back();
  int mDim = transposeA ? sa.back() : sa[sa.size() - 2];
  PoolShape out(sa.begin(), sa.end() - 2);
  out.push_back(mDim);
  out.push_back(nDim);
  if (elements(sa) * recipe.dimSize(nDim) > options.maxMacs || !fits(out))
    return;
  Node n;
  n.kind = NodeKind::Matmul;
  n.op = transposeA ? kTransposeA : 0;
  n.flag = chance(0.3);
  PoolShape sb = n.flag ? PoolShape{nDim, kDim} : PoolShape{kDim, nDim};
  if (sa.size() > 2 && chance(0.4))
    sb.insert(sb.begin(), sa.begin(), sa.end() - 2);
  if (!fits(sb))
    return;
  int b = newInput(sb, dtypeOf(a));
  n.operands = {a, b};
  add(n, out);
}

void Generator::addSoftmax() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty() || !isFloatNode(a))
    return;
  Node n;
  n.kind = NodeKind::Softmax;
  int64_t rank = int64_t(shape.size());
  n.axes = {chance(0.7) ? -1 : int64_t(pick(rank))};
  n.operands = {a};
  add(n, shape);
}

void Generator::addAttention() {
  constexpr int64_t kSeq[] = {1, 7, 64, 100, 129, 256};
  constexpr int64_t kHeadDims[] = {8, 16, 32, 64, 128};
  bool primitives = chance(0.5);
  int64_t heads = int64_t(1) << pick(3);
  int64_t kvHeads = primitives ? heads : heads >> pick(3);
  kvHeads = std::max<int64_t>(kvHeads, 1);
  int b = addDim(1 + int64_t(pick(2))), h = addDim(heads),
      hkv = addDim(kvHeads), sq = addDim(kSeq[pick(std::size(kSeq))]),
      sk = chance(0.5) ? sq : addDim(kSeq[pick(std::size(kSeq))]),
      d = addDim(kHeadDims[pick(std::size(kHeadDims))]);
  if (elements({b, h, sq, sk, d}) > options.maxMacs ||
      !fits({b, h, sq, sk}) || !fits({b, h, sq, d}) || !fits({b, h, sk, d}))
    return;
  DType dtype = kFloatTypes[pick(3)];
  int q = newInput({b, h, sq, d}, dtype);
  int k = newInput({b, hkv, sk, d}, dtype);
  int v = newInput({b, hkv, sk, d}, dtype);
  Node n;
  n.kind = primitives ? NodeKind::AttentionPrimitives : NodeKind::Attention;
  n.flag = chance(0.5);
  n.operands = {q, k, v};
  if (!primitives) {
    // A padding-style mask (rows may be masked entirely: they give 0) and
    // an additive bias, each broadcast from a smaller shape at times.
    if (chance(0.4)) {
      n.op |= kMask;
      n.operands.push_back(newInput(chance(0.5) ? PoolShape{one, one, sq, sk}
                                                : PoolShape{b, h, sq, sk},
                                    DType::i1));
    }
    if (chance(0.3)) {
      n.op |= kBias;
      n.operands.push_back(
          newInput(chance(0.5) ? PoolShape{one, h, sq, sk}
                               : PoolShape{b, h, sq, sk},
                   chance(0.5) ? dtype : DType::f32));
    }
    if (chance(0.3)) {
      n.op |= kScale;
      n.value = 0.05 * double(1 + pick(8));
    }
    // HuggingFace's spellings: a mask of positions (causal at offset 0)
    // and keys and values repeated per query head.
    if (chance(0.3)) {
      n.op |= kPositionMask;
      n.axes = {int64_t(pick(4)) - 1};
    }
    if (kvHeads < heads && chance(0.5))
      n.op |= kRepeatKV;
    // RoPE on q (its halves are static slices: the recipe stays static).
    if (chance(0.3)) {
      n.op |= kRotateQ;
      n.operands.push_back(newInput({sq, d}, dtype));
      n.operands.push_back(newInput({sq, d}, dtype));
    }
  }
  add(n, {b, h, sq, d});
}

void Generator::addSlice() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty())
    return;
  int64_t axis = int64_t(pick(shape.size()));
  int64_t size = recipe.dimSize(shape[axis]);
  int64_t start = int64_t(pick(std::max<int64_t>(size / 2, 1)));
  int64_t step = 1 + int64_t(pick(3));
  shape[axis] = addDim((size - start + step - 1) / step);
  Node n;
  n.kind = NodeKind::Slice;
  n.axes = {axis, start, step};
  n.dims = shape;
  n.operands = {a};
  add(n, shape);
}

void Generator::addPad() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty())
    return;
  int64_t axis = int64_t(pick(shape.size()));
  int64_t low = int64_t(pick(4)), high = int64_t(pick(4));
  shape[axis] = addDim(recipe.dimSize(shape[axis]) + low + high);
  if (!fits(shape))
    return;
  Node n;
  n.kind = NodeKind::Pad;
  n.axes = {axis, low, high};
  n.value = chance(0.5) ? 0.0 : -1.5;
  n.operands = {a};
  add(n, shape);
}

void Generator::addConcat() {
  int a = pickValue(), b = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty() || shapes[b].size() != shape.size())
    return;
  int64_t axis = int64_t(pick(shape.size()));
  for (size_t d = 0; d < shape.size(); ++d)
    if (int64_t(d) != axis && shapes[b][d] != shape[d])
      b = a; // no partner: the value joined to itself
  shape[axis] =
      addDim(recipe.dimSize(shape[axis]) + recipe.dimSize(shapes[b][axis]));
  if (!fits(shape))
    return;
  Node n;
  n.kind = NodeKind::Concat;
  n.axes = {axis};
  n.operands = {a, b};
  add(n, shape);
}

void Generator::addGather() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty())
    return;
  int64_t axis = int64_t(pick(shape.size()));
  bool along = chance(0.5);
  PoolShape indexShape = shape, result;
  if (along) {
    indexShape[axis] = addDim(1 + int64_t(pick(9)));
    result = indexShape;
  } else {
    indexShape = randomShape(2);
    result.assign(shape.begin(), shape.begin() + axis);
    result.insert(result.end(), indexShape.begin(), indexShape.end());
    result.insert(result.end(), shape.begin() + axis + 1, shape.end());
  }
  if (!fits(result) || result.size() > 5)
    return;
  int indices = newInput(indexShape, chance(0.5) ? DType::i32 : DType::i64);
  Node n;
  n.kind = NodeKind::Gather;
  n.op = along ? 1 : 0;
  n.axes = {axis};
  n.operands = {a, indices};
  add(n, result);
}

/// index_add of a float value's slices along an axis into 1 to 9 rows, by
/// indices drawn in [-8, 8]: repeated, counted from the end, out of range.
void Generator::addIndexAdd() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty() || !isFloatNode(a))
    return;
  int64_t axis = int64_t(pick(shape.size())), size = 1 + int64_t(pick(9));
  PoolShape result = shape;
  result[axis] = addDim(size);
  if (!fits(result))
    return;
  int indices = newInput({shape[axis]}, chance(0.5) ? DType::i32 : DType::i64);
  Node n;
  n.kind = NodeKind::Gather;
  n.op = 2;
  n.axes = {axis, size};
  n.operands = {a, indices};
  add(n, result);
}

void Generator::addLine() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty())
    return;
  Node n;
  n.kind = NodeKind::Line;
  n.op = int(pick(3));
  // A position picked among computed floats flips with their last bit
  // (cos x and cos -x tie exactly in the evaluator, not always in f32),
  // and a broadcast of it turns one flip into many: positions are picked
  // among inputs, exact everywhere.
  if (recipe.nodes[a].kind != NodeKind::Input)
    n.op = 0;
  n.flag = chance(0.5);
  int64_t axis = chance(0.6) ? int64_t(shape.size()) - 1
                             : int64_t(pick(shape.size()));
  n.axes = {axis};
  n.operands = {a};
  if (n.op != 0) {
    if (recipe.dimSize(shape[axis]) == 0)
      return;
    if (n.flag)
      shape[axis] = one;
    else
      shape.erase(shape.begin() + axis);
  }
  add(n, shape);
}

void Generator::addRandom() {
  Node n;
  n.kind = NodeKind::Random;
  n.op = int(pick(2)); // rand, or dropout of a value
  int a = pickValue();
  if (n.op == 1 && !isFloatNode(a))
    return;
  PoolShape shape = n.op == 0 ? randomShape(3) : shapes[a];
  Node seed;
  seed.kind = NodeKind::Input;
  seed.dtype = DType::i32;
  add(seed, {});
  int seedNode = int(recipe.nodes.size()) - 1;
  if (n.op == 0) {
    n.dims = shape;
    n.dtype = kFloatTypes[pick(3)];
    n.operands = {seedNode};
  } else {
    n.value = chance(0.5) ? 0.1 : 0.5;
    n.operands = {a, seedNode};
  }
  add(n, shape);
}

void Generator::addLoss() {
  int a = pickValue();
  PoolShape shape = shapes[a];
  if (shape.empty() || !isFloatNode(a))
    return;
  PoolShape rows(shape.begin(), shape.end() - 1);
  rows.push_back(one);
  int labels = newInput(rows, chance(0.5) ? DType::i32 : DType::i64);
  Node n;
  n.kind = NodeKind::Loss;
  n.flag = chance(0.5);
  n.op = chance(0.5); // through logsumexp, or its primitives
  n.operands = {a, labels};
  add(n, n.flag ? PoolShape{} : rows);
}

void Generator::addHeads() {
  // Prefer a matmul's result: the split is its epilogue's store layout.
  int a = pickValue();
  for (int i = int(shapes.size()) - 1; i >= 0; --i)
    if (recipe.nodes[i].kind == NodeKind::Matmul && chance(0.7)) {
      a = i;
      break;
    }
  PoolShape shape = shapes[a];
  if (shape.size() < 2 || shape.size() > 4)
    return;
  int64_t n = recipe.dimSize(shape.back());
  std::vector<int64_t> divisors;
  for (int64_t h : {2, 3, 4, 8, 16})
    if (n % h == 0 && n > h)
      divisors.push_back(h);
  if (divisors.empty())
    return;
  int64_t heads = divisors[pick(divisors.size())];
  PoolShape split(shape.begin(), shape.end() - 2);
  split.push_back(addDim(heads));
  split.push_back(shape[shape.size() - 2]);
  split.push_back(addDim(n / heads));
  Node node;
  node.kind = NodeKind::Heads;
  node.axes = {heads};
  node.operands = {a};
  add(node, split);
}

Recipe Generator::run() {
  DType first = chance(0.85) ? kFloatTypes[pick(3)] : DType::i32;
  if (chance(0.1))
    addAttention(); // may decline: too many multiply-adds
  if (recipe.nodes.empty())
    newInput(randomShape(4), first);
  using Adder = void (Generator::*)();
  static const std::pair<int, Adder> kAdders[] = {
      {30, &Generator::addUnary},     {30, &Generator::addBinary},
      {5, &Generator::addSelect},     {5, &Generator::addCast},
      {4, &Generator::addBroadcast},  {4, &Generator::addTranspose},
      {3, &Generator::addReshape},    {10, &Generator::addReduce},
      {5, &Generator::addMatmul},     {5, &Generator::addSoftmax},
      {2, &Generator::addAttention},  {3, &Generator::addSlice},
      {2, &Generator::addPad},        {2, &Generator::addConcat},
      {3, &Generator::addGather},     {2, &Generator::addLine},
      {2, &Generator::addRandom},     {2, &Generator::addLoss},
      {2, &Generator::addHeads},      {2, &Generator::addIndexAdd}};
  int total = 0;
  for (auto &[weight, adder] : kAdders)
    total += weight;
  int target = 2 + int(pick(options.maxNodes - 1));
  for (int steps = 0; int(recipe.nodes.size()) < target && steps < 100;
       ++steps) {
    int r = int(pick(total));
    for (auto &[weight, adder] : kAdders) {
      if ((r -= weight) < 0) {
        (this->*adder)();
        break;
      }
    }
  }
  auto computed = [&](int i) {
    NodeKind k = recipe.nodes[i].kind;
    return k != NodeKind::Input && k != NodeKind::Scalar;
  };
  if (!computed(int(recipe.nodes.size()) - 1))
    addUnary();
  recipe.outputs = {int(recipe.nodes.size()) - 1};
  // Symbols where the ops allow them (not through reshapes, broadcasts and
  // iotas, whose shapes are given as sizes here).
  bool shapesGiven = std::any_of(recipe.nodes.begin(), recipe.nodes.end(), [](const Node &n) {
    return n.kind == NodeKind::Reshape || n.kind == NodeKind::Broadcast ||
           n.kind == NodeKind::Iota ||
           n.kind == NodeKind::AttentionPrimitives ||
           (n.kind == NodeKind::Attention && (n.op & kRotateQ)) ||
           n.kind >= NodeKind::Slice; // known sizes along their axis
  });
  if (!shapesGiven && chance(0.3)) {
    recipe.symbolic = true;
    if (!build(recipe)) // an attention op needs a static head dim
      recipe.symbolic = false;
  }
  for (int extra = int(pick(3)); extra > 0 && chance(0.5); --extra) {
    int i = int(pick(recipe.nodes.size()));
    if (computed(i) &&
        std::count(recipe.outputs.begin(), recipe.outputs.end(), i) == 0)
      recipe.outputs.push_back(i);
  }
  return recipe;
}

} // namespace

Recipe generate(uint64_t seed, const GenerateOptions &options) {
  return Generator(seed, options).run();
}

} // namespace kfuse::fuzz
