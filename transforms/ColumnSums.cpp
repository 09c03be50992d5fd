//===- ColumnSums.cpp - kf-fuse-column-sums: column sums in their kernels --===//
//
// A Linear's bias gradient sums its output's gradient over the rows. In a
// training backward that gradient is a matmul's result (through the
// activation's derivative): the matmul kernel wrote it in f32, a reduction
// kernel read it all back for the column sums, and a cast kernel read it
// again to round it for the next matmuls. For the MLP of a pre-norm block
// (B4 S2048 D1024) that was 128 MiB written and 384 MiB read. The matmul
// template holds its output tile in registers: each warp sums its own 16
// rows of every column with shuffles and writes those partial sums, a
// sixteenth of the rows; a small reduction kernel adds them up.
//
// Analyse: tensor-core matmul kernels whose result is read by column sums
// (reduction kernels summing an elementwise function of it over all of
// its rows) and perhaps by one narrowing cast kernel. Decide: static rows
// that are whole groups of kColumnPartialRows and rows of whole 16-byte
// f32 vectors; column sums whose other inputs the matmul kernel can read
// where it stands. Rewrite: each sum's prologue and its sums over groups
// of 16 rows join the matmul kernel, which yields those [rows / 16, N]
// partials; the reduction kernel sums the partials; the cast becomes the
// matmul kernel's result when nothing else reads the wide one.
//
// A LayerNorm's backward is the same shape in a row kernel: the input
// gradient is a row kernel over x and dy, and the weight and bias
// gradients are column sums of dy * x_hat and dy, reduction kernels that
// read x and dy again (pre-norm block B4 S2048 D1024, bf16: 48 MiB read
// twice). Analyse: normalization kernels, and reduction kernels summing
// an elementwise function of inputs the row kernel can read over all the
// rows of its row space. Decide: columnPartialLayout (blocks, rows a
// block at once). Rewrite: the sums' prologues join the row kernel, which
// yields their sums over each block's rows (BlockColumnPartials); the
// reduction kernels sum the partials.
//
// A column sum left on its own over many rows and few columns runs in
// few blocks: the column template gives each 32 columns one (a bias
// gradient of 1024 columns over 8192 rows: 32 blocks on 132 SMs, 433-865
// GB/s on an H100). Decide: columnSplitFactor. Rewrite: a first kernel
// sums the rows viewed as [R / k, k C] (partial j the rows r with
// r mod k = j, so that its blocks read whole rows), the sum's kernel the
// k partials.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "analysis/KernelAnalysis.h"
#include "analysis/MatmulTiling.h"
#include "transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFFUSECOLUMNSUMSPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// A reduction kernel that sums a function of a matmul kernel's result
/// over all its rows: `reduce`, the ops computing its input (`prologue`,
/// in body order) and the argument the matmul's result arrives as.
struct ColumnSum {
  KernelOp kernel;
  ReduceOp reduce;
  BlockArgument product;
  SmallVector<Operation *> prologue;
};

/// The ops of `kernel`'s body that `reduce`'s input is computed from, in
/// body order.
SmallVector<Operation *> prologueOf(KernelOp kernel, ReduceOp reduce) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist = {reduce.getInput()};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val().getDefiningOp();
    if (!op || !slice.insert(op))
      continue;
    llvm::append_range(worklist, op->getOperands());
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : kernel.getBody().front())
    if (slice.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

/// Whether every value computed from `product` in `prologue` is computed
/// elementwise, at its own index: the matmul template holds each thread's
/// own output elements only.
bool readsProductInPlace(BlockArgument product,
                         ArrayRef<Operation *> prologue) {
  llvm::SmallPtrSet<Value, 8> fromProduct = {product};
  for (Operation *op : prologue) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return fromProduct.contains(v); }))
      continue;
    if (!op->hasTrait<OpTrait::kf::Elementwise>() ||
        shapeOf(op->getResult(0)) != shapeOf(product))
      return false;
    fromProduct.insert(op->getResult(0));
  }
  return true;
}

