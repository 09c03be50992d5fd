// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

// The decision attributes (KFAttrs.td) refuse values no template lowers,
// naming the parameter and what it needs; kf.kernel refuses attributes
// that do not fit each other or the kernel.

// A stage is free again mmaGroups K steps after its products were issued:
// as many groups as stages would wait for themselves.
// expected-error @+1 {{mmaGroups = 8: needs 1 to stages - 1 (7)}}
func.func private @f() attributes {p = #kf.mma_pipeline<stages = 8, tma = true, mmaGroups = 8>}

// -----

// expected-error @+1 {{rowGroups = 4: interleaved rows need the TMA pipeline and a staged output}}
func.func private @f() attributes {p = #kf.mma_pipeline<stages = 4, rowGroups = 4, rowAlign = 8>}

// -----

// expected-error @+1 {{persistent and tma: the warp-specialised pipeline loops over tiles itself}}
func.func private @f() attributes {p = #kf.mma_pipeline<stages = 4, persistent = true, tma = true>}

// -----

// expected-error @+1 {{stages = 9: needs 2 to 8}}
func.func private @f() attributes {p = #kf.mma_pipeline<stages = 9>}

// -----

// expected-error @+1 {{block = 2048: needs 1 to 1024}}
func.func private @f() attributes {l = #kf.launch<grid = 1, block = 2048, items = 1>}

// -----

// expected-error @+1 {{sharedBytes = 300000: needs 0 to 232448}}
func.func private @f() attributes {l = #kf.launch<grid = 1, block = 32, items = 1, sharedBytes = 300000>}

// -----

// An SM holds 2048 threads: at most 4 blocks of 512.
// expected-error @+1 {{minBlocksPerSM = 8: needs 0 to 4}}
func.func private @f() attributes {l = #kf.launch<grid = 1, block = 512, items = 1, minBlocksPerSM = 8>}

// -----

// expected-error @+1 {{vector = 3: needs a power of two up to 16}}
func.func private @f() attributes {t = #kf.pointwise_tiling<vector = 3>}

// -----

// expected-error @+1 {{interleave with unroll = 1: there is nothing to interleave}}
func.func private @f() attributes {t = #kf.pointwise_tiling<vector = 4, interleave = true>}

// -----

// expected-error @+1 {{groups = 0: needs 1 to 2147483647}}
func.func private @f() attributes {t = #kf.pointwise_tiling<vector = 4, groups = 0>}

// -----

// expected-error @+1 {{tileM = 80: needs a positive multiple of 32}}
func.func private @f() attributes {t = #kf.mma_tiling<tileM = 80, tileN = 128, tileK = 32, warpsM = 2, warpsN = 2>}

// -----

// expected-error @+1 {{edgeN = 24: needs wgmma and a multiple of 16 below tileN (256)}}
func.func private @f() attributes {t = #kf.mma_tiling<tileM = 128, tileN = 256, tileK = 64, warpsM = 8, warpsN = 1, wgmma = true, edgeN = 24>}

// -----

// expected-error @+1 {{edgeN = 16: needs wgmma and a multiple of 16 below tileN (128)}}
func.func private @f() attributes {t = #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 32, warpsM = 2, warpsN = 2, edgeN = 16>}

// -----

// expected-error @+1 {{wgmma with a 128-row tile in 2 x 2 warps: needs two warpgroups of 64 rows (tileM = 128, warpsM = 8, warpsN = 1)}}
func.func private @f() attributes {t = #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 64, warpsM = 2, warpsN = 2, wgmma = true>}

// -----

// expected-error @+1 {{headDim = 96: needs a positive multiple of 64}}
func.func private @f() attributes {t = #kf.flash_tiling<blockQ = 128, blockK = 64, headDim = 96, valueDim = 128>}

// -----

// expected-error @+1 {{tma with stageScoresInput: the TMA pipeline stages no bias or mask}}
func.func private @f() attributes {p = #kf.flash_pipeline<stages = 2, tma = true, stageScoresInput = true>}

// -----

// expected-error @+1 {{stages = 3 without tma: the cp.async copies take one or two stages}}
func.func private @f() attributes {p = #kf.flash_grad_pipeline<stages = 3>}

// -----

// expected-error @+1 {{stages = 5: needs 1 to 4}}
func.func private @f() attributes {p = #kf.flash_grad_pipeline<stages = 5, tma = true>}

// -----

// expected-error @+1 {{headDim = 256, valueDim = 128 without splitKeyBlocks: dk's and dv's accumulators together pass a thread's registers}}
func.func private @f() attributes {t = #kf.flash_grad_tiling<blockRows = 128, blockCols = 64, headDim = 256, valueDim = 128, kvBlocks = 4, dqAtomic = false>}

// -----

// expected-error @+1 {{headDim = 320: needs 64 to 256}}
func.func private @f() attributes {t = #kf.flash_grad_tiling<blockRows = 128, blockCols = 64, headDim = 320, valueDim = 64, kvBlocks = 4, dqAtomic = false, splitKeyBlocks = true>}

// -----

// expected-error @+1 {{splitKeyBlocks with dqAtomic: the atomic template adds dq from blocks that compute dk and dv together}}
func.func private @f() attributes {t = #kf.flash_grad_tiling<blockRows = 128, blockCols = 64, headDim = 256, valueDim = 256, kvBlocks = 4, dqAtomic = true, splitKeyBlocks = true>}

// -----

// expected-error @+1 {{wgmma on chip "sm_80": only sm_90 and sm_90a have it}}
func.func private @f() attributes {t = #kf.target<chip = "sm_80", wgmma = true>}

// -----

func.func @tiling_without_launch(%x: tensor<64xf32>) {
  // expected-error @+1 {{'kf.kernel' op has a tiling or pipeline but no launch}}
  %0 = kf.kernel pointwise(%x : tensor<64xf32>) attributes {tiling = #kf.pointwise_tiling<vector = 4>} {
  ^bb0(%a: tensor<64xf32>):
    kf.yield %a : tensor<64xf32>
  } -> (tensor<64xf32>)
  return
}

// -----

func.func @rows_sharing_part_warps(%x: tensor<64x128xf32>) {
  // expected-error @+1 {{'kf.kernel' op shares a block of 192 threads among 4 rows: a row's threads must be an equal share of at most a warp, or whole warps}}
  %0 = kf.kernel normalization(%x : tensor<64x128xf32>) attributes {launch = #kf.launch<grid = 16, block = 192, items = 16>, tiling = #kf.row_tiling<vector = 4, rowsPerBlock = 4>} {
  ^bb0(%a: tensor<64x128xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<64x128xf32>
    kf.yield %s : tensor<64x128xf32>
  } -> (tensor<64x128xf32>)
  return
}

// -----

func.func @rows_in_shared_memory_without_any(%x: tensor<4x65536xf32>) {
  // expected-error @+1 {{'kf.kernel' op stages its rows in shared memory but its launch has none}}
  %0 = kf.kernel normalization(%x : tensor<4x65536xf32>) attributes {launch = #kf.launch<grid = 4, block = 1024, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 16, inShared = true>} {
  ^bb0(%a: tensor<4x65536xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<4x65536xf32>
    kf.yield %s : tensor<4x65536xf32>
  } -> (tensor<4x65536xf32>)
  return
}

// -----

func.func @rows_in_registers_and_shared_memory(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{holds the row in registers and in shared memory: one of the two}}
  %0 = kf.kernel normalization(%x : tensor<4x64xf32>) attributes {launch = #kf.launch<grid = 4, block = 32, items = 4, sharedBytes = 1024>, tiling = #kf.row_tiling<vector = 2, inRegisters = true, inShared = true>} {
  ^bb0(%a: tensor<4x64xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<4x64xf32>
    kf.yield %s : tensor<4x64xf32>
  } -> (tensor<4x64xf32>)
  return
}

// -----

func.func @row_cluster_past_eight(%x: tensor<4x262144xf32>) {
  // expected-error @+1 {{cluster = 16: needs a power of two up to 8}}
  %0 = kf.kernel normalization(%x : tensor<4x262144xf32>) attributes {launch = #kf.launch<grid = 64, block = 512, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 8, inRegisters = true, cluster = 16>} {
  ^bb0(%a: tensor<4x262144xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<4x262144xf32>
    kf.yield %s : tensor<4x262144xf32>
  } -> (tensor<4x262144xf32>)
  return
}

// -----

func.func @row_cluster_looping_over_rows(%x: tensor<4x65536xf32>) {
  // expected-error @+1 {{splits a row over a cluster of 4 blocks: needs the row in registers and one row a block}}
  %0 = kf.kernel normalization(%x : tensor<4x65536xf32>) attributes {launch = #kf.launch<grid = 16, block = 512, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 8, cluster = 4>} {
  ^bb0(%a: tensor<4x65536xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<4x65536xf32>
    kf.yield %s : tensor<4x65536xf32>
  } -> (tensor<4x65536xf32>)
  return
}

// -----

func.func @row_cluster_partly_launched(%x: tensor<4x65536xf32>) {
  // expected-error @+1 {{'kf.kernel' op launches 14 blocks in clusters of 4: not a whole number of clusters}}
  %0 = kf.kernel normalization(%x : tensor<4x65536xf32>) attributes {launch = #kf.launch<grid = 14, block = 512, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 8, inRegisters = true, cluster = 4>} {
  ^bb0(%a: tensor<4x65536xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<4x65536xf32>
    kf.yield %s : tensor<4x65536xf32>
  } -> (tensor<4x65536xf32>)
  return
}

// -----

func.func @row_cluster_over_argmax(%x: tensor<4x65536xf32>) {
  // expected-error @+1 {{'kf.kernel' op splits its rows over clusters of 4 blocks, but an argmax, argmin or cumsum takes a row in one block}}
  %0 = kf.kernel reduction(%x : tensor<4x65536xf32>) attributes {launch = #kf.launch<grid = 16, block = 512, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 8, inRegisters = true, cluster = 4>} {
  ^bb0(%a: tensor<4x65536xf32>):
    %i = kf.arg_reduce max %a[1] : tensor<4x65536xf32> -> tensor<4xi64>
    kf.yield %i : tensor<4xi64>
  } -> (tensor<4xi64>)
  return
}

// -----

module attributes {kf.target = #kf.target<chip = "sm_80">} {
  func.func @row_cluster_without_clusters(%x: tensor<4x65536xf32>) {
    // expected-error @+1 {{'kf.kernel' op splits its rows over clusters of 4 blocks, which chip "sm_80" does not have}}
    %0 = kf.kernel normalization(%x : tensor<4x65536xf32>) attributes {launch = #kf.launch<grid = 16, block = 512, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 8, inRegisters = true, cluster = 4>} {
    ^bb0(%a: tensor<4x65536xf32>):
      %s = kf.softmax %a {axis = 1} : tensor<4x65536xf32>
      kf.yield %s : tensor<4x65536xf32>
    } -> (tensor<4x65536xf32>)
    return
  }
}

// -----

func.func @rows_per_block_not_a_power_of_two(%x: tensor<64x128xf32>) {
  // expected-error @+1 {{rowsPerBlock = 3: needs a power of two up to 1024}}
  %0 = kf.kernel normalization(%x : tensor<64x128xf32>) attributes {launch = #kf.launch<grid = 22, block = 96, items = 22>, tiling = #kf.row_tiling<vector = 4, rowsPerBlock = 3>} {
  ^bb0(%a: tensor<64x128xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<64x128xf32>
    kf.yield %s : tensor<64x128xf32>
  } -> (tensor<64x128xf32>)
  return
}

// -----

func.func @tiling_of_another_kind(%x: tensor<64xf32>) {
  // expected-error @+1 {{'kf.kernel' op of kind pointwise cannot take #kf.row_tiling<vector = 4>}}
  %0 = kf.kernel pointwise(%x : tensor<64xf32>) attributes {launch = #kf.launch<grid = 1, block = 32, items = 1>, tiling = #kf.row_tiling<vector = 4>} {
  ^bb0(%a: tensor<64xf32>):
    kf.yield %a : tensor<64xf32>
  } -> (tensor<64xf32>)
  return
}

// -----

func.func @pipeline_of_another_tiling(%q: tensor<1x1x128x64xbf16>) {
  // expected-error @+1 {{'kf.kernel' op has #kf.mma_pipeline<stages = 2> for tiling #kf.flash_tiling<blockQ = 128, blockK = 64, headDim = 64, valueDim = 64>}}
  %0 = kf.kernel attention(%q : tensor<1x1x128x64xbf16>) attributes {launch = #kf.launch<grid = 1, block = 256, items = 1>, pipeline = #kf.mma_pipeline<stages = 2>, tiling = #kf.flash_tiling<blockQ = 128, blockK = 64, headDim = 64, valueDim = 64>} {
  ^bb0(%a: tensor<1x1x128x64xbf16>):
    %o = kf.attention %a, %a, %a {scale = 0.125 : f64} : tensor<1x1x128x64xbf16>, tensor<1x1x128x64xbf16>, tensor<1x1x128x64xbf16> -> tensor<1x1x128x64xbf16>
    kf.yield %o : tensor<1x1x128x64xbf16>
  } -> (tensor<1x1x128x64xbf16>)
  return
}

// -----

func.func @tma_without_wgmma(%a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>) {
  // expected-error @+1 {{'kf.kernel' op has a TMA pipeline for an mma.sync tiling: the warp-specialised pipeline needs wgmma}}
  %0 = kf.kernel matmul(%a, %b : tensor<128x64xbf16>, tensor<64x128xbf16>) attributes {launch = #kf.launch<grid = 1, block = 384, items = 1>, pipeline = #kf.mma_pipeline<stages = 4, tma = true>, tiling = #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 32, warpsM = 2, warpsN = 2>} {
  ^bb0(%x: tensor<128x64xbf16>, %y: tensor<64x128xbf16>):
    %c = kf.matmul %x, %y : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xbf16>
    kf.yield %c : tensor<128x128xbf16>
  } -> (tensor<128x128xbf16>)
  return
}

// -----

// Narrow edge tiles need the warp-specialised (TMA) pipeline.
func.func @edge_without_tma(%a: tensor<128x64xbf16>, %b: tensor<64x272xbf16>) {
  // expected-error @+1 {{'kf.kernel' op has edgeN = 16 without a TMA pipeline: only the warp-specialised template computes narrower edge tiles}}
  %0 = kf.kernel matmul(%a, %b : tensor<128x64xbf16>, tensor<64x272xbf16>) attributes {launch = #kf.launch<grid = 2, block = 256, items = 2>, pipeline = #kf.mma_pipeline<stages = 4>, tiling = #kf.mma_tiling<tileM = 128, tileN = 256, tileK = 64, warpsM = 8, warpsN = 1, wgmma = true, edgeN = 16>} {
  ^bb0(%x: tensor<128x64xbf16>, %y: tensor<64x272xbf16>):
    %c = kf.matmul %x, %y : tensor<128x64xbf16>, tensor<64x272xbf16> -> tensor<128x272xbf16>
    kf.yield %c : tensor<128x272xbf16>
  } -> (tensor<128x272xbf16>)
  return
}

// -----

// f32 operands multiply in TF32 only where the tiling says so.
func.func @f32_without_tf32(%a: tensor<128x64xf32>, %b: tensor<128x64xf32>) {
  // expected-error @+1 {{'kf.kernel' op has 'f32' operands and tf32 = false: TF32 tiles are for f32 operands, and f32 needs them}}
  %0 = kf.kernel matmul(%a, %b : tensor<128x64xf32>, tensor<128x64xf32>) attributes {launch = #kf.launch<grid = 1, block = 128, items = 1>, tiling = #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 16, warpsM = 2, warpsN = 2>} {
  ^bb0(%x: tensor<128x64xf32>, %y: tensor<128x64xf32>):
    %c = kf.matmul %x, %y {transpose_b = true} : tensor<128x64xf32>, tensor<128x64xf32> -> tensor<128x128xf32>
    kf.yield %c : tensor<128x128xf32>
  } -> (tensor<128x128xf32>)
  return
}

// -----

// kf-pad's row strides: one per result, 0 or at least the row.
func.func @padded_rows_count(%x: tensor<8x100xf32>) {
  // expected-error @+1 {{'kf.kernel' op has 2 padded_rows strides for 1 results}}
  %0 = kf.kernel pointwise(%x : tensor<8x100xf32>) attributes {padded_rows = array<i64: 104, 0>} {
  ^bb0(%a: tensor<8x100xf32>):
    kf.yield %a : tensor<8x100xf32>
  } -> (tensor<8x100xf32>)
  return
}

// -----

func.func @padded_rows_short(%x: tensor<8x100xf32>) {
  // expected-error @+1 {{'kf.kernel' op pads the rows of result 0 ('tensor<8x100xf32>') to a stride of 96: needs 0 or at least the row's length, at rank 2 or more}}
  %0 = kf.kernel pointwise(%x : tensor<8x100xf32>) attributes {padded_rows = array<i64: 96>} {
  ^bb0(%a: tensor<8x100xf32>):
    kf.yield %a : tensor<8x100xf32>
  } -> (tensor<8x100xf32>)
  return
}

// -----

func.func @groups_not_dividing(%x: tensor<3x4096xf32>, %p: tensor<4096xf32>) {
  // expected-error @+1 {{'kf.kernel' op splits 12288 elements into 3 groups of whole chunks of 8192 (vector x unroll x block): they do not divide}}
  %0 = kf.kernel pointwise(%x, %p : tensor<3x4096xf32>, tensor<4096xf32>) attributes {launch = #kf.launch<grid = 2, block = 256, items = 12288>, tiling = #kf.pointwise_tiling<vector = 4, unroll = 8, groups = 3>} {
  ^bb0(%a: tensor<3x4096xf32>, %b: tensor<4096xf32>):
    %c = kf.broadcast %b : tensor<4096xf32> -> tensor<3x4096xf32>
    %d = kf.add %a, %c : tensor<3x4096xf32>
    kf.yield %d : tensor<3x4096xf32>
  } -> (tensor<3x4096xf32>)
  return
}

// -----

// Unordered adds only where the module's target allows them (here none).
func.func @index_add_unordered(%u: tensor<8x16xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'kf.kernel' op adds in any order (index_add_tiling unordered) but its target keeps sums deterministic}}
  %0 = kf.kernel reduction(%u, %i : tensor<8x16xf32>, tensor<8xi32>) attributes {launch = #kf.launch<grid = 1, block = 256, items = 128>, tiling = #kf.index_add_tiling<unordered = true>} {
  ^bb0(%a: tensor<8x16xf32>, %b: tensor<8xi32>):
    %r = kf.index_add %a[%b] {axis = 0 : i64, size = 5 : i64} : tensor<8x16xf32>, tensor<8xi32> -> tensor<5x16xf32>
    kf.yield %r : tensor<5x16xf32>
  } -> (tensor<5x16xf32>)
  return
}

// -----

// Unordered, the sums are added into the result's memory: nothing in the
// kernel may read them.
module attributes {kf.target = #kf.target<unorderedAdds = true>} {
func.func @index_add_read_inside(%u: tensor<8x16xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'kf.kernel' op adds into its index_add's result: it must be a result of the kernel, read by nothing else in it}}
  %0 = kf.kernel reduction(%u, %i : tensor<8x16xf32>, tensor<8xi32>) attributes {launch = #kf.launch<grid = 1, block = 256, items = 128>, tiling = #kf.index_add_tiling<unordered = true>} {
  ^bb0(%a: tensor<8x16xf32>, %b: tensor<8xi32>):
    %r = kf.index_add %a[%b] {axis = 0 : i64, size = 5 : i64} : tensor<8x16xf32>, tensor<8xi32> -> tensor<5x16xf32>
    %n = kf.neg %r : tensor<5x16xf32>
    kf.yield %n : tensor<5x16xf32>
  } -> (tensor<5x16xf32>)
  return
}
}

// -----

// Ordered, each result is stored where each sum is: an elementwise
// epilogue, not a sum of the sums.
func.func @index_add_reduced_inside(%u: tensor<8x16xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'kf.kernel' op sums an index_add in tiles and stores its results at each sum, but 'kf.reduce' reads the sums: only elementwise ops may}}
  %0 = kf.kernel reduction(%u, %i : tensor<8x16xf32>, tensor<8xi32>) attributes {launch = #kf.launch<grid = 5, block = 256, items = 5>, tiling = #kf.index_add_tiling<rowsPerBlock = 1, columnsPerBlock = 16>} {
  ^bb0(%a: tensor<8x16xf32>, %b: tensor<8xi32>):
    %r = kf.index_add %a[%b] {axis = 0 : i64, size = 5 : i64} : tensor<8x16xf32>, tensor<8xi32> -> tensor<5x16xf32>
    %n = kf.reduce sum %r [1] : tensor<5x16xf32> -> tensor<5xf32>
    kf.yield %n : tensor<5xf32>
  } -> (tensor<5xf32>)
  return
}

// -----

// An ordered index_add's launch takes a block a tile: 5 rows of 16 in
// tiles of 2 rows are 3 tiles, each 2 x 16 f32 sums of shared memory.
func.func @index_add_tiles(%u: tensor<8x16xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'kf.kernel' op sums 3 tiles of 2 x 16 in blocks of 256 threads and 128 bytes of shared sums, but its launch is #kf.launch<grid = 5, block = 256, items = 5, sharedBytes = 128>}}
  %0 = kf.kernel reduction(%u, %i : tensor<8x16xf32>, tensor<8xi32>) attributes {launch = #kf.launch<grid = 5, block = 256, items = 5, sharedBytes = 128>, tiling = #kf.index_add_tiling<rowsPerBlock = 2, columnsPerBlock = 16>} {
  ^bb0(%a: tensor<8x16xf32>, %b: tensor<8xi32>):
    %r = kf.index_add %a[%b] {axis = 0 : i64, size = 5 : i64} : tensor<8x16xf32>, tensor<8xi32> -> tensor<5x16xf32>
    kf.yield %r : tensor<5x16xf32>
  } -> (tensor<5x16xf32>)
  return
}

// -----

// The tile's sums live in shared memory: at most 24576 of them (96 KB).
// expected-error @+1 {{sums a tile of 32 x 1024 (32768 in whole steps of vectors of 1) in shared memory: at most 24576 sums}}
func.func private @f() attributes {t = #kf.index_add_tiling<rowsPerBlock = 32, columnsPerBlock = 1024>}

// -----

// A vector of columns is a power of two that divides the tile's columns.
// expected-error @+1 {{reads vectors of 8 columns: a power of two dividing the tile's 12 columns}}
func.func private @f() attributes {t = #kf.index_add_tiling<rowsPerBlock = 4, columnsPerBlock = 12, vector = 8>}

// -----

// Whole steps of the row group's vectors: a row of 520 columns a thread
// at a time takes 3 steps of 256 threads, 768 sums.
// expected-error @+1 {{sums a tile of 40 x 520 (30720 in whole steps of vectors of 1) in shared memory: at most 24576 sums}}
func.func private @f() attributes {t = #kf.index_add_tiling<rowsPerBlock = 40, columnsPerBlock = 520>}

// -----

// A vector of columns lies in one result row.
func.func @index_add_vector_across_rows(%u: tensor<8x6xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'kf.kernel' op sums an index_add in vectors of 4 columns, but its rows have 6}}
  %0 = kf.kernel reduction(%u, %i : tensor<8x6xf32>, tensor<8xi32>) attributes {launch = #kf.launch<grid = 5, block = 256, items = 5>, tiling = #kf.index_add_tiling<rowsPerBlock = 1, columnsPerBlock = 4, vector = 4>} {
  ^bb0(%a: tensor<8x6xf32>, %b: tensor<8xi32>):
    %r = kf.index_add %a[%b] {axis = 0 : i64, size = 5 : i64} : tensor<8x6xf32>, tensor<8xi32> -> tensor<5x6xf32>
    kf.yield %r : tensor<5x6xf32>
  } -> (tensor<5x6xf32>)
  return
}

// -----

// A thread an update has no tile.
// expected-error @+1 {{adds unordered, a thread an update: it takes no rowsPerBlock, columnsPerBlock or vector}}
func.func private @f() attributes {t = #kf.index_add_tiling<unordered = true, rowsPerBlock = 4>}

// -----

// An ordered index_add needs its tile.
// expected-error @+1 {{rowsPerBlock = 0: needs 1 to 1048576}}
func.func private @f() attributes {t = #kf.index_add_tiling<>}

// -----

// A transpose reads the sums out of place.
func.func @index_add_transposed_inside(%u: tensor<8x5xf32>, %i: tensor<8xi32>) {
  // expected-error @+1 {{'kf.kernel' op sums an index_add in tiles and stores its results at each sum, but 'kf.transpose' reads the sums: only elementwise ops may}}
  %0 = kf.kernel reduction(%u, %i : tensor<8x5xf32>, tensor<8xi32>) attributes {launch = #kf.launch<grid = 5, block = 256, items = 5>, tiling = #kf.index_add_tiling<rowsPerBlock = 1, columnsPerBlock = 5>} {
  ^bb0(%a: tensor<8x5xf32>, %b: tensor<8xi32>):
    %r = kf.index_add %a[%b] {axis = 0 : i64, size = 5 : i64} : tensor<8x5xf32>, tensor<8xi32> -> tensor<5x5xf32>
    %t = kf.transpose %r [1, 0] : tensor<5x5xf32> -> tensor<5x5xf32>
    kf.yield %t : tensor<5x5xf32>
  } -> (tensor<5x5xf32>)
  return
}

// -----

// expected-error @+1 {{columnsPerThread = 3: needs a power of two up to 4}}
func.func private @f() attributes {t = #kf.column_scan_tiling<columnsPerThread = 3>}

// -----

func.func @column_pairs_of_odd_columns(%x: tensor<600x45xf32>) {
  // expected-error @+1 {{'kf.kernel' op scans 45 columns 2 a thread: the columns must be a multiple of them}}
  %0 = kf.kernel reduction(%x : tensor<600x45xf32>) attributes {launch = #kf.launch<grid = 1, block = 1024, items = 1>, tiling = #kf.column_scan_tiling<rowsPerThread = 4, columnsPerThread = 2>} {
  ^bb0(%a: tensor<600x45xf32>):
    %1 = kf.cumsum %a[0] : tensor<600x45xf32> -> tensor<600x45xf32>
    kf.yield %1 : tensor<600x45xf32>
  } -> (tensor<600x45xf32>)
  return
}
