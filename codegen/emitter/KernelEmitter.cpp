//===- KernelEmitter.cpp - a kernel body's elements inside a gpu.func -----===//

#include "codegen/emitter/KernelEmitter.h"
#include "analysis/KernelAnalysis.h"
#include "codegen/Passes.h"
#include "codegen/emitter/AsyncCopy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace kfuse::kf;

//===----------------------------------------------------------------------===//
// ElementIndex
//===----------------------------------------------------------------------===//

ElementIndex ElementIndex::linear(ArrayRef<int64_t> shape, Value linear) {
  ElementIndex idx;
  idx.dims.assign(shape.begin(), shape.end());
  idx.linearIndex = linear;
  return idx;
}

ElementIndex ElementIndex::multi(ArrayRef<int64_t> shape,
                                 ArrayRef<Value> index) {
  ElementIndex idx;
  idx.dims.assign(shape.begin(), shape.end());
  idx.multiIndex.assign(index.begin(), index.end());
  return idx;
}

ElementIndex ElementIndex::rowElement(ArrayRef<int64_t> shape, Value linear,
                                      Value row, Value column) {
  ElementIndex idx = ElementIndex::linear(shape, linear);
  idx.rowIndex = row;
  idx.columnIndex = column;
  return idx;
}

Value ElementIndex::getLinear(KernelEmitter &e) {
  if (!linearIndex)
    linearIndex = e.linearize(multiIndex, dims);
  return linearIndex;
}

ArrayRef<Value> ElementIndex::getMulti(KernelEmitter &e) {
  if (multiIndex.empty() && !dims.empty())
    multiIndex = e.delinearize(linearIndex, dims);
  return multiIndex;
}

//===----------------------------------------------------------------------===//
// KernelEmitter
//===----------------------------------------------------------------------===//

KernelEmitter::KernelEmitter(KernelOp kernel, gpu::GPUFuncOp func)
    : kernelOp(kernel), func(func), b(func.getContext()),
      location(kernel.getLoc()) {
  b.setInsertionPointToStart(&func.getBody().front());
  for (Value buffer :
       llvm::concat<const Value>(kernel.getInputs(), kernel.getResults())) {
    auto type = mlir::cast<RankedTensorType>(buffer.getType());
    padding.push_back(
        {type.getRank() ? type.getShape().back() : 1, paddedRowStride(buffer)});
  }
  halfResults = llvm::all_of(kernel.getResults(), [](Value result) {
    Type dtype = getElementTypeOrSelf(result.getType());
    return isa<FloatType>(dtype) && dtype.getIntOrFloatBitWidth() == 16;
  });
}

Type KernelEmitter::computeType(Type dtype) {
  if (isa<FloatType>(dtype))
    return Float32Type::get(dtype.getContext());
  return dtype;
}

Value KernelEmitter::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, location, value);
}

Value KernelEmitter::f32(double value) {
  return arith::ConstantOp::create(b, location, b.getF32FloatAttr(value));
}

