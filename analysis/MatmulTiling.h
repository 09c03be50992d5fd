//===- MatmulTiling.h - tensor-core tiles for matmul kernels ------*- C++ -*-===//
//
// What kf-tile, kf-promote-shared and kf-lower-to-gpu share about the
// tensor-core matmul template: which matmuls it takes, the block tiles it
// offers, the cost model that picks one per shape, and the shared-memory
// layout of a pipeline stage.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_ANALYSIS_MATMULTILING_H
#define KFUSE_ANALYSIS_MATMULTILING_H

#include "ir/KFDialect.h"

#include <array>
#include <optional>
#include <string>

namespace kfuse::kf {

/// The matmul a kernel of kind matmul computes (its only one).
MatmulOp matmulOf(KernelOp kernel);

/// Whether `op` is a view that a matmul reads its operand through in
/// place: a kf.reshape of bf16 or f16 rows that keeps the last dim (the
/// rows, their length and their stride stay as they are; only the leading
/// dims regroup), rows of whole 16-byte chunks (what the tensor-core
/// copies move), read only as a matmul's A or B or through more such
/// reshapes. The weight gradient of a Linear, [B * S, K]^T [B * S, N], is
/// a product of such views of [B, S, K] and [B, S, N] activations.
bool isMatmulOperandView(mlir::Operation *op);

/// The value matmul operand `operand` is read from in memory: `operand`
/// itself, or where it is a chain of isMatmulOperandView reshapes, the
/// value the chain starts from (a kernel argument inside a kernel).
mlir::Value matmulOperandSource(mlir::Value operand);

/// Rows over which a tensor-core matmul kernel sums the columns of a
/// value it computes: one warp's rows of a product (an m16 tile of
/// mma.sync, a warp's quarter of a wgmma m64), which the warp holds in
/// registers and sums with shuffles alone.
constexpr int64_t kColumnPartialRows = 16;

/// Where `v`, a value a matmul kernel yields, is the column sums of
/// another over each kColumnPartialRows of its rows (kf.reduce sum over
/// axis 1 of its reshape to [rows / 16, 16, N], in f32; kf-fuse-column-
/// sums makes them): the value summed. Else null.
mlir::Value columnPartialsSource(mlir::Value v);

/// A matmul as the tiling sees it: `batch` products of [m, k] by [k, n].
struct MatmulProblem {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  /// b is rank 2 and shared by every batch.
  bool sharedB = false;
  /// Bytes of an operand element: 2 (bf16, f16), or 4 (f32, multiplied in
  /// TF32).
  int64_t elementBytes = 2;
  /// Split-K (kf.matmul's k_chunk): `splits` partial products, each over
  /// `kChunk` of K (the last over what remains); 1 and K without.
  int64_t splits = 1, kChunk = 0;
  static MatmulProblem of(MatmulOp op);
};

/// A block tile of the tensor-core template: the block computes
/// [bm, bn] of the output in warpsM x warpsN warps (each a
/// [bm / warpsM, bn / warpsN] tile of m16n8k16 products), stepping K by
/// bk; `groupM` tile rows are visited together for L2 reuse.
///
/// With `wgmma` (sm_90a) the block's 8 warps are two warpgroups, each
/// computing 64 rows of the tile with m64nNk16 products from shared
/// memory; warpsM = 8 and warpsN = 1 then give the same warp-to-rows map
/// as mma.sync tiles of 16 rows a warp.
///
/// The tiles are the same bytes for every operand dtype: a TF32 tile steps
/// K by half as many (4-byte) elements as a 16-bit one, each tensor-core
/// product taking 32 bytes of K (k8 instead of k16).
struct MatmulTile {
  int64_t bm, bn, bk, warpsM, warpsN, groupM;
  bool wgmma = false;
  /// Bytes of an operand element (MatmulProblem::elementBytes).
  int64_t elementBytes = 2;
  /// Columns of the last column of tiles where that is narrower than bn
  /// (`mma_tiling` edgeN, see narrowEdgeCols), else 0.
  int64_t edgeN = 0;
  int64_t threads() const { return 32 * warpsM * warpsN; }
  /// Elements of K in 16 bytes (one cp.async copy, one ldmatrix row).
  int64_t chunkElements() const { return 16 / elementBytes; }
  /// Elements of K one tensor-core product takes (32 bytes: k16 or k8).
  int64_t productK() const { return 32 / elementBytes; }
};

/// The tile kf-tile recorded in `kernel`'s `mma_tiling` (zeros without one).
MatmulTile matmulTileOf(KernelOp kernel);

/// Output tiles whose rows start on aligned addresses although the rows
/// have an odd length (`mma_pipeline` rowGroups, rowAlign). Row r of the
/// output starts r * N elements in, which `align` (elements) divides only
/// every `groups`-th row: the tiles take rows `groups` apart (tile rows of
/// group g are rows g, g + groups, ...), all starting at the same offset
/// from an `align` boundary, and each group's tile columns are shifted left
/// by that offset, (g * N) % align. Every row segment a tile stores then
/// starts on an aligned address and leaves in whole vectors; only a row's
/// first and last segments are cut, at columns 0 and N.
struct RowInterleave {
  int64_t groups = 1, align = 1;
  bool active() const { return groups > 1; }
};
RowInterleave rowInterleaveOf(KernelOp kernel);
/// Output tiles along M and along N for `t` on `p`, as `rows` places them.
std::pair<int64_t, int64_t> matmulTileCounts(const MatmulProblem &p,
                                             const MatmulTile &t,
                                             RowInterleave rows = {});
/// The width of a narrow last column of tiles for `t` on `p` (its tiles
/// placed as `rows` says): the columns left past the whole tiles, rounded
/// up to whole 16-column wgmmas (64 where B is N-major: whole swizzle
/// atoms; the interleave's alignment where rows interleave). 0 where
/// that is wider than half a tile (such an edge tile costs about what a
/// whole one does), or where the template has no edge tiles (no wgmma,
/// split K), or where there are no whole tiles beside them.
int64_t narrowEdgeCols(const MatmulProblem &p, const MatmulTile &t,
                       RowInterleave rows = {});

/// kf-promote-shared's decision for a warp-specialised matmul whose output
/// rows are `stride` elements of `outputBytes` apart: interleave where
/// those rows are not whole 32-byte sectors, to 128-byte boundaries, or to
/// 16-byte ones, whichever first costs at most 2% more tiles. Single
/// products of K-major operands only (A's tile rows are then a 3-d box of
/// the TMA, B's shifted columns its rows).
RowInterleave chooseRowInterleave(const MatmulProblem &p, const MatmulTile &t,
                                  int64_t stride, int64_t outputBytes);

/// Why the tensor-core template cannot compute `op`, or nothing when it
/// can. It needs bf16/f16 operands, or f32 ones with `allowTF32` when both
/// are K-major (TF32 products read no transposed operands); 16-byte
/// aligned buffers; rows of whole 16-byte chunks along each operand's
/// contiguous dim. Operand rows are as kf-pad padded them, or for the
/// kernel arguments in `assumed`, of the stride given there.
std::optional<std::string>
tensorCoreRefusal(MatmulOp op, bool aligned, bool allowTF32,
                  llvm::ArrayRef<std::pair<mlir::Value, int64_t>> assumed = {});

/// The tile with the least estimated time for `p` on `sms` multiprocessors:
/// waves of resident blocks times the time of one wave, where larger tiles
/// reuse each loaded byte more (tile and wave quantisation both count).
MatmulTile chooseMatmulTile(const MatmulProblem &p, int64_t sms, bool wgmma);
/// kf-split-k's decision: K chunks to compute in parallel, 1 for none.
/// Split only when the output tiles fill at most half the blocks the SMs
/// hold, into as many chunks as fill them, each of 8 K steps at least.
int64_t splitKChunks(const MatmulProblem &p, const MatmulTile &t, int64_t sms);
/// The K chunk kf-split-k splits `matmul` into on `target` (its operands
/// read as they are), or 0 where it keeps K whole.
int64_t splitKChunk(MatmulOp matmul, TargetAttr target);
/// The tile rows visited together (`group_m`): all of them where A fits
/// well in L2, so that B is read from HBM once; else `t.groupM`.
int64_t tileRowGroup(const MatmulTile &t, const MatmulProblem &p);

/// Elements of padding at the end of every shared-memory row of `t`: with
/// mma.sync, 16 bytes shift the rows that one ldmatrix reads onto distinct
/// banks; wgmma tiles are swizzled instead (128-byte pattern).
int64_t sharedRowPad(const MatmulTile &t);

/// The shared-memory tile of one operand in one pipeline stage: `rows`
/// rows of `cols` elements (plus `pad`), as the operand is laid out in
/// global memory (K-contiguous or not).
struct SharedTile {
  int64_t rows, cols, pad;
  int64_t stride() const { return cols + pad; }
  int64_t elements() const { return rows * stride(); }
};
SharedTile sharedTileA(const MatmulTile &t, bool transposeA);
SharedTile sharedTileB(const MatmulTile &t, bool transposeB);

/// How a warp-specialised matmul (pipeline `tma`) copies one operand with
/// the TMA: the operand as a row-major [batch,] rows x cols matrix in
/// memory (cols contiguous, rows `strides[0]` elements apart, batches
/// `strides[1]`), one copy a box of boxRows x boxCols (128 bytes of
/// columns: the swizzle span), a stage's tile `boxes` boxes side by side
/// along cols, each one 128-byte atom column of the wgmma layout (Wgmma.h).
struct TmaOperand {
  unsigned input; ///< the kernel input it reads
  int64_t rank;   ///< 2, or 3 with a batch dim
  int64_t dims[3], strides[2];
  int64_t boxRows, boxCols, boxes;
  int64_t elementBytes;
  /// RowInterleave::groups of A: dims are then {cols, groups, rows /
  /// groups} (a box of rows `groups` apart), strides {stride, groups *
  /// stride}.
  int64_t rowGroups = 1;
};
constexpr int64_t kTmaBoxBytes = 128;
/// The operands that the warp-specialised kernel `kernel` (pipeline `tma`)
/// copies with the TMA, one tensor-map parameter each: a matmul's A and B
/// (and a K-major B again in boxes of its narrow edge tiles' rows), an
/// attention's Q, K and V, its backward's Q, K, V and dO, in that order.
llvm::SmallVector<TmaOperand, 4> tmaOperands(KernelOp kernel);
/// Q, K and V of the attention kernel `kernel` (AttentionTmaPipeline.cpp).
llvm::SmallVector<TmaOperand, 3> attentionTmaOperands(KernelOp kernel);
/// Q, K, V and dO of the attention backward kernel `kernel`
/// (AttentionGradTmaPipeline.cpp), each in boxes of 64 rows.
llvm::SmallVector<TmaOperand, 4> attentionGradTmaOperands(KernelOp kernel);

/// Columns of the output tile that the epilogue stages in shared memory at
/// a time: all of them, or with the TMA's pipeline (which keeps filling
/// its stages during the epilogue, past which the output is staged) at
/// most 128 of a 16-bit output and 32 of an f32 one, so that four stages
/// of a 128x256 tile fit beside them.
int64_t stagedOutputCols(const MatmulTile &t, bool tma, int64_t outputBytes);

/// Bytes of shared memory of one pipeline stage (both operands).
int64_t stageBytes(const MatmulTile &t, const MatmulProblem &p);

/// Shared memory a block's pipeline may take: for mma.sync tiles half of
/// what a Hopper SM has, so that two blocks of a small tile stay resident;
/// wgmma tiles need deeper pipelines more than a second block.
constexpr int64_t kMaxPipelineBytes = 113 * 1024;
/// Shared memory one block may take on a Hopper SM.
constexpr int64_t kSharedPerSM = 227 * 1024;
/// Shared memory of FlashAttention's backward (AttentionGradKernel.cpp), in
/// bytes: its own 128 rows and `stages` stages of 64-row tiles, then with
/// dqAtomic dS^T and dq's f32 staging tile, or with the TMA pipeline its
/// mbarriers (`barriers` on) and each stage's lse and delta (`stats` on).
struct AttentionGradShared {
  int64_t barriers = 0, stats = 0, bytes = 0;
};
AttentionGradShared attentionGradShared(FlashGradTilingAttr tiling,
                                        int64_t stages, bool tma);

/// Stages of a warp-specialised (TMA) pipeline at most.
constexpr int64_t kMaxTmaStages = 8;
constexpr int64_t kMaxWgmmaPipelineBytes = 200 * 1024;

/// Stages of a decode-sized wgmma pipeline (M below a tile's rows) at
/// most, where one block an SM holds four already. H100, same run: bf16
/// 16 x 11008 x 4096 (128 x 128 tiles on 86 SMs) 0.0374 -> 0.0333-0.0336
/// ms with 6 stages rather than 4; 8 measured alike. Where two blocks an
/// SM fit four stages, deeper pipelines (one block) lost: 1 x 4096 x 4096
/// 0.0103-0.0105 -> 0.0111-0.0114, 16 x 4096 x 4096 as x @ w^T 0.0132 ->
/// 0.0153-0.0156 (their K no longer split in two: fewer blocks); 64 x 4096
/// x 11008 gained 4% (0.0384 -> 0.0368-0.0370, in 2 K chunks for 4).
constexpr int64_t kMaxStreamingStages = 6;

/// kf-promote-shared's decision: as many stages (2 to 4, or to
/// kMaxStreamingStages for decode-sized wgmma products one block an SM) of
/// copies in flight as fit kMaxPipelineBytes, and no more than there are K
/// steps.
int64_t pipelineStages(const MatmulTile &t, const MatmulProblem &p);

} // namespace kfuse::kf

#endif // KFUSE_ANALYSIS_MATMULTILING_H
