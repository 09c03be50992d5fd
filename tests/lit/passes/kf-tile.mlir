// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true" --kf-fuse --kf-tile | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-fuse --kf-tile | FileCheck %s --check-prefix=UNALIGNED
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=WGMMA
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true allow-tf32=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=TF32

// Pointwise: 16-byte vectors of f32 (4), 256 threads, the grid covering
// the work once; large tensors take two vectors a thread step, interleaved
// across the block for f32.
// CHECK-LABEL: func.func @pointwise
// CHECK: launch = #kf.launch<grid = 1024, block = 256, items = 2097152>, tiling = #kf.pointwise_tiling<vector = 4, unroll = 2, interleave = true>
// UNALIGNED-LABEL: func.func @pointwise
// UNALIGNED: launch = #kf.launch<grid = 8192, block = 256, items = 2097152>, tiling = #kf.pointwise_tiling<>
func.func @pointwise(%x: tensor<2048x1024xf32>) -> tensor<2048x1024xf32> {
  %y = kf.exp %x : tensor<2048x1024xf32>
  return %y : tensor<2048x1024xf32>
}

// -----

// Large 16-bit tensors: two adjacent vectors a thread step. Small ones
// (and f32 ones whose vectors do not fill whole blocks twice): one.
// CHECK-LABEL: func.func @pointwise_bf16
// CHECK: launch = #kf.launch<grid = 512, block = 256, items = 2097152>, tiling = #kf.pointwise_tiling<vector = 8, unroll = 2>
// CHECK: launch = #kf.launch<grid = 1027, block = 256, items = 1051648>, tiling = #kf.pointwise_tiling<vector = 4>
func.func @pointwise_bf16(%x: tensor<2048x1024xbf16>, %z: tensor<1027x1024xf32>) -> (tensor<2048x1024xbf16>, tensor<1027x1024xf32>) {
  %y = kf.exp %x : tensor<2048x1024xbf16>
  %w = kf.exp %z : tensor<1027x1024xf32>
  return %y, %w : tensor<2048x1024xbf16>, tensor<1027x1024xf32>
}

// -----

// A row kernel: one block per row, threads holding about 4 vectors each,
// the row in registers (8 vectors of 8 bf16 = 64 values is too many: 2
// chunks of 8 is 16).
// CHECK-LABEL: func.func @rows
// CHECK: kf.kernel normalization
// CHECK-SAME: launch = #kf.launch<grid = 300, block = 128, items = 300, minBlocksPerSM = 8>, tiling = #kf.row_tiling<vector = 8, chunks = 4, inRegisters = true>
func.func @rows(%x: tensor<300x4096xbf16>) -> tensor<300x4096xbf16> {
  %y = kf.softmax %x {axis = 1} : tensor<300x4096xbf16>
  return %y : tensor<300x4096xbf16>
}

// -----

// Short rows share blocks: 128 bf16 columns are 16 vectors, 4 threads of 4
// vectors each; 64 rows fill a block of 256 threads while the grid keeps
// four blocks an SM (2048 of them). With 2111 rows of 1000 columns a warp
// a row, 4 rows a block leave 528 blocks (8 would leave 264).
// CHECK-LABEL: func.func @short_rows
// CHECK: kf.kernel normalization
// CHECK-SAME: launch = #kf.launch<grid = 2048, block = 256, items = 2048, minBlocksPerSM = 4>, tiling = #kf.row_tiling<vector = 8, chunks = 4, inRegisters = true, rowsPerBlock = 64>
// CHECK: kf.kernel normalization
// CHECK-SAME: launch = #kf.launch<grid = 528, block = 128, items = 528, minBlocksPerSM = 8>, tiling = #kf.row_tiling<vector = 8, chunks = 4, inRegisters = true, rowsPerBlock = 4>
func.func @short_rows(%x: tensor<131072x128xbf16>, %z: tensor<2111x1000xbf16>) -> (tensor<131072x128xbf16>, tensor<2111x1000xbf16>) {
  %y = kf.softmax %x {axis = 1} : tensor<131072x128xbf16>
  %w = kf.softmax %z {axis = 1} : tensor<2111x1000xbf16>
  return %y, %w : tensor<131072x128xbf16>, tensor<2111x1000xbf16>
}

