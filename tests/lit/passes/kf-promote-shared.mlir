// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true" --kf-fuse --kf-tile --kf-promote-shared | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared="tma=false" | FileCheck %s --check-prefix=WGMMA
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared | FileCheck %s --check-prefix=TMA
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true chip=sm_80" --kf-fuse --kf-tile --kf-promote-shared | FileCheck %s --check-prefix=SM80

// A 128x128 mma.sync tile, K step 32: A as [128][32+8], B as [32][128+8]
// bf16 is 18,944 bytes a stage; four stages fit the 113 KiB budget.
// CHECK-LABEL: func.func @large
// CHECK: launch = #kf.launch<grid = 1024, block = 128, items = 1024, sharedBytes = 75776>, pipeline = #kf.mma_pipeline<stages = 4>
// A 128x256 wgmma tile, K step 64, swizzled without padding: 48 KiB a
// stage, four in the 200 KiB budget; the output tile leaves through them.
// 512 tiles on 132 SMs: persistent, the staged output (66 KiB) in the last
// two stages.
// WGMMA-LABEL: func.func @large
// WGMMA: launch = #kf.launch<grid = 132, block = 256, items = 512, sharedBytes = 196608>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true, persistent = true>
// Warp-specialised: three warpgroups; four stages of 48 KiB and 16 bytes
// of mbarriers, and the output staged 128 columns at a time past them
// ([128][128+8] bf16, 34 KiB): 231,488 bytes. The block loops over tiles.
// TMA-LABEL: func.func @large
// TMA: launch = #kf.launch<grid = 132, block = 384, items = 512, sharedBytes = 231488>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true, tma = true, mmaGroups = 2>
func.func @large(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %c = kf.matmul %a, %b : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %c : tensor<4096x4096xbf16>
}

// -----

// Two results of the same dtype and rows (a pre-activation and its GELU)
// pass through the one staged tile in turn.
// TMA-LABEL: func.func @two_staged_results
// TMA: pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true, tma = true, mmaGroups = 2>
// TMA: kf.yield %{{.*}}, %{{.*}} : tensor<4096x4096xbf16>, tensor<4096x4096xbf16>
func.func @two_staged_results(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) {
  %c = kf.matmul %a, %b : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  %g = kf.gelu %c : tensor<4096x4096xbf16>
  return %g, %c : tensor<4096x4096xbf16>, tensor<4096x4096xbf16>
}

// -----

// One K step: two stages (the one in use and the one being filled) are
// all a pipeline of one step can use.
// CHECK-LABEL: func.func @one_step
// CHECK: pipeline = #kf.mma_pipeline<stages = 2>
func.func @one_step(%a: tensor<256x16xbf16>, %b: tensor<16x256xbf16>) -> tensor<256x256xbf16> {
  %c = kf.matmul %a, %b : tensor<256x16xbf16>, tensor<16x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// Kernels without a tensor-core tile are left alone.
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: pipeline
func.func @pointwise(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = kf.exp %x : tensor<64xf32>
  return %y : tensor<64xf32>
}

// -----

// Rows of an odd length (N = 50257, the GPT-2 vocabulary): the output tile
// leaves through shared memory, which must hold it ([128][256+8] bf16 fits
// in the pipeline's 192 KiB).
// WGMMA-LABEL: func.func @odd_rows
// WGMMA: sharedBytes = 196608>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true
// 256 rows are too few to interleave (see @lm_head_rows): 64 groups of 4.
// TMA-LABEL: func.func @odd_rows
// TMA-NOT: rowGroups
// TMA: sharedBytes = 231488>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true, tma = true, mmaGroups = 2>
// CHECK-LABEL: func.func @odd_rows
// CHECK: sharedBytes = 81920>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true>
func.func @odd_rows(%a: tensor<256x768xbf16>, %b: tensor<50257x768xbf16>) -> tensor<256x50257xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<256x768xbf16>, tensor<50257x768xbf16> -> tensor<256x50257xbf16>
  return %c : tensor<256x50257xbf16>
}

// -----

