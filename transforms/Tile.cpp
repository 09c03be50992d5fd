//===- Tile.cpp - kf-tile: choose each kernel's launch shape --------------===//
//
// Analyse: the kernel's work (elements, or rows of a row space) and the
// widest 16-byte vector every buffer it touches allows. Decide:
//  - pointwise: `vec` elements per thread step (two vectors of them for
//    large tensors, `interleave`d across the block for f32), 256 threads,
//    a grid that covers the steps once;
//  - row kernels (normalisations and last-axis reductions): one block per
//    row with enough threads that each holds about 4 vectors, the row kept
//    in registers when that is at most 32 values a thread (else looped);
//  - matmuls of bf16/f16 on aligned buffers (f32 with allow-tf32, recorded
//    as `tf32`): a tensor-core block tile per thread block, the tile chosen
//    per shape by chooseMatmulTile's count of waves on the SMs;
//  - the rest: one thread per item.
// Rewrite: record the choice as the kernel's `launch` and `tiling`.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "analysis/MatmulTiling.h"
#include "analysis/KernelAnalysis.h"
#include "transforms/Passes.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFTILEPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

/// Elements of `v`'s tensor type.
static int64_t elementsOf(Value v) {
  return mlir::cast<RankedTensorType>(v.getType()).getNumElements();
}

/// Whether the templates may access `buffer` (a kernel block argument or
/// result) a vector at a time: in a row kernel, a row-shaped buffer; in
/// others, one that is not a value per row or a single value ([..., 1]
/// smaller than the kernel's space, rank 0: one element a vector). An
/// input read only through index maps (gathered, sliced, concatenated,
/// padded) is read element by element.
static bool accessedAsVectors(Value buffer, KernelOp kernel) {
  auto type = mlir::cast<RankedTensorType>(buffer.getType());
  if (type.getRank() == 0)
    return false;
  if (std::optional<RowSpace> rows = rowSpaceOf(kernel)) {
    if (type.getShape().back() != rows->length ||
        type.getNumElements() != rows->rows * rows->length)
      return false;
  } else if (type.getShape().back() == 1 &&
             type.getNumElements() < elementsOf(kernel.getResult(0))) {
    return false;
  }
  if (!isa<BlockArgument>(buffer))
    return true;
  return !llvm::all_of(buffer.getUsers(), [](Operation *user) {
    return isa<GatherOp, TakeAlongAxisOp, SliceOp, ConcatOp, PadOp>(user);
  });
}

/// Elements per 16-byte access that every buffer the kernel accesses a
/// vector at a time allows. Vectors of i1 are bit-packed in LLVM, not byte
/// arrays: no vectors where any buffer is i1.
int64_t vectorWidth(KernelOp kernel) {
  int64_t bytes = 1;
  for (Value buffer : llvm::concat<Value>(kernel.getBody().front().getArguments(),
                                          kernel.getResults())) {
    Type dtype =
        mlir::cast<RankedTensorType>(buffer.getType()).getElementType();
    if (dtype.isInteger(1))
      return 1;
    if (accessedAsVectors(buffer, kernel))
      bytes = std::max<int64_t>(bytes, dtype.getIntOrFloatBitWidth() / 8);
  }
  return 16 / bytes;
}

/// What kf-tile decides for a kernel: its launch, and the tiling of its
/// template (none for the templates that take an item a thread).
struct Decision {
  int64_t grid = 0, block = 0, items = 0;
  Attribute tiling;
  int64_t minBlocksPerSM = 0, sharedBytes = 0;
};

/// `block` threads a block, enough blocks for a thread a step.
Decision blocksFor(int64_t steps, int64_t block, int64_t items,
                   Attribute tiling = {}) {
  return {std::min<int64_t>((steps + block - 1) / block, INT32_MAX), block,
          items, tiling};
}

/// 32 columns by 32 row groups a block; a block per 32 columns.
Decision decideColumns(MLIRContext *ctx, RowSpace columns) {
  return {std::min<int64_t>((columns.length + 31) / 32, INT32_MAX), 1024,
          columns.length, ColumnTilingAttr::get(ctx)};
}

