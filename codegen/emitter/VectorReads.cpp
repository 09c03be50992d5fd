//===- VectorReads.cpp - consecutive elements read as one vector ----------===//
//
// A template that stores a vector of consecutive elements asks for them
// together (`vectorAt`), so that the index maps between its result and
// the kernel's buffers can keep the lanes together: a slice, a pad or a
// concat part along the last dim at multiples of the vector, a gathered
// row, a broadcast row vector or a transpose that keeps the last dim all
// map a vector to a vector of their operand, which is then one 16-byte
// load instead of one load an element (a slice or an embedding read
// element by element was bound by load instructions at 1.3-2.6x its HBM
// floor). Whatever breaks the lanes apart is computed lane by lane, as
// `elementAt` does.
//
// Every vector here is `count` consecutive linear indices of its tensor
// whose first is a multiple of `count`: its leaf loads are then aligned to
// their size (up to 16 bytes), as `loadVector` declares.
//
//===----------------------------------------------------------------------===//

#include "codegen/emitter/KernelEmitter.h"
#include "analysis/KernelAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;

static ArrayRef<int64_t> shapeOfValue(Value v) {
  return mlir::cast<RankedTensorType>(v.getType()).getShape();
}

/// Whether `count` consecutive elements of `shape` from a multiple of
/// `count` on lie in one row (all but the last index equal).
static bool inOneRow(ArrayRef<int64_t> shape, int64_t count) {
  return !shape.empty() && shape.back() % count == 0;
}

/// Widest vector a recursive read may ask for: two 16-byte accesses of
/// the widest dtype (a stride-2 slice of a 16-bit vector of 8).
static constexpr int64_t kMaxLanes = 16;

SmallVector<Value> KernelEmitter::laneIndices(Value first, int64_t count) {
  SmallVector<Value> lanes = {first};
  for (int64_t k = 1; k < count; ++k)
    lanes.push_back(arith::AddIOp::create(b, location, first, index(k)));
  return lanes;
}

FailureOr<SmallVector<Value>>
KernelEmitter::vectorAt(Value tensor, ElementIndex first, ArrayRef<Value> lanes) {
  SmallVector<Value> values;
  for (Value lane : lanes) {
    auto cached = computed.find({tensor, lane});
    if (cached == computed.end() ||
        !cached->second.getParentRegion()->isAncestor(
            b.getInsertionBlock()->getParent()))
      break;
    values.push_back(cached->second);
  }
  if (values.size() == lanes.size())
    return values;
  if (lanes.size() == 1) {
    FailureOr<Value> v = elementAt(tensor, first);
    if (failed(v))
      return failure();
    return SmallVector<Value>{*v};
  }
  FailureOr<SmallVector<Value>> result = computeVector(tensor, first, lanes);
  if (failed(result))
    return failure();
  for (auto [lane, value] : llvm::zip_equal(lanes, *result))
    setElement(tensor, lane, value);
  return result;
}

FailureOr<SmallVector<Value>>
KernelEmitter::vectorFrom(Value tensor, ArrayRef<Value> firstMulti,
                          int64_t count) {
  ElementIndex first = ElementIndex::multi(shapeOfValue(tensor), firstMulti);
  return vectorAt(tensor, first, laneIndices(first.getLinear(*this), count));
}

