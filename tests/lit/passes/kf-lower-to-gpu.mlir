// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true" --kf-fuse --kf-pad --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-pad --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s --check-prefix=ATTN
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-pad --kf-tile --kf-promote-shared="tma=false" --kf-lower-to-gpu | FileCheck %s --check-prefix=COPIES

// A pointwise kernel: flat memref arguments known to be 16-byte aligned,
// vector loads and stores, f32 math on widened bf16 (a tanh rounded to
// bf16 is tanh.approx.f32).
// CHECK-LABEL: gpu.module @kf_kernels
// CHECK: gpu.func @k0_pointwise(%{{.*}}: memref<4096xbf16> {llvm.align = 16 : i64}, %{{.*}}: memref<4096xbf16> {llvm.align = 16 : i64}) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: vector.load %{{.*}} : memref<4096xbf16>, vector<8xbf16>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: llvm.inline_asm {{.*}}"tanh.approx.f32 $0, $1;", "=f,f" %{{.*}} : (f32) -> f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: vector.store %{{.*}} : memref<4096xbf16>, vector<8xbf16>
func.func @pointwise(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %y = kf.tanh %x : tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// A tanh rounded to f16 keeps libdevice's tanhf: tanh.approx.f32's error
// is not below an f16 result's rounding.
// CHECK-LABEL: func.func @tanh_f16
// CHECK: gpu.func @k0_pointwise
// CHECK: math.tanh %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @tanh_f16(%x: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %y = kf.tanh %x : tensor<64x64xf16>
  return %y : tensor<64x64xf16>
}

// -----

// A row kernel: a block reduction through warp shuffles and workgroup
// memory, then the normalised row. Its rows are in registers: 1024
// threads an SM (8 blocks of 128), PTX's .minnctapersm.
// CHECK-LABEL: gpu.func @k0_normalization
// CHECK-SAME: workgroup(%{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = 8 : i32
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: llvm.inline_asm {{.*}}"ex2.approx.ftz.f32
// CHECK: vector.store
func.func @rows(%x: tensor<16x2048xf32>) -> tensor<16x2048xf32> {
  %y = kf.softmax %x {axis = 1} : tensor<16x2048xf32>
  return %y : tensor<16x2048xf32>
}

// -----

// The kernel records which gpu.func computes it.
// CHECK-LABEL: func.func @named
// CHECK: kf.kernel matmul{{.*}}gpu_func = "k0_matmul"
func.func @named(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %c = kf.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %c : tensor<4x2xf32>
}

// -----

// A tensor-core matmul with a bias epilogue: dynamic shared memory for the
// stages, cp.async copies (no edge tests: the tiles divide the shape), ldmatrix (transposed
// for a K-major B), m16n8k16 bf16 products into f32, the epilogue on the
// accumulators, and pairs of bf16 stored at a time.
// CHECK-LABEL: gpu.func @k0_matmul
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvgpu.device_async_copy {{.*}}, 8 {bypassL1}
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 2
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// CHECK-SAME: multiplicandAPtxType = #nvvm.mma_type<bf16>
// CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: scf.if
// CHECK: arith.addf
// CHECK: vector.store %{{.*}} : memref<{{[0-9]+}}xbf16>, vector<2xbf16>
func.func @matmul_bias(%a: tensor<256x128xbf16>, %b: tensor<128x256xbf16>, %bias: tensor<256xbf16>) -> tensor<256x256xbf16> {
  %c = kf.matmul %a, %b : tensor<256x128xbf16>, tensor<128x256xbf16> -> tensor<256x256xbf16>
  %bb = kf.broadcast %bias : tensor<256xbf16> -> tensor<256x256xbf16>
  %y = kf.add %c, %bb : tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}

// -----