/// A cumsum down columns (its axis not the last: the dims after it,
/// flattened, are its columns): a block of 32 x 32 threads a 32- or
/// 64-column tile of one index before the axis. A thread a column walking all
/// its rows left too few loads in flight: H200, f32 [4096, 16384] along dim 0
/// at 12.7x its HBM floor.
std::optional<Decision> decideColumnScan(MLIRContext *ctx, KernelOp kernel) {
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  auto cumsum = yield.getValues()[0].getDefiningOp<CumsumOp>();
  if (!cumsum)
    return std::nullopt;
  ArrayRef<int64_t> shape = shapeOf(cumsum.getResult());
  int64_t axis = cumsum.getAxis(), outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < int64_t(shape.size()); ++d)
    inner *= shape[d];
  if (inner < 2)
    return std::nullopt;
  // Two columns a thread where the columns are even, chunks of half the
  // rows: H100, f32 [4096, 16384] along dim 0, same run, two rounds:
  // 1.105 / 1.106x the floor with one, 1.096 / 1.094 with two, 1.219 /
  // 1.221 with four (128 blocks on 132 SMs).
  int64_t lanes = inner % 2 == 0 ? 2 : 1;
  int64_t tiles = outer * ((inner + 32 * lanes - 1) / (32 * lanes));
  return Decision{std::min<int64_t>(tiles, INT32_MAX), 1024, tiles,
                  ColumnScanTilingAttr::get(ctx, 8 / lanes, lanes)};
}

/// Blocks of `threads` striding over `items`: one an item's thread, at most
/// 32 blocks an SM.
int64_t stridingBlocks(int64_t items, int64_t threads, int64_t sms) {
  return std::min((items + threads - 1) / threads, sms * 32);
}

/// `value` and every value of the kernel body it is computed from.
llvm::SmallPtrSet<Value, 8> producersOf(Value value) {
  llvm::SmallPtrSet<Value, 8> seen;
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (Operation *op = v.getDefiningOp())
      llvm::append_range(worklist, op->getOperands());
  }
  return seen;
}

/// Columns an ordered index_add's thread takes at a time: a 16-byte access
/// of every buffer it reads or writes along the columns (all but the
/// indices), a whole vector in each result row and each tile of `columns`.
int64_t indexAddVector(KernelOp kernel, IndexAddOp op, int64_t columns,
                       bool aligned) {
  if (!aligned)
    return 1;
  // The indices and what only they are computed from are read an index
  // at a time.
  llvm::SmallPtrSet<Value, 8> indexOnly = producersOf(op.getIndices());
  for (Value v : producersOf(op.getUpdates()))
    indexOnly.erase(v);
  int64_t bytes = 1;
  for (Value buffer : llvm::concat<Value>(
           kernel.getBody().front().getArguments(), kernel.getResults())) {
    if (indexOnly.contains(buffer))
      continue;
    Type dtype = mlir::cast<RankedTensorType>(buffer.getType()).getElementType();
    if (dtype.isInteger(1))
      return 1;
    bytes = std::max<int64_t>(bytes, dtype.getIntOrFloatBitWidth() / 8);
  }
  // Each result's vectors are stored whole within its rows (kf-pad may
  // give them a stride).
  auto splits = [&](int64_t vector) {
    return op.getScatterSpace()[2] % vector || columns % vector ||
           llvm::any_of(kernel.getResults(), [&](Value result) {
             return shapeOf(result).empty() || shapeOf(result).back() % vector;
           });
  };
  int64_t vector = 16 / bytes;
  while (vector > 1 && splits(vector))
    vector /= 2;
  return vector;
}

