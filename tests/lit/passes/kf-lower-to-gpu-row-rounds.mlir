// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile --kf-lower-to-gpu | FileCheck %s

// Two sums of a row held in registers that need nothing of each other (a
// LayerNorm backward's, as kf-separate-row-sums leaves them): each warp's
// partials of both published at once into 32 floats a sum, one barrier
// before they are read back and one after, not two a sum.
// CHECK-LABEL: gpu.func @k0_normalization
// CHECK-SAME: workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.if
// CHECK-COUNT-2: memref.store
// CHECK: gpu.barrier
// CHECK-COUNT-2: memref.load
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @independent_sums(%g: tensor<64x2048xf32>, %z: tensor<64x2048xf32>)
    -> tensor<64x2048xf32> {
  %p = kf.mul %g, %z : tensor<64x2048xf32>
  %s1 = kf.reduce sum %p [1] {keep_dims = true} : tensor<64x2048xf32> -> tensor<64x1xf32>
  %s2 = kf.reduce sum %g [1] {keep_dims = true} : tensor<64x2048xf32> -> tensor<64x1xf32>
  %a = kf.broadcast %s1 : tensor<64x1xf32> -> tensor<64x2048xf32>
  %b = kf.broadcast %s2 : tensor<64x1xf32> -> tensor<64x2048xf32>
  %t = kf.mul %a, %z : tensor<64x2048xf32>
  %u = kf.sub %g, %t : tensor<64x2048xf32>
  %y = kf.sub %u, %b : tensor<64x2048xf32>
  return %y : tensor<64x2048xf32>
}
