//===- MatmulTiling.cpp - tensor-core tiles for matmul kernels ------------===//

#include "analysis/MatmulTiling.h"
#include "analysis/KernelAnalysis.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include <numeric>

using namespace mlir;
using namespace kfuse::kf;

MatmulOp kfuse::kf::matmulOf(KernelOp kernel) {
  MatmulOp found;
  kernel.getBody().walk([&](MatmulOp op) { found = op; });
  return found;
}

bool kfuse::kf::isMatmulOperandView(Operation *op) {
  auto reshape = dyn_cast_or_null<ReshapeOp>(op);
  if (!reshape)
    return false;
  auto in = mlir::cast<RankedTensorType>(reshape.getInput().getType());
  auto out = mlir::cast<RankedTensorType>(reshape.getType());
  Type dtype = in.getElementType();
  if (in.getRank() == 0 || out.getRank() == 0 ||
      in.getShape().back() != out.getShape().back() ||
      ShapedType::isDynamic(in.getShape().back()) ||
      !(dtype.isBF16() || dtype.isF16()) || in.getShape().back() % 8)
    return false;
  return llvm::all_of(reshape->getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    return isa<MatmulOp>(user) ? use.getOperandNumber() < 2
                               : isMatmulOperandView(user);
  });
}

Value kfuse::kf::matmulOperandSource(Value operand) {
  while (isMatmulOperandView(operand.getDefiningOp()))
    operand = operand.getDefiningOp<ReshapeOp>().getInput();
  return operand;
}

Value kfuse::kf::columnPartialsSource(Value v) {
  auto reduce = v.getDefiningOp<ReduceOp>();
  if (!reduce || reduce.getKind() != ReduceKind::sum || reduce.getKeepDims() ||
      reduce.getAxes().size() != 1 || reduce.getAxes()[0] != 1)
    return Value();
  auto reshape = reduce.getInput().getDefiningOp<ReshapeOp>();
  if (!reshape)
    return Value();
  ArrayRef<int64_t> grouped = shapeOf(reshape.getResult());
  ArrayRef<int64_t> rows = shapeOf(reshape.getInput());
  if (grouped.size() != 3 || grouped[1] != kColumnPartialRows ||
      rows.size() < 2 || grouped[2] != rows.back() ||
      !getElementTypeOrSelf(reshape.getInput().getType()).isF32())
    return Value();
  return reshape.getInput();
}

MatmulProblem MatmulProblem::of(MatmulOp op) {
  MatmulProblem p;
  ArrayRef<int64_t> out = shapeOf(op.getResult()), a = shapeOf(op.getA());
  // Split-K partials stack in a leading dim of their own.
  if (op.getKChunk()) {
    p.splits = out.front();
    out = out.drop_front();
  }
  size_t rank = out.size();
  for (size_t d = 0; d + 2 < rank; ++d)
    p.batch *= out[d];
  p.m = out[rank - 2];
  p.n = out[rank - 1];
  p.k = op.getTransposeA() ? a[rank - 2] : a[rank - 1];
  p.kChunk = op.getKChunk().value_or(p.k);
  p.transposeA = op.getTransposeA();
  p.transposeB = op.getTransposeB();
  p.sharedB = shapeOf(op.getB()).size() == 2 && rank > 2;
  p.elementBytes =
      getElementTypeOrSelf(op.getA().getType()).getIntOrFloatBitWidth() / 8;
  return p;
}

/// Elements between the rows of `operand` (a matmul operand) in memory:
/// as `assumed` says for a kernel argument, else as kf-pad decided.
static int64_t operandRowStride(Value operand,
                                ArrayRef<std::pair<Value, int64_t>> assumed) {
  Value source = matmulOperandSource(operand);
  for (auto [value, stride] : assumed)
    if (value == source)
      return stride;
  auto arg = dyn_cast<BlockArgument>(source);
  auto kernel =
      arg ? dyn_cast<KernelOp>(arg.getOwner()->getParentOp()) : KernelOp();
  return kernel ? rowStrideOf(kernel.getInputs()[arg.getArgNumber()])
                : shapeOf(operand).back();
}