/// An ordered index_add's tile: the columns (the dims after the axis) in
/// even tiles of at most a block's most, by as many rows as the shared sums
/// hold, fewer while the grid would not fill the GPU twice over (every
/// block reads all the indices, so the tile is as large as the GPU allows)
/// but not fewer than the block's row groups. 24,576 sums a tile against
/// 8,192 (H100, session 55, ms): Llama 3's table gradient 1.043 -> 0.617,
/// GPT-2's 0.088 -> 0.077, with positions 0.379 -> 0.247.
IndexAddTilingAttr indexAddTile(KernelOp kernel, IndexAddOp op, int64_t sms,
                                bool aligned) {
  auto [pre, count, post] = op.getScatterSpace();
  int64_t columnTiles = llvm::divideCeil(post, kIndexAddColumnsPerBlock);
  int64_t columns =
      columnTiles <= 1
          ? std::max<int64_t>(post, 1)
          : llvm::alignTo(llvm::divideCeil(post, columnTiles), 32);
  int64_t vector = indexAddVector(kernel, op, columns, aligned);
  MLIRContext *ctx = kernel.getContext();
  auto shape = IndexAddTilingAttr::get(ctx, false, 1, columns, vector);
  int64_t size = std::max<int64_t>(op.getSize(), 1);
  int64_t groups = kIndexAddThreads / shape.getThreadsPerRow();
  int64_t rows = std::min(size, kIndexAddTileSums / shape.getSumsPerRow());
  while (rows > std::min(size, groups) &&
         op.getTileCount(rows, columns) < 2 * sms)
    rows = std::max((rows + 1) / 2, std::min(size, groups));
  return IndexAddTilingAttr::get(ctx, false, rows, columns, vector);
}

/// kf.index_add: a thread an update, added into the zeroed result in any
/// order, where the target allows unordered adds (256 threads, a grid of at
/// most 32 blocks an SM striding over the updates); else a block a tile of
/// sums, added in index order.
std::optional<Decision> decideIndexAdd(KernelOp kernel, TargetAttr target) {
  auto ops = kernel.getBody().getOps<IndexAddOp>();
  if (ops.empty())
    return std::nullopt;
  IndexAddOp op = *ops.begin();
  MLIRContext *ctx = kernel.getContext();
  int64_t sms = target.getMultiprocessors();
  if (target.getUnorderedAdds()) {
    int64_t items = mlir::cast<RankedTensorType>(op.getUpdates().getType())
                        .getNumElements();
    constexpr int64_t threads = 256;
    int64_t blocks = stridingBlocks(items, threads, sms);
    return Decision{std::max<int64_t>(blocks, 1), threads, items,
                    IndexAddTilingAttr::get(ctx, true, 0, 0, 1)};
  }
  IndexAddTilingAttr tile = indexAddTile(kernel, op, sms, target.getAligned());
  int64_t tiles =
      op.getTileCount(tile.getRowsPerBlock(), tile.getColumnsPerBlock());
  // A block a tile: they take about the same time (a scan of the indices).
  // The sums are the block's dynamic shared memory.
  return Decision{std::clamp<int64_t>(tiles, 1, INT32_MAX),
                  kIndexAddThreads,
                  tiles,
                  tile,
                  0,
                  tile.getRowsPerBlock() * tile.getSumsPerRow() * 4};
}

/// 32x32 tiles through shared memory, 8 rows of threads.
Decision decideTiledTranspose(MLIRContext *ctx, TransposeOp transpose) {
  ArrayRef<int64_t> out = shapeOf(transpose.getResult());
  int64_t r = out.size();
  int64_t tiles = ((out[r - 2] + 31) / 32) * ((out[r - 1] + 31) / 32);
  for (int64_t d = 0; d + 2 < r; ++d)
    tiles *= out[d];
  return {std::min<int64_t>(tiles, INT32_MAX), 256, tiles,
          TransposeTilingAttr::get(ctx)};
}

/// The row strides of a row kernel's row-shaped buffers (kf-pad may have
/// padded some).
SmallVector<int64_t> rowStrides(KernelOp kernel, RowSpace rows) {
  SmallVector<int64_t> strides;
  for (Value v : llvm::concat<Value>(kernel.getBody().getArguments(),
                                     kernel.getResults())) {
    auto type = mlir::cast<RankedTensorType>(v.getType());
    if (type.getRank() == 0 || type.getShape().back() != rows.length ||
        type.getNumElements() != rows.rows * rows.length)
      continue;
    Value buffer = v;
    if (auto arg = dyn_cast<BlockArgument>(v))
      buffer = kernel.getInputs()[arg.getArgNumber()];
    strides.push_back(rowStrideOf(buffer));
  }
  return strides;
}

