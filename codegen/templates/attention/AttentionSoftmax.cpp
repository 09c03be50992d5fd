//===- AttentionSoftmax.cpp - FlashAttention's online softmax of a tile --===//
//
// The part of the FlashAttention template between the two products of a
// key tile: the tile's scores (in the accumulator layout of S = Q K^T)
// take their bias or mask and the causal mask, the row max and the sum of
// 2^(s c - m c) update the running state through quad shuffles, and the
// probabilities are packed in pairs as the A fragments of P V.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/attention/AttentionKernel.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kfuse::kf;
using namespace kfuse::kf::detail;

/// Accumulator i of a thread holds row lane / 4 (+ 8 when i % 4 >= 2) of
/// its warp's 16 and key (or value dim) 8 (i / 4) + 2 (lane % 4) + i % 2.
SmallVector<Value, 2> FlashAttention::softmax(Value tile,
                                              SmallVector<Value> &s,
                                              RowState &state, bool masked) {
  if (op.getMask() || op.getBias())
    applyScoreOperands(tile, s);
  if (masked)
    mask(tile, s);
  Value negInf = e.f32(-INFINITY), c = e.f32(scaleLog2);
  auto maximum = [&](Value x, Value y) -> Value {
    return arith::MaximumFOp::create(b, l, x, y);
  };
  auto plus = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, l, x, y);
  };
  SmallVector<Value, 2> alphas;
  SmallVector<Value> p(blockK / 2);
  for (int64_t h = 0; h < 2; ++h) {
    SmallVector<Value> row = {state.max[h]};
    for (int64_t i = 0; i < blockK / 2; ++i)
      if (i % 4 / 2 == h)
        row.push_back(s[i]);
    Value rowMax = quadReduce(treeReduce(row, maximum), true);
    // A row with nothing to attend yet keeps max -inf: shift by 0 then,
    // not by -inf (which would make exp2(-inf + inf) a NaN).
    Value isEmpty = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                          rowMax, negInf);
    Value shift = arith::SelectOp::create(b, l, isEmpty, e.f32(0),
                                          fmul(rowMax, c));
    Value alpha =
        exp2(arith::SubFOp::create(b, l, fmul(state.max[h], c), shift));
    Value negShift = arith::NegFOp::create(b, l, shift);
    SmallVector<Value> terms = {fmul(state.sum[h], alpha)};
    for (int64_t i = 0; i < blockK / 2; ++i)
      if (i % 4 / 2 == h) {
        p[i] = exp2(math::FmaOp::create(b, l, s[i], c, negShift));
        terms.push_back(p[i]);
      }
    alphas.push_back(alpha);
    state.max[h] = rowMax;
    state.sum[h] = treeReduce(terms, plus);
  }
  state.p = packPairs(p);
  return alphas;
}

std::pair<Value, Value> FlashAttention::scorePosition(Value tile, int64_t i) {
  Value row0 = add(add(q0, warpRow), div(lane, 4));
  Value key0 = add(mul(tile, blockK), mul(rem(lane, 4), 2));
  return {add(row0, idx(i % 4 >= 2 ? 8 : 0)),
          add(key0, idx(8 * (i / 4) + i % 2))};
}

