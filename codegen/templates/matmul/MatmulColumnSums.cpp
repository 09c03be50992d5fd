//===- MatmulColumnSums.cpp - column sums of the matmul template's tile ---===//
//
// kf-fuse-column-sums leaves matmul kernels that also yield, for a value
// their epilogue computes, its column sums over every 16 rows (a bias
// gradient's first step). A warp's accumulators hold 16 rows of its
// columns: lane l has rows l / 4 and l / 4 + 8 of columns 2 (l % 4) and
// 2 (l % 4) + 1 of each n8 tile. A thread adds its two rows of a tile's
// columns; three XOR shuffles (lanes 4, 8 and 16 apart) add those of the
// lanes that share the columns; lane group g (lanes 4g to 4g + 3) keeps
// the sums of n8 tiles g, g + 8, ... (selects, not branches: the
// accumulators are live) and stores them once the epilogue is done, 8 per
// lane of a 256-column tile rather than 64 kept live. The order of the
// additions is fixed, so the sums are the same on every run.
//
//===----------------------------------------------------------------------===//

#include "codegen/templates/matmul/MatmulKernel.h"

using namespace mlir;
using namespace kfuse::kf;

namespace kfuse::kf::detail {

LogicalResult TensorCoreMatmul::findColumnSums() {
  auto yield =
      mlir::cast<YieldOp>(e.kernel().getBody().front().getTerminator());
  for (auto [result, value] : llvm::enumerate(yield.getValues())) {
    Value source = columnPartialsSource(value);
    if (!source)
      continue;
    auto summed = mlir::cast<ShapedType>(source.getType());
    if (result == 0 || rows.active() || p.splits != 1 ||
        p.m % kColumnPartialRows || p.n % 2 ||
        summed.getShape().back() != p.n ||
        summed.getNumElements() !=
            mlir::cast<ShapedType>(matmul.getType()).getNumElements())
      return e.kernel().emitOpError("result ")
             << result
             << " sums columns over 16 rows, which the tensor-core template "
                "does only beside its main result, with even N, M a "
                "multiple of 16, one K chunk and no interleaved rows";
    columnSums.push_back({static_cast<unsigned>(result), source, {}, {}});
  }
  return success();
}

void TensorCoreMatmul::resetColumnSums() {
  int64_t kept = (t.bm / t.warpsM / 16) * keptTiles() * 2;
  for (ColumnSum &sum : columnSums) {
    sum.pending = {e.f32(0), e.f32(0)};
    sum.kept.assign(kept, e.f32(0));
  }
}

void TensorCoreMatmul::accumulate(ColumnSum &sum, const PairSlot &slot,
                                  std::array<Value, 2> pair) {
  for (int64_t j = 0; j < 2; ++j)
    sum.pending[j] = arith::AddFOp::create(b, l, sum.pending[j], pair[j]);
  if (slot.at % 4 != 2)
    return;
  int64_t tilesN = t.bn / t.warpsN / 8;
  int64_t mi = slot.at / 4 / tilesN, ni = slot.at / 4 % tilesN;
  Value width = arith::ConstantOp::create(b, l, b.getI32IntegerAttr(32));
  Value mine = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                     div(lane, 4), idx(ni % 8));
  for (int64_t j = 0; j < 2; ++j) {
    Value v = sum.pending[j];
    for (int32_t offset : {4, 8, 16}) {
      Value other =
          gpu::ShuffleOp::create(
              b, l, v,
              arith::ConstantOp::create(b, l, b.getI32IntegerAttr(offset)),
              width, gpu::ShuffleMode::XOR)
              .getShuffleResult();
      v = arith::AddFOp::create(b, l, v, other);
    }
    Value &kept = sum.kept[(mi * keptTiles() + ni / 8) * 2 + j];
    kept = arith::SelectOp::create(b, l, mine, v, kept);
    sum.pending[j] = e.f32(0);
  }
}

LogicalResult TensorCoreMatmul::addToColumnSums(const PairSlot &slot,
                                                const OutputPair &at) {
  if (columnSums.empty())
    return success();
  // Rows past M hold whatever the epilogue makes of products never
  // copied in (zeros, or the stage's stale values): not summed.
  Value inside = less(at.row, idx(p.m));
  for (ColumnSum &sum : columnSums) {
    FailureOr<std::array<Value, 2>> x = resultPair(sum.source, at);
    if (failed(x))
      return failure();
    std::array<Value, 2> pair;
    for (int64_t j = 0; j < 2; ++j)
      pair[j] = arith::SelectOp::create(b, l, inside, (*x)[j], e.f32(0));
    accumulate(sum, slot, pair);
  }
  return success();
}

LogicalResult TensorCoreMatmul::sumColumnsGuarded(ValueRange acc) {
  if (columnSums.empty())
    return success();
  Type f32 = b.getF32Type();
  SmallVector<Type> types(2 * columnSums.size(), f32);
  for (const PairSlot &slot : pairSlots(0, t.bn / t.warpsN / 8)) {
    OutputPair at = outputPair(slot.r, slot.c);
    Value inside = arith::AndIOp::create(b, l, less(at.row, idx(p.m)),
                                         less(at.col, idx(p.n)));
    auto ifOp = scf::IfOp::create(b, l, types, inside, true, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      e.setElement(matmul.getResult(), at.linear, acc[slot.at]);
      e.setElement(matmul.getResult(), at.linear1, acc[slot.at + 1]);
      SmallVector<Value> pair;
      for (ColumnSum &sum : columnSums) {
        FailureOr<std::array<Value, 2>> x = resultPair(sum.source, at);
        if (failed(x))
          return failure();
        pair.append(x->begin(), x->end());
      }
      scf::YieldOp::create(b, l, pair);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, l, SmallVector<Value>(types.size(), e.f32(0)));
    }
    for (auto [i, sum] : llvm::enumerate(columnSums))
      accumulate(sum, slot, {ifOp.getResult(2 * i), ifOp.getResult(2 * i + 1)});
  }
  return success();
}

void TensorCoreMatmul::storeColumnSums() {
  if (columnSums.empty())
    return;
  int64_t tilesM = t.bm / t.warpsM / 16, tilesN = t.bn / t.warpsN / 8;
  Value group = div(lane, 4);
  for (int64_t mi = 0; mi < tilesM; ++mi) {
    Value row = outputRow(add(warpRow, idx(mi * 16)));
    Value rowGroup =
        div(add(mul(tileAt.outBatch, p.m), row), kColumnPartialRows);
    for (int64_t k = 0; k < keptTiles(); ++k) {
      Value ni = add(group, idx(k * 8));
      Value col = add(tileAt.n0, add(warpCol, add(mul(ni, 8),
                                                  mul(rem(lane, 4), 2))));
      Value inside = arith::AndIOp::create(b, l, less(row, idx(p.m)),
                                           less(col, idx(p.n)));
      if (tilesN % 8)
        inside = arith::AndIOp::create(b, l, inside, less(ni, idx(tilesN)));
      auto ifOp = scf::IfOp::create(b, l, inside, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      int64_t at = (mi * keptTiles() + k) * 2;
      for (ColumnSum &sum : columnSums)
        e.storeLanes(sum.result,
                     BufferIndex(add(mul(rowGroup, p.n), col), rowGroup, col),
                     {sum.kept[at], sum.kept[at + 1]});
    }
  }
}

} // namespace kfuse::kf::detail