/// The column partials a row kernel yields (all of one layout, as
/// kf-fuse-column-sums makes them), if any.
std::optional<BlockColumnPartials> columnPartialsOf(KernelOp kernel) {
  for (Value v : kernel.getBody().front().getTerminator()->getOperands())
    if (std::optional<BlockColumnPartials> p = blockColumnPartialsOf(v))
      return p;
  return std::nullopt;
}

/// The threads an SM runs of a row kernel that holds its rows in registers.
constexpr int64_t kRowThreadsPerSM = 1024;

/// A row kernel's blocks of 512 threads, split over clusters.
constexpr int64_t kClusterRowThreads = 512;

/// A row too long for one block's registers that a softmax passes over
/// more than once (its statistics, then its output) is split over the
/// smallest cluster whose blocks of 512 threads hold it in registers, at
/// most 32 values and 8 vectors a thread (each vector's lanes cost their
/// own addresses and masks: a ragged f32 row of 40003 in 20 one-element
/// vectors a thread spilled under the 64 registers of two blocks an SM):
/// read once, two rows' shares an SM. Looped, such a row was read once a
/// pass; staged in shared memory (kf-promote-shared), one 128 KB row
/// filled an SM, its loads and stores in turn (bf16 softmax over 65536
/// columns at 1.44x its HBM floor on the H100, 1.9x on the H200).
std::optional<Decision> decideClusterRows(MLIRContext *ctx, RowSpace rows,
                                          int64_t vec, int64_t vectors,
                                          int64_t heldInputs) {
  for (int64_t cluster = 2; cluster <= kMaxRowCluster; cluster *= 2) {
    int64_t chunks = llvm::divideCeil(vectors, cluster * kClusterRowThreads);
    if (heldInputs * chunks * vec > 32 || chunks > 8)
      continue;
    int64_t clusters = std::min<int64_t>(rows.rows, INT32_MAX / cluster);
    return Decision{clusters * cluster, kClusterRowThreads, rows.rows,
                    RowTilingAttr::get(ctx, vec, chunks, /*inRegisters=*/true,
                                       false, 1, cluster),
                    kRowThreadsPerSM / kClusterRowThreads};
  }
  return std::nullopt;
}

/// Whether a row kernel's reductions are all softmaxes. Only these gain
/// from a cluster over rows staged in shared memory: each cluster barrier
/// stalls both blocks of an SM, and the staged softmax (three passes over
/// its row, two of them exponentials) is the slowest staged row. H100, bf16
/// rows of 65536 over clusters of 4 against staged, same run: softmax
/// 1.44 -> 1.33x its HBM floor, RMSNorm 1.14 -> 1.18, LayerNorm (a barrier
/// for the mean, another for the variance) 1.21 -> 1.37.
bool reducesBySoftmaxesOnly(KernelOp kernel) {
  return !kernel.getBody().getOps<SoftmaxOp>().empty() &&
         kernel.getBody().getOps<ReduceOp>().empty();
}

