//===- SplitKeys.cpp - kf-split-keys: attention over chunks of its keys ---===//
//
// FlashAttention's blocks each take 128 query rows of one head and stream
// every key of that head. A one-token decode step has one block a head:
// 32 blocks on 132 SMs, each looping over the whole KV cache (at 4096
// keys the step's longest kernel, growing with the cache). Splitting the
// keys into chunks gives each chunk its own blocks; a softmax over all the
// keys is the chunks' softmaxes weighted by exp(lse_j - max lse), as
// flash-decoding does.
//
// The split is written in kf ops, so that the attention template stays
// one: the keys and values viewed as n times as many kv heads (a reshape
// of [B, Hkv, Sk, D] into [B, Hkv * n, Sk / n, D] is no copy), the queries
// broadcast to the chunks' heads, one attention with f32 results and the
// rows' log-sum-exps, and the combination (reductions over the n chunks
// that kf-fuse places like any other).
//
// Analyse: attentions of static shapes without mask, bias, causal masking
// or an lse, whose k and v are not views. Decide: keyChunks() from the
// blocks the attention launches, its keys and the SMs of `kf.target`.
// Rewrite: as above.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFSPLITKEYSPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Keys a block streams at least: fewer, and the combination and the
/// blocks' start-up (Q's load, the pipeline's fill) cost more than the
/// parallelism gains.
constexpr int64_t kMinChunk = 256;
/// The query rows of one FlashAttention block (FlashTilingAttr's blockQ).
constexpr int64_t kBlockRows = 128;

/// Into how many chunks to split `keys` keys of an attention launching
/// `blocks` blocks: 1 where the blocks fill the SMs or the keys are few;
/// else the divisor n of `keys` (chunks of kMinChunk or more) with the
/// least waves(blocks * n) * keys / n, the smallest such. A block holds
/// an SM's shared memory, so a wave is `sms` blocks.
int64_t keyChunks(int64_t blocks, int64_t keys, int64_t sms) {
  if (blocks >= sms || keys < 2 * kMinChunk)
    return 1;
  int64_t best = 1, bestCost = keys;
  for (int64_t n = 2; keys / n >= kMinChunk; ++n) {
    if (keys % n)
      continue;
    int64_t waves = (blocks * n + sms - 1) / sms;
    if (waves * (keys / n) < bestCost) {
      best = n;
      bestCost = waves * (keys / n);
    }
  }
  return best;
}

/// Whether `v` is computed by an op that reads its operand in place: once
/// split into chunks such a view may no longer be one, and its copy would
/// cost more than the split gains.
bool isView(Value v) {
  Operation *def = v.getDefiningOp();
  return def && isa<ReshapeOp, TransposeOp, SliceOp, BroadcastOp>(def);
}

Value reshape(PatternRewriter &r, Location loc, Value x,
              ArrayRef<int64_t> shape) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  return ReshapeOp::create(r, loc, type.clone(shape), x, ArrayAttr());
}

Value broadcast(PatternRewriter &r, Location loc, Value x,
                ArrayRef<int64_t> shape) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  return BroadcastOp::create(r, loc, type.clone(shape), x, ArrayAttr());
}

Value reduce(PatternRewriter &r, Location loc, ReduceKind kind, Value x,
             int64_t axis, bool keepDims) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  if (keepDims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  return ReduceOp::create(r, loc, type.clone(shape), kind, x,
                          ArrayRef<int64_t>{axis}, keepDims);
}

/// The sizes of an attention split into `n` chunks of keys: B, Hkv, the
/// query heads a kv head (G), query rows, keys, and the head dims.
struct SplitShape {
  int64_t b, kvHeads, group, rows, keys, d, dv, n;
};

Value transpose(PatternRewriter &r, Location loc, Value x,
                ArrayRef<int64_t> perm) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t axis : perm)
    shape.push_back(type.getDimSize(axis));
  return TransposeOp::create(r, loc, type.clone(shape), x, perm);
}