void FlashAttention::applyScoreOperands(Value tile, SmallVector<Value> &s) {
  Value scale = e.f32(op.getScale().convertToDouble());
  ArrayRef<int64_t> shape = shapeOf(op.getBias() ? op.getBias() : op.getMask());
  auto element = [&](Value tensor, const ElementIndex &at) -> Value {
    FailureOr<Value> v = e.elementAt(tensor, at);
    if (failed(v)) {
      status = failure();
      return e.f32(0);
    }
    return *v;
  };
  Value stage = stagedInput ? scoresStage(tile) : Value();
  for (int64_t i = 0; i < blockK / 2; ++i) {
    auto [row, key] = scorePosition(tile, i);
    // By (batch, head, row, key): a mask of per-row and per-key values
    // (broadcasts of [B, 1, Sq, 1] and [B, 1, 1, Sk]) then reads them
    // without dividing the linear index back into dims at every score.
    ElementIndex at =
        ElementIndex::multi(shape, {batch, head, minIndex(row, idx(sq - 1)),
                                    minIndex(key, idx(sk - 1))});
    Value linear = at.getLinear(e);
    if (stagedInput) {
      // The staged tile holds every position of the block's rows and the
      // tile's keys (zero past the ends, whose scores are dropped).
      Value at =
          add(stage, add(mul(arith::SubIOp::create(b, l, row, q0), blockK + 8),
                         arith::SubIOp::create(b, l, key, mul(tile, blockK))));
      Value x = memref::LoadOp::create(b, l, shared, ValueRange{at});
      e.setElement(stagedInput, linear,
                   arith::ExtFOp::create(b, l, b.getF32Type(), x));
    }
    if (op.getBias())
      s[i] = math::FmaOp::create(b, l, s[i], scale, element(op.getBias(), at));
    if (op.getMask())
      s[i] = arith::SelectOp::create(b, l, element(op.getMask(), at), s[i],
                                     e.f32(-INFINITY));
  }
}

/// Keys past the end, and for causal attention keys after the query, get
/// score -inf.
void FlashAttention::mask(Value tile, SmallVector<Value> &s) {
  for (int64_t i = 0; i < blockK / 2; ++i) {
    auto [row, key] = scorePosition(tile, i);
    Value drop;
    if (partialKeyTiles())
      drop = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, key, keys);
    if (op.getCausal()) {
      Value late =
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, key, row);
      drop = drop ? arith::OrIOp::create(b, l, drop, late) : late;
    }
    if (drop)
      s[i] = arith::SelectOp::create(b, l, drop, e.f32(-INFINITY), s[i]);
  }
}

/// Pairs in a balanced tree: a chain of 17 dependent ops would stall the
/// two warps each scheduler has.
Value FlashAttention::treeReduce(SmallVector<Value> values,
                                 function_ref<Value(Value, Value)> combine) {
  while (values.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < values.size(); i += 2)
      next.push_back(combine(values[i], values[i + 1]));
    if (values.size() % 2)
      next.push_back(values.back());
    values = std::move(next);
  }
  return values.front();
}

/// P as A fragments: registers (2i, 2i + 1) of S are one 16-bit pair.
SmallVector<Value> FlashAttention::packPairs(ArrayRef<Value> p) {
  return packHalfPairs(b, l, p, dtype);
}

SmallVector<Value> kfuse::kf::detail::packHalfPairs(OpBuilder &b, Location l,
                                                   ArrayRef<Value> p,
                                                   Type dtype) {
  SmallVector<Value> packed;
  auto pairType = VectorType::get({2}, b.getF32Type());
  for (size_t i = 0; i + 1 < p.size(); i += 2) {
    Value pair = vector::FromElementsOp::create(b, l, pairType,
                                                ValueRange{p[i], p[i + 1]});
    Value half = arith::TruncFOp::create(b, l, VectorType::get({2}, dtype), pair);
    Value word = vector::BitCastOp::create(
        b, l, VectorType::get({1}, b.getI32Type()), half);
    packed.push_back(vector::ExtractOp::create(b, l, word, ArrayRef<int64_t>{0}));
  }
  return packed;
}

/// 2^x by one MUFU.EX2: the flush-to-zero form (libdevice's exp2f keeps
/// denormal results, three more instructions an element; probabilities
/// below 2^-126 add nothing to a row of sums >= 1).
Value FlashAttention::exp2(Value x) { return emitExp2Approx(b, l, x); }

/// Max or sum over the four lanes that share a row.
Value FlashAttention::quadReduce(Value x, bool max) {
  for (int32_t offset : {1, 2}) {
    Value other =
        gpu::ShuffleOp::create(
            b, l, x,
            arith::ConstantOp::create(b, l, b.getI32IntegerAttr(offset)),
            arith::ConstantOp::create(b, l, b.getI32IntegerAttr(32)),
            gpu::ShuffleMode::XOR)
            .getShuffleResult();
    x = max ? Value(arith::MaximumFOp::create(b, l, x, other))
            : Value(arith::AddFOp::create(b, l, x, other));
  }
  return x;
}