/// The one reduce of reduction kernel `user` if it sums an f32 value over
/// all its dims but the last.
ReduceOp columnSumOf(KernelOp user) {
  if (user.getKind() != KernelKind::reduction)
    return ReduceOp();
  auto reduces = user.getBody().getOps<ReduceOp>();
  if (std::distance(reduces.begin(), reduces.end()) != 1)
    return ReduceOp();
  ReduceOp reduce = *reduces.begin();
  int64_t rank = shapeOf(reduce.getInput()).size();
  if (reduce.getKind() != ReduceKind::sum || reduce.getKeepDims() ||
      rank < 2 || !getElementTypeOrSelf(reduce.getInput().getType()).isF32() ||
      reduce.getAxes() != ArrayRef(llvm::to_vector(llvm::seq<int64_t>(
                              0, rank - 1))))
    return ReduceOp();
  return reduce;
}

/// Whether the ops of `sum`'s kernel outside its prologue see its rows
/// only through the sum (a cast of the gradient may follow it): they stay
/// with the final sum, which sees the reduced value only.
bool onlySumSeesRows(ColumnSum sum) {
  llvm::SmallPtrSet<Operation *, 8> before(sum.prologue.begin(),
                                           sum.prologue.end());
  auto seesRows = [&](Operation &op) {
    return llvm::any_of(op.getOperands(), [&](Value v) {
      return (sum.product && v == sum.product) ||
             (v.getDefiningOp() && before.contains(v.getDefiningOp()));
    });
  };
  for (Operation &op : sum.kernel.getBody().front())
    if (!before.contains(&op) && &op != sum.reduce && seesRows(op))
      return false;
  return true;
}

/// `user`, a kernel reading result `product` of `matmul`, as a column sum,
/// if it is one whose other inputs are defined before `matmul`.
std::optional<ColumnSum> asColumnSum(KernelOp user, KernelOp matmul,
                                     Value product) {
  ReduceOp reduce = columnSumOf(user);
  if (!reduce || shapeOf(reduce.getInput()) != shapeOf(product))
    return std::nullopt;
  ColumnSum sum{user, reduce, BlockArgument(), prologueOf(user, reduce)};
  for (auto [arg, input] :
       llvm::zip_equal(user.getBody().getArguments(), user.getInputs())) {
    if (input == product) {
      sum.product = arg;
      continue;
    }
    Operation *def = input.getDefiningOp();
    if (def && !def->isBeforeInBlock(matmul))
      return std::nullopt;
  }
  if (!sum.product || !onlySumSeesRows(sum) ||
      !readsProductInPlace(sum.product, sum.prologue))
    return std::nullopt;
  return sum;
}

/// `user` as a column sum over the rows of `space` that a row kernel can
/// compute beside its own: its prologue elementwise ops, broadcasts and
/// constants of its inputs, each element computed where it stands.
std::optional<ColumnSum> asRowColumnSum(KernelOp user, RowSpace space) {
  ReduceOp reduce = columnSumOf(user);
  if (!reduce)
    return std::nullopt;
  auto type = mlir::cast<RankedTensorType>(reduce.getInput().getType());
  if (type.getShape().back() != space.length ||
      type.getNumElements() != space.rows * space.length)
    return std::nullopt;
  ColumnSum sum{user, reduce, BlockArgument(), prologueOf(user, reduce)};
  bool elementwise = llvm::all_of(sum.prologue, [](Operation *op) {
    return op->hasTrait<OpTrait::kf::Elementwise>() ||
           isa<BroadcastOp, ConstantOp>(op);
  });
  if (!elementwise || !onlySumSeesRows(sum))
    return std::nullopt;
  return sum;
}

/// `user` as a pointwise kernel that only narrows `product` to a 16-bit
/// float: the rounded copy the next matmuls read.
bool isNarrowingCopy(KernelOp user, Value product) {
  if (user.getKind() != KernelKind::pointwise || user.getNumResults() != 1 ||
      user.getInputs().size() != 1)
    return false;
  Block &body = user.getBody().front();
  auto cast = dyn_cast<CastOp>(body.front());
  return cast && &body.front() == body.getTerminator()->getPrevNode() &&
         cast.getOperand() == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == cast.getResult() &&
         getElementTypeOrSelf(cast.getType()).getIntOrFloatBitWidth() == 16 &&
         isa<FloatType>(getElementTypeOrSelf(cast.getType()));
}

/// Rows a partial of a split column sum adds at least: a full step of the
/// column template's accumulators (32 row groups of 8).
constexpr int64_t kMinColumnChunk = 256;

