//===- AtomicDq.cpp - kf-atomic-dq: attention's dq added up by key blocks -===//
//
// FlashAttention's backward computes dq = scale dS k, a sum over every key
// of the query's head. The deterministic template gives dq blocks of its
// own, which compute S, P and dP a second time; FlashAttention 2 and 3
// instead let each key block add its keys' share of dq into an f32 buffer
// with atomics, five tile products a tile instead of seven. The adds come
// in any order, so dq's last bits vary from run to run: that is the
// `deterministic = false` compile option's trade.
//
// Analyse: in modules whose `kf.target` allows unordered adds, the
// attention_grads of 16-bit operands whose dq has their dtype and whose
// head dims fit the template (at most 128). Rewrite: the same
// attention_grad with an f32 dq and a kf.cast of it to the old dq's type,
// which kf-fuse places with what reads dq. kf-tile then gives the kernel
// FlashGradTilingAttr's dqAtomic (an f32 dq where adds may be unordered).
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFATOMICDQPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// The head dims the template's dq product takes: half a block's K
/// columns a warpgroup, one 64-column atom column at most.
constexpr int64_t kMaxHeadDim = 128;

struct AccumulateDqInF32 : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool applies(AttentionGradOp op) {
    auto q = cast<RankedTensorType>(op.getQ().getType());
    auto dq = cast<RankedTensorType>(op.getDq().getType());
    auto v = cast<RankedTensorType>(op.getV().getType());
    Type dtype = q.getElementType();
    return (dtype.isBF16() || dtype.isF16()) && dq.getElementType() == dtype &&
           q.hasStaticShape() && v.hasStaticShape() &&
           q.getDimSize(3) <= kMaxHeadDim && v.getDimSize(3) <= kMaxHeadDim;
  }

  LogicalResult matchAndRewrite(AttentionGradOp op,
                                PatternRewriter &r) const override {
    if (!applies(op))
      return failure();
    auto dqType = cast<RankedTensorType>(op.getDq().getType());
    auto grad = AttentionGradOp::create(
        r, op.getLoc(), dqType.clone(r.getF32Type()), op.getDk().getType(),
        op.getDv().getType(), op.getQ(), op.getK(), op.getV(), op.getDout(),
        op.getLse(), op.getDelta(), op.getScaleAttr(), op.getCausalAttr());
    Value dq = CastOp::create(r, op.getLoc(), dqType, grad.getDq());
    r.replaceOp(op, {dq, grad.getDk(), grad.getDv()});
    return success();
  }
};

struct KFAtomicDqPass : public kfuse::kf::impl::KFAtomicDqPassBase<KFAtomicDqPass> {
  void runOnOperation() override {
    if (!TargetAttr::of(getOperation()).getUnorderedAdds())
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<AccumulateDqInF32>(&getContext());
    if (failed(applyOnlyPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