/// Enough threads a row for about four vectors each; the row stays in
/// registers when a thread holds at most 32 of its values. A row that
/// would take more than 512 threads so takes 256 and loops over it online
/// instead: blocks of 1024 threads holding the row in registers fit once
/// on an SM, a row at a time in flight (cross-entropy over 32k bf16 logits
/// ran at 4.2x its HBM floor on the H200). Vectors must tile every
/// row-shaped buffer's rows; they span the longest (padded) row.
///
/// Rows of at most a warp's worth of threads share blocks of 256 threads
/// (`groupRows`: the templates that reduce within a warp), fewer where the
/// grid would have less than four blocks an SM: a block per 128-column
/// row (16 threads, the rest idle) or a warp per 1000-column row left most
/// of the SM's block slots and warps unused (H200, bf16 softmax 131072 x
/// 128 at 5.2x its floor, LayerNorm 32768 x 1000 at 5.3x).
///
/// A thread holds the lanes of every streamed input (`heldInputs`): rows
/// of more than a warp take more threads until it holds at most 32 values
/// in all. A softmax backward (y and dy) of 4096 bf16 columns, 128 threads
/// a row, spilled 76 bytes under the 64 registers of 1024 threads an SM.
///
/// `mayCluster`: rows too long for a block's registers may be split over
/// a cluster's blocks (decideClusterRows).
Decision decideRows(MLIRContext *ctx, RowSpace rows, ArrayRef<int64_t> strides,
                    int64_t vec, int64_t heldInputs, bool groupRows,
                    bool mayCluster, int64_t sms) {
  auto divides = [&](int64_t v) {
    return llvm::all_of(strides, [&](int64_t s) { return s % v == 0; });
  };
  while (vec > 1 && !divides(vec))
    vec /= 2;
  int64_t span = rows.length;
  for (int64_t s : strides)
    span = std::max(span, s);
  int64_t vectors = std::max<int64_t>(1, (span + vec - 1) / vec);
  int64_t threads = groupRows ? 1 : 32;
  while (threads < 1024 && threads * 4 < vectors)
    threads *= 2;
  if (threads > 512)
    threads = 256;
  auto chunksOf = [&](int64_t t) { return (vectors + t - 1) / t; };
  if (threads > 32 && chunksOf(threads) * vec <= 32)
    while (threads < 512 && heldInputs * chunksOf(threads) * vec > 32)
      threads *= 2;
  int64_t perBlock = 1;
  if (groupRows && threads <= 32) {
    perBlock = 256 / threads;
    while (perBlock > 1 &&
           (rows.rows + perBlock - 1) / perBlock < 4 * sms)
      perBlock /= 2;
    // A block is at least a warp: fewer rows a block, more threads a row.
    threads = std::max<int64_t>(threads, 32 / perBlock);
  }
  int64_t chunks = chunksOf(threads);
  // A block per row group: the hardware balances rows across the SMs
  // better than a grid-stride loop over waves of resident blocks.
  int64_t groups = (rows.rows + perBlock - 1) / perBlock;
  bool inRegisters = chunks * vec <= 32;
  if (!inRegisters && mayCluster)
    if (std::optional<Decision> split =
            decideClusterRows(ctx, rows, vec, vectors, heldInputs))
      return *split;
  // A row held in registers is loaded once, all of it in flight; what
  // keeps HBM busy is then how many rows an SM holds. Registers decide
  // that: at 66 a thread, blocks of 512 fit once on an SM (H200, bf16
  // softmax of 16384 columns at 1.76x its floor, 25% occupancy). Ask for
  // 1024 threads an SM, 64 registers each.
  int64_t block = threads * perBlock;
  int64_t minBlocks =
      inRegisters ? std::max<int64_t>(1, kRowThreadsPerSM / block) : 0;
  return {std::min<int64_t>(groups, INT32_MAX), block, groups,
          RowTilingAttr::get(ctx, vec, chunks, inRegisters, false, perBlock, 1),
          minBlocks};
}

/// A row kernel that sums column partials (kf-fuse-column-sums): the layout
/// the partials' shape records, `rowsPerBlock` rows of a block at once and
/// a block per partial, each looping over its rows. The row stays in
/// registers (at most 8 columns a thread, columnPartialLayout).
Decision decidePartialRows(MLIRContext *ctx, RowSpace rows,
                           BlockColumnPartials partials, int64_t vec) {
  int64_t threads = kColumnPartialBlockThreads / partials.rowsPerBlock;
  int64_t vectors = (rows.length + vec - 1) / vec;
  int64_t chunks = (vectors + threads - 1) / threads;
  return {partials.blocks, kColumnPartialBlockThreads,
          rows.rows / partials.rowsPerBlock,
          RowTilingAttr::get(ctx, vec, chunks, /*inRegisters=*/true, false,
                             partials.rowsPerBlock, 1),
          /*minBlocksPerSM=*/2};
}