// The FlashAttention template without the TMA: Q, K and V tiles copied
// asynchronously (cp.async) into
// dynamic shared memory; Q's fragments loaded once with ldmatrix; per key
// tile S = Q K^T (register-A wgmma, PTX) and O += P V queued together, one
// group waited before the softmax (exp2, quad shuffles) and both after;
// O / l stored in pairs.
// COPIES-LABEL: gpu.func @k0_attention
// COPIES-SAME: known_block_size = array<i32: 256, 1, 1>
// COPIES: gpu.dynamic_shared_memory
// COPIES: nvgpu.device_async_copy
// COPIES: nvgpu.ldmatrix
// COPIES: scf.for
// COPIES: nvvm.wgmma.fence.aligned
// COPIES: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// COPIES: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// COPIES: nvvm.wgmma.wait.group.sync.aligned 1
// COPIES: ex2.approx.ftz.f32
// COPIES: gpu.shuffle  xor
// COPIES: nvvm.wgmma.wait.group.sync.aligned 0
// COPIES: vector.store {{.*}} vector<2xbf16>
//
// With the TMA (pipeline `tma`): warpgroups 0 and 1 multiply, one thread of
// warpgroup 2 copies Q, K and V through three tensor maps; mbarriers hand
// the stages over, so no block barrier follows their initialisation. Tile
// 0 (no P V before it) is peeled; the multiplying warpgroups release K
// once S is done and V once P V is.
// ATTN-LABEL: gpu.func @k0_attention
// ATTN-SAME: %arg4: !llvm.ptr, %arg5: !llvm.ptr, %arg6: !llvm.ptr
// ATTN-SAME: kf.tensor_maps = 3 : i64, known_block_size = array<i32: 384, 1, 1>
// ATTN-COUNT-9: nvvm.mbarrier.init
// ATTN: nvvm.fence.mbarrier.init
// ATTN: gpu.barrier
// ATTN-NOT: gpu.barrier
// ATTN-NOT: nvgpu.device_async_copy
// ATTN: nvvm.setmaxregister increase 232
// ATTN: nvvm.mbarrier.try_wait.parity
// ATTN: nvgpu.ldmatrix
// ATTN: nvvm.mbarrier.try_wait.parity
// ATTN-NOT: nvvm.mbarrier.try_wait.parity
// ATTN: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// ATTN-NOT: m64n128k16
// ATTN: nvvm.wgmma.wait.group.sync.aligned 0
// ATTN: nvvm.mbarrier.arrive
// ATTN: ex2.approx.ftz.f32
// ATTN: scf.for
// ATTN-COUNT-2: nvvm.mbarrier.try_wait.parity
// ATTN: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// ATTN: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// ATTN: nvvm.wgmma.wait.group.sync.aligned 1
// ATTN: nvvm.mbarrier.arrive
// ATTN: ex2.approx.ftz.f32
// ATTN: nvvm.wgmma.wait.group.sync.aligned 0
// ATTN: nvvm.mbarrier.arrive
// ATTN-NOT: gpu.barrier
// ATTN: vector.store {{.*}} vector<2xbf16>
// ATTN-NOT: gpu.barrier
// ATTN: nvvm.setmaxregister decrease 40
// ATTN: nvvm.mbarrier.arrive.expect_tx
// ATTN-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// ATTN: scf.for
// ATTN: nvvm.mbarrier.try_wait.parity
// ATTN: nvvm.mbarrier.arrive.expect_tx
// ATTN-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// ATTN: nvvm.mbarrier.try_wait.parity
// ATTN: nvvm.mbarrier.arrive.expect_tx
// ATTN-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// ATTN-NOT: gpu.barrier
// ATTN: gpu.return
func.func @attention(%q: tensor<1x2x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16> {
  %o = kf.attention %q, %k, %v {causal = true, scale = 0.1 : f64} : tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xbf16>
  return %o : tensor<1x2x256x128xbf16>
}

// -----

// q computed in the kernel, with the TMA: only K and V have tensor maps;
// the multiplying warpgroups compute Q's tile into shared memory and meet
// at named barrier 1 (256 threads) before reading it; the copier's first
// copies are K's.
// ATTN-LABEL: gpu.func @k0_attention
// ATTN-SAME: %arg4: !llvm.ptr, %arg5: !llvm.ptr)
// ATTN-SAME: kf.tensor_maps = 2 : i64, known_block_size = array<i32: 384, 1, 1>
// ATTN: nvvm.setmaxregister increase 232
// ATTN: arith.negf
// ATTN: memref.store {{.*}} #gpu.address_space<workgroup>
// ATTN-NOT: nvvm.mbarrier.try_wait.parity
// ATTN: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// ATTN-NOT: nvvm.mbarrier.try_wait.parity
// ATTN: nvgpu.ldmatrix
// ATTN: nvvm.setmaxregister decrease 40
// ATTN: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
// ATTN: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg4,
func.func @attention_q_prologue(%q: tensor<1x2x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16> {
  %q2 = kf.neg %q : tensor<1x2x256x128xbf16>
  %o = kf.attention %q2, %k, %v {scale = 0.1 : f64} : tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xbf16>
  return %o : tensor<1x2x256x128xbf16>
}

// -----

// The log-sum-exp result: one f32 per query row, ln(sum) plus the row max,
// stored once a row (by the thread of its first value dim in the
// one-thread-per-output kernel, by the row's first lane of each half of a
// warp's rows in the FlashAttention template).
// CHECK-LABEL: func.func @attention_lse
// CHECK: gpu.func @k0_attention
// CHECK-SAME: %[[LSE:arg2]]: memref<512xf32>
// CHECK: scf.if
// CHECK: math.log
// CHECK: memref.store %{{.*}}, %[[LSE]][%{{.*}}] : memref<512xf32>
// ATTN-LABEL: func.func @attention_lse
// ATTN: gpu.func @k0_attention
// ATTN-SAME: %[[LSE:arg2]]: memref<512xf32>
// ATTN: nvvm.wgmma.wait.group.sync.aligned 0
// ATTN: math.log2
// ATTN: memref.store %{{.*}}, %[[LSE]][%{{.*}}] : memref<512xf32>
// ATTN: math.log2
// ATTN: memref.store %{{.*}}, %[[LSE]][%{{.*}}] : memref<512xf32>
func.func @attention_lse(%q: tensor<1x2x256x128xbf16>) -> (tensor<1x2x256x128xbf16>, tensor<1x2x256xf32>) {
  %o, %lse = kf.attention %q, %q, %q {scale = 0.1 : f64} : tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xbf16>, tensor<1x2x256xf32>
  return %o, %lse : tensor<1x2x256x128xbf16>, tensor<1x2x256xf32>
}

// -----

// A transpose through shared memory: every row pass's addend is loaded
// before the first store (the stores could alias it, so nothing moves a
// load past them), four loads in flight instead of one.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: gpu.barrier
// CHECK-NOT: memref.store
// CHECK: memref.load %{{.*}} : memref<6144xf32>
// CHECK-NOT: memref.store
// CHECK: memref.load %{{.*}} : memref<6144xf32>
// CHECK-NOT: memref.store
// CHECK: memref.load %{{.*}} : memref<6144xf32>
// CHECK-NOT: memref.store
// CHECK: memref.load %{{.*}} : memref<6144xf32>
// CHECK: memref.store %{{.*}} : memref<6144xf32>
func.func @transpose_add(%x: tensor<64x96xf32>, %z: tensor<96x64xf32>) -> tensor<96x64xf32> {
  %t = kf.transpose %x [1, 0] : tensor<64x96xf32> -> tensor<96x64xf32>
  %y = kf.add %t, %z : tensor<96x64xf32>
  return %y : tensor<96x64xf32>
}

// -----

// Broadcast inputs of a pointwise kernel: a row vector read a vector at a
// time, a column's element once per vector. Sine and cosine: the
// conversion-free reduction (rounding by adding 1.5 * 2^23), libdevice only
// past the fast path's range.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: vector.load {{.*}} : memref<8192xf32>, vector<4xf32>
// CHECK: vector.load {{.*}} : memref<128xf32>, vector<4xf32>
// CHECK: memref.load {{.*}} : memref<64xf32>
// CHECK-NOT: memref.load {{.*}} : memref<64xf32>
// CHECK: arith.constant 0x4B400000 : f32
// CHECK: math.fma
// CHECK: scf.if
// CHECK: else
// CHECK: math.sin
// CHECK: vector.store
func.func @broadcasts_sin_cos(%x: tensor<64x128xf32>, %row: tensor<128xf32>, %col: tensor<64x1xf32>) -> tensor<64x128xf32> {
  %rb = kf.broadcast %row : tensor<128xf32> -> tensor<64x128xf32>
  %cb = kf.broadcast %col : tensor<64x1xf32> -> tensor<64x128xf32>
  %a = kf.mul %x, %rb : tensor<64x128xf32>
  %b = kf.add %a, %cb : tensor<64x128xf32>
  %s = kf.sin %b : tensor<64x128xf32>
  %c = kf.cos %b : tensor<64x128xf32>
  %y = kf.add %s, %c : tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}

// -----

// A one-row space: the row reduction's result is broadcast back by its
// row (where the row template records it), a [1] input by element 0.
// CHECK-LABEL: gpu.func @k0_normalization
// CHECK: gpu.shuffle xor
// CHECK: store
// CHECK: gpu.return
func.func @one_row(%x: tensor<8xf32>, %s: tensor<1xf32>) -> tensor<8xf32> {
  %sm = kf.softmax %x {axis = 0} : tensor<8xf32>
  %sb = kf.broadcast %s : tensor<1xf32> -> tensor<8xf32>
  %m = kf.mul %x, %sb : tensor<8xf32>
  %r = kf.reduce sum %m [0] {keep_dims = true} : tensor<8xf32> -> tensor<1xf32>
  %rb = kf.broadcast %r : tensor<1xf32> -> tensor<8xf32>
  %y = kf.add %sm, %rb : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Rows kf-pad padded: the scores (f32, rows of 1001 padded to 1004) and
// the probabilities (bf16, to 1008) are sized by their strides. The
// softmax reads 4-lane vectors at row * 1004 + column, and writes whole
// vectors up to the stride of 1008 (zeros past column 1001). The second
// matmul copies its padded operand's rows 1008 apart, so 8-element chunks
// stay aligned.
// CHECK-LABEL: gpu.func @k1_normalization
// CHECK-SAME: memref<1005004xf32>
// CHECK-SAME: memref<1009008xbf16>
// CHECK: %[[S:.*]] = arith.constant 1004 : index
// CHECK-NEXT: %[[R:.*]] = arith.muli %{{.*}}, %[[S]] : index
// CHECK-NEXT: %[[AT:.*]] = arith.addi %[[R]], %{{.*}} : index
// CHECK-NEXT: vector.load %arg0[%[[AT]]] {{.*}} : memref<1005004xf32>, vector<4xf32>
// CHECK: %[[P:.*]] = arith.constant 1008 : index
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %[[P]] : index
// CHECK-NEXT: scf.if %[[IN]]
// CHECK: vector.store %{{.*}} : memref<1009008xbf16>, vector<4xbf16>
// CHECK-LABEL: gpu.func @k2_matmul
// CHECK: arith.constant 1008 : index
// CHECK: nvgpu.device_async_copy %arg0
func.func @padded_rows(%q: tensor<1001x64xbf16>, %k: tensor<1001x64xbf16>, %v: tensor<1001x64xbf16>) -> tensor<1001x64xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<1001x64xbf16>, tensor<1001x64xbf16> -> tensor<1001x1001xf32>
  %p = kf.softmax %s {axis = 1} : tensor<1001x1001xf32>
  %c = kf.cast %p : tensor<1001x1001xf32> -> tensor<1001x1001xbf16>
  %o = kf.matmul %c, %v : tensor<1001x1001xbf16>, tensor<1001x64xbf16> -> tensor<1001x64xbf16>
  return %o : tensor<1001x64xbf16>
}

// -----

// kf-pad's copy of a matmul operand with rows of 1001 bf16: each thread
// step finds its padded row and column, computes the elements the row has
// (zero past its end), and stores 8 of them as one vector at
// row * 1024 + column (B's rows on whole 128-byte lines).
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK-SAME: memref<768768xbf16>
// CHECK-SAME: memref<786432xbf16>
// CHECK: %[[ROW:.*]] = arith.divui %{{.*}}, %c1024
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %c1001
// CHECK-NEXT: scf.if %[[IN]] -> (f32)
// CHECK: memref.load %arg0
// CHECK: } else {
// CHECK: vector.store %{{.*}} : memref<786432xbf16>, vector<8xbf16>
// CHECK-LABEL: gpu.func @k1_matmul
// CHECK-SAME: memref<786432xbf16>
func.func @padded_operand_copy(%x: tensor<512x768xbf16>, %w: tensor<768x1001xbf16>) -> tensor<512x1001xbf16> {
  %0 = kf.matmul %x, %w : tensor<512x768xbf16>, tensor<768x1001xbf16> -> tensor<512x1001xbf16>
  return %0 : tensor<512x1001xbf16>
}

// -----

// A warp-specialised wgmma matmul: A's and B's tensor maps come after the
// buffers; thread 0 sets up a full and an empty mbarrier for each of the
// 8 stages of the 128x64 tile (24 KiB a stage). The
// multiplying warpgroups take registers (setmaxnreg) and wait for each
// stage's bytes before their wgmmas (the tile's first overwriting the
// undefined accumulators: scale-d zero), then free the stage of the step
// two before (mmaGroups = 2), and after the K loop the last two; one
// thread of the copying warpgroup waits for a free stage, announces its
// bytes and copies A (one 128-row box, K-major) and B (one 64-column box,
// N-major) with the TMA. The epilogue's pairs are all computed before the
// first barrier of the multiplying threads only, then staged as pairs.
// ATTN-LABEL: func.func @matmul_tma
// ATTN: gpu.func @k0_matmul
// ATTN-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) kernel attributes {{{.*}}kf.tensor_maps = 2 : i64
// ATTN-COUNT-16: nvvm.mbarrier.init
// ATTN-NOT: nvvm.mbarrier.init
// ATTN: nvvm.fence.mbarrier.init
// ATTN: gpu.barrier
// ATTN: nvvm.setmaxregister  increase 232
// ATTN: scf.for
// ATTN: %[[UNDEF:.*]] = llvm.mlir.undef : !llvm.struct
// ATTN: nvvm.mbarrier.try_wait.parity
// ATTN: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[UNDEF]], {{.*}}D[<f32>, <zero>]
// ATTN-COUNT-3: nvvm.wgmma.mma_async {{.*}}D[<f32>, <one>]
// ATTN: nvvm.wgmma.wait.group.sync.aligned 2
// ATTN: scf.for
// ATTN: nvvm.mbarrier.try_wait.parity
// ATTN-COUNT-4: nvvm.wgmma.mma_async {{.*}}D[<f32>, <one>]
// ATTN: nvvm.wgmma.wait.group.sync.aligned 2
// ATTN: nvvm.mbarrier.arrive
// ATTN: nvvm.wgmma.wait.group.sync.aligned 0
// ATTN-COUNT-2: nvvm.mbarrier.arrive
// ATTN: vector.from_elements {{.*}} : vector<2xbf16>
// ATTN-NOT: memref.store
// ATTN: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// ATTN: vector.store {{.*}}, vector<2xbf16>
// ATTN: nvvm.setmaxregister  decrease 40
// ATTN: nvvm.mbarrier.try_wait.parity
// ATTN: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
// ATTN-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// ATTN-NOT: nvvm.cp.async.bulk.tensor
// ATTN: gpu.return
func.func @matmul_tma(%a: tensor<256x128xbf16>, %b: tensor<128x512xbf16>) -> tensor<256x512xbf16> {
  %c = kf.matmul %a, %b : tensor<256x128xbf16>, tensor<128x512xbf16> -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}

// -----

// Odd rows, interleaved (rowGroups = 8, rowAlign = 8): a tile takes every
// 8th row, so A's box is 3-d (one row of each of 128 groups); the rows then
// leave in 16-byte vectors, and a vector across a row's start or end (the
// tiles of group g start g columns left of the grid) in elements.
// ATTN-LABEL: func.func @interleaved_rows
// ATTN: gpu.func @k0_matmul
// ATTN: vector.load {{.*}} vector<8xf16>
// ATTN-NEXT: vector.store {{.*}} : memref<1025024xf16>, vector<8xf16>
// ATTN-NEXT: } else {
// ATTN-COUNT-8: memref.store {{.*}} : memref<1025024xf16>
// ATTN: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg3, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] :
// ATTN: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg4, %{{.*}}, box[%{{.*}}, %{{.*}}] :
func.func @interleaved_rows(%a: tensor<1024x128xf16>, %b: tensor<1001x128xf16>) -> tensor<1024x1001xf16> {
  %c = kf.matmul %a, %b {transpose_b = true} : tensor<1024x128xf16>, tensor<1001x128xf16> -> tensor<1024x1001xf16>
  return %c : tensor<1024x1001xf16>
}

// -----

// A GELU rounded to bf16 takes Phi(-|x|) as 2^Q, Q of degree 5 (five FMAs,
// one ex2); one rounded to f16, whose results keep 11 bits, of degree 7.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK-COUNT-5: math.fma
// CHECK-NOT: math.fma
// CHECK: ex2.approx.ftz.f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @gelu_bf16(%x: tensor<3xbf16>) -> tensor<3xbf16> {
  %y = kf.gelu %x : tensor<3xbf16>
  return %y : tensor<3xbf16>
}

// -----

// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK-COUNT-7: math.fma
// CHECK-NOT: math.fma
// CHECK: ex2.approx.ftz.f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @gelu_f16(%x: tensor<3xf16>) -> tensor<3xf16> {
  %y = kf.gelu %x : tensor<3xf16>
  return %y : tensor<3xf16>
}

