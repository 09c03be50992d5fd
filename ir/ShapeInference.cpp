//===- ShapeInference.cpp - shape rules of the kf ops ---------------------===//

#include "ShapeInference.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kfuse::kf::shapes {

LogicalResult ShapeDiag::fail(const llvm::Twine &message) {
  if (error.empty())
    error = message.str();
  return failure();
}

std::string ShapeDiag::dim(int64_t d) const {
  if (d == kUnknown)
    return "?";
  if (isSymbolic(d))
    return namer ? namer(d) : "?";
  return std::to_string(d);
}

std::string ShapeDiag::str(ArrayRef<int64_t> shape) const {
  if (shape.empty())
    return "a scalar";
  std::string out;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      out += 'x';
    out += dim(d);
  }
  return out;
}

FailureOr<Shape> broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                                 ShapeDiag &diag) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t &res = out[rank - 1 - i];
    if (da == 1)
      res = db;
    else if (db == 1 || dimsMatch(da, db))
      res = da == kUnknown ? db : da;
    else
      return diag.fail("shapes cannot be broadcast together: " + diag.str(a) +
                       " and " + diag.str(b) + " (dim " +
                       std::to_string(rank - 1 - i) + ": " + diag.dim(da) +
                       " vs " + diag.dim(db) + ")");
  }
  return out;
}

LogicalResult checkBroadcastTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to,
                               ShapeDiag &diag) {
  if (from.size() > to.size())
    return diag.fail("cannot broadcast " + diag.str(from) + " to " +
                     diag.str(to) + ": the input has more dims");
  size_t offset = to.size() - from.size();
  for (auto [i, d] : llvm::enumerate(from))
    if (d != 1 && !dimsMatch(d, to[offset + i]))
      return diag.fail("cannot broadcast " + diag.str(from) + " to " +
                       diag.str(to) + ": input dim " + std::to_string(i) +
                       " is " + diag.dim(d) + ", not 1 or " +
                       diag.dim(to[offset + i]));
  return success();
}

std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || llvm::MulOverflow(count, d, count))
      return std::nullopt;
  }
  return count;
}

LogicalResult checkReshape(ArrayRef<int64_t> from, ArrayRef<int64_t> to,
                           ShapeDiag &diag) {
  std::optional<int64_t> a = elementCount(from), b = elementCount(to);
  if (a && b && *a != *b)
    return diag.fail("cannot reshape " + diag.str(from) + " (" +
                     std::to_string(*a) + " elements) to " + diag.str(to) +
                     " (" + std::to_string(*b) + " elements)");
  return success();
}

FailureOr<Shape> inferTranspose(ArrayRef<int64_t> input,
                                ArrayRef<int64_t> perm, ShapeDiag &diag) {
  auto permStr = [&] {
    std::string s = "[";
    for (auto [i, p] : llvm::enumerate(perm))
      s += (i ? ", " : "") + std::to_string(p);
    return s + "]";
  };
  if (perm.size() != input.size())
    return diag.fail("permutation " + permStr() + " has " +
                     std::to_string(perm.size()) + " entries but the input " +
                     diag.str(input) + " has rank " +
                     std::to_string(input.size()));
  llvm::SmallVector<bool, 8> seen(input.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p])
      return diag.fail("permutation " + permStr() +
                       " is not a permutation of the dims of " +
                       diag.str(input));
    seen[p] = true;
    out.push_back(input[p]);
  }
  return out;
}

LogicalResult checkAxis(int64_t rank, int64_t axis, ShapeDiag &diag) {
  if (axis < 0 || axis >= rank)
    return diag.fail("axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  return success();
}

FailureOr<Shape> inferReduce(ArrayRef<int64_t> input, ArrayRef<int64_t> axes,
                             bool keepDims, ShapeDiag &diag) {
  if (axes.empty())
    return diag.fail("no axes to reduce over " + diag.str(input));
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (failed(checkAxis(input.size(), axis, diag)))
      return failure();
    if (i && axes[i - 1] >= axis)
      return diag.fail("reduction axes must be distinct and ascending");
  }
  Shape out;
  for (auto [i, d] : llvm::enumerate(input)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      out.push_back(d);
    else if (keepDims)
      out.push_back(1);
  }
  return out;
}

