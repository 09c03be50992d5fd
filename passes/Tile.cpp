//===- Tile.cpp - kf-tile: choose each kernel's launch shape --------------===//
//
// Analyse: count the kernel's work items. Decide: one thread per item in
// blocks of `block-size`, and a grid that covers the items once unless
// that exceeds 32 waves of the SMs (then grid-stride loops take the rest).
// Rewrite: record {block, grid, items} in the kernel's config.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "passes/Passes.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFTILEPASS
#include "passes/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

int64_t kfuse::kf::kernelWorkItems(KernelOp kernel) {
  auto resultType = cast<RankedTensorType>(kernel.getResult(0).getType());
  int64_t elements = resultType.getNumElements();
  if (kernel.getKind() != KernelKind::normalization)
    return elements;
  // One thread per row of the softmax at the kernel's root.
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  auto softmax = yield.getValues()[0].getDefiningOp<SoftmaxOp>();
  int64_t rowLength = resultType.getDimSize(softmax.getAxis());
  return rowLength ? elements / rowLength : 0;
}

namespace {

struct KFTilePass : public kfuse::kf::impl::KFTilePassBase<KFTilePass> {
  using KFTilePassBase::KFTilePassBase;

  void runOnOperation() override {
    if (blockSize <= 0 || blockSize > 1024 || sms <= 0) {
      getOperation().emitError()
          << "kf-tile: block-size must be in 1..1024 and sms positive";
      return signalPassFailure();
    }
    getOperation().walk([&](KernelOp kernel) {
      int64_t items = kernelWorkItems(kernel);
      int64_t grid = std::min((items + blockSize - 1) / blockSize, sms * 32);
      Builder b(kernel);
      kernel.setConfigAttr(b.getDictionaryAttr({
          b.getNamedAttr("block", b.getI64IntegerAttr(blockSize)),
          b.getNamedAttr("grid", b.getI64IntegerAttr(grid)),
          b.getNamedAttr("items", b.getI64IntegerAttr(items)),
      }));
    });
  }
};

} // namespace
