//===- SplitReduction.cpp - kf-split-reduction: few long rows in two steps ===//
//
// A row kernel reduces each row in one block. A sum over all of a tensor
// is one row: one block on one SM streams it all while the other SMs idle
// (64 rows of 2^20 f32 ran at 2.2x their floor). Splitting the rows into
// chunks gives each chunk a block; a second, small reduction combines the
// chunks' results, as torch's split reductions do.
//
// Analyse: float reductions along the last axis of a static shape, whose
// result is not broadcast back over the rows (a normalisation keeps its
// rows in one kernel). Decide: splitFactor() from the rows, the length
// and the SMs of `kf.target`. Rewrite: reshape the input to
// [rows..., k, L / k], reduce the last axis, reduce the k partial results.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFSPLITREDUCTIONPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Elements a block reduces at least: fewer, and the blocks' start-up and
/// the second reduction cost more than the parallelism gains.
constexpr int64_t kMinChunk = 8192;
/// Blocks an SM the split aims for (row kernels run 256 threads a block).
constexpr int64_t kBlocksPerSM = 4;

/// Into how many chunks to split each of `rows` rows of `length`: the
/// smallest divisor of `length` that makes kBlocksPerSM blocks an SM with
/// chunks of kMinChunk or more, else the largest that keeps such chunks;
/// 1 when the rows already fill the GPU or no divisor qualifies.
int64_t splitFactor(int64_t rows, int64_t length, int64_t sms) {
  int64_t wanted = kBlocksPerSM * sms;
  if (rows >= wanted || length < 2 * kMinChunk)
    return 1;
  return splitDivisor(length, kMinChunk, rows, wanted);
}

/// Whether `reduce`'s result is stretched back over its rows (through
/// reshapes): a normalisation's statistic, which its row kernel keeps.
bool broadcastBack(ReduceOp reduce) {
  SmallVector<Value> values = {reduce.getResult()};
  while (!values.empty()) {
    Value v = values.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<BroadcastOp>(user))
        return true;
      if (isa<ReshapeOp>(user))
        values.push_back(user->getResult(0));
    }
  }
  return false;
}

struct SplitLongRows : OpRewritePattern<ReduceOp> {
  SplitLongRows(MLIRContext *ctx, int64_t sms)
      : OpRewritePattern(ctx), sms(sms) {}

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    auto in = mlir::cast<RankedTensorType>(op.getInput().getType());
    auto out = mlir::cast<RankedTensorType>(op.getType());
    int64_t rank = in.getRank();
    if (rank == 0 || !in.hasStaticShape() || op.getAxes().size() != 1 ||
        op.getAxes()[0] != rank - 1 || !isa<FloatType>(in.getElementType()) ||
        broadcastBack(op))
      return failure();
    int64_t length = in.getShape().back();
    int64_t rows = length ? in.getNumElements() / length : 0;
    int64_t k = splitFactor(rows, length, sms);
    if (k == 1)
      return failure();
    Location loc = op.getLoc();
    // 16-bit sums keep their partial results in f32, as one pass would.
    bool widen = !in.getElementType().isF32() &&
                 (op.getKind() == ReduceKind::sum ||
                  op.getKind() == ReduceKind::mean);
    Type accumulator = widen ? rewriter.getF32Type() : in.getElementType();
    Value x = op.getInput();
    if (widen)
      x = CastOp::create(rewriter, loc, in.clone(accumulator), x);
    SmallVector<int64_t> chunked(in.getShape().drop_back());
    chunked.append({k, length / k});
    Value view = ReshapeOp::create(
        rewriter, loc, RankedTensorType::get(chunked, accumulator), x,
        ArrayAttr());
    SmallVector<int64_t> partialShape(in.getShape().drop_back());
    partialShape.push_back(k);
    Value partials = ReduceOp::create(
        rewriter, loc, RankedTensorType::get(partialShape, accumulator),
        op.getKind(), view, ArrayRef<int64_t>{rank}, /*keep_dims=*/false);
    Value result = ReduceOp::create(
        rewriter, loc, out.clone(accumulator), op.getKind(), partials,
        ArrayRef<int64_t>{rank - 1}, op.getKeepDims());
    if (widen)
      result = CastOp::create(rewriter, loc, out, result);
    rewriter.replaceOp(op, result);
    return success();
  }

  int64_t sms;
};

struct KFSplitReductionPass
    : kfuse::kf::impl::KFSplitReductionPassBase<KFSplitReductionPass> {
  void runOnOperation() override {
    int64_t sms = TargetAttr::of(getOperation()).getMultiprocessors();
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitLongRows>(&getContext(), sms);
    if (failed(applyOnlyPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

int64_t kfuse::kf::splitDivisor(int64_t n, int64_t minChunk, int64_t blocks,
                                int64_t wanted) {
  int64_t best = 1;
  for (int64_t k = 2; n / k >= minChunk; ++k) {
    if (n % k)
      continue;
    best = k;
    if (blocks * k >= wanted)
      break;
  }
  return best;
}