Value KernelEmitter::constant(Type type, double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, location, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(
      b, location, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

SmallVector<Value> KernelEmitter::delinearize(Value linear,
                                              ArrayRef<int64_t> shape) {
  SmallVector<Value> out(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      out[d] = linear;
      break;
    }
    if (shape[d] == 1) {
      out[d] = index(0);
      continue;
    }
    Value size = index(shape[d]);
    out[d] = arith::RemUIOp::create(b, location, linear, size);
    linear = arith::DivUIOp::create(b, location, linear, size);
  }
  return out;
}

Value KernelEmitter::linearize(ValueRange idx, ArrayRef<int64_t> shape) {
  if (idx.empty())
    return index(0);
  Value linear = idx[0];
  for (size_t i = 1; i < idx.size(); ++i) {
    linear = arith::MulIOp::create(b, location, linear, index(shape[i]));
    linear = arith::AddIOp::create(b, location, linear, idx[i]);
  }
  return linear;
}

LogicalResult KernelEmitter::forEachItem(int64_t items, bool perBlock,
                                         function_ref<LogicalResult(Value)> body) {
  Value bid = gpu::BlockIdOp::create(b, location, gpu::Dimension::x);
  Value gdim = gpu::GridDimOp::create(b, location, gpu::Dimension::x);
  Value first = bid, stride = gdim;
  if (!perBlock) {
    Value tid = gpu::ThreadIdOp::create(b, location, gpu::Dimension::x);
    Value bdim = gpu::BlockDimOp::create(b, location, gpu::Dimension::x);
    first = arith::AddIOp::create(
        b, location, arith::MulIOp::create(b, location, bid, bdim), tid);
    stride = arith::MulIOp::create(b, location, bdim, gdim);
  }
  auto loop = scf::ForOp::create(b, location, first, index(items), stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  return body(loop.getInductionVar());
}

SmallVector<Value> KernelEmitter::loop(
    int64_t count, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, location, index(0), index(count),
                                 index(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    // The builder adds an empty scf.yield when there are no loop-carried
    // values; the body's own yield replaces it.
    if (!loop.getBody()->empty())
      loop.getBody()->getTerminator()->erase();
    b.setInsertionPointToEnd(loop.getBody());
    SmallVector<Value> next =
        body(loop.getInductionVar(), loop.getRegionIterArgs());
    scf::YieldOp::create(b, location, next);
  }
  return SmallVector<Value>(loop.getResults());
}

Value KernelEmitter::warpReduce(Value value,
                                function_ref<Value(Value, Value)> combine,
                                int64_t lanes) {
  Value width = arith::ConstantOp::create(b, location, b.getI32IntegerAttr(32));
  for (int64_t offset = lanes / 2; offset >= 1; offset /= 2) {
    Value off = arith::ConstantOp::create(b, location,
                                          b.getI32IntegerAttr(offset));
    Value other = gpu::ShuffleOp::create(b, location, value, off, width,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = combine(value, other);
  }
  return value;
}

Value KernelEmitter::blockReduce(Value value, Value identity, Value scratch,
                                 int64_t threads,
                                 function_ref<Value(Value, Value)> combine) {
  return blockReduce(ArrayRef<Value>{value}, ArrayRef<Value>{identity},
                     scratch, threads, [&](unsigned, Value x, Value y) {
                       return combine(x, y);
                     })[0];
}

SmallVector<Value>
KernelEmitter::blockReduce(ArrayRef<Value> values, ArrayRef<Value> identities,
                           Value scratch, int64_t threads,
                           function_ref<Value(unsigned, Value, Value)> combine) {
  // Fewer threads than a warp: aligned groups of `threads` lanes, each a
  // reduction of its own (rows sharing a block).
  SmallVector<Value> reduced;
  for (auto [i, value] : llvm::enumerate(values))
    reduced.push_back(warpReduce(
        value, [&, i = i](Value x, Value y) { return combine(i, x, y); },
        std::min<int64_t>(threads, 32)));
  if (threads <= 32)
    return reduced;
  Value tid = gpu::ThreadIdOp::create(b, location, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, location, tid, index(32));
  Value warp = arith::DivUIOp::create(b, location, tid, index(32));
  Value zero = index(0);
  // Slot `warp` of value i's 32: a value's slots past the first at 32 i.
  auto slot = [&](unsigned i, Value at) {
    return i ? arith::AddIOp::create(b, location, at, index(32 * i))
             : at;
  };
  // Lane 0 of each warp publishes its partials; every warp then reads all
  // partials and reduces them again, so every thread gets the results.
  // One barrier for all the values: their rounds overlap.
  Value isLeader = arith::CmpIOp::create(b, location, arith::CmpIPredicate::eq,
                                         lane, zero);
  auto publish = scf::IfOp::create(b, location, isLeader);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(publish.thenBlock()->getTerminator());
    for (auto [i, value] : llvm::enumerate(reduced))
      memref::StoreOp::create(b, location, value, scratch,
                              ValueRange{slot(i, warp)});
  }
  gpu::BarrierOp::create(b, location);
  int64_t warps = (threads + 31) / 32;
  // Blocks of several groups of whole warps (rows sharing a block): each
  // group reads its own warps' partials.
  Value first = zero;
  if (kernelOp.getLaunchAttr().getBlock() > threads)
    first = arith::MulIOp::create(
        b, location, arith::DivUIOp::create(b, location, warp, index(warps)),
        index(warps));
  Value inRange = arith::CmpIOp::create(b, location, arith::CmpIPredicate::ult,
                                        lane, index(warps));
  Value safeLane = arith::SelectOp::create(b, location, inRange, lane, zero);
  if (first != zero)
    safeLane = arith::AddIOp::create(b, location, first, safeLane);
  SmallVector<Value> results;
  for (unsigned i = 0; i < reduced.size(); ++i) {
    Value partial = memref::LoadOp::create(b, location, scratch,
                                           ValueRange{slot(i, safeLane)});
    partial =
        arith::SelectOp::create(b, location, inRange, partial, identities[i]);
    results.push_back(warpReduce(
        partial, [&](Value x, Value y) { return combine(i, x, y); }));
  }
  // The scratch buffer is reused by the next reduction.
  gpu::BarrierOp::create(b, location);
  return results;
}

Value KernelEmitter::offsetOf(unsigned argNumber, const BufferIndex &at) {
  RowPadding rows = padding[argNumber];
  if (!rows.stride)
    return at.linear;
  Value row = at.row, column = at.column;
  if (!row || !column) {
    row = arith::DivUIOp::create(b, location, at.linear, index(rows.length));
    column = arith::RemUIOp::create(b, location, at.linear, index(rows.length));
  }
  return arith::AddIOp::create(
      b, location, arith::MulIOp::create(b, location, row, index(rows.stride)),
      column);
}

Value KernelEmitter::load(unsigned argNumber, Value offset) {
  Value memref = func.getArgument(argNumber);
  Value v = memref::LoadOp::create(b, location, memref, ValueRange{offset});
  Type dtype = mlir::cast<MemRefType>(memref.getType()).getElementType();
  if (isa<FloatType>(dtype) && !dtype.isF32())
    v = arith::ExtFOp::create(b, location, b.getF32Type(), v);
  return v;
}

void KernelEmitter::storeResult(unsigned result, BufferIndex at, Value v) {
  unsigned argNumber = kernelOp.getInputs().size() + result;
  Value memref = func.getArgument(argNumber);
  Type dtype = mlir::cast<MemRefType>(memref.getType()).getElementType();
  if (isa<FloatType>(dtype) && !dtype.isF32())
    v = arith::TruncFOp::create(b, location, dtype, v);
  memref::StoreOp::create(b, location, v, memref,
                          ValueRange{offsetOf(argNumber, at)});
}

void KernelEmitter::addToResult(unsigned result, BufferIndex at, Value v) {
  unsigned argNumber = kernelOp.getInputs().size() + result;
  memref::AtomicRMWOp::create(b, location, arith::AtomicRMWKind::addf, v,
                              func.getArgument(argNumber),
                              ValueRange{offsetOf(argNumber, at)});
}

/// A vector access's own size (at most 16 bytes): templates access
/// vectors at multiples of their length from 16-byte aligned buffers.
static llvm::MaybeAlign vectorAlignment(VectorType type) {
  int64_t bytes = type.getNumElements() *
                  type.getElementType().getIntOrFloatBitWidth() / 8;
  return llvm::MaybeAlign(std::min<int64_t>(bytes, 16));
}

SmallVector<Value> KernelEmitter::loadVector(BlockArgument arg,
                                             BufferIndex first, int64_t lanes) {
  Value memref = func.getArgument(arg.getArgNumber());
  Value offset = offsetOf(arg.getArgNumber(), first);
  if (lanes == 1)
    return {load(arg.getArgNumber(), offset)};
  Type dtype = mlir::cast<MemRefType>(memref.getType()).getElementType();
  // At most 16 bytes an access (NVPTX splits a wider one into 8-byte
  // loads).
  int64_t chunk =
      std::min<int64_t>(lanes, 128 / dtype.getIntOrFloatBitWidth());
  SmallVector<Value> values;
  for (int64_t from = 0; from < lanes; from += chunk) {
    Value at = from ? Value(arith::AddIOp::create(b, location, offset,
                                                  index(from)))
                    : offset;
    llvm::append_range(values, computeLanes(loadRaw(memref, at, chunk)));
  }
  return values;
}

Value KernelEmitter::loadRaw(Value memref, Value offset, int64_t lanes) {
  Type dtype = mlir::cast<MemRefType>(memref.getType()).getElementType();
  auto type = VectorType::get({lanes}, dtype);
  return vector::LoadOp::create(b, location, type, memref, ValueRange{offset},
                                /*nontemporal=*/false, vectorAlignment(type));
}

SmallVector<Value> KernelEmitter::computeLanes(Value vector) {
  auto type = mlir::cast<VectorType>(vector.getType());
  Type dtype = type.getElementType();
  SmallVector<Value> values;
  for (int64_t lane = 0; lane < type.getNumElements(); ++lane) {
    Value v =
        vector::ExtractOp::create(b, location, vector, ArrayRef<int64_t>{lane});
    if (isa<FloatType>(dtype) && !dtype.isF32())
      v = arith::ExtFOp::create(b, location, b.getF32Type(), v);
    values.push_back(v);
  }
  return values;
}

void KernelEmitter::loadLanes(BlockArgument arg, BufferIndex first,
                              ArrayRef<Value> linears) {
  SmallVector<Value> values = loadVector(arg, first, linears.size());
  for (auto [linear, value] : llvm::zip_equal(linears, values))
    setElement(arg, linear, value);
}

/// Stores `vector` at `offset` of global `memref` with PTX's evict-first
/// cache operator (NVPTX drops LLVM's !nontemporal), when the vector is 1,
/// 2 or 4 whole 32-bit words; false where it is not.
static bool storeEvictFirst(OpBuilder &b, Location l, Value vector,
                            Value memref, Value offset) {
  auto type = cast<VectorType>(vector.getType());
  int64_t bits = type.getNumElements() * type.getElementTypeBitWidth();
  int64_t words = bits / 32;
  if (bits % 32 || (words != 1 && words != 2 && words != 4))
    return false;
  Value packed = vector::BitCastOp::create(
      b, l, VectorType::get({words}, b.getI32Type()), vector);
  SmallVector<Value> operands = {async::globalAddress(b, l, memref, offset)};
  std::string lanes, constraints = "l";
  for (int64_t k = 0; k < words; ++k) {
    operands.push_back(
        vector::ExtractOp::create(b, l, packed, ArrayRef<int64_t>{k}));
    lanes += (k ? ", $" : "$") + std::to_string(k + 1);
    constraints += ",r";
  }
  if (words > 1)
    lanes = "{" + lanes + "}";
  std::string shape = words == 1 ? "" : ".v" + std::to_string(words);
  LLVM::InlineAsmOp::create(
      b, l, TypeRange(), operands,
      "st.global.cs" + shape + ".b32 [$0], " + lanes + ";", constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
  return true;
}

void KernelEmitter::storeLanes(unsigned result, BufferIndex first,
                               ArrayRef<Value> values, bool evictFirst) {
  if (values.size() == 1) {
    storeResult(result, first, values[0]);
    return;
  }
  unsigned argNumber = kernelOp.getInputs().size() + result;
  Value memref = func.getArgument(argNumber);
  Type dtype = mlir::cast<MemRefType>(memref.getType()).getElementType();
  SmallVector<Value> lanes;
  for (Value v : values)
    lanes.push_back(isa<FloatType>(dtype) && !dtype.isF32()
                        ? Value(arith::TruncFOp::create(b, location, dtype, v))
                        : v);
  auto type = VectorType::get({static_cast<int64_t>(values.size())}, dtype);
  Value vector = vector::FromElementsOp::create(b, location, type, lanes);
  Value offset = offsetOf(argNumber, first);
  if (evictFirst && storeEvictFirst(b, location, vector, memref, offset))
    return;
  vector::StoreOp::create(b, location, vector, memref, ValueRange{offset},
                          /*nontemporal=*/false, vectorAlignment(type));
}

void KernelEmitter::setElement(Value tensor, Value linear, Value value) {
  computed[{tensor, linear}] = value;
}

FailureOr<Value> KernelEmitter::elementAt(Value tensor, ElementIndex idx) {
  Value linear = idx.getLinear(*this);
  auto cached = computed.find({tensor, linear});
  if (cached != computed.end() &&
      cached->second.getParentRegion()->isAncestor(
          b.getInsertionBlock()->getParent()))
    return cached->second;
  FailureOr<Value> result = compute(tensor, idx);
  if (succeeded(result))
    computed[{tensor, linear}] = *result;
  return result;
}


/// Broadcast: an input that spans the trailing output dims (a row vector,
/// a bias) is read at `linear % its size`; one that spans the leading dims
/// (a row scalar) at `linear / the rest`; with a known row element both are
/// the element's column or row. Anything else goes through the multi-index.
FailureOr<Value> KernelEmitter::broadcastAt(BroadcastOp op, ElementIndex &idx) {
  ArrayRef<int64_t> in = op.getInput().getType().getShape();
  ArrayRef<int64_t> out = idx.shape();
  if (std::optional<BroadcastSplit> split = splitBroadcast(op)) {
    // (A row scalar of a one-row space is found by its row below: that is
    // the index row templates record it at.)
    if (split->kind == BroadcastSplit::trailing) {
      if (op.getInput().getType().getNumElements() == 1)
        return elementAt(op.getInput(), ElementIndex::linear(in, index(0)));
      if (idx.column() && split->rest == out.back())
        return elementAt(op.getInput(), ElementIndex::linear(in, idx.column()));
      Value linear = arith::RemUIOp::create(b, location, idx.getLinear(*this),
                                            index(split->rest));
      return elementAt(op.getInput(), ElementIndex::linear(in, linear));
    }
    if (idx.row() && split->rest == out.back())
      return elementAt(op.getInput(), ElementIndex::linear(in, idx.row()));
    Value linear = arith::DivUIOp::create(b, location, idx.getLinear(*this),
                                          index(split->rest));
    return elementAt(op.getInput(), ElementIndex::linear(in, linear));
  }
  ArrayRef<Value> outIdx = idx.getMulti(*this);
  size_t offset = out.size() - in.size();
  SmallVector<Value> mapped;
  for (auto [d, size] : llvm::enumerate(in))
    mapped.push_back(size == 1 ? index(0) : outIdx[offset + d]);
  return elementAt(op.getInput(), ElementIndex::multi(in, mapped));
}

ElementIndex KernelEmitter::reshapedIndex(ReshapeOp op, ElementIndex &idx) {
  // Row-major: the linear index is the same; a reshape that keeps the last
  // dim keeps each element's row and column too (a row kernel finds its
  // per-row values by row).
  ArrayRef<int64_t> in = op.getInput().getType().getShape();
  if (idx.row() && idx.column() && !in.empty() && !idx.shape().empty() &&
      in.back() == idx.shape().back())
    return ElementIndex::rowElement(in, idx.getLinear(*this), idx.row(),
                                    idx.column());
  return ElementIndex::linear(in, idx.getLinear(*this));
}

FailureOr<Value> KernelEmitter::compute(Value tensor, ElementIndex &idx) {
  if (auto arg = dyn_cast<BlockArgument>(tensor)) {
    // A row element's row and column are the buffer's when it is indexed
    // in its own [rows, length] space.
    BufferIndex at(idx.getLinear(*this));
    if (idx.row() && idx.column() && !idx.shape().empty() &&
        idx.shape().back() == padding[arg.getArgNumber()].length)
      at = BufferIndex(at.linear, idx.row(), idx.column());
    return load(arg.getArgNumber(), offsetOf(arg.getArgNumber(), at));
  }
  Operation *op = tensor.getDefiningOp();
  return TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](ConstantOp c) { return constantAt(c); })
      .Case([&](BroadcastOp bc) { return broadcastAt(bc, idx); })
      .Case([&](TransposeOp t) -> FailureOr<Value> {
        ArrayRef<Value> outIdx = idx.getMulti(*this);
        SmallVector<Value> mapped(outIdx.size());
        for (auto [d, p] : llvm::enumerate(t.getPerm()))
          mapped[p] = outIdx[d];
        return elementAt(t.getInput(), ElementIndex::multi(
                                           t.getInput().getType().getShape(),
                                           mapped));
      })
      .Case([&](ReshapeOp r) {
        return elementAt(r.getInput(), reshapedIndex(r, idx));
      })
      .Case([&](SoftmaxOp softmax) { return softmaxAt(softmax, idx); })
      .Case([&](IotaOp iota) { return iotaAt(iota, idx); })
      .Case([&](SliceOp slice) { return sliceAt(slice, idx); })
      .Case([&](PadOp pad) { return padAt(pad, idx); })
      .Case([&](ConcatOp concat) { return concatAt(concat, idx); })
      .Case([&](GatherOp gather) { return gatherAt(gather, idx); })
      .Case([&](TakeAlongAxisOp take) { return takeAlongAxisAt(take, idx); })
      .Case([&](RandomOp random) { return randomAt(random, idx); })
      .Default([&](Operation *op) -> FailureOr<Value> {
        if (!op->hasTrait<OpTrait::kf::Elementwise>())
          return op->emitOpError("cannot be computed element by element "
                                 "inside this kernel");
        SmallVector<Value> operands;
        for (Value operand : op->getOperands()) {
          FailureOr<Value> v = elementAt(operand, idx);
          if (failed(v))
            return failure();
          operands.push_back(*v);
        }
        return scalarOp(op, operands);
      });
}

FailureOr<Value> KernelEmitter::softmaxAt(SoftmaxOp op, ElementIndex &idx) {
  auto stats = softmaxStats.find(op);
  if (stats == softmaxStats.end())
    return op.emitOpError("needs its row statistics here");
  auto [max, sum, shift] = stats->second;
  FailureOr<Value> x = elementAt(op.getInput(), idx);
  if (failed(x))
    return failure();
  Value p = shift ? emitExp2Approx(b, location,
                                   math::FmaOp::create(b, location, *x,
                                                       f32(M_LOG2E), shift))
                  : math::ExpOp::create(
                        b, location, arith::SubFOp::create(b, location, *x, max));
  // A fully masked row (max = -inf) gives 0, as the evaluator says.
  Value masked = arith::CmpFOp::create(b, location, arith::CmpFPredicate::OEQ,
                                       max, f32(-INFINITY));
  return Value(arith::SelectOp::create(
      b, location, masked, f32(0), arith::DivFOp::create(b, location, p, sum)));
}

Value KernelEmitter::iotaAt(IotaOp op, ElementIndex &idx) {
  Value position = idx.getMulti(*this)[op.getDim()];
  Value i = arith::IndexCastOp::create(b, location, b.getI64Type(), position);
  Type dtype = computeType(op.getType().getElementType());
  if (isa<FloatType>(dtype))
    return arith::SIToFPOp::create(b, location, dtype, i);
  if (dtype == i.getType()) {
    int64_t bound = op.getType().getDimSize(op.getDim());
    if (!ShapedType::isDynamic(bound) && bound <= INT32_MAX)
      i64Positions[i] = bound;
    return i;
  }
  return arith::TruncIOp::create(b, location, dtype, i);
}

FailureOr<Value> KernelEmitter::constantAt(ConstantOp op) {
  auto attr = mlir::cast<DenseElementsAttr>(op.getValue());
  Type dtype = attr.getElementType();
  if (!attr.isSplat())
    return op.emitOpError("a constant that is not a splat cannot be used "
                          "inside a kernel yet");
  if (isa<FloatType>(dtype))
    return f32(attr.getSplatValue<APFloat>().convertToDouble());
  APInt value = attr.getSplatValue<APInt>();
  return Value(arith::ConstantOp::create(
      b, location,
      b.getIntegerAttr(dtype, dtype.isInteger(1) ? value.getZExtValue()
                                                 : value.getSExtValue())));
}