/// A pointwise kernel that writes padded rows (kf-pad's copy of a matmul
/// operand): a thread step writes `vec` elements of a padded row, zeros
/// past its end.
Decision decidePaddedCopy(KernelOp kernel, int64_t stride, int64_t vec,
                          int64_t blockSize) {
  auto type = mlir::cast<RankedTensorType>(kernel.getResult(0).getType());
  int64_t elements = type.getNumElements() / type.getShape().back() * stride;
  while (vec > 1 && stride % vec)
    vec /= 2;
  return blocksFor(
      elements / vec, blockSize, elements,
      PointwiseTilingAttr::get(kernel.getContext(), vec, 1, false, 1, false));
}

/// Bytes a kernel may move between two reads of one element of an input
/// before L2 is not relied on to still hold it: a sixth of the 50 MB L2 of
/// an H100 or H200 (two halves, which both serve every SM).
constexpr int64_t kL2ReuseBytes = 8 << 20;

/// The groups a pointwise kernel deals its chunks (`chunk` elements, a
/// block's thread step) out among (PointwiseTilingAttr): one per leading
/// index of an input broadcast over the leading dims, when in the output's
/// order its reads lie too far apart for L2 to hold it between them.
/// Measured on the H100 (gathered embedding rows plus positions,
/// [8, 4096, 2048] bf16): 2.01x its floor, 1.40x in groups, 1.36x with
/// streamed stores; a RoPE ([8, 32, 2048, 128], tables 1 MB apart) is
/// the same either way.
int64_t chunkGroups(KernelOp kernel, int64_t chunk) {
  std::optional<LeadingBroadcastReads> reads = leadingBroadcastReadsOf(kernel);
  if (!reads || reads->rest % chunk)
    return 1;
  int64_t moved = 0;
  for (Type type : llvm::concat<const Type>(kernel.getInputs().getTypes(),
                                            kernel.getResultTypes())) {
    auto tensor = cast<RankedTensorType>(type);
    moved += tensor.getNumElements() *
             std::max<int64_t>(tensor.getElementTypeBitWidth() / 8, 1);
  }
  return moved / reads->groups >= kL2ReuseBytes ? reads->groups : 1;
}

/// Vectors a block apart a pointwise thread step takes where the kernel
/// gathers rows (decidePointwise). Measured on the H100 (embedding rows of
/// 2048 bf16 plus positions, [8, 4096, 2048], x floor, two rounds): two
/// vectors adjacent (one row) 1.355 / 1.353; a block apart 1.342 / 1.344;
/// four 1.339 / 1.336; eight 1.365 / 1.366.
constexpr int64_t kGatheredRowsPerStep = 4;

/// Whether `kernel` gathers whole rows: a gather along any dim but the
/// last, whose vectors each read one row at one loaded index.
bool readsGatheredRows(KernelOp kernel) {
  bool found = false;
  kernel.getBody().walk([&](GatherOp op) {
    found |= int64_t(op.getAxis()) + 1 <
             cast<RankedTensorType>(op.getInput().getType()).getRank();
  });
  return found;
}

Decision decidePointwise(KernelOp kernel, int64_t elements, int64_t vec,
                         int64_t blockSize) {
  while (vec > 1 && elements % vec)
    vec /= 2;
  // Large kernels take two vectors a thread step: more bytes in flight.
  // Measured on the H200 (fused / HBM floor): f32 kernels want a block's
  // vectors interleaved, each warp access one contiguous run (cos(cos x)
  // 1.10 -> 1.06; with a thread's two vectors adjacent, 1.38); 16-bit ones
  // want them adjacent (gelu bf16 1.10, interleaved 1.20).
  int64_t vectors = elements / vec;
  bool large = elements >= (1 << 20);
  bool interleave = vec == 4 && vectors % (2 * blockSize) == 0;
  bool adjacent = vec >= 8 && vectors % 2 == 0;
  int64_t unroll = large && (interleave || adjacent) ? 2 : 1;
  // A gathered row's loads wait for its index: a thread step takes
  // vectors a block apart, of different rows where a row is at most a
  // block's vectors, so that their indices and then their rows are in
  // flight together.
  if (large && readsGatheredRows(kernel) &&
      vectors % (kGatheredRowsPerStep * blockSize) == 0) {
    unroll = kGatheredRowsPerStep;
    interleave = true;
  }
  int64_t groups = chunkGroups(kernel, vec * unroll * blockSize);
  return blocksFor(vectors / unroll, blockSize, elements,
                   PointwiseTilingAttr::get(kernel.getContext(), vec, unroll,
                                            unroll > 1 && interleave, groups,
                                            /*streamStores=*/groups > 1));
}