std::optional<std::string>
kfuse::kf::tensorCoreRefusal(MatmulOp op, bool aligned, bool allowTF32,
                             ArrayRef<std::pair<Value, int64_t>> assumed) {
  Type dtype = mlir::cast<RankedTensorType>(op.getA().getType()).getElementType();
  MatmulProblem p = MatmulProblem::of(op);
  if (dtype.isF32() && !allowTF32)
    return std::string("its operands are f32 (exact: TF32 not allowed)");
  if (dtype.isF32() && (p.transposeA || !p.transposeB))
    return std::string("its f32 operands are not both K-major (TF32 "
                       "products read A as [M, K] and B as [N, K] only)");
  if (!dtype.isBF16() && !dtype.isF16() && !dtype.isF32())
    return std::string("its operands are not bf16, f16 or f32");
  if (!aligned)
    return std::string("its buffers are not known to be 16-byte aligned");
  if (p.m == 0 || p.n == 0 || p.k == 0)
    return std::string("it is empty");
  // cp.async copies 16 bytes: each operand's contiguous rows must be made
  // of whole, aligned 16-byte chunks (kf-pad pads the rows of intermediate
  // operands to make them so).
  int64_t chunk = 16 / p.elementBytes;
  for (Value operand : {op.getA(), op.getB()})
    if (int64_t stride = operandRowStride(operand, assumed); stride % chunk)
      return "a contiguous operand dim (" + std::to_string(stride) +
             ") is not a multiple of " + std::to_string(chunk);
  return std::nullopt;
}

namespace {

/// The tiles the template offers, largest first: with mma.sync (measured
/// on the H200: 128x128 tiles of 64x64 a warp beat 128x256 and 256x128),
/// and with wgmma, two warpgroups of m64nN.
constexpr MatmulTile kMmaTiles[] = {
    {128, 128, 32, 2, 2, 8}, {128, 64, 32, 2, 2, 8},
    {64, 128, 32, 2, 2, 8},  {64, 64, 32, 2, 2, 8},
};
constexpr MatmulTile kWgmmaTiles[] = {
    {128, 256, 64, 8, 1, 8, true},
    {128, 128, 64, 8, 1, 8, true},
    {128, 64, 64, 8, 1, 8, true},
    // Narrow: more blocks for decode-sized M (K-major B only: N-major
    // tiles are whole 64-column swizzle atoms).
    {128, 32, 64, 8, 1, 8, true},
};

constexpr int64_t kRegistersPerSM = 65536;

/// Blocks of `t` one multiprocessor holds: accumulators plus about 72
/// registers of fragments and addresses a thread; the pipeline's stages.
int64_t blocksPerSM(const MatmulTile &t, const MatmulProblem &p) {
  int64_t accumulators = t.bm * t.bn / t.threads();
  int64_t registers = std::min<int64_t>(255, (accumulators + 72 + 7) / 8 * 8);
  int64_t byRegisters = kRegistersPerSM / (registers * t.threads());
  int64_t bySmem = kSharedPerSM / (stageBytes(t, p) * pipelineStages(t, p));
  return std::max<int64_t>(1, std::min(byRegisters, bySmem));
}

/// Fraction of the tensor cores' rate a tile sustains: each k step loads
/// bm + bn rows for bm * bn products, so larger tiles wait less on shared
/// memory.
double tileEfficiency(const MatmulTile &t) {
  double intensity = double(t.bm * t.bn) / double(t.bm + t.bn);
  return intensity / (intensity + 24.0);
}

double estimatedTime(const MatmulTile &t, const MatmulProblem &p, int64_t sms) {
  int64_t tiles = p.batch * ((p.m + t.bm - 1) / t.bm) * ((p.n + t.bn - 1) / t.bn);
  int64_t perSM = blocksPerSM(t, p);
  int64_t waves = (tiles + sms * perSM - 1) / (sms * perSM);
  int64_t resident = std::min(perSM, (tiles + sms - 1) / sms);
  return double(waves * resident) * double(t.bm * t.bn) / tileEfficiency(t);
}

/// The same with a narrow last column of tiles (`t.edgeN`), one block an
/// SM, as the warp-specialised kernel places them (MatmulTmaPipeline.cpp):
/// the whole tiles in turn, then the edge tiles on the SMs that have one
/// whole tile fewer. An edge tile costs what it loads (A's rows and edgeN
/// of B's) against a whole tile's loads: its products are few, and its
/// copies fill a stage with A's tile and the edge's rows of B only.
double estimatedEdgeTime(const MatmulTile &t, const MatmulProblem &p,
                         int64_t sms) {
  int64_t mTiles = p.batch * ((p.m + t.bm - 1) / t.bm);
  int64_t whole = mTiles * (p.n / t.bn);
  int64_t light = whole % sms ? sms - whole % sms : sms;
  double edgeCost = double(t.bm + t.edgeN) / double(t.bm + t.bn);
  double rounds = std::max(double((whole + sms - 1) / sms),
                           double(whole / sms) +
                               double((mTiles + light - 1) / light) * edgeCost);
  return rounds * double(t.bm * t.bn) / tileEfficiency(t);
}

} // namespace