// -----

// A bias read by the TMA matmul's epilogue is loaded after the K loop,
// before the wait for the tile's last products: none of its loads is left
// for the epilogue.
// ATTN-LABEL: func.func @matmul_tma_bias
// ATTN: gpu.func @k0_matmul
// ATTN: nvvm.setmaxregister  increase 232
// ATTN: scf.for
// ATTN: nvvm.wgmma.wait.group.sync.aligned 2
// ATTN: memref.load %{{.*}} : memref<512xbf16>
// ATTN: nvvm.wgmma.wait.group.sync.aligned 0
// ATTN-NOT: memref<512xbf16>
// ATTN: arith.addf
// ATTN-NOT: memref<512xbf16>
// ATTN: nvvm.setmaxregister  decrease 40
func.func @matmul_tma_bias(%a: tensor<256x128xbf16>, %b: tensor<128x512xbf16>, %bias: tensor<512xbf16>) -> tensor<256x512xbf16> {
  %c = kf.matmul %a, %b : tensor<256x128xbf16>, tensor<128x512xbf16> -> tensor<256x512xbf16>
  %bb = kf.broadcast %bias : tensor<512xbf16> -> tensor<256x512xbf16>
  %y = kf.add %c, %bb : tensor<256x512xbf16>
  return %y : tensor<256x512xbf16>
}

