// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-tile --kf-lower-to-gpu | FileCheck %s

// Two sums of one partial layout in one kernel, as kf-fuse-column-sums
// merges a LayerNorm's weight and bias gradients, over too few columns for
// the column template: a thread an output computes and stores both (the
// second is rounded to bf16 on its way out).
// CHECK-LABEL: gpu.func @k0_reduction
// CHECK-SAME: %[[A:.*]]: memref<64xf32> {{.*}}, %[[B:.*]]: memref<64xf32> {{.*}}, %[[S:.*]]: memref<16xf32> {{.*}}, %[[T:.*]]: memref<16xbf16>
// CHECK: scf.for
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: scf.for
// CHECK: memref.load %[[B]]
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %[[T]]
func.func @two_sums(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>)
    -> (tensor<16xf32>, tensor<16xbf16>) {
  %0:2 = kf.kernel reduction(%a, %b : tensor<4x16xf32>, tensor<4x16xf32>) {
  ^bb0(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>):
    %s = kf.reduce sum %x [0] : tensor<4x16xf32> -> tensor<16xf32>
    %t = kf.reduce sum %y [0] : tensor<4x16xf32> -> tensor<16xf32>
    %c = kf.cast %t : tensor<16xf32> -> tensor<16xbf16>
    kf.yield %s, %c : tensor<16xf32>, tensor<16xbf16>
  } -> (tensor<16xf32>, tensor<16xbf16>)
  return %0#0, %0#1 : tensor<16xf32>, tensor<16xbf16>
}