/// Into how many partials to split a column sum of `rows` rows of
/// `columns`: the smallest divisor of `rows` whose partials make two
/// 32-column tiles an SM, each of kMinColumnChunk rows or more, else the
/// largest that keeps such rows; 1 where the columns fill the SMs or the
/// rows are few (the sums of partials, 2 MiB, take about a launch).
int64_t columnSplitFactor(int64_t rows, int64_t columns, int64_t sms) {
  int64_t tiles = (columns + 31) / 32;
  if (tiles >= sms || rows < 8 * kMinColumnChunk)
    return 1;
  return splitDivisor(rows, kMinColumnChunk, tiles, 2 * sms);
}

struct KFFuseColumnSumsPass
    : kfuse::kf::impl::KFFuseColumnSumsPassBase<KFFuseColumnSumsPass> {
  void runOnOperation() override {
    target = TargetAttr::of(getOperation());
    SmallVector<KernelOp> matmuls, rowKernels;
    getOperation().walk([&](KernelOp kernel) {
      if (kernel.getKind() == KernelKind::matmul)
        matmuls.push_back(kernel);
      else if (kernel.getKind() == KernelKind::normalization)
        rowKernels.push_back(kernel);
    });
    for (KernelOp kernel : matmuls)
      fuse(kernel);
    for (KernelOp kernel : rowKernels)
      fuseIntoRows(kernel);
    // The column sums no kernel took.
    SmallVector<KernelOp> reductions;
    getOperation().walk([&](KernelOp kernel) {
      if (kernel.getKind() == KernelKind::reduction)
        reductions.push_back(kernel);
    });
    for (KernelOp kernel : reductions)
      splitTallSum(kernel);
  }

  /// Column sum `kernel` in two kernels where it has many rows and few
  /// columns (the file comment).
  void splitTallSum(KernelOp kernel);

  /// Whether `kernel` is a tensor-core matmul whose template can sum the
  /// columns of its result over groups of 16 rows.
  bool takesColumnSums(KernelOp kernel) {
    if (kernel.getNumResults() != 1)
      return false;
    MatmulOp matmul = matmulOf(kernel);
    auto type = mlir::cast<RankedTensorType>(kernel.getResult(0).getType());
    if (!matmul || matmul.getKChunk() || !type.hasStaticShape() ||
        !type.getElementType().isF32() ||
        tensorCoreRefusal(matmul, target.getAligned(), target.getAllowTF32()))
      return false;
    // The kernel's result is the product or a reshape of it that keeps
    // its rows (kf-fuse's epilogues): the same rows of N.
    MatmulProblem p = MatmulProblem::of(matmul);
    return p.m % kColumnPartialRows == 0 && p.n % 4 == 0 &&
           type.getShape().back() == p.n &&
           type.getNumElements() ==
               mlir::cast<ShapedType>(matmul.getType()).getNumElements();
  }

  void fuse(KernelOp kernel) {
    if (!takesColumnSums(kernel))
      return;
    Value product = kernel.getResult(0);
    SmallVector<ColumnSum> sums;
    KernelOp copy;
    bool othersRead = false;
    for (Operation *user : product.getUsers()) {
      auto reader = dyn_cast<KernelOp>(user);
      if (std::optional<ColumnSum> sum =
              reader ? asColumnSum(reader, kernel, product) : std::nullopt) {
        if (!llvm::any_of(sums, [&](const ColumnSum &s) {
              return s.kernel == reader;
            }))
          sums.push_back(*sum);
      } else if (reader && !copy && isNarrowingCopy(reader, product)) {
        copy = reader;
      } else {
        othersRead = true;
      }
    }
    if (sums.empty())
      return;
    // A 16-bit result needs rows of whole 16-byte vectors, as the staged
    // copy stores them (else kf-promote-shared would interleave rows,
    // which the column sums do not take).
    if (othersRead || shapeOf(product).back() % 8)
      copy = KernelOp();
    rewrite(kernel, sums, copy);
  }

  /// The column sums over `host`'s rows that it can compute beside its
  /// own work, and the op before which the joined kernel goes (the first
  /// of them all, where every input is defined before it; else `host`).
  SmallVector<ColumnSum> rowColumnSums(KernelOp host, RowSpace space,
                                       Operation *&at);

  void fuseIntoRows(KernelOp host) {
    std::optional<RowSpace> space = rowSpaceOf(host);
    // Rows of whole 16-byte f32 vectors: the partials' stores, and no
    // padded rows.
    if (!space || !target.getAligned() || space->length % 8 ||
        llvm::any_of(host.getBody().front().getTerminator()->getOperands(),
                     [](Value v) { return blockColumnPartialsOf(v); }))
      return;
    std::optional<ColumnPartialLayout> layout =
        columnPartialLayout(*space, target.getMultiprocessors());
    if (!layout)
      return;
    Operation *at = host;
    SmallVector<ColumnSum> sums = rowColumnSums(host, *space, at);
    if (!sums.empty())
      rewriteRows(host, sums, *layout, at);
  }

  void rewrite(KernelOp kernel, ArrayRef<ColumnSum> sums, KernelOp copy);
  void rewriteRows(KernelOp host, ArrayRef<ColumnSum> sums,
                   ColumnPartialLayout layout, Operation *at);
  Value sumGroupsOfRows(OpBuilder &b, ColumnSum sum, IRMapping &map);
  Value sumOverBlocks(OpBuilder &b, ColumnSum sum, IRMapping &map,
                      ColumnPartialLayout layout);
  /// The kernels of `sums` become one (where their users allow) that sums
  /// each one's `partials` over their groups, then computes what followed
  /// that sum.
  void finishSums(ArrayRef<ColumnSum> sums, ValueRange partials);
  void finishTogether(ArrayRef<ColumnSum> sums, ArrayRef<Value> partials,
                      KernelOp at);

  TargetAttr target;
};