// -----

// argmax's and cumsum's row templates reduce across their whole block:
// their rows never share one (found by kfuse-fuzz: a [5, 211, 1] argmin).
// CHECK-LABEL: func.func @argmin_short_rows
// CHECK: launch = #kf.launch<grid = 1055, block = 32, items = 1055, minBlocksPerSM = 32>, tiling = #kf.row_tiling<inRegisters = true>
func.func @argmin_short_rows(%x: tensor<5x211x1xf32>) -> tensor<5x211x1xi64> {
  %y = kf.arg_reduce min %x[2] {keep_dims = true} : tensor<5x211x1xf32> -> tensor<5x211x1xi64>
  return %y : tensor<5x211x1xi64>
}

// -----

// A cumsum down columns: a block of 32 x 32 threads a 32-column tile of
// each index before the axis (3 x 2 tiles for 45 columns); along the last
// axis, a block a row.
// CHECK-LABEL: func.func @cumsum_columns
// CHECK: launch = #kf.launch<grid = 6, block = 1024, items = 6>, tiling = #kf.column_scan_tiling<>
// CHECK: tiling = #kf.row_tiling<
func.func @cumsum_columns(%x: tensor<3x600x45xf32>, %z: tensor<64x300xf32>) -> (tensor<3x600x45xf32>, tensor<64x300xf32>) {
  %y = kf.cumsum %x[1] : tensor<3x600x45xf32> -> tensor<3x600x45xf32>
  %w = kf.cumsum %z[1] : tensor<64x300xf32> -> tensor<64x300xf32>
  return %y, %w : tensor<3x600x45xf32>, tensor<64x300xf32>
}

// -----

// Even columns: two a thread, a 64-column tile a block (3 tiles of 130
// columns, of 2 indices), chunks of 4 rows a thread.
// CHECK-LABEL: func.func @cumsum_column_pairs
// CHECK: launch = #kf.launch<grid = 6, block = 1024, items = 6>, tiling = #kf.column_scan_tiling<rowsPerThread = 4, columnsPerThread = 2>
func.func @cumsum_column_pairs(%x: tensor<2x300x130xf32>) -> tensor<2x300x130xf32> {
  %y = kf.cumsum %x[1] : tensor<2x300x130xf32> -> tensor<2x300x130xf32>
  return %y : tensor<2x300x130xf32>
}

// -----

// i1 buffers are never vectorised (LLVM packs vectors of i1 into bits).
// CHECK-LABEL: func.func @bools
// CHECK: tiling = #kf.pointwise_tiling<>
func.func @bools(%x: tensor<1024xf32>) -> tensor<1024xi1> {
  %y = kf.compare lt, %x, %x : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xi1>
  return %y : tensor<1024xi1>
}

// -----

// bf16 matmuls on aligned buffers get a tensor-core block tile, chosen by
// counting waves. With mma.sync, 128x128 tiles of four warps (two blocks
// an SM); with wgmma (sm_90a), 128x256 tiles of two warpgroups fill 132
// SMs with a 4096^2 output in 4 waves ...
// CHECK-LABEL: func.func @matmul_large
// CHECK: kf.kernel matmul
// CHECK-SAME: launch = #kf.launch<grid = 1024, block = 128, items = 1024>, tiling = #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 32, warpsM = 2, warpsN = 2, groupM = 8>
// WGMMA-LABEL: func.func @matmul_large
// WGMMA: launch = #kf.launch<grid = 512, block = 256, items = 512>, tiling = #kf.mma_tiling<tileM = 128, tileN = 256, tileK = 64, warpsM = 8, warpsN = 1, groupM = 8, wgmma = true>
// UNALIGNED-LABEL: func.func @matmul_large
// UNALIGNED-NOT: mma
// UNALIGNED: no_tensor_cores = "its buffers are not known to be 16-byte aligned"
func.func @matmul_large(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %c = kf.matmul %a, %b : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %c : tensor<4096x4096xbf16>
}