// The lm-head: row r starts r * 50257 elements in, on a 128-byte boundary
// (64 bf16) every 64th row only. The tiles take rows 64 apart (64 groups
// of 128 rows: one tile row each), each group's columns shifted so that
// its rows start aligned; the columns reach 63 further, still 197 tiles.
// TMA-LABEL: func.func @lm_head_rows
// TMA: items = 12608,
// TMA-SAME: stageOutput = true, tma = true,
// TMA-SAME: rowGroups = 64, rowAlign = 64>
func.func @lm_head_rows(%a: tensor<8192x768xbf16>, %b: tensor<50257x768xbf16>) -> tensor<8192x50257xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<8192x768xbf16>, tensor<50257x768xbf16> -> tensor<8192x50257xbf16>
  return %c : tensor<8192x50257xbf16>
}

// -----

// Narrow edge tiles (kf-tile's edgeN) are the warp-specialised template's
// only: without the TMA pipeline the last column of tiles is as wide as
// the others. (Rows of 8224 bytes: whole 32-byte sectors, not interleaved.)
// WGMMA-LABEL: func.func @narrow_edge
// WGMMA: #kf.mma_tiling<tileM = 128, tileN = 256, tileK = 64, warpsM = 8, warpsN = 1, groupM = 8, wgmma = true>}
// TMA-LABEL: func.func @narrow_edge
// TMA: items = 544,
// TMA-NOT: rowGroups
// TMA-SAME: wgmma = true, edgeN = 16>
func.func @narrow_edge(%a: tensor<4096x4096xbf16>, %b: tensor<4112x4096xbf16>) -> tensor<4096x4112xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<4096x4096xbf16>, tensor<4112x4096xbf16> -> tensor<4096x4112xbf16>
  return %c : tensor<4096x4112xbf16>
}

// -----

// Rows of 8208 bytes (N = 4104) start mid-sector: they interleave in 8
// groups to 128-byte lines, whose reach past N widens the edge to 64.
// TMA-LABEL: func.func @narrow_edge_mid_sector
// TMA: items = 544,
// TMA-SAME: rowGroups = 8, rowAlign = 64>
// TMA-SAME: edgeN = 64>
func.func @narrow_edge_mid_sector(%a: tensor<4096x4096xbf16>, %b: tensor<4104x4096xbf16>) -> tensor<4096x4104xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<4096x4096xbf16>, tensor<4104x4096xbf16> -> tensor<4096x4104xbf16>
  return %c : tensor<4096x4104xbf16>
}

// -----

// Interleaved rows reach 63 columns past N = 4101 (the shift of the last
// group): the edge tiles cover 68 columns, in whole 128-byte lines of the
// output (64 bf16), so 128 rather than kf-tile's 16.
// TMA-LABEL: func.func @narrow_edge_interleaved
// TMA: items = 1088,
// TMA-SAME: rowGroups = 64, rowAlign = 64>
// TMA-SAME: edgeN = 128>
func.func @narrow_edge_interleaved(%a: tensor<8192x64xbf16>, %b: tensor<4101x64xbf16>) -> tensor<8192x4101xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<8192x64xbf16>, tensor<4101x64xbf16> -> tensor<8192x4101xbf16>
  return %c : tensor<8192x4101xbf16>
}

// -----

// 1024 rows in 64 groups would be 16 a tile; on 16-byte boundaries (8 f16)
// every 8th row: 8 groups of 128 rows.
// TMA-LABEL: func.func @vector_rows
// TMA: items = 128,
// TMA-SAME: rowGroups = 8, rowAlign = 8>
func.func @vector_rows(%a: tensor<1024x128xf16>, %b: tensor<1001x128xf16>) -> tensor<1024x1001xf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<1024x128xf16>, tensor<1001x128xf16> -> tensor<1024x1001xf16>
  return %c : tensor<1024x1001xf16>
}

// -----