/// `sum`'s prologue cloned into the builder's kernel body (`map` taking
/// its arguments there): the value it sums.
Value clonePrologue(OpBuilder &b, ColumnSum sum, IRMapping &map) {
  for (Operation *op : sum.prologue)
    b.clone(*op, map);
  return map.lookupOrDefault(sum.reduce.getInput());
}

bool definedBefore(Value v, Operation *at) {
  Operation *def = v.getDefiningOp();
  return !def || def->isBeforeInBlock(at);
}

bool inputsDefinedBefore(KernelOp kernel, Operation *at) {
  return llvm::all_of(kernel.getInputs(),
                      [&](Value v) { return definedBefore(v, at); });
}

/// A kernel of `kind` before `at` over `inputs`, whose body is `block` (its
/// arguments the inputs', the builder at its end) ending in a yield of
/// `yields`.
KernelOp wrapInKernel(OpBuilder &b, Location loc, std::unique_ptr<Block> block,
                      ArrayRef<Value> yields, ArrayRef<Value> inputs,
                      KernelKind kind, Operation *at) {
  YieldOp::create(b, loc, yields);
  b.setInsertionPoint(at);
  auto kernel =
      KernelOp::create(b, loc, ValueRange(yields).getTypes(), inputs, kind);
  kernel.getBody().push_back(block.release());
  return kernel;
}

SmallVector<ColumnSum>
KFFuseColumnSumsPass::rowColumnSums(KernelOp host, RowSpace space,
                                    Operation *&at) {
  // Reduction kernels that read one of the host's rows.
  SmallVector<ColumnSum> sums;
  llvm::SmallPtrSet<Operation *, 8> seen;
  for (Value input : host.getInputs()) {
    auto type = mlir::cast<RankedTensorType>(input.getType());
    if (type.getRank() == 0 || type.getShape().back() != space.length ||
        type.getNumElements() != space.rows * space.length)
      continue;
    for (Operation *user : input.getUsers()) {
      auto reader = dyn_cast<KernelOp>(user);
      if (!reader || reader == host || !seen.insert(reader).second ||
          reader->getBlock() != host->getBlock())
        continue;
      if (std::optional<ColumnSum> sum = asRowColumnSum(reader, space))
        sums.push_back(*sum);
    }
  }
  at = host;
  for (const ColumnSum &sum : sums)
    if (sum.kernel->isBeforeInBlock(at))
      at = sum.kernel;
  bool fits = inputsDefinedBefore(host, at) &&
              llvm::all_of(sums, [&](const ColumnSum &sum) {
                return inputsDefinedBefore(sum.kernel, at);
              });
  if (fits)
    return sums;
  // Else the sums after the host whose inputs it could read where it is.
  at = host;
  llvm::erase_if(sums, [&](const ColumnSum &sum) {
    return sum.kernel->isBeforeInBlock(host) ||
           !inputsDefinedBefore(sum.kernel, host);
  });
  return sums;
}