// -----

// Kernels that compute the same function of their buffers (same body,
// decisions and types: a model's repeated layers) share one gpu.func; a
// kernel that differs in an op gets its own.
// CHECK-LABEL: func.func @repeated
// CHECK: kf.kernel pointwise{{.*}}gpu_func = "k0_pointwise"
// CHECK: kf.kernel pointwise{{.*}}gpu_func = "k0_pointwise"
// CHECK: kf.kernel pointwise{{.*}}gpu_func = "k2_pointwise"
// CHECK-LABEL: gpu.module @kf_kernels
// CHECK: gpu.func @k0_pointwise
// CHECK-NOT: gpu.func @k1_
// CHECK: gpu.func @k2_pointwise
// CHECK-NOT: gpu.func
func.func @repeated(%x: tensor<16x512xf32>, %y: tensor<16x512xf32>, %z: tensor<16x512xf32>) -> (tensor<16x512xf32>, tensor<16x512xf32>, tensor<16x512xf32>) {
  %a = kf.tanh %x : tensor<16x512xf32>
  %b = kf.tanh %y : tensor<16x512xf32>
  %c = kf.sin %z : tensor<16x512xf32>
  return %a, %b, %c : tensor<16x512xf32>, tensor<16x512xf32>, tensor<16x512xf32>
}

