// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared="grad-tma=true" | FileCheck %s --check-prefix=TMA
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true unordered-adds=true" --kf-atomic-dq --kf-fuse --kf-tile --kf-promote-shared="grad-tma=true" | FileCheck %s --check-prefix=ATOMIC
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared="grad-tma=true" --kf-lower-to-gpu | FileCheck %s --check-prefix=GPU

// FlashAttention's backward: 128 own rows of k and v (or q and dO) and two
// stages of 64-row tiles of the other two, every thread copying:
// 2 x (64 + 64) x (128 + 2 x 64) bytes.
// CHECK-LABEL: func.func @grad
// CHECK: launch = #kf.launch<grid = 32, block = 256, items = 32, sharedBytes = 65536>, pipeline = #kf.flash_grad_pipeline<stages = 2>
// With grad-tma: a third warpgroup copies with the TMA into four stages (a
// head dim of 64: three where it is wider), past them nine mbarriers (the
// own rows', a full and an empty a stage, 72 bytes in 80), then each
// stage's lse and delta of 64 queries:
// 2 x (64 + 64) x (128 + 4 x 64) + 80 + 4 x 512 bytes.
// TMA-LABEL: func.func @grad
// TMA: launch = #kf.launch<grid = 32, block = 384, items = 32, sharedBytes = 100432>, pipeline = #kf.flash_grad_pipeline<stages = 4, tma = true>
// The atomic template exchanges dS^T between its two warpgroups at block
// barriers: it keeps its cp.async copies.
// ATOMIC-LABEL: func.func @grad
// ATOMIC: kf.kernel attention_grad
// ATOMIC-SAME: block = 256
// ATOMIC-SAME: pipeline = #kf.flash_grad_pipeline<stages = 2>
// ATOMIC-SAME: dqAtomic = true
// The kernel takes q's, k's, v's and dO's tensor maps after its buffers.
// It zeroes the staged statistics and splits into roles first: the
// computing warpgroups raise their registers to 240 (the copying one
// lowers its own to 24) and, in key blocks and then in query blocks, wait
// for their own rows, then each tile's stage, and release it when their
// products are done; the copying thread copies a key
// block's k and v (two 64-row boxes each) and then, once a stage is
// released, announces its bytes and copies the tile's lse and delta and a
// box of q and of dO; a query block's q and dO, then k and v a tile.
// GPU-LABEL: gpu.func @k0_attention_grad
// GPU-SAME: %[[QMAP:[^:]*]]: !llvm.ptr, %[[KMAP:[^:]*]]: !llvm.ptr, %[[VMAP:[^:]*]]: !llvm.ptr, %[[DOMAP:[^:]*]]: !llvm.ptr)
// GPU-SAME: kf.tensor_maps = 4
// GPU: llvm.store %{{.*}} : f32, !llvm.ptr<3>
// GPU: nvvm.fence.proxy
// GPU-COUNT-9: nvvm.mbarrier.init
// GPU: nvvm.fence.mbarrier.init
// GPU: nvvm.setmaxregister  increase 240
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: nvvm.wgmma.mma_async
// GPU: nvvm.mbarrier.arrive %
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: nvvm.mbarrier.arrive %
// GPU: nvvm.setmaxregister  decrease 24
// GPU: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[KMAP]]
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[VMAP]]
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: nvvm.mbarrier.arrive.expect_tx
// GPU-COUNT-2: nvvm.cp.async.bulk.shared.cluster.global
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]]
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[DOMAP]]
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]]
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[DOMAP]]
// GPU: scf.for
// GPU-NOT: nvvm.cp.async.bulk.shared.cluster.global
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[KMAP]]
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[VMAP]]
func.func @grad(%q: tensor<2x4x256x64xbf16>, %k: tensor<2x4x256x64xbf16>, %v: tensor<2x4x256x64xbf16>,
                %do: tensor<2x4x256x64xbf16>, %lse: tensor<2x4x256xf32>, %delta: tensor<2x4x256xf32>)
    -> (tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>) {
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {causal = true, scale = 0.125 : f64}
      : tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>, tensor<2x4x256x64xbf16>,
        tensor<2x4x256xf32>, tensor<2x4x256xf32> -> tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>
  return %dq, %dk, %dv : tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>
}

// -----