int64_t kfuse::kf::stageBytes(const MatmulTile &t, const MatmulProblem &p) {
  return (sharedTileA(t, p.transposeA).elements() +
          sharedTileB(t, p.transposeB).elements()) *
         t.elementBytes;
}

int64_t kfuse::kf::pipelineStages(const MatmulTile &t, const MatmulProblem &p) {
  int64_t kTiles = (p.kChunk + t.bk - 1) / t.bk;
  int64_t budget = t.wgmma ? kMaxWgmmaPipelineBytes : kMaxPipelineBytes;
  int64_t fit = budget / stageBytes(t, p);
  // wgmma keeps one step's products in flight: a third stage at least.
  int64_t least = t.wgmma ? 3 : 2, most = std::min(fit, kTiles + 1);
  int64_t stages = std::clamp<int64_t>(most, least, 4);
  // Products of fewer rows than a tile's stream B through cp.async copies
  // (kf-promote-shared keeps the TMA for tiles of whole rows): where one
  // block fills an SM anyway, more of B in flight is what they gain.
  bool streams = t.wgmma && p.m < t.bm;
  if (streams && kSharedPerSM / (stages * stageBytes(t, p)) == 1)
    return std::clamp<int64_t>(most, least, kMaxStreamingStages);
  return stages;
}

MatmulTile kfuse::kf::chooseMatmulTile(const MatmulProblem &p, int64_t sms,
                                        bool wgmma) {
  ArrayRef<MatmulTile> tiles = wgmma ? ArrayRef(kWgmmaTiles) : ArrayRef(kMmaTiles);
  const MatmulTile *best = &tiles[0];
  double bestTime = estimatedTime(*best, p, sms);
  for (const MatmulTile &t : tiles.drop_front()) {
    if (t.wgmma && t.bn < 64 && !p.transposeB)
      continue;
    double time = estimatedTime(t, p, sms);
    if (time < bestTime) {
      best = &t;
      bestTime = time;
    }
  }
  MatmulTile chosen = *best;
  chosen.elementBytes = p.elementBytes;
  chosen.bk = chosen.bk * 2 / p.elementBytes;
  // A narrow last column of tiles (warp-specialised kernels only: one block
  // an SM, a tile's rows of A at least) where it takes fewer rounds of
  // tiles than any tile without one: bf16 4096 x 4104 x 4096 takes 128x128
  // tiles without (1,056: 8 rounds) and 128x256 ones with a 16-column edge
  // (512 whole ones, 4 rounds; the 32 edge tiles on the 16 SMs with 3).
  if (!wgmma || p.m < 128)
    return chosen;
  for (const MatmulTile &t : tiles) {
    MatmulTile edged = t;
    edged.elementBytes = p.elementBytes;
    edged.edgeN = narrowEdgeCols(p, edged);
    if (!edged.edgeN || blocksPerSM(edged, p) != 1)
      continue;
    double time = estimatedEdgeTime(edged, p, sms);
    if (time < bestTime) {
      chosen = edged;
      chosen.bk = t.bk * 2 / p.elementBytes;
      bestTime = time;
    }
  }
  return chosen;
}

