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

// A slice of a slice is one slice; a slice that keeps everything, a pad of
// nothing and a concat of one tensor are their input.
// CHECK-LABEL: func.func @slices
func.func @slices(%x: tensor<?x20xf32>) -> (tensor<?x3xf32>, tensor<?x20xf32>) {
  // CHECK: %[[S:.*]] = kf.slice %arg0 starts [0, 3] limits [9223372036854775807, 16] steps [1, 6] : tensor<?x20xf32> -> tensor<?x3xf32>
  %0 = kf.slice %x starts [0, 1] limits [9223372036854775807, 19] steps [1, 2] : tensor<?x20xf32> -> tensor<?x9xf32>
  %1 = kf.slice %0 starts [0, 1] limits [9223372036854775807, 9] steps [1, 3] : tensor<?x9xf32> -> tensor<?x3xf32>
  %2 = kf.slice %x starts [0, 0] limits [9223372036854775807, 20] steps [1, 1] : tensor<?x20xf32> -> tensor<?x20xf32>
  %3 = kf.pad %2 low [0, 0] high [0, 0] value 1.0 : tensor<?x20xf32> -> tensor<?x20xf32>
  %4 = kf.concat %3 {axis = 1} : tensor<?x20xf32> -> tensor<?x20xf32>
  // CHECK: return %[[S]], %arg0
  return %1, %4 : tensor<?x3xf32>, tensor<?x20xf32>
}

// -----

// A reduction over dims of size 1 is a reshape (the gradient of
// take_along_axis sums a one-hot over its one-element axis); over a dim of
// more it stays.
// CHECK-LABEL: func.func @reduce_unit_dims
// CHECK-SAME: (%[[X:.*]]: tensor<8x1x32xf32>, %[[Y:.*]]: tensor<1x1xbf16>, %[[Z:.*]]: tensor<8x2xf32>)
// CHECK-NEXT: %[[A:.*]] = kf.reshape %[[X]] : tensor<8x1x32xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[B:.*]] = kf.reshape %[[Y]] : tensor<1x1xbf16> -> tensor<bf16>
// CHECK-NEXT: %[[C:.*]] = kf.reduce max %[[Z]] [1]
// CHECK-NEXT: %[[V:.*]] = kf.reshape %[[Z]] : tensor<8x2xf32> -> tensor<1x16xf32>
// CHECK-NEXT: %[[R:.*]] = kf.reduce sum %[[V]] [1] {keep_dims = true} : tensor<1x16xf32> -> tensor<1x1xf32>
// CHECK-NEXT: %[[D:.*]] = kf.reshape %[[R]] : tensor<1x1xf32> -> tensor<f32>
// CHECK-NEXT: return %[[X]], %[[A]], %[[B]], %[[C]], %[[D]]
func.func @reduce_unit_dims(%x: tensor<8x1x32xf32>, %y: tensor<1x1xbf16>, %z: tensor<8x2xf32>)
    -> (tensor<8x1x32xf32>, tensor<8x32xf32>, tensor<bf16>, tensor<8xf32>, tensor<f32>) {
  %0 = kf.reduce mean %x [1] {keep_dims = true} : tensor<8x1x32xf32> -> tensor<8x1x32xf32>
  %1 = kf.reduce sum %x [1] : tensor<8x1x32xf32> -> tensor<8x32xf32>
  %2 = kf.reduce max %y [0, 1] : tensor<1x1xbf16> -> tensor<bf16>
  %3 = kf.reduce max %z [1] : tensor<8x2xf32> -> tensor<8xf32>
  %4 = kf.reduce sum %z [0, 1] : tensor<8x2xf32> -> tensor<f32>
  return %0, %1, %2, %3, %4 : tensor<8x1x32xf32>, tensor<8x32xf32>, tensor<bf16>, tensor<8xf32>, tensor<f32>
}

// -----

