// RUN: kfuse-opt %s -split-input-file --canonicalize --cse | FileCheck %s

// The kf folders: identity casts, broadcasts, reshapes and transposes
// disappear; reshape chains collapse; splat constants fold through shape
// ops; dead ops go.

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identities(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kf.cast %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = kf.broadcast %0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = kf.reshape %1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = kf.transpose %2 [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %unused = kf.exp %3 : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = kf.reshape %[[X]] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %0 = kf.reshape %x : tensor<4x8xf32> -> tensor<2x16xf32>
  %1 = kf.reshape %0 : tensor<2x16xf32> -> tensor<32xf32>
  return %1 : tensor<32xf32>
}

// -----

// CHECK-LABEL: func.func @splat_through_shape_ops
// CHECK-NEXT: %[[C:.*]] = kf.constant dense<2.000000e+00> : tensor<8x4xf32>
// CHECK-NEXT: return %[[C]]
func.func @splat_through_shape_ops() -> tensor<8x4xf32> {
  %c = kf.constant dense<2.0> : tensor<f32>
  %b = kf.broadcast %c : tensor<f32> -> tensor<4x8xf32>
  %t = kf.transpose %b [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  return %t : tensor<8x4xf32>
}

// -----

// CSE merges identical ops.
// CHECK-LABEL: func.func @cse
// CHECK: kf.exp
// CHECK-NOT: kf.exp
func.func @cse(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = kf.exp %x : tensor<4xf32>
  %b = kf.exp %x : tensor<4xf32>
  %c = kf.add %a, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