// -----

// An lm-head: A (8192 x 768, 12.6 MB) stays in L2 while all 64 tile rows
// sweep each tile column, so that B streams from HBM once.
// WGMMA-LABEL: func.func @matmul_lm_head
// WGMMA: #kf.mma_tiling<tileM = 128, tileN = 256,
// WGMMA-SAME: groupM = 64
func.func @matmul_lm_head(%a: tensor<8192x768xbf16>, %b: tensor<50257x768xbf16>) -> tensor<8192x50257xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<8192x768xbf16>, tensor<50257x768xbf16> -> tensor<8192x50257xbf16>
  return %c : tensor<8192x50257xbf16>
}

// -----

// N = 4104 is 16 whole tiles of 256 and 8 columns: 544 uniform tiles would
// take 5 rounds on 132 SMs, 1056 of 128x128 take 8 of half the work. With
// wgmma the last column of tiles is 16 wide (edgeN): the 512 whole tiles
// take 4 rounds and the 32 narrow ones, which mostly load A, go to the 16
// SMs with 3. mma.sync has no narrow edge tiles.
// CHECK-LABEL: func.func @matmul_narrow_edge
// CHECK: #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 32, warpsM = 2, warpsN = 2, groupM = 8>}
// WGMMA-LABEL: func.func @matmul_narrow_edge
// WGMMA: items = 544
// WGMMA-SAME: #kf.mma_tiling<tileM = 128, tileN = 256, tileK = 64, warpsM = 8, warpsN = 1, groupM = 8, wgmma = true, edgeN = 16>
func.func @matmul_narrow_edge(%a: tensor<4096x4096xbf16>, %b: tensor<4104x4096xbf16>) -> tensor<4096x4104xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<4096x4096xbf16>, tensor<4104x4096xbf16> -> tensor<4096x4104xbf16>
  return %c : tensor<4096x4104xbf16>
}

// -----

// ... while a decode-sized one (M = 16) takes small tiles, to spread over
// more SMs.
// CHECK-LABEL: func.func @matmul_small_m
// CHECK: #kf.launch<grid = 64,
// CHECK-SAME: #kf.mma_tiling<tileM = 64, tileN = 64,
// WGMMA-LABEL: func.func @matmul_small_m
// WGMMA: #kf.launch<grid = 128,
// WGMMA-SAME: #kf.mma_tiling<tileM = 128, tileN = 32,
func.func @matmul_small_m(%a: tensor<16x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<16x4096xbf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  return %c : tensor<16x4096xbf16>
}

// -----

// f32 operands (no TF32 unless allowed) and rows that are not whole 16-byte
// chunks take the one-thread-per-output template.
// CHECK-LABEL: func.func @matmul_f32
// CHECK-NOT: mma
// CHECK: no_tensor_cores = "its operands are f32 (exact: TF32 not allowed)"
// CHECK-NOT: mma
// CHECK: no_tensor_cores = "its operands are f32 (exact: TF32 not allowed)"
// With allow-tf32, K-major f32 operands take TF32 tiles: the same 128 bytes
// of K a step as 16-bit tiles (32 elements); a B that is not K-major keeps
// the matmul off them (kf-pad copies it transposed first).
// TF32-LABEL: func.func @matmul_f32
// TF32: kf.kernel matmul
// TF32-SAME: no_tensor_cores = "its f32 operands are not both K-major (TF32 products read A as [M, K] and B as [N, K] only)"
// TF32: kf.kernel matmul
// TF32-SAME: #kf.mma_tiling<tileM = 128, tileN = 32, tileK = 32,
// TF32-SAME: wgmma = true, tf32 = true>
func.func @matmul_f32(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %c = kf.matmul %a, %b : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %d = kf.matmul %a, %b {transpose_b = true} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %c, %d : tensor<64x64xf32>, tensor<64x64xf32>
}
// CHECK-LABEL: func.func @matmul_odd_k
// CHECK-NOT: mma
// CHECK: no_tensor_cores = "a contiguous operand dim (27) is not a multiple of 8"
func.func @matmul_odd_k(%a: tensor<64x27xbf16>, %b: tensor<27x64xbf16>) -> tensor<64x64xbf16> {
  %c = kf.matmul %a, %b : tensor<64x27xbf16>, tensor<27x64xbf16> -> tensor<64x64xbf16>
  return %c : tensor<64x64xbf16>
}

