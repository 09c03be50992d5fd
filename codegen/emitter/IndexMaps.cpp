//===- IndexMaps.cpp - the indexing ops computed in their readers' loads --===//
//
// kf.slice, kf.pad, kf.concat, kf.gather and kf.take_along_axis never get
// a buffer of their own inside a kernel: the element of their result at an
// index is the element of an operand at a mapped index, so `elementAt`
// maps the index and asks for the operand's element (which may itself be
// loaded or recomputed). kf.random computes Philox from the index.
//
// Out-of-range positions (pad's border, an index outside the gathered dim)
// read a clamped, valid position and select the fill value, so no thread
// ever loads outside a buffer.
//
//===----------------------------------------------------------------------===//

#include "codegen/emitter/KernelEmitter.h"
#include "ir/Numerics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace kfuse::kf;

static ArrayRef<int64_t> shapeOfValue(Value v) {
  return mlir::cast<RankedTensorType>(v.getType()).getShape();
}

SmallVector<Value> KernelEmitter::sliceSource(SliceOp op,
                                              ArrayRef<Value> position) {
  SmallVector<Value> mapped(position);
  for (auto [d, p] : llvm::enumerate(mapped)) {
    int64_t start = op.getStarts()[d], step = op.getSteps()[d];
    if (step != 1)
      p = arith::MulIOp::create(b, location, p, index(step));
    if (start != 0)
      p = arith::AddIOp::create(b, location, p, index(start));
  }
  return mapped;
}

FailureOr<Value> KernelEmitter::sliceAt(SliceOp op, ElementIndex &idx) {
  return elementAt(op.getInput(),
                   ElementIndex::multi(shapeOfValue(op.getInput()),
                                       sliceSource(op, idx.getMulti(*this))));
}

Value KernelEmitter::padFill(PadOp op) {
  Type dtype = op.getType().getElementType();
  double padding = op.getValue().convertToDouble();
  if (dtype.isInteger(1))
    return constant(computeType(dtype), padding != 0);
  return constant(computeType(dtype),
                  isa<FloatType>(dtype) ? padding : std::trunc(padding));
}

Value KernelEmitter::clampIntoPad(PadOp op, MutableArrayRef<Value> position) {
  ArrayRef<int64_t> in = shapeOfValue(op.getInput());
  Value inside;
  for (auto [d, p] : llvm::enumerate(position)) {
    int64_t low = op.getLow()[d], high = op.getHigh()[d];
    if (low == 0 && high == 0)
      continue;
    // Below `low` the index wraps to a large unsigned value: one compare
    // finds both borders.
    Value shifted = arith::SubIOp::create(b, location, p, index(low));
    Value ok = arith::CmpIOp::create(b, location, arith::CmpIPredicate::ult,
                                     shifted, index(in[d]));
    p = arith::SelectOp::create(b, location, ok, shifted, index(0));
    inside = inside ? Value(arith::AndIOp::create(b, location, inside, ok)) : ok;
  }
  return inside;
}

FailureOr<Value> KernelEmitter::padAt(PadOp op, ElementIndex &idx) {
  ArrayRef<int64_t> in = shapeOfValue(op.getInput());
  if (llvm::is_contained(in, 0))
    return padFill(op);
  SmallVector<Value> mapped(idx.getMulti(*this));
  Value inside = clampIntoPad(op, mapped);
  FailureOr<Value> v =
      elementAt(op.getInput(), ElementIndex::multi(in, mapped));
  if (failed(v) || !inside)
    return v;
  return Value(arith::SelectOp::create(b, location, inside, *v, padFill(op)));
}

