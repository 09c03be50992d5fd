// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared="grad-tma=true" | FileCheck %s --check-prefix=TMA
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true unordered-adds=true" --kf-atomic-dq --kf-fuse --kf-tile --kf-promote-shared="grad-tma=true" | FileCheck %s --check-prefix=ATOMIC
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared="grad-tma=true" --kf-lower-to-gpu | FileCheck %s --check-prefix=GPU

// FlashAttention's backward: 128 own rows of k and v (or q and dO) and two
// stages of 64-row tiles of the other two, every thread copying:
// 2 x (64 + 64) x (128 + 2 x 64) bytes.
// CHECK-LABEL: func.func @grad
// CHECK: launch = #kf.launch<grid = 32, block = 256, items = 32, sharedBytes = 65536>, pipeline = #kf.flash_grad_pipeline<stages = 2>
// With grad-tma: a third warpgroup copies with the TMA into three stages,
// past them seven mbarriers (the own rows', a full and an empty a stage):
// 2 x (64 + 64) x (128 + 3 x 64) + 8 x 7 bytes.
// TMA-LABEL: func.func @grad
// TMA: launch = #kf.launch<grid = 32, block = 384, items = 32, sharedBytes = 81976>, pipeline = #kf.flash_grad_pipeline<stages = 3, tma = true>
// The atomic template exchanges dS^T between its two warpgroups at block
// barriers: it keeps its cp.async copies.
// ATOMIC-LABEL: func.func @grad
// ATOMIC: kf.kernel attention_grad
// ATOMIC-SAME: block = 256
// ATOMIC-SAME: pipeline = #kf.flash_grad_pipeline<stages = 2>
// ATOMIC-SAME: dqAtomic = true
// The kernel takes q's, k's, v's and dO's tensor maps after its buffers.
// A key block's computing warpgroups raise their registers and wait for
// their own rows, then each tile's stage, and release it when its products
// are done; its copying thread copies k and v (two 64-row boxes each) and
// then a box of q and of dO a tile, once the stage is released.
// GPU-LABEL: gpu.func @k0_attention_grad
// GPU-SAME: %[[QMAP:[^:]*]]: !llvm.ptr, %[[KMAP:[^:]*]]: !llvm.ptr, %[[VMAP:[^:]*]]: !llvm.ptr, %[[DOMAP:[^:]*]]: !llvm.ptr)
// GPU-SAME: kf.tensor_maps = 4
// GPU-COUNT-7: nvvm.mbarrier.init
// GPU: nvvm.fence.mbarrier.init
// GPU: nvvm.setmaxregister  increase 232
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: nvvm.wgmma.mma_async
// GPU: nvvm.mbarrier.arrive %
// GPU: nvvm.setmaxregister  decrease 40
// GPU: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[KMAP]]
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[VMAP]]
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait.parity
// GPU: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]]
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[DOMAP]]
// A query block's copying thread copies q and dO, then streams k and v.
// GPU: nvvm.setmaxregister  increase 232
// GPU: nvvm.setmaxregister  decrease 40
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]]
// GPU-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[DOMAP]]
// GPU: scf.for
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