/// The sums of `sum`'s prologue over each 16 rows.
Value KFFuseColumnSumsPass::sumGroupsOfRows(OpBuilder &b, ColumnSum sum,
                                            IRMapping &map) {
  Value rows = clonePrologue(b, sum, map);
  ArrayRef<int64_t> shape = shapeOf(rows);
  int64_t groups = mlir::cast<ShapedType>(rows.getType()).getNumElements() /
                   shape.back() / kColumnPartialRows;
  Location loc = sum.reduce.getLoc();
  auto grouped = RankedTensorType::get(
      {groups, kColumnPartialRows, shape.back()}, b.getF32Type());
  Value view = ReshapeOp::create(b, loc, grouped, rows, ArrayAttr());
  return ReduceOp::create(
      b, loc, RankedTensorType::get({groups, shape.back()}, b.getF32Type()),
      ReduceKind::sum, view, ArrayRef<int64_t>{1}, /*keep_dims=*/false);
}

void KFFuseColumnSumsPass::rewrite(KernelOp kernel, ArrayRef<ColumnSum> sums,
                                   KernelOp copy) {
  Block &body = kernel.getBody().front();
  Value product = kernel.getResult(0);
  // The inputs: the matmul kernel's, then what the sums' prologues read.
  llvm::SetVector<Value> inputs(kernel.getInputs().begin(),
                                kernel.getInputs().end());
  for (ColumnSum sum : sums)
    for (Value input : sum.kernel.getInputs())
      if (input != product)
        inputs.insert(input);
  OpBuilder b(kernel);
  Location loc = kernel.getLoc();
  // Result types are known once the body is built: build it in a detached
  // block first.
  auto block = std::make_unique<Block>();
  IRMapping map;
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
  auto argFor = [&](Value input) {
    return block->getArgument(llvm::find(inputs, input) - inputs.begin());
  };
  for (auto [arg, input] : llvm::zip(body.getArguments(), kernel.getInputs()))
    map.map(arg, argFor(input));
  b.setInsertionPointToEnd(block.get());
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  Value wide = map.lookup(body.getTerminator()->getOperand(0));
  Value main = wide;
  if (copy) {
    auto narrow = mlir::cast<CastOp>(copy.getBody().front().front());
    main = CastOp::create(b, narrow.getLoc(), narrow.getType(), wide);
  }
  SmallVector<Value> yields = {main};
  for (ColumnSum sum : sums) {
    IRMapping sumMap;
    sumMap.map(sum.product, wide);
    for (auto [arg, input] :
         llvm::zip(sum.kernel.getBody().getArguments(), sum.kernel.getInputs()))
      if (input != product)
        sumMap.map(arg, argFor(input));
    yields.push_back(sumGroupsOfRows(b, sum, sumMap));
  }
  KernelOp fused = wrapInKernel(b, loc, std::move(block), yields,
                                inputs.getArrayRef(), KernelKind::matmul,
                                kernel);
  finishSums(sums, fused.getResults().slice(1, sums.size()));
  if (copy) {
    copy.getResult(0).replaceAllUsesWith(fused.getResult(0));
    copy.erase();
  } else {
    product.replaceAllUsesWith(fused.getResult(0));
  }
  kernel.erase();
}

/// The sums of `sum`'s prologue over the rows of each block of `layout`
/// (BlockColumnPartials).
Value KFFuseColumnSumsPass::sumOverBlocks(OpBuilder &b, ColumnSum sum,
                                          IRMapping &map,
                                          ColumnPartialLayout layout) {
  Value rows = clonePrologue(b, sum, map);
  int64_t length = shapeOf(rows).back();
  int64_t elements = mlir::cast<ShapedType>(rows.getType()).getNumElements();
  int64_t steps = elements / length / (layout.blocks * layout.rowsPerBlock);
  Location loc = sum.reduce.getLoc();
  auto grouped = RankedTensorType::get(
      {steps, layout.blocks, layout.rowsPerBlock, length}, b.getF32Type());
  Value view = ReshapeOp::create(b, loc, grouped, rows, ArrayAttr());
  return ReduceOp::create(
      b, loc, RankedTensorType::get({layout.blocks, length}, b.getF32Type()),
      ReduceKind::sum, view, ArrayRef<int64_t>{0, 2}, /*keep_dims=*/false);
}