int64_t kfuse::kf::narrowEdgeCols(const MatmulProblem &p, const MatmulTile &t,
                                  RowInterleave rows) {
  if (!t.wgmma || p.splits != 1)
    return 0;
  // At least one column of whole tiles: narrow products alone are the
  // narrow tiles' business.
  auto [mTiles, nTiles] = matmulTileCounts(p, t, rows);
  if (nTiles < 2)
    return 0;
  int64_t reach =
      rows.active() ? p.n + rows.align - std::gcd(p.n, rows.align) : p.n;
  int64_t left = reach - (nTiles - 1) * t.bn;
  int64_t align = p.transposeB ? 16 : 64;
  if (rows.active())
    align = std::lcm(align, rows.align);
  int64_t cols = (left + align - 1) / align * align;
  return cols <= t.bn / 2 ? cols : 0;
}

int64_t kfuse::kf::splitKChunk(MatmulOp matmul, TargetAttr target) {
  if (matmul.getKChunk() ||
      tensorCoreRefusal(matmul, target.getAligned(), target.getAllowTF32()))
    return 0;
  MatmulProblem p = MatmulProblem::of(matmul);
  int64_t sms = target.getMultiprocessors();
  MatmulTile t = chooseMatmulTile(p, sms, target.getWgmma());
  int64_t chunks = splitKChunks(p, t, sms);
  if (chunks < 2)
    return 0;
  int64_t steps = (p.k + t.bk - 1) / t.bk;
  return (steps + chunks - 1) / chunks * t.bk;
}

int64_t kfuse::kf::splitKChunks(const MatmulProblem &p, const MatmulTile &t,
                                int64_t sms) {
  int64_t tiles =
      p.batch * ((p.m + t.bm - 1) / t.bm) * ((p.n + t.bn - 1) / t.bn);
  int64_t slots = sms * blocksPerSM(t, p);
  int64_t steps = (p.k + t.bk - 1) / t.bk;
  if (2 * tiles > slots)
    return 1;
  return std::clamp<int64_t>(slots / tiles, 1, std::max<int64_t>(steps / 8, 1));
}

MatmulTile kfuse::kf::matmulTileOf(KernelOp kernel) {
  auto t = kernel.getTilingAs<MmaTilingAttr>();
  if (!t)
    return {0, 0, 0, 0, 0, 0};
  MatmulTile tile = {
      t.getTileM(),  t.getTileN(),
      t.getTileK(),  t.getWarpsM(),
      t.getWarpsN(), t.getGroupM(),
      t.getWgmma(),  MatmulProblem::of(matmulOf(kernel)).elementBytes};
  tile.edgeN = t.getEdgeN();
  return tile;
}

RowInterleave kfuse::kf::rowInterleaveOf(KernelOp kernel) {
  auto pipeline = kernel.getPipelineAs<MmaPipelineAttr>();
  if (!pipeline)
    return {};
  return {pipeline.getRowGroups(), pipeline.getRowAlign()};
}

std::pair<int64_t, int64_t> kfuse::kf::matmulTileCounts(const MatmulProblem &p,
                                                        const MatmulTile &t,
                                                        RowInterleave rows) {
  if (!rows.active())
    return {(p.m + t.bm - 1) / t.bm, (p.n + t.bn - 1) / t.bn};
  // Each group's rows are tiled on their own; the columns reach past N by
  // the largest shift, align - gcd(N, align).
  int64_t perGroup = (p.m / rows.groups + t.bm - 1) / t.bm;
  int64_t reach = p.n + rows.align - std::gcd(p.n, rows.align);
  return {rows.groups * perGroup, (reach + t.bn - 1) / t.bn};
}

RowInterleave kfuse::kf::chooseRowInterleave(const MatmulProblem &p,
                                             const MatmulTile &t,
                                             int64_t stride,
                                             int64_t outputBytes) {
  // B's tiles start at the shifted columns: along its rows where B is
  // K-major; an N-major box cannot start off a 16-byte boundary
  // (CUDA_ERROR_ILLEGAL_INSTRUCTION on the H200).
  // Rows of whole 32-byte sectors are stored in whole sectors; rows of
  // 16-byte vectors that start mid-sector are not. H100, bf16 4096 x 4104 x
  // 4096 as x @ w^T (rows of 8208 bytes), same run: 0.2193 ms as they are,
  // 0.2007 interleaved to 128-byte lines.
  if (stride * outputBytes % 32 == 0 || stride != p.n || p.batch != 1 ||
      p.splits != 1 || p.transposeA || !p.transposeB)
    return {};
  auto [plainM, plainN] = matmulTileCounts(p, t);
  // Whole 128-byte lines where a group still fills its tiles' rows (M of
  // 8192 at least for N = 50257: 64 groups), else whole 16-byte vectors
  // (8 groups at most).
  for (int64_t bytes : {kTmaBoxBytes, int64_t(16)}) {
    int64_t align = bytes / outputBytes;
    RowInterleave rows{align / std::gcd(p.n, align), align};
    if (p.m % rows.groups || t.bn % align ||
        stagedOutputCols(t, true, outputBytes) % align)
      continue;
    auto [m, n] = matmulTileCounts(p, t, rows);
    if (50 * m * n <= 51 * plainM * plainN)
      return rows;
  }
  return {};
}