// FlashAttention keeps a 128-row Q tile and two stages of 64-key K and V
// tiles: (128 x 128 + 2 x 64 x (128 + 128)) x 2 bytes = 96 KiB. With the
// TMA a third warpgroup copies them (384 threads), and nine mbarriers (Q's,
// and per stage K and V full and empty) follow the tiles: 72 bytes more.
// WGMMA-LABEL: func.func @attention
// WGMMA: launch = #kf.launch<grid = 4, block = 256, items = 4, sharedBytes = 98304>, pipeline = #kf.flash_pipeline<stages = 2>
// WGMMA-NOT: tma
// TMA-LABEL: func.func @attention
// TMA: launch = #kf.launch<grid = 4, block = 384, items = 4, sharedBytes = 98376>, pipeline = #kf.flash_pipeline<stages = 2, tma = true>
func.func @attention(%q: tensor<1x2x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16> {
  %o = kf.attention %q, %k, %v {scale = 0.1 : f64} : tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xbf16>
  return %o : tensor<1x2x256x128xbf16>
}

// -----

// A q computed in the kernel (here negated) keeps the TMA pipeline for K
// and V: the multiplying warpgroups write Q's tile themselves.
// TMA-LABEL: func.func @attention_q_prologue
// TMA: kf.kernel attention
// TMA-SAME: block = 384,
// TMA-SAME: tma = true
// TMA: kf.neg
func.func @attention_q_prologue(%q: tensor<1x2x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16> {
  %q2 = kf.neg %q : tensor<1x2x256x128xbf16>
  %o = kf.attention %q2, %k, %v {scale = 0.1 : f64} : tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xbf16>
  return %o : tensor<1x2x256x128xbf16>
}

// -----

// Head dim 64 keeps the cp.async kernel and asks the assembler for two
// blocks an SM (128 registers a thread), which the causal blocks' short
// key loops need to hide their prologues and epilogues.
// TMA-LABEL: func.func @attention_d64
// TMA: launch = #kf.launch<grid = 4, block = 256, items = 4, sharedBytes = 49152, minBlocksPerSM = 2>, pipeline = #kf.flash_pipeline<stages = 2>
func.func @attention_d64(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %o = kf.attention %q, %k, %v {causal = true, scale = 0.1 : f64} : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16> -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

// -----

// Rows the TMA cannot copy: head dim 100 makes q's and k's rows 200
// bytes, not whole 16-byte chunks, so the block copies with cp.async (4-
// and 8-byte copies) even with the TMA on. Head dim 96 pads to 128 and
// copies with the TMA (zeros past 96 from the tensor maps).
// TMA-LABEL: func.func @attention_rows
// TMA: block = 256,
// TMA-NOT: tma = true
// TMA: block = 384,
// TMA-SAME: tma = true
// TMA-SAME: headDim = 128,
func.func @attention_rows(%q: tensor<1x2x256x100xbf16>, %k: tensor<1x2x256x100xbf16>, %v: tensor<1x2x256x128xbf16>,
                          %q2: tensor<1x2x256x96xbf16>, %k2: tensor<1x2x256x96xbf16>) -> (tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>) {
  %o = kf.attention %q, %k, %v {scale = 0.1 : f64} : tensor<1x2x256x100xbf16>, tensor<1x2x256x100xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xbf16>
  %o2 = kf.attention %q2, %k2, %v {scale = 0.1 : f64} : tensor<1x2x256x96xbf16>, tensor<1x2x256x96xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xbf16>
  return %o, %o2 : tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>
}

// -----

// FlashAttention with a bias of q's dtype over rows of whole 16-byte
// chunks (640 keys): two stages of its [128, 64] tiles, rows padded to 72,
// join Q (16 KiB at head dim 64) and K/V (32 KiB): 16384 + 32768 + 36864.
// With 333 keys the bias is read from global memory instead. Head dim 64
// keeps the cp.async kernel, TMA or not; the bias computed at each score
// takes registers past two blocks' 128, so no minBlocksPerSM.
// TMA-LABEL: func.func @attention_bias
// TMA-NOT: tma = true
// TMA: return
// WGMMA-LABEL: func.func @attention_bias
// WGMMA: sharedBytes = 86016>
// WGMMA-SAME: stageScoresInput = true
// WGMMA: sharedBytes = 49152>
// WGMMA-NOT: stageScoresInput
// WGMMA: return
func.func @attention_bias(%q: tensor<1x4x640x64xbf16>, %k: tensor<1x4x640x64xbf16>, %v: tensor<1x4x640x64xbf16>, %b: tensor<1x4x640x640xbf16>,
                          %q2: tensor<1x4x200x64xbf16>, %k2: tensor<1x4x333x64xbf16>, %b2: tensor<1x4x200x333xbf16>) -> (tensor<1x4x640x64xbf16>, tensor<1x4x200x64xbf16>) {
  %0 = kf.attention %q, %k, %v bias %b : tensor<1x4x640x640xbf16> {scale = 0.125 : f64} : tensor<1x4x640x64xbf16>, tensor<1x4x640x64xbf16>, tensor<1x4x640x64xbf16> -> tensor<1x4x640x64xbf16>
  %1 = kf.attention %q2, %k2, %k2 bias %b2 : tensor<1x4x200x333xbf16> {scale = 0.125 : f64} : tensor<1x4x200x64xbf16>, tensor<1x4x333x64xbf16>, tensor<1x4x333x64xbf16> -> tensor<1x4x200x64xbf16>
  return %0, %1 : tensor<1x4x640x64xbf16>, tensor<1x4x200x64xbf16>
}

// -----

// Decode-sized M (16 rows, under a 128-row tile): A's TMA boxes would be
// mostly zero fill, so the cp.async pipeline stays, four stages where two
// blocks an SM hold them (128x32 tiles: 20 KiB a stage), six where one
// block an SM holds four (128x128 tiles of an N-major B, 32 KiB a stage:
// more of B in flight). With 128 rows and a
// narrow 128x64 tile (24 KiB a stage) the TMA pipeline takes its most
// stages, 8, beside the output staged [128][64+8].
// TMA-LABEL: func.func @decode
// TMA-NOT: tma
// TMA: #kf.mma_pipeline<stages = 4
// TMA-NOT: tma
// TMA-LABEL: func.func @decode_one_block_an_sm
// TMA: launch = #kf.launch<grid = 86, block = 256, items = 86, sharedBytes = 196608>
// TMA-SAME: #kf.mma_pipeline<stages = 6, stageOutput = true>
// TMA-SAME: #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 64,
// TMA-LABEL: func.func @narrow
// TMA: block = 384,
// TMA-SAME: sharedBytes = 215168>
// TMA-SAME: #kf.mma_pipeline<stages = 8, stageOutput = true, tma = true
// TMA-SAME: #kf.mma_tiling<tileM = 128, tileN = 64, tileK = 64,
func.func @decode(%a: tensor<16x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<16x4096xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  return %c : tensor<16x4096xbf16>
}
func.func @decode_one_block_an_sm(%a: tensor<16x4096xbf16>, %b: tensor<4096x11008xbf16>) -> tensor<16x11008xbf16> {
  %c = kf.matmul %a, %b : tensor<16x4096xbf16>, tensor<4096x11008xbf16> -> tensor<16x11008xbf16>
  return %c : tensor<16x11008xbf16>
}
func.func @narrow(%a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> {
  %c = kf.matmul %a, %b : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  return %c : tensor<1024x1024xbf16>
}

// -----

// Rows too long for registers: a softmax of 65536 bf16 columns passes over
// each row twice (its statistics online, then its output). On Hopper kf-tile
// splits each row over a cluster of 4 blocks of 512 threads, 32 values a
// thread in registers. Without clusters (sm_80) the first pass copies the
// row into shared memory (128 KiB) for 1024 threads, 8 vectors each. A row
// sum passes once and stays as it was; so does a softmax whose row would
// fit neither (196608 f32 columns: 768 KiB, 48 values a thread of a
// cluster of 8).
// CHECK-LABEL: func.func @long_rows
// CHECK: launch = #kf.launch<grid = 256, block = 512, items = 64, minBlocksPerSM = 2>, tiling = #kf.row_tiling<vector = 8, chunks = 4, inRegisters = true, cluster = 4>
// CHECK: launch = #kf.launch<grid = 64, block = 256, items = 64>, tiling = #kf.row_tiling<vector = 8, chunks = 32>
// CHECK: launch = #kf.launch<grid = 4, block = 256, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 192>
// SM80-LABEL: func.func @long_rows
// SM80: launch = #kf.launch<grid = 64, block = 1024, items = 64, sharedBytes = 131072>, tiling = #kf.row_tiling<vector = 8, chunks = 8, inShared = true>
// SM80: launch = #kf.launch<grid = 64, block = 256, items = 64>, tiling = #kf.row_tiling<vector = 8, chunks = 32>
// SM80: launch = #kf.launch<grid = 4, block = 256, items = 4>, tiling = #kf.row_tiling<vector = 4, chunks = 192>
func.func @long_rows(%x: tensor<64x65536xbf16>, %x2: tensor<64x65536xbf16>, %z: tensor<4x196608xf32>) -> (tensor<64x65536xbf16>, tensor<64xbf16>, tensor<4x196608xf32>) {
  %y = kf.softmax %x {axis = 1} : tensor<64x65536xbf16>
  %s = kf.reduce sum %x2 [1] : tensor<64x65536xbf16> -> tensor<64xbf16>
  %w = kf.softmax %z {axis = 1} : tensor<4x196608xf32>
  return %y, %s, %w : tensor<64x65536xbf16>, tensor<64xbf16>, tensor<4x196608xf32>
}