FailureOr<SmallVector<Value>> KernelEmitter::forEachConcatPart(
    ConcatOp op, ArrayRef<Value> position, TypeRange types,
    function_ref<FailureOr<SmallVector<Value>>(Value, ArrayRef<Value>)> read) {
  int64_t axis = op.getAxis();
  // Operands with nothing along the axis are never read.
  SmallVector<std::pair<Value, int64_t>> parts; // operand, first position
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    if (shapeOfValue(input)[axis] > 0)
      parts.push_back({input, offset});
    offset += shapeOfValue(input)[axis];
  }
  // if position < end of part k: part k, else the rest, as nested scf.if.
  std::function<FailureOr<SmallVector<Value>>(size_t)> partAt =
      [&](size_t k) -> FailureOr<SmallVector<Value>> {
    auto [input, first] = parts[k];
    SmallVector<Value> mapped(position);
    if (first)
      mapped[axis] =
          arith::SubIOp::create(b, location, position[axis], index(first));
    if (k + 1 == parts.size())
      return read(input, mapped);
    Value inPart = arith::CmpIOp::create(
        b, location, arith::CmpIPredicate::ult, position[axis],
        index(first + shapeOfValue(input)[axis]));
    auto branch = scf::IfOp::create(b, location, types, inPart,
                                    /*addThenBlock=*/true,
                                    /*addElseBlock=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    FailureOr<SmallVector<Value>> mine = read(input, mapped);
    if (failed(mine))
      return failure();
    scf::YieldOp::create(b, location, *mine);
    b.setInsertionPointToStart(branch.elseBlock());
    FailureOr<SmallVector<Value>> rest = partAt(k + 1);
    if (failed(rest))
      return failure();
    scf::YieldOp::create(b, location, *rest);
    return SmallVector<Value>(branch.getResults());
  };
  return partAt(0);
}

FailureOr<Value> KernelEmitter::concatAt(ConcatOp op, ElementIndex &idx) {
  Type type = computeType(op.getType().getElementType());
  FailureOr<SmallVector<Value>> v = forEachConcatPart(
      op, idx.getMulti(*this), TypeRange{type},
      [&](Value input,
          ArrayRef<Value> mapped) -> FailureOr<SmallVector<Value>> {
        FailureOr<Value> element = elementAt(
            input, ElementIndex::multi(shapeOfValue(input), mapped));
        if (failed(element))
          return failure();
        return SmallVector<Value>{*element};
      });
  if (failed(v))
    return failure();
  return (*v)[0];
}

Value KernelEmitter::pickFill(Value input) {
  Type dtype = mlir::cast<RankedTensorType>(input.getType()).getElementType();
  return isa<FloatType>(dtype) ? f32(NAN) : constant(computeType(dtype), 0);
}

std::pair<Value, Value> KernelEmitter::normalizePick(Value picked, int64_t n) {
  // Index i in [-n, 0) is i + n; anything outside [-n, n) reads element 0
  // and gives the fill.
  Type i64 = b.getI64Type();
  if (!picked.getType().isInteger(64))
    picked = arith::ExtSIOp::create(b, location, i64, picked);
  Value zero = constant(i64, 0), size = constant(i64, double(n));
  Value negative = arith::CmpIOp::create(b, location, arith::CmpIPredicate::slt,
                                         picked, zero);
  picked = arith::SelectOp::create(
      b, location, negative, arith::AddIOp::create(b, location, picked, size),
      picked);
  Value ok = arith::CmpIOp::create(b, location, arith::CmpIPredicate::ult,
                                   picked, size);
  picked = arith::SelectOp::create(b, location, ok, picked, zero);
  return {arith::IndexCastOp::create(b, location, b.getIndexType(), picked),
          ok};
}

FailureOr<Value> KernelEmitter::pickAt(Value input, Value picked, int64_t axis,
                                       SmallVector<Value> inputIndex) {
  ArrayRef<int64_t> shape = shapeOfValue(input);
  if (shape[axis] == 0)
    return pickFill(input);
  auto [position, ok] = normalizePick(picked, shape[axis]);
  inputIndex[axis] = position;
  FailureOr<Value> v = elementAt(input, ElementIndex::multi(shape, inputIndex));
  if (failed(v))
    return failure();
  return Value(arith::SelectOp::create(b, location, ok, *v, pickFill(input)));
}

FailureOr<std::pair<Value, SmallVector<Value>>>
KernelEmitter::gatherSource(GatherOp op, ArrayRef<Value> out) {
  int64_t axis = op.getAxis();
  ArrayRef<int64_t> indexShape = shapeOfValue(op.getIndices());
  int64_t indexRank = indexShape.size();
  FailureOr<Value> picked = elementAt(
      op.getIndices(),
      ElementIndex::multi(indexShape, out.slice(axis, indexRank)));
  if (failed(picked))
    return failure();
  SmallVector<Value> inputIndex(out.take_front(axis));
  inputIndex.push_back(Value());
  llvm::append_range(inputIndex, out.drop_front(axis + indexRank));
  return std::pair{*picked, inputIndex};
}

FailureOr<Value> KernelEmitter::gatherAt(GatherOp op, ElementIndex &idx) {
  auto source = gatherSource(op, idx.getMulti(*this));
  if (failed(source))
    return failure();
  return pickAt(op.getInput(), source->first, op.getAxis(), source->second);
}

FailureOr<Value> KernelEmitter::takeAlongAxisAt(TakeAlongAxisOp op,
                                                ElementIndex &idx) {
  FailureOr<Value> picked = elementAt(op.getIndices(), idx);
  if (failed(picked))
    return failure();
  return pickAt(op.getInput(), *picked, op.getAxis(),
                SmallVector<Value>(idx.getMulti(*this)));
}

/// `linear` as first + k with k a constant (k = 0 if it is no such sum).
static std::pair<Value, int64_t> splitConstantOffset(Value linear) {
  if (auto add = linear.getDefiningOp<arith::AddIOp>())
    for (auto [a, b] : {std::pair{add.getLhs(), add.getRhs()},
                        std::pair{add.getRhs(), add.getLhs()}})
      if (std::optional<int64_t> k = getConstantIntValue(b))
        return {a, *k};
  return {linear, 0};
}

/// Whether `v` is a product with a constant multiple of 4 (a vector's
/// first linear index, for vectors of a multiple of 4 lanes).
static bool isMultipleOfFour(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return *c % 4 == 0;
  auto mul = v.getDefiningOp<arith::MulIOp>();
  if (!mul)
    return false;
  return llvm::any_of(mul->getOperands(), [](Value operand) {
    std::optional<int64_t> c = getConstantIntValue(operand);
    return c && *c % 4 == 0;
  });
}

std::array<Value, 4> KernelEmitter::philoxBlock(RandomOp op, Value block) {
  Location l = location;
  Type i32 = b.getI32Type();
  auto word = [&](uint32_t value) -> Value {
    return arith::ConstantOp::create(b, l, b.getIntegerAttr(i32, APInt(32, value)));
  };
  Value counter = arith::IndexCastOp::create(b, l, b.getI64Type(), block);
  Value high = arith::ShRUIOp::create(b, l, counter,
                                      constant(b.getI64Type(), 32));
  Value seed = *elementAt(op.getSeed(), ElementIndex::linear({}, index(0)));
  // Philox4x32-10, as numerics::philox4x32 computes it on the host.
  std::array<Value, 4> c = {arith::TruncIOp::create(b, l, i32, counter),
                            arith::TruncIOp::create(b, l, i32, high),
                            word(uint32_t(op.getStream())), word(0)};
  std::array<Value, 2> key = {seed, word(0)};
  for (int round = 0; round < numerics::kPhiloxRounds; ++round) {
    if (round) {
      key[0] = arith::AddIOp::create(b, l, key[0], word(numerics::kPhiloxW0));
      key[1] = arith::AddIOp::create(b, l, key[1], word(numerics::kPhiloxW1));
    }
    auto p0 = arith::MulUIExtendedOp::create(b, l, word(numerics::kPhiloxM0), c[0]);
    auto p1 = arith::MulUIExtendedOp::create(b, l, word(numerics::kPhiloxM1), c[2]);
    auto mix = [&](Value x, Value y, Value z) -> Value {
      return arith::XOrIOp::create(b, l, arith::XOrIOp::create(b, l, x, y), z);
    };
    c = {mix(p1.getHigh(), c[1], key[0]), p1.getLow(),
         mix(p0.getHigh(), c[3], key[1]), p0.getLow()};
  }
  return c;
}

FailureOr<Value> KernelEmitter::randomAt(RandomOp op, ElementIndex &idx) {
  Location l = location;
  Value linear = idx.getLinear(*this);
  Value word;
  auto [first, lane] = splitConstantOffset(linear);
  if (isMultipleOfFour(first)) {
    // Lanes first + k of a vector share the block of counter
    // first / 4 + k / 4: one Philox evaluation for four lanes.
    auto key = std::make_tuple(op.getOperation(), first, lane / 4);
    auto cached = philoxBlocks.find(key);
    if (cached == philoxBlocks.end() ||
        !cached->second[0].getParentRegion()->isAncestor(
            b.getInsertionBlock()->getParent())) {
      Value block = arith::AddIOp::create(
          b, l, arith::DivUIOp::create(b, l, first, index(4)), index(lane / 4));
      cached = philoxBlocks.insert_or_assign(key, philoxBlock(op, block)).first;
    }
    word = cached->second[lane % 4];
  } else {
    std::array<Value, 4> words = philoxBlock(
        op, arith::DivUIOp::create(b, l, linear, index(4)));
    Value which = arith::RemUIOp::create(b, l, linear, index(4));
    word = words[3];
    for (int k = 2; k >= 0; --k)
      word = arith::SelectOp::create(
          b, l,
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, which,
                                index(k)),
          words[k], word);
  }
  Value bits = arith::ShRUIOp::create(
      b, l, word,
      arith::ConstantOp::create(b, l, b.getIntegerAttr(b.getI32Type(), 8)));
  return Value(arith::MulFOp::create(
      b, l, arith::UIToFPOp::create(b, l, b.getF32Type(), bits),
      f32(0x1p-24)));
}
