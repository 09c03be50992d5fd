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

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// Whether `op`'s function has sizes that change at run time: its shapes
/// are then a bucket's, and kf-runtime-extents lets the attention take its
/// key length as a parameter instead (the chunks would follow the bucket).
bool takesSizesAtRunTime(Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func)
    return false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, kRuntimeDims))
      return true;
  return false;
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

/// The sum of `x` over its last axis.
Value sumLastAxis(PatternRewriter &r, Location loc, Value x) {
  auto type = mlir::cast<RankedTensorType>(x.getType());
  int64_t axis = type.getRank() - 1;
  return ReduceOp::create(r, loc, type.clone(type.getShape().drop_back()),
                          ReduceKind::sum, x, ArrayRef<int64_t>{axis},
                          /*keep_dims=*/false);
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
/// chunks' results weighted by the softmax of their lse, as `shape` (the
/// attention's result or a reshape of it). Written over rows of the n
/// chunks of each output element, the chunks last and the rest as `shape`,
/// so that the softmax, the weighted sum and a cast after them are one row
/// kernel whose result is in the shape its readers take.
Value combineChunks(PatternRewriter &r, Location loc, Value o, Value lse,
                    const SplitShape &s, ArrayRef<int64_t> shape) {
  int64_t rows = s.group * s.rows;
  SmallVector<int64_t> rowShape(shape);
  rowShape.push_back(s.n);
  Value chunks = reshape(r, loc, transpose(r, loc, o, {0, 1, 3, 4, 2}),
                         rowShape);
  Value lseRows = reshape(r, loc, transpose(r, loc, lse, {0, 1, 3, 2}),
                          {s.b, s.kvHeads, rows, 1, s.n});
  Value x = reshape(
      r, loc, broadcast(r, loc, lseRows, {s.b, s.kvHeads, rows, s.dv, s.n}),
      rowShape);
  Value weights = SoftmaxOp::create(r, loc, x.getType(), x, shape.size());
  Value weighted = MulOp::create(r, loc, x.getType(), weights, chunks);
  return sumLastAxis(r, loc, weighted);
}

struct SplitAttentionKeys : OpRewritePattern<AttentionOp> {
  SplitAttentionKeys(MLIRContext *ctx, int64_t sms)
      : OpRewritePattern(ctx), sms(sms) {}

  /// The split's shape, or failure where the attention stays whole.
  FailureOr<SplitShape> analyse(AttentionOp op) const {
    if (takesSizesAtRunTime(op))
      return failure();
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
    // A reshape that alone reads the result (heads merged) shapes the
    // combination's rows: the row kernel then writes what it reads.
    Operation *replaced = op;
    if (op.getResult().hasOneUse() &&
        isa<ReshapeOp>(*op.getResult().getUsers().begin()))
      replaced = *op.getResult().getUsers().begin();
    auto type = mlir::cast<RankedTensorType>(replaced->getResult(0).getType());
    Value result = combineChunks(r, loc, o, lse, s, type.getShape());
    if (!type.getElementType().isF32())
      result = CastOp::create(r, loc, type, result);
    r.replaceOp(replaced, result);
    if (replaced != op)
      r.eraseOp(op);
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