// A reduction over several trailing dims reduces the last dim of the input
// viewed as [leading..., product] (row kernels reduce one last dim across a
// block); dims that are not trailing stay as they are.
// CHECK-LABEL: func.func @reduce_trailing_dims
// CHECK-SAME: (%[[X:.*]]: tensor<4x6x5xf32>)
// CHECK-NEXT: %[[V:.*]] = kf.reshape %[[X]] : tensor<4x6x5xf32> -> tensor<4x30xf32>
// CHECK-NEXT: %[[M:.*]] = kf.reduce mean %[[V]] [1] {keep_dims = true} : tensor<4x30xf32> -> tensor<4x1xf32>
// CHECK-NEXT: %[[K:.*]] = kf.reshape %[[M]] : tensor<4x1xf32> -> tensor<4x1x1xf32>
// CHECK-NEXT: %[[N:.*]] = kf.reduce max %[[V]] [1] {keep_dims = true} : tensor<4x30xf32> -> tensor<4x1xf32>
// CHECK-NEXT: %[[L:.*]] = kf.reshape %[[N]] : tensor<4x1xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = kf.reduce sum %[[X]] [0, 2] : tensor<4x6x5xf32> -> tensor<6xf32>
// CHECK-NEXT: return %[[K]], %[[L]], %[[S]]
func.func @reduce_trailing_dims(%x: tensor<4x6x5xf32>)
    -> (tensor<4x1x1xf32>, tensor<4xf32>, tensor<6xf32>) {
  %0 = kf.reduce mean %x [1, 2] {keep_dims = true} : tensor<4x6x5xf32> -> tensor<4x1x1xf32>
  %1 = kf.reduce max %x [1, 2] : tensor<4x6x5xf32> -> tensor<4xf32>
  %2 = kf.reduce sum %x [0, 2] : tensor<4x6x5xf32> -> tensor<6xf32>
  return %0, %1, %2 : tensor<4x1x1xf32>, tensor<4xf32>, tensor<6xf32>
}

// -----

// A transpose of a matmul operand's last two dims is the matmul's flag:
// x @ w^T reads w [N, K] as it is, a transposed A of 16-bit operands too,
// and a transpose that also moves a batch dim stays. f32 operands fold only
// into K-major (A [M, K], B [N, K]): a transposed A stays transposed.
// CHECK-LABEL: func.func @transposed_operands
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x16x32xbf16>, %[[W:[a-z0-9]+]]: tensor<64x32xbf16>, %[[T:[a-z0-9]+]]: tensor<2x32x16xbf16>, %[[B:[a-z0-9]+]]: tensor<32x2x64xbf16>, %[[F:[a-z0-9]+]]: tensor<32x16xf32>, %[[G:[a-z0-9]+]]: tensor<64x32xf32>)
// CHECK: kf.matmul %[[X]], %[[W]] {transpose_b = true}
// CHECK: kf.matmul %[[T]], %[[W]] {transpose_a = true, transpose_b = true}
// CHECK: %[[BT:.*]] = kf.transpose %[[B]] [1, 0, 2]
// CHECK: kf.matmul %[[T]], %[[BT]] {transpose_a = true}
// CHECK: %[[FT:.*]] = kf.transpose %[[F]] [1, 0]
// CHECK: kf.matmul %[[FT]], %[[G]] {transpose_b = true}
func.func @transposed_operands(%x: tensor<2x16x32xbf16>, %w: tensor<64x32xbf16>,
                               %t: tensor<2x32x16xbf16>, %b: tensor<32x2x64xbf16>,
                               %f: tensor<32x16xf32>, %g: tensor<64x32xf32>)
    -> (tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<16x64xf32>) {
  %wt = kf.transpose %w [1, 0] : tensor<64x32xbf16> -> tensor<32x64xbf16>
  %0 = kf.matmul %x, %wt : tensor<2x16x32xbf16>, tensor<32x64xbf16> -> tensor<2x16x64xbf16>
  %tt = kf.transpose %t [0, 2, 1] : tensor<2x32x16xbf16> -> tensor<2x16x32xbf16>
  %1 = kf.matmul %tt, %wt : tensor<2x16x32xbf16>, tensor<32x64xbf16> -> tensor<2x16x64xbf16>
  %bt = kf.transpose %b [1, 0, 2] : tensor<32x2x64xbf16> -> tensor<2x32x64xbf16>
  %2 = kf.matmul %tt, %bt {transpose_b = false} : tensor<2x16x32xbf16>, tensor<2x32x64xbf16> -> tensor<2x16x64xbf16>
  %ft = kf.transpose %f [1, 0] : tensor<32x16xf32> -> tensor<16x32xf32>
  %gt = kf.transpose %g [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %3 = kf.matmul %ft, %gt : tensor<16x32xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
  return %0, %1, %2, %3 : tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<16x64xf32>
}