/// One thread block per output tile (per batch), tile rows grouped by
/// group_m for L2 reuse.
Decision decideTensorCoreMatmul(MatmulOp matmul, int64_t sms, bool wgmma) {
  MatmulProblem p = MatmulProblem::of(matmul);
  MatmulTile t = chooseMatmulTile(p, sms, wgmma);
  int64_t tiles = p.splits * p.batch * ((p.m + t.bm - 1) / t.bm) *
                  ((p.n + t.bn - 1) / t.bn);
  // f32 operands multiply in TF32 (the kernel's verifier refuses f32
  // without it).
  return {tiles, t.threads(), tiles,
          MmaTilingAttr::get(matmul.getContext(), t.bm, t.bn, t.bk, t.warpsM,
                             t.warpsN, tileRowGroup(t, p), t.wgmma,
                             p.elementBytes == 4, t.edgeN)};
}

/// A block per 128 query rows of a head, two warpgroups; head dims padded
/// to multiples of 64 (the swizzled tiles' width).
Decision decideFlashAttention(AttentionOp op) {
  ArrayRef<int64_t> q = shapeOf(op.getQ());
  // 64 rows (one warpgroup, two blocks an SM that need not wait for each
  // other) measured the same on the H200 and reads K and V twice as often.
  int64_t blockQ = 128;
  int64_t blocks = q[0] * q[1] * ((q[2] + blockQ - 1) / blockQ);
  int64_t headDim = (q[3] + 63) / 64 * 64;
  int64_t valueDim = (shapeOf(op.getV())[3] + 63) / 64 * 64;
  // 128 keys a tile leave too few registers for the wgmma pipeline
  // (ptxas serialises it, C7511, even at head dim 64). Q's fragments in
  // registers (32 a thread at head dim 128) halve the shared-memory reads
  // of Q K^T; past 128 they would spill.
  return {blocks, 2 * blockQ, blocks,
          FlashTilingAttr::get(op.getContext(), blockQ, 64, headDim, valueDim,
                               headDim <= 128)};
}

/// FlashAttention's backward: blocks of 128 keys (dk, dv) then blocks of
/// 128 query rows (dq), two warpgroups each, over tiles of 64. Past head
/// dims of 128 a thread's registers do not hold dk's and dv's accumulators
/// together: dk and dv get blocks of their own (FlashAttention 2 shrinks
/// its blocks there instead, which wgmma's 64 rows a warpgroup rule out).
Decision decideFlashAttentionGrad(AttentionGradOp op, TargetAttr target) {
  ArrayRef<int64_t> q = shapeOf(op.getQ()), k = shapeOf(op.getK());
  constexpr int64_t rows = 128;
  int64_t kvBlocks = k[0] * k[1] * ((k[2] + rows - 1) / rows);
  int64_t qBlocks = q[0] * q[1] * ((q[2] + rows - 1) / rows);
  int64_t headDim = (q[3] + 63) / 64 * 64;
  int64_t valueDim = (shapeOf(op.getV())[3] + 63) / 64 * 64;
  // Where adds may come in any order, an f32 dq (kf-atomic-dq's) is added
  // into by the key blocks, with no query blocks.
  bool split = headDim + valueDim > 256;
  bool dqAtomic = !split && target.getUnorderedAdds() &&
                  getElementTypeOrSelf(op.getDq().getType()).isF32();
  int64_t blocks = dqAtomic ? kvBlocks : (split ? 2 : 1) * kvBlocks + qBlocks;
  return {blocks, 2 * rows, blocks,
          FlashGradTilingAttr::get(op.getContext(), rows, 64, headDim, valueDim,
                                   kvBlocks, dqAtomic, split)};
}

struct KFTilePass : public kfuse::kf::impl::KFTilePassBase<KFTilePass> {
  using KFTilePassBase::KFTilePassBase;

