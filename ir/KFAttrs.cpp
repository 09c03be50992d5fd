//===- KFAttrs.cpp - the kf decision attributes and their verifiers -------===//
//
// Each verifier rejects a value that no template could lower, naming the
// parameter and the range it needs; how the attributes of one kernel fit
// together is KernelOp::verify's business (KFDialect.cpp).
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <tuple>

using namespace mlir;
using namespace kfuse::kf;

#define GET_ATTRDEF_CLASSES
#include "ir/KFAttrs.cpp.inc"

void KFDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/KFAttrs.cpp.inc"
      >();
}

using EmitError = llvm::function_ref<InFlightDiagnostic()>;

/// `attr`'s parameters through its verifier, as getChecked would have.
template <typename AttrT>
static LogicalResult verifyAgain(AttrT attr, EmitError emitError) {
  return std::apply(
      [&](auto... parameters) {
        return AttrT::verifyInvariants(emitError, parameters...);
      },
      attr.getImpl()->getAsKey());
}

LogicalResult kfuse::kf::verifyDecisionAttr(Attribute attr,
                                            EmitError emitError) {
  if (!attr)
    return success();
  return llvm::TypeSwitch<Attribute, LogicalResult>(attr)
      .Case<LaunchAttr, PointwiseTilingAttr, RowTilingAttr,
            ColumnScanTilingAttr, MmaTilingAttr, FlashTilingAttr,
            FlashGradTilingAttr, MmaPipelineAttr, FlashPipelineAttr,
            FlashGradPipelineAttr>(
          [&](auto decision) { return verifyAgain(decision, emitError); })
      .Default([](Attribute) { return success(); });
}

/// Fails with "`name` = value: needs lo to hi" unless lo <= value <= hi.
static LogicalResult checkRange(EmitError emitError, StringRef name,
                                int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi)
    return success();
  return emitError() << name << " = " << value << ": needs " << lo << " to "
                     << hi;
}

/// Fails unless `value` is a power of two no larger than `hi`.
static LogicalResult checkPowerOfTwo(EmitError emitError, StringRef name,
                                     int64_t value, int64_t hi) {
  if (value >= 1 && value <= hi && llvm::isPowerOf2_64(value))
    return success();
  return emitError() << name << " = " << value << ": needs a power of two "
                     << "up to " << hi;
}