// 250 queries: the copying thread would stage the last tile's lse and
// delta in pieces of 8 bytes, which a bulk copy cannot take. Every thread
// copies, as without grad-tma.
// TMA-LABEL: func.func @odd_queries
// TMA: launch = #kf.launch<grid = 16, block = 256, items = 16, sharedBytes = 65536>, pipeline = #kf.flash_grad_pipeline<stages = 2>
func.func @odd_queries(%q: tensor<1x4x250x64xbf16>, %k: tensor<1x4x250x64xbf16>, %v: tensor<1x4x250x64xbf16>,
                       %do: tensor<1x4x250x64xbf16>, %lse: tensor<1x4x250xf32>, %delta: tensor<1x4x250xf32>)
    -> (tensor<1x4x250x64xf32>, tensor<1x4x250x64xf32>, tensor<1x4x250x64xf32>) {
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {causal = false, scale = 0.125 : f64}
      : tensor<1x4x250x64xbf16>, tensor<1x4x250x64xbf16>, tensor<1x4x250x64xbf16>, tensor<1x4x250x64xbf16>,
        tensor<1x4x250xf32>, tensor<1x4x250xf32> -> tensor<1x4x250x64xf32>, tensor<1x4x250x64xf32>, tensor<1x4x250x64xf32>
  return %dq, %dk, %dv : tensor<1x4x250x64xf32>, tensor<1x4x250x64xf32>, tensor<1x4x250x64xf32>
}

// -----

// Head dim 256: dk's and dv's accumulators do not fit a thread's registers
// together, so each gets kvBlocks blocks of its own (2 x 4 key blocks,
// then 4 query blocks), never adding dq up (no dqAtomic); and two stages
// of 256-column tiles do not fit: one stage, 2 x (256 + 256) x (128 + 64)
// bytes, with the TMA 24 bytes of mbarriers in 32 and one stage's lse and
// delta (512) past them.
// CHECK-LABEL: func.func @wide_heads
// CHECK: launch = #kf.launch<grid = 12, block = 256, items = 12, sharedBytes = 196608>, pipeline = #kf.flash_grad_pipeline<stages = 1>, tiling = #kf.flash_grad_tiling<blockRows = 128, blockCols = 64, headDim = 256, valueDim = 256, kvBlocks = 4, dqAtomic = false, splitKeyBlocks = true>
// TMA-LABEL: func.func @wide_heads
// TMA: launch = #kf.launch<grid = 12, block = 384, items = 12, sharedBytes = 197152>, pipeline = #kf.flash_grad_pipeline<stages = 1, tma = true>
// ATOMIC-LABEL: func.func @wide_heads
// ATOMIC: dqAtomic = false, splitKeyBlocks = true
func.func @wide_heads(%q: tensor<1x2x256x256xbf16>, %k: tensor<1x2x256x256xbf16>, %v: tensor<1x2x256x256xbf16>,
                      %do: tensor<1x2x256x256xbf16>, %lse: tensor<1x2x256xf32>, %delta: tensor<1x2x256xf32>)
    -> (tensor<1x2x256x256xf32>, tensor<1x2x256x256xf32>, tensor<1x2x256x256xf32>) {
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {causal = true, scale = 0.0625 : f64}
      : tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>,
        tensor<1x2x256xf32>, tensor<1x2x256xf32> -> tensor<1x2x256x256xf32>, tensor<1x2x256x256xf32>, tensor<1x2x256x256xf32>
  return %dq, %dk, %dv : tensor<1x2x256x256xf32>, tensor<1x2x256x256xf32>, tensor<1x2x256x256xf32>
}

// -----

// Head dim 192: dk and dv apart too; two stages fit, also with the TMA
// (three do not): 2 x (192 + 192) x (128 + 2 x 64) bytes, then 40 bytes
// of mbarriers in 48 and two stages' lse and delta.
// CHECK-LABEL: func.func @heads_of_192
// CHECK: pipeline = #kf.flash_grad_pipeline<stages = 2>, tiling = #kf.flash_grad_tiling<blockRows = 128, blockCols = 64, headDim = 192, valueDim = 192, kvBlocks = 2, dqAtomic = false, splitKeyBlocks = true>
// TMA-LABEL: func.func @heads_of_192
// TMA: sharedBytes = 197680>, pipeline = #kf.flash_grad_pipeline<stages = 2, tma = true>
func.func @heads_of_192(%q: tensor<1x1x256x192xbf16>, %k: tensor<1x1x256x192xbf16>, %v: tensor<1x1x256x192xbf16>,
                        %do: tensor<1x1x256x192xbf16>, %lse: tensor<1x1x256xf32>, %delta: tensor<1x1x256xf32>)
    -> (tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>) {
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {causal = false, scale = 0.07 : f64}
      : tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>,
        tensor<1x1x256xf32>, tensor<1x1x256xf32> -> tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>
  return %dq, %dk, %dv : tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>, tensor<1x1x256x192xbf16>
}