// -----

// Attention on sm_90 (wgmma): FlashAttention, a block per 128 query rows
// of a head (4 x 16 x 32), 64-key tiles, head dims padded to 64 (96 -> 128);
// Q in registers up to head dim 128.
// WGMMA-LABEL: func.func @attention
// WGMMA: kf.kernel attention
// WGMMA-SAME: launch = #kf.launch<grid = 2048, block = 256, items = 2048>, tiling = #kf.flash_tiling<blockQ = 128, blockK = 64, headDim = 128, valueDim = 128, qInRegisters = true>
// UNALIGNED-LABEL: func.func @attention
// UNALIGNED-NOT: flash
// UNALIGNED: no_tensor_cores = "its buffers are not known to be 16-byte aligned"
// CHECK-LABEL: func.func @attention
// CHECK: no_tensor_cores = "the FlashAttention template needs sm_90 (wgmma)"
func.func @attention(%q: tensor<4x16x4096x96xbf16>, %k: tensor<4x4x4096x96xbf16>, %v: tensor<4x4x4096x96xbf16>) -> tensor<4x16x4096x96xbf16> {
  %o = kf.attention %q, %k, %v {causal = true, scale = 0.1 : f64} : tensor<4x16x4096x96xbf16>, tensor<4x4x4096x96xbf16>, tensor<4x4x4096x96xbf16> -> tensor<4x16x4096x96xbf16>
  return %o : tensor<4x16x4096x96xbf16>
}

// -----