/// Fails unless `value` is a positive multiple of `step`.
static LogicalResult checkMultiple(EmitError emitError, StringRef name,
                                   int64_t value, int64_t step) {
  if (value > 0 && value % step == 0)
    return success();
  return emitError() << name << " = " << value
                     << ": needs a positive multiple of " << step;
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

TargetAttr TargetAttr::of(Operation *op) {
  for (Operation *at = op; at; at = at->getParentOp())
    if (auto target = at->getAttrOfType<TargetAttr>(moduleAttrName))
      return target;
  // The default target: what the parameters' defaults in KFAttrs.td say.
  return TargetAttr::get(op->getContext(), "sm_90", 132, false, false, false,
                         false);
}

bool TargetAttr::hasClusters() const {
  // The verifier made the chip an sm_ name: "sm_90a" is 90.
  llvm::StringRef digits = getChip().drop_front(3);
  unsigned version = 0;
  return !digits.consumeInteger(10, version) && version >= 90;
}

LogicalResult TargetAttr::verify(EmitError emitError, StringRef chip,
                                 int64_t multiprocessors, bool aligned,
                                 bool wgmma, bool allowTF32, bool unorderedAdds) {
  if (!chip.starts_with("sm_"))
    return emitError() << "chip = \"" << chip << "\": needs an sm_ name";
  if (wgmma && chip != "sm_90" && chip != "sm_90a")
    return emitError() << "wgmma on chip \"" << chip
                       << "\": only sm_90 and sm_90a have it";
  return checkRange(emitError, "multiprocessors", multiprocessors, 1, 4096);
}

//===----------------------------------------------------------------------===//
// The launch
//===----------------------------------------------------------------------===//

/// Dynamic shared memory a Hopper block may opt into.
static constexpr int64_t kMaxSharedBytes = 227 * 1024;
/// An sm_90 SM holds at most 2048 threads.
static constexpr int64_t kMaxThreadsPerSM = 2048;

LogicalResult LaunchAttr::verify(EmitError emitError, int64_t grid,
                                 int64_t block, int64_t items,
                                 int64_t sharedBytes, int64_t minBlocksPerSM) {
  if (failed(checkRange(emitError, "grid", grid, 0, INT32_MAX)) ||
      failed(checkRange(emitError, "block", block, 1, 1024)) ||
      failed(checkRange(emitError, "items", items, 0, INT64_MAX)) ||
      failed(checkRange(emitError, "sharedBytes", sharedBytes, 0,
                        kMaxSharedBytes)))
    return failure();
  return checkRange(emitError, "minBlocksPerSM", minBlocksPerSM, 0,
                    kMaxThreadsPerSM / block);
}

//===----------------------------------------------------------------------===//
// Tilings
//===----------------------------------------------------------------------===//

LogicalResult PointwiseTilingAttr::verify(EmitError emitError, int64_t vector,
                                          int64_t unroll, bool interleave,
                                          int64_t groups, bool) {
  if (failed(checkPowerOfTwo(emitError, "vector", vector, 16)) ||
      failed(checkRange(emitError, "unroll", unroll, 1, 16)) ||
      failed(checkRange(emitError, "groups", groups, 1, INT32_MAX)))
    return failure();
  if (interleave && unroll == 1)
    return emitError() << "interleave with unroll = 1: there is nothing to "
                          "interleave";
  return success();
}

LogicalResult RowTilingAttr::verify(EmitError emitError, int64_t vector,
                                    int64_t chunks, bool inRegisters,
                                    bool inShared, int64_t rowsPerBlock,
                                    int64_t cluster) {
  if (failed(checkPowerOfTwo(emitError, "vector", vector, 16)) ||
      failed(checkPowerOfTwo(emitError, "rowsPerBlock", rowsPerBlock, 1024)) ||
      failed(checkPowerOfTwo(emitError, "cluster", cluster, kMaxRowCluster)))
    return failure();
  if (inRegisters && inShared)
    return emitError() << "holds the row in registers and in shared memory: "
                          "one of the two";
  // The blocks of a cluster combine one row's values, held in registers.
  if (cluster > 1 && (!inRegisters || rowsPerBlock != 1))
    return emitError() << "splits a row over a cluster of " << cluster
                       << " blocks: needs the row in registers and one row "
                          "a block";
  return checkRange(emitError, "chunks", chunks, 1, INT32_MAX);
}

LogicalResult ColumnScanTilingAttr::verify(EmitError emitError,
                                           int64_t rowsPerThread,
                                           int64_t columnsPerThread) {
  if (failed(checkRange(emitError, "rowsPerThread", rowsPerThread, 1, 32)))
    return failure();
  // A thread's columns are one vector of at most 16 bytes of f32.
  return checkPowerOfTwo(emitError, "columnsPerThread", columnsPerThread, 4);
}

/// An ordered index_add tile's row group: a thread a vector of columns.
static int64_t threadsPerTileRow(int64_t columns, int64_t vector) {
  return std::min<int64_t>(llvm::divideCeil(columns, vector), kIndexAddThreads);
}

/// Its shared sums a tile row: whole steps of the row group's vectors.
static int64_t sumsPerTileRow(int64_t columns, int64_t vector) {
  return llvm::alignTo(columns, threadsPerTileRow(columns, vector) * vector);
}

LogicalResult IndexAddTilingAttr::verify(EmitError emitError, bool unordered,
                                         int64_t rowsPerBlock,
                                         int64_t columnsPerBlock,
                                         int64_t vector) {
  if (unordered) {
    if (rowsPerBlock != 0 || columnsPerBlock != 0 || vector != 1)
      return emitError() << "adds unordered, a thread an update: it takes "
                            "no rowsPerBlock, columnsPerBlock or vector";
    return success();
  }
  if (failed(checkRange(emitError, "rowsPerBlock", rowsPerBlock, 1, 1 << 20)) ||
      failed(checkRange(emitError, "columnsPerBlock", columnsPerBlock, 1,
                        kIndexAddColumnsPerBlock)) ||
      failed(checkRange(emitError, "vector", vector, 1, 8)))
    return failure();
  if (!llvm::isPowerOf2_64(vector) || columnsPerBlock % vector)
    return emitError() << "reads vectors of " << vector
                       << " columns: a power of two dividing the tile's "
                       << columnsPerBlock << " columns";
  // The tile's f32 sums live in shared memory.
  int64_t sums = rowsPerBlock * sumsPerTileRow(columnsPerBlock, vector);
  if (sums > kIndexAddTileSums)
    return emitError() << "sums a tile of " << rowsPerBlock << " x "
                       << columnsPerBlock << " (" << sums
                       << " in whole steps of vectors of " << vector
                       << ") in shared memory: at most " << kIndexAddTileSums
                       << " sums";
  return success();
}

int64_t IndexAddTilingAttr::getThreadsPerRow() const {
  return threadsPerTileRow(getColumnsPerBlock(), getVector());
}

int64_t IndexAddTilingAttr::getColumnSteps() const {
  return llvm::divideCeil(getColumnsPerBlock(),
                          getThreadsPerRow() * getVector());
}

int64_t IndexAddTilingAttr::getSumsPerRow() const {
  return sumsPerTileRow(getColumnsPerBlock(), getVector());
}

LogicalResult MmaTilingAttr::verify(EmitError emitError, int64_t tileM,
                                    int64_t tileN, int64_t tileK,
                                    int64_t warpsM, int64_t warpsN,
                                    int64_t groupM, bool wgmma, bool tf32,
                                    int64_t edgeN) {
  if (failed(checkPowerOfTwo(emitError, "warpsM", warpsM, 8)) ||
      failed(checkPowerOfTwo(emitError, "warpsN", warpsN, 8)) ||
      failed(checkRange(emitError, "groupM", groupM, 1, INT32_MAX)))
    return failure();
  // A warp's share of the tile is whole m16n8 products; K steps are whole
  // products of 16 (TF32: 8) elements.
  if (failed(checkMultiple(emitError, "tileM", tileM, 16 * warpsM)) ||
      failed(checkMultiple(emitError, "tileN", tileN, 8 * warpsN)) ||
      failed(checkMultiple(emitError, "tileK", tileK, tf32 ? 8 : 16)))
    return failure();
  if (wgmma && (warpsM != 8 || warpsN != 1 || tileM != 128))
    return emitError() << "wgmma with a " << tileM << "-row tile in "
                       << warpsM << " x " << warpsN
                       << " warps: needs two warpgroups of 64 rows (tileM = "
                          "128, warpsM = 8, warpsN = 1)";
  // An edge tile's staged output leaves in 16-byte vectors, at least one a
  // thread: 128 rows of 16 bf16 columns are 256 of them.
  if (edgeN && (!wgmma || edgeN % 16 || edgeN >= tileN))
    return emitError() << "edgeN = " << edgeN
                       << ": needs wgmma and a multiple of 16 below tileN ("
                       << tileN << ")";
  return success();
}

LogicalResult FlashGradTilingAttr::verify(EmitError emitError,
                                          int64_t blockRows, int64_t blockCols,
                                          int64_t headDim, int64_t valueDim,
                                          int64_t kvBlocks, bool dqAtomic,
                                          bool splitKeyBlocks) {
  if (failed(checkMultiple(emitError, "headDim", headDim, 64)) ||
      failed(checkMultiple(emitError, "valueDim", valueDim, 64)) ||
      failed(checkRange(emitError, "headDim", headDim, 64, 256)) ||
      failed(checkRange(emitError, "valueDim", valueDim, 64, 256)) ||
      failed(checkRange(emitError, "kvBlocks", kvBlocks, 0, INT32_MAX)))
    return failure();
  // A key block's dk and dv accumulators of 64 rows a warpgroup take
  // (headDim + valueDim) / 2 registers a thread, next to dP's and dS's 64.
  if (headDim + valueDim > 256 && !splitKeyBlocks)
    return emitError() << "headDim = " << headDim << ", valueDim = " << valueDim
                       << " without splitKeyBlocks: dk's and dv's "
                          "accumulators together pass a thread's registers";
  if (splitKeyBlocks && dqAtomic)
    return emitError() << "splitKeyBlocks with dqAtomic: the atomic "
                          "template adds dq from blocks that compute dk and "
                          "dv together";
  // The swizzled 64-row tiles of the streamed operands are read both
  // K-major and M/N-major, which holds for 64 rows exactly.
  if (blockRows != 128 || blockCols != 64)
    return emitError() << "blockRows = " << blockRows << ", blockCols = "
                       << blockCols
                       << ": the template runs two warpgroups of 64 rows "
                          "over tiles of 64";
  return success();
}

LogicalResult FlashTilingAttr::verify(EmitError emitError, int64_t blockQ,
                                      int64_t blockK, int64_t headDim,
                                      int64_t valueDim, bool qInRegisters) {
  // A warpgroup takes 64 query rows; head dims are whole swizzled tiles of
  // 64 columns, 256 at most (the accumulators' registers).
  if (failed(checkMultiple(emitError, "blockQ", blockQ, 64)) ||
      failed(checkMultiple(emitError, "blockK", blockK, 16)) ||
      failed(checkMultiple(emitError, "headDim", headDim, 64)) ||
      failed(checkMultiple(emitError, "valueDim", valueDim, 64)) ||
      failed(checkRange(emitError, "headDim", headDim, 64, 256)) ||
      failed(checkRange(emitError, "valueDim", valueDim, 64, 256)))
    return failure();
  if (blockQ != 128)
    return emitError() << "blockQ = " << blockQ
                       << ": the template runs two warpgroups (128 rows)";
  return success();
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// Stages the warp-specialised matmul pipeline's mbarriers can hand over.
static constexpr int64_t kMaxStages = 8;

LogicalResult MmaPipelineAttr::verify(EmitError emitError, int64_t stages,
                                      bool stageOutput, bool persistent,
                                      bool tma, int64_t mmaGroups,
                                      int64_t rowGroups, int64_t rowAlign) {
  if (failed(checkRange(emitError, "stages", stages, 2, kMaxStages)))
    return failure();
  // A stage is free again `mmaGroups` K steps after its products were
  // issued; from `stages` steps on, its next copies would wait for
  // products that wait for those copies.
  if (mmaGroups < 1 || mmaGroups >= stages)
    return emitError() << "mmaGroups = " << mmaGroups
                       << ": needs 1 to stages - 1 (" << stages - 1 << ")";
  if (mmaGroups > 1 && !tma)
    return emitError() << "mmaGroups = " << mmaGroups
                       << " without tma: only the warp-specialised "
                          "pipeline keeps several groups in flight";
  if (persistent && tma)
    return emitError() << "persistent and tma: the warp-specialised "
                          "pipeline loops over tiles itself";
  if (failed(checkRange(emitError, "rowGroups", rowGroups, 1, INT32_MAX)) ||
      failed(checkRange(emitError, "rowAlign", rowAlign, 1, INT32_MAX)))
    return failure();
  if (rowGroups > 1 && (!tma || !stageOutput))
    return emitError() << "rowGroups = " << rowGroups
                       << ": interleaved rows need the TMA pipeline and a "
                          "staged output";
  return success();
}

LogicalResult FlashGradPipelineAttr::verify(EmitError emitError,
                                            int64_t stages, bool tma) {
  // Without the TMA every thread copies and then waits at one barrier a
  // tile: the next tile's copies in flight in a second stage, or issued
  // after the tile's products in the one stage.
  if (!tma && stages > 2)
    return emitError() << "stages = " << stages
                       << " without tma: the cp.async copies take one or "
                          "two stages";
  return checkRange(emitError, "stages", stages, 1, 4);
}

LogicalResult FlashPipelineAttr::verify(EmitError emitError, int64_t stages,
                                        bool tma, bool stageScoresInput) {
  // The template double-buffers K and V: its first product with V reads
  // the stage after the first K tile's.
  if (stages != 2)
    return emitError() << "stages = " << stages
                       << ": the template double-buffers (2)";
  if (tma && stageScoresInput)
    return emitError() << "tma with stageScoresInput: the TMA pipeline "
                          "stages no bias or mask";
  return success();
}
