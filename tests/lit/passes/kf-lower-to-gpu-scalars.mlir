// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile --kf-lower-to-gpu | FileCheck %s

// A one-hot of i64 labels (cross-entropy's backward: label == column): the
// column is an iota's position below 2^31, so the compare is of i32s, the
// label narrowed once (-1 where it is out of range, which no column is).
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LABEL:.*]], %c256_i64 : i64
// CHECK: %[[LOW:.*]] = arith.trunci %[[LABEL]] : i64 to i32
// CHECK: %[[NARROW:.*]] = arith.select %[[IN]], %[[LOW]], %c-1_i32 : i32
// CHECK: arith.cmpi eq, %[[NARROW]], %{{.*}} : i32
// CHECK-NOT: arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// CHECK: gpu.return
func.func @one_hot(%labels: tensor<64x1xi64>, %x: tensor<64x256xf32>)
    -> tensor<64x256xf32> {
  %iota = kf.iota {dim = 1 : i64} : tensor<1x256xi64>
  %cols = kf.broadcast %iota : tensor<1x256xi64> -> tensor<64x256xi64>
  %l = kf.broadcast %labels : tensor<64x1xi64> -> tensor<64x256xi64>
  %hot = kf.compare eq, %l, %cols : tensor<64x256xi64>, tensor<64x256xi64> -> tensor<64x256xi1>
  %zero = kf.constant dense<0.0> : tensor<64x256xf32>
  %y = kf.select %hot, %x, %zero : tensor<64x256xi1>, tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// An order compare with an iota stays i64 (only equality narrows).
// CHECK-LABEL: gpu.func @k1_pointwise
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK: gpu.return
func.func @below(%labels: tensor<64x1xi64>, %x: tensor<64x256xf32>)
    -> tensor<64x256xf32> {
  %iota = kf.iota {dim = 1 : i64} : tensor<1x256xi64>
  %cols = kf.broadcast %iota : tensor<1x256xi64> -> tensor<64x256xi64>
  %l = kf.broadcast %labels : tensor<64x1xi64> -> tensor<64x256xi64>
  %lt = kf.compare lt, %l, %cols : tensor<64x256xi64>, tensor<64x256xi64> -> tensor<64x256xi1>
  %zero = kf.constant dense<0.0> : tensor<64x256xf32>
  %y = kf.select %lt, %x, %zero : tensor<64x256xi1>, tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// The graph's products and sums may fuse into FMAs, as nvcc and Triton let
// them: contract on each.
// CHECK-LABEL: gpu.func @k2_pointwise
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: gpu.return
func.func @multiply_add(%a: tensor<64x256xf32>, %b: tensor<64x256xf32>, %c: tensor<64x256xf32>)
    -> tensor<64x256xf32> {
  %p = kf.mul %a, %b : tensor<64x256xf32>
  %y = kf.add %p, %c : tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