int64_t kfuse::kf::sharedRowPad(const MatmulTile &t) {
  return t.wgmma ? 0 : t.chunkElements();
}

int64_t kfuse::kf::tileRowGroup(const MatmulTile &t, const MatmulProblem &p) {
  // A third of the H100/H200's 50 MB L2: A stays there while every tile
  // column sweeps it, next to the B columns and outputs in flight. With
  // groups of 8 tile rows the lm-head (8192 x 768 x 50304, A 12.6 MB) read
  // B from HBM 8 times (631 MB, ncu); with all 64 once. On the H200 its
  // time went from 1.195 to 1.03-1.05 ms (kfuse-bench matmul), cuBLAS's.
  constexpr int64_t kResidentABytes = 16 << 20;
  int64_t mTiles = (p.m + t.bm - 1) / t.bm;
  return p.m * p.k * p.elementBytes <= kResidentABytes
             ? std::max(mTiles, t.groupM)
             : t.groupM;
}

SharedTile kfuse::kf::sharedTileA(const MatmulTile &t, bool transposeA) {
  int64_t pad = sharedRowPad(t);
  return transposeA ? SharedTile{t.bk, t.bm, pad} : SharedTile{t.bm, t.bk, pad};
}

SharedTile kfuse::kf::sharedTileB(const MatmulTile &t, bool transposeB) {
  int64_t pad = sharedRowPad(t);
  return transposeB ? SharedTile{t.bn, t.bk, pad} : SharedTile{t.bk, t.bn, pad};
}

int64_t kfuse::kf::stagedOutputCols(const MatmulTile &t, bool tma,
                                    int64_t outputBytes) {
  // 64 f32 columns (and their 8 of padding) would leave room for three
  // stages only: with two K steps of products in flight, the copies then
  // run one step ahead (TF32 4096^3 on the H200: 272 TFLOP/s).
  return tma ? std::min<int64_t>(t.bn, outputBytes > 2 ? 32 : 128) : t.bn;
}

/// An attention operand (a kernel argument, [B, H, S, D]) as [B H][S][D]
/// rows, copied `boxRows` rows by `paddedCols` (whole 64-column boxes) at
/// a time.
static TmaOperand attentionOperandRows(KernelOp kernel, Value operand,
                                       int64_t boxRows, int64_t paddedCols) {
  unsigned input = mlir::cast<BlockArgument>(operand).getArgNumber();
  ArrayRef<int64_t> shape =
      mlir::cast<RankedTensorType>(operand.getType()).getShape();
  int64_t stride = rowStrideOf(kernel.getInputs()[input]);
  return TmaOperand{input,
                    3,
                    {shape[3], shape[2], shape[0] * shape[1]},
                    {stride, shape[2] * stride},
                    boxRows,
                    64,
                    paddedCols / 64,
                    2};
}

SmallVector<TmaOperand, 3> kfuse::kf::attentionTmaOperands(KernelOp kernel) {
  AttentionOp op = attentionOf(kernel);
  auto tiling = kernel.getTilingAs<FlashTilingAttr>();
  int64_t blockQ = tiling.getBlockQ(), blockK = tiling.getBlockK();
  SmallVector<TmaOperand, 3> maps;
  // A q computed in the kernel is no argument: its tile is written there.
  if (!attentionComputesQuery(kernel))
    maps.push_back(
        attentionOperandRows(kernel, op.getQ(), blockQ, tiling.getHeadDim()));
  maps.push_back(
      attentionOperandRows(kernel, op.getK(), blockK, tiling.getHeadDim()));
  maps.push_back(
      attentionOperandRows(kernel, op.getV(), 64, tiling.getValueDim()));
  return maps;
}