  void runOnOperation() override {
    if (blockSize <= 0 || blockSize > 1024) {
      getOperation().emitError() << "kf-tile: block-size must be in 1..1024";
      return signalPassFailure();
    }
    TargetAttr target = TargetAttr::of(getOperation());
    getOperation().walk([&](KernelOp kernel) {
      Builder b(kernel);
      Decision d = decide(kernel, target);
      kernel.setLaunchAttr(
          LaunchAttr::get(b.getContext(), d.grid, d.block, d.items,
                          d.sharedBytes, d.minBlocksPerSM));
      if (d.tiling)
        kernel.setTilingAttr(d.tiling);
      // Say why a matmul or attention runs without tensor cores
      // (--emit=fused shows it).
      std::optional<std::string> why;
      if (kernel.getKind() == KernelKind::matmul)
        why = tensorCoreRefusal(matmulOf(kernel), target.getAligned(),
                                target.getAllowTF32());
      else if (kernel.getKind() == KernelKind::attention)
        why = flashAttentionRefusal(kernel, target.getAligned(),
                                    target.getWgmma());
      if (why)
        kernel->setAttr("no_tensor_cores", b.getStringAttr(*why));
    });
  }

  Decision decide(KernelOp kernel, TargetAttr target) {
    MLIRContext *ctx = kernel.getContext();
    bool aligned = target.getAligned();
    int64_t sms = target.getMultiprocessors();
    int64_t items = kernelWorkItems(kernel);
    int64_t vec = aligned ? vectorWidth(kernel) : 1;
    bool rowKind = kernel.getKind() == KernelKind::reduction ||
                   kernel.getKind() == KernelKind::normalization;
    std::optional<RowSpace> rows =
        rowKind ? rowSpaceOf(kernel) : std::nullopt;
    if (std::optional<RowSpace> columns = columnSpaceOf(kernel))
      return decideColumns(ctx, *columns);
    if (TransposeOp transpose = tiledTransposeOf(kernel))
      return decideTiledTranspose(ctx, transpose);
    if (std::optional<Decision> scan = decideColumnScan(ctx, kernel))
      return *scan;
    if (std::optional<Decision> scatter = decideIndexAdd(kernel, target))
      return *scatter;
    if (rows) {
      // argmax's and cumsum's templates reduce across the whole block.
      bool lineKernel = !kernel.getBody().getOps<ArgReduceOp>().empty() ||
                        !kernel.getBody().getOps<CumsumOp>().empty();
      if (std::optional<BlockColumnPartials> partials =
              columnPartialsOf(kernel))
        return decidePartialRows(ctx, *rows, *partials, vec);
      int64_t held = streamedRowInputs(kernel, *rows).size();
      // Rows read once (a log-sum-exp, a cross-entropy) gain nothing from
      // a cluster: the online normaliser reads them once already.
      bool mayCluster = target.hasClusters() && !lineKernel &&
                        loopedRowPasses(kernel, *rows) > 1 &&
                        reducesBySoftmaxesOnly(kernel);
      return decideRows(ctx, *rows, rowStrides(kernel, *rows), vec,
                        std::max<int64_t>(held, 1), !lineKernel, mayCluster,
                        sms);
    }
    if (int64_t stride = kernel.getKind() == KernelKind::pointwise
                             ? paddedRowStride(kernel.getResult(0))
                             : 0)
      return decidePaddedCopy(kernel, stride, vec, blockSize);
    if (kernel.getKind() == KernelKind::pointwise)
      return decidePointwise(kernel, items, vec, blockSize);
    if (kernel.getKind() == KernelKind::matmul &&
        !tensorCoreRefusal(matmulOf(kernel), aligned, target.getAllowTF32()))
      return decideTensorCoreMatmul(matmulOf(kernel), sms, target.getWgmma());
    if (kernel.getKind() == KernelKind::attention &&
        !flashAttentionRefusal(kernel, aligned, target.getWgmma()))
      return decideFlashAttention(attentionOf(kernel));
    if (kernel.getKind() == KernelKind::attention_grad)
      return decideFlashAttentionGrad(attentionGradOf(kernel), target);
    return {stridingBlocks(items, blockSize, sms), blockSize,
            items};
  }
};

} // namespace