/// Softmax over all the keys from the chunks' results `o` ([B, Hkv, n,
/// G * Sq, Dv], f32) and log-sum-exps `lse` ([B, Hkv, n, G * Sq]): the
/// chunks' results weighted by the softmax of their lse. Written over rows
/// of the n chunks of each output element ([B, Hkv, G * Sq, Dv, n], the
/// chunks last), so that the softmax and the weighted sum are one row
/// kernel with the cast after it as its epilogue.
Value combineChunks(PatternRewriter &r, Location loc, Value o, Value lse,
                    const SplitShape &s) {
  int64_t rows = s.group * s.rows;
  Value chunks = transpose(r, loc, o, {0, 1, 3, 4, 2});
  Value lseRows = reshape(r, loc, transpose(r, loc, lse, {0, 1, 3, 2}),
                          {s.b, s.kvHeads, rows, 1, s.n});
  Value x = broadcast(r, loc, lseRows, {s.b, s.kvHeads, rows, s.dv, s.n});
  Value weights = SoftmaxOp::create(r, loc, x.getType(), x, 4);
  Value weighted = MulOp::create(r, loc, x.getType(), weights, chunks);
  return reduce(r, loc, ReduceKind::sum, weighted, 4, false);
}

struct SplitAttentionKeys : OpRewritePattern<AttentionOp> {
  SplitAttentionKeys(MLIRContext *ctx, int64_t sms)
      : OpRewritePattern(ctx), sms(sms) {}

  /// The split's shape, or failure where the attention stays whole.
  FailureOr<SplitShape> analyse(AttentionOp op) const {
    auto q = mlir::cast<RankedTensorType>(op.getQ().getType());
    auto k = mlir::cast<RankedTensorType>(op.getK().getType());
    auto v = mlir::cast<RankedTensorType>(op.getV().getType());
    // An attention with an lse is a forward a backward reads, or a split.
    if (op.getMask() || op.getBias() || op.getCausal() || op.getLse() ||
        !q.hasStaticShape() ||
        !k.hasStaticShape() || !v.hasStaticShape() || isView(op.getK()) ||
        isView(op.getV()))
      return failure();
    SplitShape s{q.getDimSize(0), k.getDimSize(1), 0, q.getDimSize(2),
                 k.getDimSize(2), q.getDimSize(3), v.getDimSize(3), 1};
    if (s.kvHeads == 0 || q.getDimSize(1) % s.kvHeads)
      return failure();
    s.group = q.getDimSize(1) / s.kvHeads;
    int64_t blocks = s.b * q.getDimSize(1) *
                     ((s.rows + kBlockRows - 1) / kBlockRows);
    s.n = keyChunks(blocks, s.keys, sms);
    if (s.n == 1)
      return failure();
    return s;
  }

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &r) const override {
    FailureOr<SplitShape> split = analyse(op);
    if (failed(split))
      return failure();
    const SplitShape &s = *split;
    Location loc = op.getLoc();
    int64_t heads = s.kvHeads * s.n, rows = s.group * s.rows;
    // Chunk j of kv head h is kv head h * n + j; its query heads are those
    // of h, in the same order.
    Value k = reshape(r, loc, op.getK(), {s.b, heads, s.keys / s.n, s.d});
    Value v = reshape(r, loc, op.getV(), {s.b, heads, s.keys / s.n, s.dv});
    Value q = reshape(r, loc, op.getQ(), {s.b, s.kvHeads, 1, rows, s.d});
    q = broadcast(r, loc, q, {s.b, s.kvHeads, s.n, rows, s.d});
    q = reshape(r, loc, q, {s.b, heads * s.group, s.rows, s.d});
    auto f32 = r.getF32Type();
    auto chunked = AttentionOp::create(
        r, loc, RankedTensorType::get({s.b, heads * s.group, s.rows, s.dv}, f32),
        RankedTensorType::get({s.b, heads * s.group, s.rows}, f32), q, k, v,
        Value(), Value(), op.getScaleAttr(), op.getCausalAttr());
    Value o = reshape(r, loc, chunked.getResult(),
                      {s.b, s.kvHeads, s.n, rows, s.dv});
    Value lse = reshape(r, loc, chunked.getLse(), {s.b, s.kvHeads, s.n, rows});
    Value result = combineChunks(r, loc, o, lse, s);
    // Cast, then view: the cast is the reduction kernel's epilogue, and the
    // view is read in place by the result's consumers.
    auto type = mlir::cast<RankedTensorType>(op.getResult().getType());
    auto combined = mlir::cast<RankedTensorType>(result.getType());
    if (combined.getElementType() != type.getElementType())
      result = CastOp::create(
          r, loc, combined.clone(type.getElementType()), result);
    r.replaceOp(op, reshape(r, loc, result, type.getShape()));
    return success();
  }

  int64_t sms;
};

struct KFSplitKeysPass
    : kfuse::kf::impl::KFSplitKeysPassBase<KFSplitKeysPass> {
  void runOnOperation() override {
    int64_t sms = TargetAttr::of(getOperation()).getMultiprocessors();
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitAttentionKeys>(&getContext(), sms);
    if (failed(applyOnlyPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
