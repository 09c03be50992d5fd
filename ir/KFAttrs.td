//===- KFAttrs.td - the kf dialect's decision attributes ---*- tablegen -*-===//
//
// What the passes decide about a fused kernel, as typed attributes on its
// kf.kernel (IREE's lowering_config and Triton's layout encodings are the
// models): kf-tile records the launch and the template's tiling,
// kf-promote-shared the shared-memory pipeline, and kf-lower-to-gpu reads
// their fields and decides nothing. Each attribute's verifier rejects a
// value no template could lower; KernelOp::verify checks that the
// attributes agree with each other and with the kernel's kind. The target
// every pass decides for is one attribute on the module, `kf.target`.
//
//===----------------------------------------------------------------------===//

#ifndef KF_ATTRS
#define KF_ATTRS

include "KFDialect.td"
include "mlir/IR/AttrTypeBase.td"

class KF_Attr<string name, string attrMnemonic>
    : AttrDef<KF_Dialect, name> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

// A parameter left out of the printed attribute holds its default.
class KF_Int<string default> : DefaultValuedParameter<"int64_t", default>;
def KF_Flag : DefaultValuedParameter<"bool", "false">;

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

def KF_TargetAttr : KF_Attr<"Target", "target"> {
  let summary = "the GPU the module is compiled for";
  let description = [{
    Set once on the module by kf-attach-target (the pipeline's first kernel
    stage) and read by every pass that decides for a target: the chip
    (PTX's target name), its streaming multiprocessors, whether every
    buffer starts on a 16-byte boundary (the runtime checks it before a
    launch), whether the chip has Hopper's warpgroup MMA, and whether f32
    matmuls may round their operands to TF32, and whether kernels may add
    partial results into memory in any order (atomics: results then vary
    in their last bits from run to run). A module without one is
    compiled for `#kf.target<>`: sm_90, 132 SMs, and none of the facts.

    ```mlir
    module attributes {kf.target = #kf.target<chip = "sm_90",
        multiprocessors = 132, aligned = true, wgmma = true>} { ... }
    ```
  }];
  let parameters = (ins
    StringRefParameter<"the PTX target", "\"sm_90\"">:$chip,
    KF_Int<"132">:$multiprocessors,
    KF_Flag:$aligned,
    KF_Flag:$wgmma,
    KF_Flag:$allowTF32,
    KF_Flag:$unorderedAdds
  );
  let extraClassDeclaration = [{
    /// The module attribute that holds the target.
    static constexpr ::llvm::StringLiteral moduleAttrName = "kf.target";
    /// The target of the module around `op`, or the default one.
    static TargetAttr of(::mlir::Operation *op);
    /// The alignment every buffer has (bytes), 0 when none is known.
    int64_t bufferAlignment() const { return getAligned() ? 16 : 0; }
    /// Whether the chip runs thread block clusters (sm_90 and later).
    bool hasClusters() const;
  }];
}

//===----------------------------------------------------------------------===//
// The launch (kf-tile; kf-promote-shared refines it)
//===----------------------------------------------------------------------===//

def KF_LaunchAttr : KF_Attr<"Launch", "launch"> {
  let summary = "a kernel's launch: blocks, threads, work items, shared memory";
  let description = [{
    `grid` blocks of `block` threads over `items` work items (elements,
    rows, tiles or blocks, by template), with `sharedBytes` of dynamic
    shared memory. kf-lower-to-gpu sizes its loops by `items` and declares
    `block` threads; the runtime launches `grid` x `block`. With
    `minBlocksPerSM` the kernel asks the PTX assembler for registers few
    enough that that many blocks fit on an SM at once (PTX's
    `.minnctapersm`); 0 leaves the count to the assembler.
  }];
  let parameters = (ins "int64_t":$grid, "int64_t":$block, "int64_t":$items,
                        KF_Int<"0">:$sharedBytes, KF_Int<"0">:$minBlocksPerSM);
}

//===----------------------------------------------------------------------===//
// Tilings: how a template maps the kernel's work to threads (kf-tile)
//===----------------------------------------------------------------------===//

def KF_PointwiseTilingAttr : KF_Attr<"PointwiseTiling", "pointwise_tiling"> {
  let summary = "elements per thread step of the pointwise templates";
  let description = [{
    A thread step covers `unroll` vectors of `vector` elements (one 16-byte
    access where buffers allow); with `interleave` a block's vectors of one
    step are interleaved across its threads (each warp access one
    contiguous run), else a thread's vectors are adjacent. The padded-rows
    copy uses `vector` only.

    With `groups` = G > 1 the output is G equal parts (the indices of the
    leading dims an input is broadcast over) and the blocks take their
    chunks (a block's thread step each) from the G parts in turn: the G
    reads of each element of that input come together, where L2 still
    holds it, instead of an output part apart. With `streamStores` results
    are stored evict-first (`st.global.cs`), so that they do not push the
    inputs being reused out of L2.
  }];
  let parameters = (ins KF_Int<"1">:$vector, KF_Int<"1">:$unroll,
                        KF_Flag:$interleave, KF_Int<"1">:$groups,
                        KF_Flag:$streamStores);
}

def KF_RowTilingAttr : KF_Attr<"RowTiling", "row_tiling"> {
  let summary = "rows a block: vectors and chunks a thread";
  let description = [{
    Each block computes `rowsPerBlock` consecutive rows, each by an equal
    share of its threads (with more than one row, at most a warp's worth,
    so that a row's reductions stay within a warp); a thread holds `chunks`
    vectors of `vector` elements of its row, in registers with
    `inRegisters`; with `inShared` its first pass copies the row's streamed
    inputs into the launch's shared memory, where each thread reads its own
    lanes back at the later passes; else the row is read again for each
    pass over it.

    With `cluster` = C > 1 a row is split over a cluster of C blocks
    (Hopper's thread block clusters): the row's lanes are dealt as if the C
    blocks were one block of C times the threads, each block holds its
    share in registers (`inRegisters`), and each reduction of the row
    combines the blocks' values through their distributed shared memory.
    A row too long for one block's registers is so read once, not once a
    pass over it, with several rows in flight an SM.
  }];
  let parameters = (ins KF_Int<"1">:$vector, KF_Int<"1">:$chunks,
                        KF_Flag:$inRegisters, KF_Flag:$inShared,
                        KF_Int<"1">:$rowsPerBlock, KF_Int<"1">:$cluster);
}

def KF_ColumnTilingAttr : KF_Attr<"ColumnTiling", "column_tiling"> {
  let summary = "a reduction of leading dims: 32 columns a block";
  let description = [{
    A block of 32 x 32 threads sums 32 columns, each thread row a strided
    share of the rows; the partial sums meet in shared memory.
  }];
  let parameters = (ins);
  let assemblyFormat = "";
  let genVerifyDecl = 0;
}

def KF_ColumnScanTilingAttr
    : KF_Attr<"ColumnScanTiling", "column_scan_tiling"> {
  let summary = "a cumsum down columns: 32 x columnsPerThread columns a "
                "block, chunks of rows";
  let description = [{
    A block of 32 x 32 threads scans 32 x `columnsPerThread` columns (the
    dims after the axis, flattened) of one index before the axis, a
    thread `columnsPerThread` consecutive ones (a vector a row; the
    columns are a multiple of it). The rows go by in chunks of 32 segments
    of `rowsPerThread` rows, each segment a thread's running sums in
    registers; the segments' totals meet in shared memory, and a carry a
    column runs from chunk to chunk.
  }];
  let parameters = (ins KF_Int<"8">:$rowsPerThread,
                        KF_Int<"1">:$columnsPerThread);
}

def KF_IndexAddTilingAttr : KF_Attr<"IndexAddTiling", "index_add_tiling"> {
  let summary = "kf.index_add: a thread an update, or a block a tile of sums";
  let description = [{
    With `unordered` (a target that allows unordered adds), a thread takes
    an update and adds it into the result, zeroed before the launch, with
    an f32 atomic add: each update is read once, and the sums' last bits
    vary from run to run. Without, a block takes a tile of `rowsPerBlock`
    result rows by `columnsPerBlock` of the dims after them and reads the
    indices in order, 1,024 at a time: warp ballots mark those naming a
    row of the tile, and the block walks the marks in order, each thread
    adding their updates of its columns into the tile's sums in shared
    memory, in index order (deterministic). A thread takes `vector`
    consecutive columns at a time (one 16-byte read of an update, one
    store of results); the block's threads are row groups of
    `getThreadsPerRow()`, each group the rows r with r % groups = its
    number. Every update is read once; each block reads every index once.
  }];
  let parameters = (ins KF_Flag:$unordered, KF_Int<"0">:$rowsPerBlock,
                        KF_Int<"0">:$columnsPerBlock, KF_Int<"1">:$vector);
  let extraClassDeclaration = [{
    /// Threads a row group: one a vector of a tile row, at most a block.
    int64_t getThreadsPerRow() const;
    /// Vectors a thread takes along a tile row.
    int64_t getColumnSteps() const;
    /// Shared f32 sums a tile row takes: whole steps of the row group's
    /// vectors (a step's vectors interleaved, so that a warp's adds fall
    /// in distinct banks).
    int64_t getSumsPerRow() const;
  }];
}

def KF_TransposeTilingAttr : KF_Attr<"TransposeTiling", "transpose_tiling"> {
  let summary = "a transpose of the last two dims through 32x32 tiles";
  let description = [{
    A block of 256 threads stages a 32 x 32 tile of the input in shared
    memory and writes it transposed, both in coalesced rows.
  }];
  let parameters = (ins);
  let assemblyFormat = "";
  let genVerifyDecl = 0;
}

def KF_MmaTilingAttr : KF_Attr<"MmaTiling", "mma_tiling"> {
  let summary = "a tensor-core block tile of a matmul";
  let description = [{
    A block computes [tileM, tileN] of the output in warpsM x warpsN warps,
    stepping K by tileK elements; `groupM` tile rows are visited together
    for L2 reuse. `wgmma`: Hopper's warpgroup MMA from shared memory
    (warpsM = 8, warpsN = 1: two warpgroups of 64 rows each), else
    mma.sync. `tf32`: f32 operands multiplied in TF32 (f32 needs it).
    `edgeN`: the last column of tiles, the one past the last whole tileN
    columns, is edgeN columns wide (a narrower wgmma) rather than tileN;
    0: as wide as the others.
  }];
  let parameters = (ins "int64_t":$tileM, "int64_t":$tileN, "int64_t":$tileK,
                        "int64_t":$warpsM, "int64_t":$warpsN,
                        KF_Int<"1">:$groupM, KF_Flag:$wgmma, KF_Flag:$tf32,
                        KF_Int<"0">:$edgeN);
  let extraClassDeclaration = [{
    int64_t threads() const { return 32 * getWarpsM() * getWarpsN(); }
  }];
}

def KF_FlashTilingAttr : KF_Attr<"FlashTiling", "flash_tiling"> {
  let summary = "FlashAttention's query and key tiles";
  let description = [{
    A block of two warpgroups takes `blockQ` query rows of one head and
    steps over the keys `blockK` at a time (online softmax), with head
    dims padded to `headDim` and `valueDim` (multiples of 64, the width of
    a swizzled tile). `qInRegisters`: Q's wgmma fragments stay in
    registers, so S = Q K^T reads only K from shared memory.
  }];
  let parameters = (ins "int64_t":$blockQ, "int64_t":$blockK,
                        "int64_t":$headDim, "int64_t":$valueDim,
                        KF_Flag:$qInRegisters);
}

def KF_FlashGradTilingAttr : KF_Attr<"FlashGradTiling", "flash_grad_tiling"> {
  let summary = "FlashAttention backward's blocks and tiles";
  let description = [{
    A block of two warpgroups owns `blockRows` rows, 64 a warpgroup: the
    first `kvBlocks` blocks own keys (of one kv head) and step over the
    queries of the heads that share it `blockCols` at a time, accumulating
    dk and dv; the others own query rows of one head and step over its
    keys, accumulating dq. Head dims padded to `headDim` and `valueDim`
    (whole swizzled tiles of 64 columns, 256 at most: a warpgroup's
    accumulators of 64 rows, in registers). `splitKeyBlocks`: dk and dv
    are accumulated in blocks of their own, the first `kvBlocks` blocks
    dk, the next `kvBlocks` dv, where both accumulators would not fit a
    thread's registers (headDim + valueDim past 256); the dv blocks skip
    dP and dS. `dqAtomic`: every block owns keys (`kvBlocks` is the grid)
    and adds each tile's dq = dS k, its 128 keys' share, into an f32 dq
    that the launch zeroes first (faster; the order of the adds, and so
    dq's last bits, vary from run to run); else query blocks compute dq,
    each from its rows' whole sum (deterministic).
  }];
  let parameters = (ins "int64_t":$blockRows, "int64_t":$blockCols,
                        "int64_t":$headDim, "int64_t":$valueDim,
                        "int64_t":$kvBlocks, "bool":$dqAtomic,
                        KF_Flag:$splitKeyBlocks);
}

//===----------------------------------------------------------------------===//
// Pipelines: what is staged in shared memory (kf-promote-shared)
//===----------------------------------------------------------------------===//

def KF_MmaPipelineAttr : KF_Attr<"MmaPipeline", "mma_pipeline"> {
  let summary = "the shared-memory pipeline of a tensor-core matmul";
  let description = [{
    Operand tiles are copied into `stages` stages of shared memory ahead of
    the products. `stageOutput`: the output tile leaves through shared
    memory in whole rows. `persistent`: a block per SM loops over tiles,
    the next tile's first copies in flight during this one's epilogue.
    `tma`: warp-specialised, a third warpgroup copying with the TMA into
    stages handed over by mbarriers, each multiplying warpgroup keeping
    `mmaGroups` K steps of products in flight. `rowGroups` > 1: output
    tiles take rows that far apart, each group's columns shifted so that
    its rows start on `rowAlign`-element boundaries (odd row lengths).
  }];
  let parameters = (ins "int64_t":$stages, KF_Flag:$stageOutput,
                        KF_Flag:$persistent, KF_Flag:$tma,
                        KF_Int<"1">:$mmaGroups, KF_Int<"1">:$rowGroups,
                        KF_Int<"1">:$rowAlign);
}

def KF_FlashPipelineAttr : KF_Attr<"FlashPipeline", "flash_pipeline"> {
  let summary = "the shared-memory pipeline of FlashAttention";
  let description = [{
    K and V tiles are copied `stages` tiles ahead; `stageScoresInput`: so
    are the tiles of the bias or mask input. `tma`: a third warpgroup
    copies Q, K and V with the TMA, stages handed over by mbarriers.
  }];
  let parameters = (ins "int64_t":$stages, KF_Flag:$tma,
                        KF_Flag:$stageScoresInput);
}

def KF_FlashGradPipelineAttr
    : KF_Attr<"FlashGradPipeline", "flash_grad_pipeline"> {
  let summary = "the shared-memory pipeline of FlashAttention's backward";
  let description = [{
    The streamed 64-row tiles are copied `stages` tiles ahead (one: the
    next tile's copy waits for the products of the last, where two stages
    of wide heads do not fit). Without `tma` all threads copy them with
    cp.async, one or two stages and a block barrier a tile; with `tma` a third warpgroup copies the owned rows and
    the streamed tiles with the TMA, stages handed over by mbarriers
    (deterministic kernels only: the dqAtomic template exchanges dS^T at
    block barriers of its two computing warpgroups).
  }];
  let parameters = (ins "int64_t":$stages, KF_Flag:$tma);
}

def KF_TilingAttr : AnyAttrOf<[KF_PointwiseTilingAttr, KF_RowTilingAttr,
                               KF_ColumnTilingAttr, KF_ColumnScanTilingAttr,
                               KF_IndexAddTilingAttr, KF_TransposeTilingAttr,
                               KF_MmaTilingAttr, KF_FlashTilingAttr,
                               KF_FlashGradTilingAttr]>;
def KF_PipelineAttr : AnyAttrOf<[KF_MmaPipelineAttr, KF_FlashPipelineAttr,
                                 KF_FlashGradPipelineAttr]>;

#endif // KF_ATTRS