// -----

// Positions added to every sequence of a batch, in 8 groups (kf-tile's
// pointwise_tiling): launch step s is thread s % 256 of chunk s / 256,
// which computes chunk (s / 256) / 8 of sequence (s / 256) % 8, a sequence
// 512 chunks long; results are stored evict-first.
// CHECK-LABEL: func.func @positions_over_batch
// CHECK: scf.for %[[STEP:.*]] = %{{.*}} to %c1048576 step
// CHECK: %[[CHUNK:.*]] = arith.divui %[[STEP]], %c256
// CHECK: %[[GROUP:.*]] = arith.remui %[[CHUNK]], %c8
// CHECK: %[[IN:.*]] = arith.divui %[[CHUNK]], %c8
// CHECK: %[[FIRST:.*]] = arith.muli %[[GROUP]], %c512
// CHECK: arith.addi %[[FIRST]], %[[IN]]
// CHECK: vector.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK: llvm.inline_asm has_side_effects {{.*}}"st.global.cs.v4.b32 [$0], {$1, $2, $3, $4};", "l,r,r,r,r"
// CHECK-NOT: vector.store
func.func @positions_over_batch(%x: tensor<8x2048x1024xbf16>, %pos: tensor<2048x1024xbf16>) -> tensor<8x2048x1024xbf16> {
  %p = kf.broadcast %pos : tensor<2048x1024xbf16> -> tensor<8x2048x1024xbf16>
  %s = kf.add %x, %p : tensor<8x2048x1024xbf16>
  return %s : tensor<8x2048x1024xbf16>
}

// -----

// An f32 matmul off tensor cores (one thread an output) whose epilogue
// writes a pre-activation and its GELU: both results are stored (the
// template stored its first result only, and kf-lower-to-gpu refused the
// kernel: "has result 1 ... that its template writes nowhere").
// CHECK-LABEL: gpu.func @k0_matmul
// CHECK-COUNT-2: memref.store
// CHECK: gpu.return
func.func @two_results_off_tensor_cores(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>) -> (tensor<64x48xf32>, tensor<64x48xf32>) {
  %m = kf.matmul %x, %w : tensor<64x32xf32>, tensor<32x48xf32> -> tensor<64x48xf32>
  %g = kf.gelu %m : tensor<64x48xf32>
  return %g, %m : tensor<64x48xf32>, tensor<64x48xf32>
}