FailureOr<Shape> inferMatmul(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                             bool transposeA, bool transposeB, ShapeDiag &diag,
                             std::optional<int64_t> kChunk) {
  if (a.size() < 2 || b.size() < 2)
    return diag.fail("operands must have rank >= 2: a is " + diag.str(a) +
                     ", b is " + diag.str(b));
  size_t ra = a.size(), rb = b.size();
  if (rb != 2 && rb != ra)
    return diag.fail("batch dims differ: a is " + diag.str(a) + ", b is " +
                     diag.str(b) + " (b must be rank 2 or of a's rank)");
  for (size_t i = 0; rb == ra && i + 2 < ra; ++i)
    if (!dimsMatch(a[i], b[i]))
      return diag.fail("batch dims differ: a is " + diag.str(a) + ", b is " +
                       diag.str(b));
  int64_t m = transposeA ? a[ra - 1] : a[ra - 2];
  int64_t ka = transposeA ? a[ra - 2] : a[ra - 1];
  int64_t kb = transposeB ? b[rb - 1] : b[rb - 2];
  int64_t n = transposeB ? b[rb - 2] : b[rb - 1];
  if (!dimsMatch(ka, kb))
    return diag.fail("inner dimensions differ: a is " + diag.str(a) +
                     (transposeA ? " (transposed)" : "") + ", b is " +
                     diag.str(b) + (transposeB ? " (transposed)" : ""));
  Shape out(a.begin(), a.end() - 2);
  out.push_back(m);
  out.push_back(n);
  if (kChunk) {
    if (*kChunk <= 0 || ka <= 0)
      return diag.fail("k_chunk must be positive and K non-empty, got " +
                       std::to_string(*kChunk) +
                       " for K = " + std::to_string(ka));
    out.insert(out.begin(), (ka + *kChunk - 1) / *kChunk);
  }
  return out;
}

FailureOr<Shape> inferAttention(const AttentionShapes &s, ShapeDiag &diag) {
  auto all = [&] {
    return "q is " + diag.str(s.q) + ", k is " + diag.str(s.k) + ", v is " +
           diag.str(s.v);
  };
  if (s.q.size() != 4 || s.k.size() != 4 || s.v.size() != 4)
    return diag.fail("q, k and v must be [batch, heads, seq, head_dim]: " +
                     all());
  if (!dimsMatch(s.q[0], s.k[0]) || !dimsMatch(s.k[0], s.v[0]))
    return diag.fail("batch sizes differ: " + all());
  if (!dimsMatch(s.k[1], s.v[1]) || !dimsMatch(s.k[2], s.v[2]))
    return diag.fail("k and v differ in heads or sequence: " + all());
  if (!dimsMatch(s.q[3], s.k[3]))
    return diag.fail("head dims of q and k differ: " + all());
  int64_t h = s.q[1], hkv = s.k[1];
  if (h >= 0 && hkv > 0 && h % hkv != 0)
    return diag.fail("query heads must be a multiple of key/value heads: " +
                     all());
  if (hkv == 0 && h != 0)
    return diag.fail("no key/value heads for " + diag.dim(h) +
                     " query heads: " + all());
  Shape scores = {s.q[0], s.q[1], s.q[2], s.k[2]};
  for (auto [name, extra] : {std::pair{"mask", s.mask}, {"bias", s.bias}}) {
    if (!extra)
      continue;
    if (extra->size() != 4 ||
        !llvm::all_of(llvm::zip(*extra, scores),
                      [](auto p) {
                        return dimsMatch(std::get<0>(p), std::get<1>(p));
                      }))
      return diag.fail(std::string(name) + " is " + diag.str(*extra) +
                       " but the scores are " + diag.str(scores));
  }
  return Shape{s.q[0], s.q[1], s.q[2], s.v[3]};
}

/// "[1, 2, 3]".
static std::string listStr(ArrayRef<int64_t> values) {
  std::string s = "[";
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(v);
  return s + "]";
}

FailureOr<Shape> inferSlice(ArrayRef<int64_t> input, ArrayRef<int64_t> starts,
                            ArrayRef<int64_t> limits, ArrayRef<int64_t> steps,
                            ShapeDiag &diag) {
  if (starts.size() != input.size() || limits.size() != input.size() ||
      steps.size() != input.size())
    return diag.fail("starts " + listStr(starts) + ", limits " +
                     listStr(limits) + " and steps " + listStr(steps) +
                     " need one entry per dim of " + diag.str(input));
  Shape out;
  for (auto [d, size] : llvm::enumerate(input)) {
    int64_t start = starts[d], limit = limits[d], step = steps[d];
    std::string where = "dim " + std::to_string(d) + " of " + diag.str(input);
    bool toEnd = limit == kSliceToEnd;
    if (step < 1)
      return diag.fail("step " + std::to_string(step) + " of " + where +
                       " must be >= 1 (negative steps are not supported)");
    if (isSymbolic(size)) {
      // A symbolic dim can only be kept whole: its limit is the dim itself.
      if (start != 0 || step != 1 || !toEnd)
        return diag.fail(where + " is symbolic: only a known dim can be "
                                 "sliced");
      out.push_back(size);
      continue;
    }
    if (toEnd)
      limit = size;
    if (start < 0 || start > limit || limit > size)
      return diag.fail("slice [" + std::to_string(start) + ":" +
                       std::to_string(limit) + "] of " + where +
                       " needs 0 <= start <= limit <= " + diag.dim(size));
    out.push_back(llvm::divideCeil(limit - start, step));
  }
  return out;
}