FailureOr<SmallVector<Value>>
KernelEmitter::lanesOneByOne(Value tensor, ElementIndex &first,
                             ArrayRef<Value> lanes) {
  ArrayRef<int64_t> shape = shapeOfValue(tensor);
  SmallVector<Value> values;
  for (auto [k, lane] : llvm::enumerate(lanes)) {
    // A row element's lanes share its row (the lanes lie in one row), so
    // that row scalars a row template recorded by row are found.
    ElementIndex idx = ElementIndex::linear(shape, lane);
    if (first.row() && first.column())
      idx = ElementIndex::rowElement(
          shape, lane, first.row(),
          k ? Value(arith::AddIOp::create(b, location, first.column(),
                                          index(k)))
            : first.column());
    FailureOr<Value> v = elementAt(tensor, idx);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

/// `value` in every one of `count` lanes.
static FailureOr<SmallVector<Value>> splat(FailureOr<Value> value,
                                           int64_t count) {
  if (failed(value))
    return failure();
  return SmallVector<Value>(count, *value);
}

FailureOr<SmallVector<Value>>
KernelEmitter::computeVector(Value tensor, ElementIndex &first,
                             ArrayRef<Value> lanes) {
  int64_t count = lanes.size();
  if (auto arg = dyn_cast<BlockArgument>(tensor)) {
    // Rows padded by kf-pad are contiguous only within a row.
    RowPadding rows = padding[arg.getArgNumber()];
    if (rows.stride && (rows.length % count || rows.stride % count))
      return lanesOneByOne(tensor, first, lanes);
    BufferIndex at(first.getLinear(*this));
    if (first.row() && first.column() && first.shape().back() == rows.length)
      at = BufferIndex(at.linear, first.row(), first.column());
    return loadVector(arg, at, count);
  }
  Operation *op = tensor.getDefiningOp();
  return TypeSwitch<Operation *, FailureOr<SmallVector<Value>>>(op)
      .Case([&](ConstantOp c) { return splat(constantAt(c), count); })
      .Case([&](ReshapeOp r) {
        // Row-major: the same linear indices.
        return vectorAt(r.getInput(), reshapedIndex(r, first), lanes);
      })
      .Case([&](BroadcastOp bc) { return broadcastVector(bc, first, lanes); })
      .Case([&](TransposeOp t) -> FailureOr<SmallVector<Value>> {
        ArrayRef<int64_t> perm = t.getPerm();
        if (!inOneRow(shapeOfValue(tensor), count) ||
            perm.back() != int64_t(perm.size()) - 1)
          return lanesOneByOne(tensor, first, lanes);
        ArrayRef<Value> out = first.getMulti(*this);
        SmallVector<Value> mapped(out.size());
        for (auto [d, p] : llvm::enumerate(perm))
          mapped[p] = out[d];
        return vectorFrom(t.getInput(), mapped, count);
      })
      .Case([&](SliceOp s) { return sliceVector(s, first, lanes); })
      .Case([&](PadOp p) { return padVector(p, first, lanes); })
      .Case([&](ConcatOp c) { return concatVector(c, first, lanes); })
      .Case([&](GatherOp g) { return gatherVector(g, first, lanes); })
      .Default([&](Operation *op) -> FailureOr<SmallVector<Value>> {
        if (!op->hasTrait<OpTrait::kf::Elementwise>())
          return lanesOneByOne(tensor, first, lanes);
        SmallVector<SmallVector<Value>> operands;
        for (Value operand : op->getOperands()) {
          FailureOr<SmallVector<Value>> v = vectorAt(operand, first, lanes);
          if (failed(v))
            return failure();
          operands.push_back(std::move(*v));
        }
        SmallVector<Value> values;
        for (int64_t k = 0; k < count; ++k) {
          SmallVector<Value> scalars;
          for (const SmallVector<Value> &operand : operands)
            scalars.push_back(operand[k]);
          FailureOr<Value> v = scalarOp(op, scalars);
          if (failed(v))
            return failure();
          values.push_back(*v);
        }
        return values;
      });
}

/// A row vector or scalar broadcast over the output reads one vector or
/// one element; so does any broadcast that keeps (or broadcasts) the last
/// dim of a vector within one row.
FailureOr<SmallVector<Value>>
KernelEmitter::broadcastVector(BroadcastOp op, ElementIndex &first,
                               ArrayRef<Value> lanes) {
  int64_t count = lanes.size();
  Value input = op.getInput();
  ArrayRef<int64_t> in = shapeOfValue(input), out = first.shape();
  if (std::optional<BroadcastSplit> split = splitBroadcast(op);
      split && split->rest % count == 0) {
    // As broadcastAt: a row element's row or column where they are what
    // the input is indexed by (row templates record row scalars by row).
    bool byRow = split->rest == out.back();
    if (split->kind == BroadcastSplit::leading) {
      Value at = byRow && first.row()
                     ? first.row()
                     : Value(arith::DivUIOp::create(b, location,
                                                    first.getLinear(*this),
                                                    index(split->rest)));
      return splat(elementAt(input, ElementIndex::linear(in, at)), count);
    }
    if (op.getInput().getType().getNumElements() == 1)
      return splat(elementAt(input, ElementIndex::linear(in, index(0))),
                   count);
    Value at = byRow && first.column()
                   ? first.column()
                   : Value(arith::RemUIOp::create(b, location,
                                                  first.getLinear(*this),
                                                  index(split->rest)));
    return vectorAt(input, ElementIndex::linear(in, at),
                    laneIndices(at, count));
  }
  if (!inOneRow(out, count))
    return lanesOneByOne(op.getResult(), first, lanes);
  ArrayRef<Value> outIdx = first.getMulti(*this);
  size_t offset = out.size() - in.size();
  SmallVector<Value> mapped;
  for (auto [d, size] : llvm::enumerate(in))
    mapped.push_back(size == 1 ? index(0) : outIdx[offset + d]);
  if (in.empty() || in.back() == 1)
    return splat(elementAt(input, ElementIndex::multi(in, mapped)), count);
  return vectorFrom(input, mapped, count);
}

/// A slice with step s along the last dim reads count * s consecutive
/// elements and keeps every s-th (when that is at most two 16-byte
/// accesses: the sectors are read anyway). The wide read's length must be
/// a power of two, as every vector's: 6 f16 lanes from a multiple of 6 on
/// are a 4-lane load at 12-byte steps, misaligned in every other row.
FailureOr<SmallVector<Value>>
KernelEmitter::sliceVector(SliceOp op, ElementIndex &first,
                           ArrayRef<Value> lanes) {
  int64_t count = lanes.size();
  ArrayRef<int64_t> in = shapeOfValue(op.getInput());
  int64_t start = op.getStarts().back(), step = op.getSteps().back();
  int64_t wide = count * step;
  if (!inOneRow(first.shape(), count) || wide > kMaxLanes ||
      !llvm::isPowerOf2_64(wide) || in.back() % wide || start % wide)
    return lanesOneByOne(op.getResult(), first, lanes);
  FailureOr<SmallVector<Value>> read = vectorFrom(
      op.getInput(), sliceSource(op, first.getMulti(*this)), wide);
  if (failed(read) || step == 1)
    return read;
  SmallVector<Value> kept;
  for (int64_t k = 0; k < count; ++k)
    kept.push_back((*read)[k * step]);
  return kept;
}

/// With the last dim's low border and input extent multiples of the
/// vector, a vector lies wholly inside the input or wholly in the border.
FailureOr<SmallVector<Value>>
KernelEmitter::padVector(PadOp op, ElementIndex &first, ArrayRef<Value> lanes) {
  int64_t count = lanes.size();
  ArrayRef<int64_t> in = shapeOfValue(op.getInput());
  if (!inOneRow(first.shape(), count) || in.back() % count ||
      op.getLow().back() % count || llvm::is_contained(in, 0))
    return lanesOneByOne(op.getResult(), first, lanes);
  SmallVector<Value> mapped(first.getMulti(*this));
  Value inside = clampIntoPad(op, mapped);
  FailureOr<SmallVector<Value>> values =
      vectorFrom(op.getInput(), mapped, count);
  if (failed(values) || !inside)
    return values;
  Value fill = padFill(op);
  for (Value &v : *values)
    v = arith::SelectOp::create(b, location, inside, v, fill);
  return values;
}

/// Along the axis, each part's extent times the elements after the axis
/// a multiple of the vector: a vector lies in one part, read by a branch
/// a part (uniform across a vector).
FailureOr<SmallVector<Value>>
KernelEmitter::concatVector(ConcatOp op, ElementIndex &first,
                            ArrayRef<Value> lanes) {
  int64_t count = lanes.size();
  int64_t axis = op.getAxis();
  ArrayRef<int64_t> out = first.shape();
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < int64_t(out.size()); ++d)
    inner *= out[d];
  if (llvm::any_of(op.getInputs(), [&](Value input) {
        return (shapeOfValue(input)[axis] * inner) % count != 0;
      }))
    return lanesOneByOne(op.getResult(), first, lanes);
  Type type = computeType(op.getType().getElementType());
  SmallVector<Type> types(count, type);
  return forEachConcatPart(
      op, first.getMulti(*this), types,
      [&](Value input, ArrayRef<Value> mapped) {
        return vectorFrom(input, mapped, count);
      });
}

/// A gather along any dim but the last: a vector's lanes share one index
/// and read consecutive elements of the gathered row.
FailureOr<SmallVector<Value>>
KernelEmitter::gatherVector(GatherOp op, ElementIndex &first,
                            ArrayRef<Value> lanes) {
  int64_t count = lanes.size();
  ArrayRef<int64_t> in = shapeOfValue(op.getInput());
  int64_t axis = op.getAxis();
  if (axis + 1 == int64_t(in.size()) || !inOneRow(first.shape(), count) ||
      in[axis] == 0)
    return lanesOneByOne(op.getResult(), first, lanes);
  auto source = gatherSource(op, first.getMulti(*this));
  if (failed(source))
    return failure();
  auto [position, ok] = normalizePick(source->first, in[axis]);
  source->second[axis] = position;
  FailureOr<SmallVector<Value>> values =
      vectorFrom(op.getInput(), source->second, count);
  if (failed(values))
    return failure();
  Value fill = pickFill(op.getInput());
  for (Value &v : *values)
    v = arith::SelectOp::create(b, location, ok, v, fill);
  return values;
}