AttentionGradShared kfuse::kf::attentionGradShared(FlashGradTilingAttr tiling,
                                                   int64_t stages, bool tma) {
  int64_t rows = tiling.getBlockRows(), cols = tiling.getBlockCols();
  AttentionGradShared s;
  s.bytes = 2 * (tiling.getHeadDim() + tiling.getValueDim()) *
            (rows + stages * cols);
  if (tiling.getDqAtomic())
    s.bytes += 2 * rows * cols + 4 * cols * tiling.getHeadDim();
  if (!tma)
    return s;
  // The own rows' mbarrier, a full and an empty one a stage; then 64
  // floats of lse and 64 of delta a stage, for 16-byte bulk copies.
  s.barriers = s.bytes;
  s.stats = s.barriers + llvm::alignTo(8 * (1 + 2 * stages), 16);
  s.bytes = s.stats + stages * 2 * 4 * cols;
  return s;
}

SmallVector<TmaOperand, 4>
kfuse::kf::attentionGradTmaOperands(KernelOp kernel) {
  AttentionGradOp op = attentionGradOf(kernel);
  auto tiling = kernel.getTilingAs<FlashGradTilingAttr>();
  // Owned rows are copied as two boxes of the streamed tiles' 64 rows:
  // every operand is owned by one kind of block and streamed by the other.
  int64_t rows = tiling.getBlockCols();
  return {attentionOperandRows(kernel, op.getQ(), rows, tiling.getHeadDim()),
          attentionOperandRows(kernel, op.getK(), rows, tiling.getHeadDim()),
          attentionOperandRows(kernel, op.getV(), rows, tiling.getValueDim()),
          attentionOperandRows(kernel, op.getDout(), rows,
                               tiling.getValueDim())};
}

SmallVector<TmaOperand, 4> kfuse::kf::tmaOperands(KernelOp kernel) {
  if (kernel.getTilingAs<FlashGradTilingAttr>())
    return attentionGradTmaOperands(kernel);
  if (attentionOf(kernel))
    return SmallVector<TmaOperand, 4>(attentionTmaOperands(kernel));
  MatmulOp op = matmulOf(kernel);
  MatmulProblem p = MatmulProblem::of(op);
  MatmulTile t = matmulTileOf(kernel);
  int64_t boxCols = kTmaBoxBytes / p.elementBytes;
  auto describe = [&](Value operand, SharedTile tile, int64_t rows,
                      int64_t cols, bool shared) {
    unsigned input =
        mlir::cast<BlockArgument>(matmulOperandSource(operand)).getArgNumber();
    int64_t stride = rowStrideOf(kernel.getInputs()[input]);
    bool batched = p.batch > 1 && !shared;
    return TmaOperand{input,
                      batched ? 3 : 2,
                      {cols, rows, p.batch},
                      {stride, rows * stride},
                      tile.rows,
                      boxCols,
                      tile.cols / boxCols,
                      p.elementBytes};
  };
  TmaOperand a =
      describe(op.getA(), sharedTileA(t, p.transposeA),
               p.transposeA ? p.k : p.m, p.transposeA ? p.m : p.k, false);
  if (RowInterleave rows = rowInterleaveOf(kernel); rows.active())
    a = {a.input,
         3,
         {p.k, rows.groups, p.m / rows.groups},
         {a.strides[0], rows.groups * a.strides[0]},
         a.boxRows,
         a.boxCols,
         a.boxes,
         a.elementBytes,
         rows.groups};
  TmaOperand b =
      describe(op.getB(), sharedTileB(t, p.transposeB),
               p.transposeB ? p.n : p.k, p.transposeB ? p.k : p.n, p.sharedB);
  SmallVector<TmaOperand, 4> maps = {a, b};
  // A narrow edge tile copies edgeN of B's rows where they are K-major (an
  // N-major B's edge is whole boxes of B's own).
  if (t.edgeN && p.transposeB) {
    b.boxRows = t.edgeN;
    maps.push_back(b);
  }
  return maps;
}