void KFFuseColumnSumsPass::rewriteRows(KernelOp host, ArrayRef<ColumnSum> sums,
                                       ColumnPartialLayout layout,
                                       Operation *at) {
  Block &body = host.getBody().front();
  llvm::SetVector<Value> inputs(host.getInputs().begin(),
                                host.getInputs().end());
  for (ColumnSum sum : sums)
    inputs.insert(sum.kernel.getInputs().begin(), sum.kernel.getInputs().end());
  auto block = std::make_unique<Block>();
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
  auto argFor = [&](Value input) {
    return block->getArgument(llvm::find(inputs, input) - inputs.begin());
  };
  IRMapping map;
  for (auto [arg, input] : llvm::zip(body.getArguments(), host.getInputs()))
    map.map(arg, argFor(input));
  OpBuilder b(host);
  b.setInsertionPointToEnd(block.get());
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  SmallVector<Value> yields;
  for (Value v : body.getTerminator()->getOperands())
    yields.push_back(map.lookup(v));
  for (ColumnSum sum : sums) {
    IRMapping sumMap;
    for (auto [arg, input] : llvm::zip(sum.kernel.getBody().getArguments(),
                                       sum.kernel.getInputs()))
      sumMap.map(arg, argFor(input));
    yields.push_back(sumOverBlocks(b, sum, sumMap, layout));
  }
  KernelOp fused =
      wrapInKernel(b, host.getLoc(), std::move(block), yields,
                   inputs.getArrayRef(), KernelKind::normalization, at);
  unsigned own = host.getNumResults();
  finishSums(sums, fused.getResults().slice(own, sums.size()));
  host.replaceAllUsesWith(fused.getResults().take_front(own));
  host.erase();
}

void KFFuseColumnSumsPass::splitTallSum(KernelOp kernel) {
  ReduceOp reduce = columnSumOf(kernel);
  if (!reduce)
    return;
  ColumnSum sum{kernel, reduce, BlockArgument(), prologueOf(kernel, reduce)};
  auto type = mlir::cast<RankedTensorType>(reduce.getInput().getType());
  if (!type.hasStaticShape() || !onlySumSeesRows(sum))
    return;
  int64_t columns = type.getShape().back();
  int64_t rows = columns ? type.getNumElements() / columns : 0;
  int64_t k = columnSplitFactor(rows, columns, target.getMultiprocessors());
  if (k == 1)
    return;
  // The first kernel: the inputs the prologue reads, its rows summed as k
  // interleaved partials.
  llvm::SetVector<Value> inputs;
  for (BlockArgument arg : kernel.getBody().getArguments())
    if (arg == reduce.getInput() ||
        llvm::any_of(arg.getUsers(), [&](Operation *user) {
          return llvm::is_contained(sum.prologue, user);
        }))
      inputs.insert(kernel.getInputs()[arg.getArgNumber()]);
  auto block = std::make_unique<Block>();
  IRMapping map;
  for (BlockArgument arg : kernel.getBody().getArguments())
    if (Value input = kernel.getInputs()[arg.getArgNumber()];
        inputs.contains(input) && !map.contains(arg))
      map.map(arg, block->addArgument(input.getType(), input.getLoc()));
  OpBuilder b(kernel);
  b.setInsertionPointToEnd(block.get());
  Location loc = reduce.getLoc();
  Type f32 = b.getF32Type();
  Value view = ReshapeOp::create(
      b, loc, RankedTensorType::get({rows / k, k * columns}, f32),
      clonePrologue(b, sum, map), ArrayAttr());
  Value partials = ReduceOp::create(
      b, loc, RankedTensorType::get({k * columns}, f32), ReduceKind::sum,
      view, ArrayRef<int64_t>{0}, /*keep_dims=*/false);
  KernelOp first =
      wrapInKernel(b, loc, std::move(block), {partials}, inputs.getArrayRef(),
                   KernelKind::reduction, kernel);
  finishSums({sum}, first.getResults());
}