// What keeps attention off the FlashAttention template, said in the IR.
// A mask operand does not: the template reads it at each score.
// WGMMA-LABEL: func.func @attention_refused
// WGMMA: kf.kernel attention(%arg0, %arg1, %arg2, %arg3 :
// WGMMA-SAME: #kf.flash_tiling
// WGMMA: no_tensor_cores = "head dims 21 and 21 leave rows of odd length, not copied into padded rows"
// WGMMA: no_tensor_cores = "it is empty"
// WGMMA: no_tensor_cores = "its operands are not bf16/f16"
func.func @attention_refused(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>, %m: tensor<1x2x64x64xi1>,
                             %q21: tensor<1x2x64x21xbf16>, %k21: tensor<1x2x64x21xbf16>,
                             %k0: tensor<1x2x0x64xbf16>,
                             %q32: tensor<1x2x64x64xf32>)
    -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x21xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xf32>) {
  %0 = kf.attention %q, %k, %v mask %m : tensor<1x2x64x64xi1> {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %1 = kf.attention %q21, %k21, %k21 {scale = 0.125 : f64} : tensor<1x2x64x21xbf16>, tensor<1x2x64x21xbf16>, tensor<1x2x64x21xbf16> -> tensor<1x2x64x21xbf16>
  %2 = kf.attention %q, %k0, %k0 {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x0x64xbf16>, tensor<1x2x0x64xbf16> -> tensor<1x2x64x64xbf16>
  %3 = kf.attention %q32, %q32, %q32 {scale = 0.125 : f64} : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
  return %0, %1, %2, %3 : tensor<1x2x64x64xbf16>, tensor<1x2x64x21xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xf32>
}

// -----

// LayerNorm's weight gradient: a sum down the columns of dy * xhat, whose
// prologue (casts, the row statistics broadcast) the column template
// computes at each element it reads: one kernel of 32-column tiles, 32 row
// groups a block.
// CHECK-LABEL: func.func @column_sum_prologue
// CHECK: kf.kernel reduction(%arg0, %arg2, %arg3, %arg1 :
// CHECK-SAME: launch = #kf.launch<grid = 32, block = 1024, items = 1000>
// CHECK-SAME: tiling = #kf.column_tiling
// CHECK: kf.cast
// CHECK: kf.reduce sum %{{.*}} [0]
// CHECK-NOT: kf.kernel
func.func @column_sum_prologue(%x: tensor<512x1000xbf16>, %dy: tensor<512x1000xbf16>, %mean: tensor<512x1xf32>, %rstd: tensor<512x1xf32>) -> tensor<1000xf32> {
  %xf = kf.cast %x : tensor<512x1000xbf16> -> tensor<512x1000xf32>
  %m = kf.broadcast %mean : tensor<512x1xf32> -> tensor<512x1000xf32>
  %r = kf.broadcast %rstd : tensor<512x1xf32> -> tensor<512x1000xf32>
  %c = kf.sub %xf, %m : tensor<512x1000xf32>
  %h = kf.mul %c, %r : tensor<512x1000xf32>
  %g = kf.cast %dy : tensor<512x1000xbf16> -> tensor<512x1000xf32>
  %p = kf.mul %g, %h : tensor<512x1000xf32>
  %s = kf.reduce sum %p [0] : tensor<512x1000xf32> -> tensor<1000xf32>
  return %s : tensor<1000xf32>
}

// -----

// Positions added to every sequence of a batch: in the output's order each
// position is read again 8.9 MB of the kernel's bytes later (a sequence's
// input and output, and an eighth of the positions), so the blocks take
// their chunks from the 8 sequences in turn and stream their results past
// L2. The RoPE-sized table below is read again 1 MB later: no groups.
// CHECK-LABEL: func.func @broadcast_over_batch
// CHECK: tiling = #kf.pointwise_tiling<vector = 8, unroll = 2, groups = 8, streamStores = true>
// CHECK: tiling = #kf.pointwise_tiling<vector = 8, unroll = 2>
// UNALIGNED-LABEL: func.func @broadcast_over_batch
// UNALIGNED: tiling = #kf.pointwise_tiling<groups = 8, streamStores = true>
// UNALIGNED: tiling = #kf.pointwise_tiling<>
func.func @broadcast_over_batch(%x: tensor<8x2048x1024xbf16>, %pos: tensor<2048x1024xbf16>,
                                %y: tensor<64x2048x128xbf16>, %cos: tensor<2048x128xbf16>)
    -> (tensor<8x2048x1024xbf16>, tensor<64x2048x128xbf16>) {
  %p = kf.broadcast %pos : tensor<2048x1024xbf16> -> tensor<8x2048x1024xbf16>
  %s = kf.add %x, %p : tensor<8x2048x1024xbf16>
  %c = kf.broadcast %cos : tensor<2048x128xbf16> -> tensor<64x2048x128xbf16>
  %t = kf.mul %y, %c : tensor<64x2048x128xbf16>
  return %s, %t : tensor<8x2048x1024xbf16>, tensor<64x2048x128xbf16>
}

// -----

// An embedding lookup plus positions: a thread step takes four vectors a
// block apart, each from a row of its own (a row is 256 vectors), so that
// four token ids and then four gathered rows are in flight together. A
// pick along the last dim reads elements, not rows: its vectors stay
// adjacent.
// CHECK-LABEL: func.func @gathered_rows
// CHECK: tiling = #kf.pointwise_tiling<vector = 8, unroll = 4, interleave = true, groups = 8, streamStores = true>
// CHECK: tiling = #kf.pointwise_tiling<vector = 8, unroll = 2>
func.func @gathered_rows(%table: tensor<8192x2048xbf16>, %ids: tensor<8x4096xi64>,
                         %pos: tensor<4096x2048xbf16>, %x: tensor<1024x2048xbf16>,
                         %cols: tensor<1024x2048xi64>)
    -> (tensor<8x4096x2048xbf16>, tensor<1024x2048xbf16>) {
  %g = kf.gather %table[%ids] {axis = 0} : tensor<8192x2048xbf16>, tensor<8x4096xi64> -> tensor<8x4096x2048xbf16>
  %p = kf.broadcast %pos : tensor<4096x2048xbf16> -> tensor<8x4096x2048xbf16>
  %s = kf.add %g, %p : tensor<8x4096x2048xbf16>
  %t = kf.take_along_axis %x[%cols] {axis = 1} : tensor<1024x2048xbf16>, tensor<1024x2048xi64> -> tensor<1024x2048xbf16>
  %u = kf.mul %t, %x : tensor<1024x2048xbf16>
  return %s, %u : tensor<8x4096x2048xbf16>, tensor<1024x2048xbf16>
}

// -----

// A softmax's rows too long for one block's registers are split over the
// smallest cluster whose blocks of 512 threads hold 32 values a thread: f32
// rows of 32768 over 2 blocks. A LayerNorm of bf16 rows of 65536 keeps the
// looped template (kf-promote-shared stages it): its mean and variance
// would take a cluster barrier each. A log-sum-exp reads its row once (the
// online normaliser) and keeps the looped template.
// CHECK-LABEL: func.func @cluster_rows
// CHECK: launch = #kf.launch<grid = 16, block = 512, items = 8, minBlocksPerSM = 2>, tiling = #kf.row_tiling<vector = 4, chunks = 8, inRegisters = true, cluster = 2>
// CHECK: launch = #kf.launch<grid = 16, block = 256, items = 16>, tiling = #kf.row_tiling<vector = 8, chunks = 32>
// CHECK: launch = #kf.launch<grid = 8, block = 256, items = 8>, tiling = #kf.row_tiling<vector = 8, chunks = 32>
func.func @cluster_rows(%x: tensor<8x32768xf32>, %y: tensor<16x65536xbf16>, %z: tensor<8x65536xbf16>) -> (tensor<8x32768xf32>, tensor<16x65536xbf16>, tensor<8x1xf32>) {
  %s = kf.softmax %x {axis = 1} : tensor<8x32768xf32>
  %yf = kf.cast %y : tensor<16x65536xbf16> -> tensor<16x65536xf32>
  %m = kf.reduce mean %yf [1] {keep_dims = true} : tensor<16x65536xf32> -> tensor<16x1xf32>
  %mb = kf.broadcast %m : tensor<16x1xf32> -> tensor<16x65536xf32>
  %c = kf.sub %yf, %mb : tensor<16x65536xf32>
  %c2 = kf.mul %c, %c : tensor<16x65536xf32>
  %v = kf.reduce mean %c2 [1] {keep_dims = true} : tensor<16x65536xf32> -> tensor<16x1xf32>
  %r = kf.rsqrt %v : tensor<16x1xf32>
  %rb = kf.broadcast %r : tensor<16x1xf32> -> tensor<16x65536xf32>
  %n = kf.mul %c, %rb : tensor<16x65536xf32>
  %nb = kf.cast %n : tensor<16x65536xf32> -> tensor<16x65536xbf16>
  %zf = kf.cast %z : tensor<8x65536xbf16> -> tensor<8x65536xf32>
  %zm = kf.reduce max %zf [1] {keep_dims = true} : tensor<8x65536xf32> -> tensor<8x1xf32>
  %zmb = kf.broadcast %zm : tensor<8x1xf32> -> tensor<8x65536xf32>
  %zs = kf.sub %zf, %zmb : tensor<8x65536xf32>
  %ze = kf.exp %zs : tensor<8x65536xf32>
  %zsum = kf.reduce sum %ze [1] {keep_dims = true} : tensor<8x65536xf32> -> tensor<8x1xf32>
  %zl = kf.log %zsum : tensor<8x1xf32>
  %lse = kf.add %zl, %zm : tensor<8x1xf32>
  return %s, %nb, %lse : tensor<8x32768xf32>, tensor<16x65536xbf16>, tensor<8x1xf32>
}