FailureOr<Shape> inferConcat(ArrayRef<ArrayRef<int64_t>> inputs, int64_t axis,
                             ShapeDiag &diag) {
  if (inputs.empty())
    return diag.fail("concat needs at least one operand");
  ArrayRef<int64_t> first = inputs.front();
  if (failed(checkAxis(first.size(), axis, diag)))
    return failure();
  Shape out(first.begin(), first.end());
  out[axis] = 0;
  for (auto [i, shape] : llvm::enumerate(inputs)) {
    std::string which = "operand " + std::to_string(i) + " is " +
                        diag.str(shape) + ", operand 0 is " + diag.str(first);
    if (shape.size() != first.size())
      return diag.fail("operands differ in rank: " + which);
    for (auto [d, size] : llvm::enumerate(shape))
      if (int64_t(d) != axis && !dimsMatch(size, first[d]))
        return diag.fail("operands differ in dim " + std::to_string(d) +
                         ", which is not the axis " + std::to_string(axis) +
                         ": " + which);
    if (isSymbolic(shape[axis]))
      return diag.fail("the axis " + std::to_string(axis) + " of operand " +
                       std::to_string(i) + " (" + diag.str(shape) +
                       ") is symbolic: only known dims can be joined");
    out[axis] += shape[axis];
  }
  return out;
}

FailureOr<Shape> inferPad(ArrayRef<int64_t> input, ArrayRef<int64_t> low,
                          ArrayRef<int64_t> high, ShapeDiag &diag) {
  if (low.size() != input.size() || high.size() != input.size())
    return diag.fail("low " + listStr(low) + " and high " + listStr(high) +
                     " need one entry per dim of " + diag.str(input));
  Shape out;
  for (auto [d, size] : llvm::enumerate(input)) {
    std::string where = "dim " + std::to_string(d) + " of " + diag.str(input);
    if (low[d] < 0 || high[d] < 0)
      return diag.fail("padding " + std::to_string(low[d]) + ", " +
                       std::to_string(high[d]) + " of " + where +
                       " must be >= 0 (crop with slice)");
    if (isSymbolic(size) && (low[d] || high[d]))
      return diag.fail(where + " is symbolic: only a known dim can be padded");
    out.push_back(isSymbolic(size) ? size : low[d] + size + high[d]);
  }
  return out;
}

FailureOr<Shape> inferGather(ArrayRef<int64_t> input,
                             ArrayRef<int64_t> indices, int64_t axis,
                             ShapeDiag &diag) {
  if (failed(checkAxis(input.size(), axis, diag)))
    return failure();
  Shape out(input.begin(), input.begin() + axis);
  out.append(indices.begin(), indices.end());
  out.append(input.begin() + axis + 1, input.end());
  return out;
}

FailureOr<Shape> inferIndexAdd(ArrayRef<int64_t> updates,
                               ArrayRef<int64_t> indices, int64_t axis,
                               int64_t size, ShapeDiag &diag) {
  std::string both =
      "updates are " + diag.str(updates) + ", indices are " + diag.str(indices);
  if (axis < 0 || axis + indices.size() > updates.size())
    return diag.fail("axis " + std::to_string(axis) +
                     " leaves no room for the indices' dims: " + both);
  if (size <= 0)
    return diag.fail("size " + std::to_string(size) + " must be positive");
  for (auto [d, n] : llvm::enumerate(indices))
    if (!dimsMatch(n, updates[axis + d]))
      return diag.fail("updates dim " + std::to_string(axis + d) +
                       " differs from indices dim " + std::to_string(d) +
                       ": " + both);
  Shape out(updates.begin(), updates.begin() + axis);
  out.push_back(size);
  out.append(updates.begin() + axis + indices.size(), updates.end());
  return out;
}

FailureOr<Shape> inferTakeAlongAxis(ArrayRef<int64_t> input,
                                    ArrayRef<int64_t> indices, int64_t axis,
                                    ShapeDiag &diag) {
  if (failed(checkAxis(input.size(), axis, diag)))
    return failure();
  std::string both =
      "input is " + diag.str(input) + ", indices are " + diag.str(indices);
  if (indices.size() != input.size())
    return diag.fail("indices need the input's rank: " + both);
  for (auto [d, size] : llvm::enumerate(indices))
    if (int64_t(d) != axis && !dimsMatch(size, input[d]))
      return diag.fail("indices differ from the input in dim " +
                       std::to_string(d) + ", which is not the axis " +
                       std::to_string(axis) + ": " + both);
  return Shape(indices.begin(), indices.end());
}

} // namespace kfuse::kf::shapes