/// A LayerNorm's weight and bias gradients sum partials of one shape: one
/// kernel reads both (one launch, not two). It stands where the last of
/// the sums' kernels stood; a sum read before that is finished alone.
void KFFuseColumnSumsPass::finishSums(ArrayRef<ColumnSum> sums,
                                     ValueRange partials) {
  KernelOp last = sums.front().kernel;
  for (const ColumnSum &sum : sums)
    if (last->isBeforeInBlock(sum.kernel))
      last = sum.kernel;
  SmallVector<ColumnSum> together;
  SmallVector<Value> togetherPartials;
  for (auto [sum, partial] : llvm::zip_equal(sums, partials)) {
    bool readAfter = llvm::all_of(sum.kernel->getUsers(), [&](Operation *u) {
      return last->isBeforeInBlock(u);
    });
    if (sum.kernel == last || readAfter) {
      together.push_back(sum);
      togetherPartials.push_back(partial);
    } else {
      finishTogether({sum}, {partial}, sum.kernel);
    }
  }
  finishTogether(together, togetherPartials, last);
}

/// One reduction kernel at `at` for `sums`: each sum of its partials over
/// their groups, then the ops that followed it in its own kernel.
void KFFuseColumnSumsPass::finishTogether(ArrayRef<ColumnSum> sums,
                                          ArrayRef<Value> partials,
                                          KernelOp at) {
  // Its inputs: the partials, and what the ops after each sum read.
  llvm::SetVector<Value> inputs(partials.begin(), partials.end());
  SmallVector<SmallVector<Operation *>> after(sums.size());
  for (auto [i, sum] : llvm::enumerate(llvm::to_vector(sums))) {
    llvm::SmallPtrSet<Operation *, 8> prologue(sum.prologue.begin(),
                                               sum.prologue.end());
    for (Operation &op : sum.kernel.getBody().front())
      if (!prologue.contains(&op) && &op != sum.reduce)
        after[i].push_back(&op);
    for (BlockArgument arg : sum.kernel.getBody().getArguments())
      if (llvm::any_of(arg.getUsers(), [&](Operation *user) {
            return llvm::is_contained(after[i], user);
          }))
        inputs.insert(sum.kernel.getInputs()[arg.getArgNumber()]);
  }
  auto block = std::make_unique<Block>();
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
  auto argFor = [&](Value input) {
    return block->getArgument(llvm::find(inputs, input) - inputs.begin());
  };
  OpBuilder b(at);
  b.setInsertionPointToEnd(block.get());
  SmallVector<Value> yields;
  for (auto [i, sum] : llvm::enumerate(llvm::to_vector(sums))) {
    IRMapping map;
    for (auto [arg, input] : llvm::zip(sum.kernel.getBody().getArguments(),
                                       sum.kernel.getInputs()))
      if (inputs.contains(input))
        map.map(arg, argFor(input));
    // Partials [groups, C], or [k C] (splitTallSum's, viewed as [k, C]).
    Value partial = argFor(partials[i]);
    ArrayRef<int64_t> partialShape = shapeOf(partial);
    if (partialShape.size() == 1) {
      int64_t columns = shapeOf(sum.reduce.getResult()).back();
      partial = ReshapeOp::create(
          b, sum.reduce.getLoc(),
          RankedTensorType::get({partialShape[0] / columns, columns},
                                b.getF32Type()),
          partial, ArrayAttr());
    }
    map.map(sum.reduce.getResult(),
            ReduceOp::create(b, sum.reduce.getLoc(), sum.reduce.getType(),
                             ReduceKind::sum, partial, ArrayRef<int64_t>{0},
                             /*keep_dims=*/false));
    for (Operation *op : after[i]) {
      if (auto yield = dyn_cast<YieldOp>(op)) {
        for (Value v : yield.getValues())
          yields.push_back(map.lookupOrDefault(v));
        continue;
      }
      b.clone(*op, map);
    }
  }
  KernelOp finished =
      wrapInKernel(b, at.getLoc(), std::move(block), yields,
                   inputs.getArrayRef(), KernelKind::reduction, at);
  unsigned next = 0;
  for (ColumnSum sum : sums) {
    unsigned n = sum.kernel.getNumResults();
    sum.kernel.replaceAllUsesWith(finished.getResults().slice(next, n));
    next += n;
    sum.kernel.erase();
  }
}

} // namespace
