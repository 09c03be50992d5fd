// ERROR: reduce-axis-out-of-range.mlir:3:8 | axis 2 is out of range for rank 2
func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = kf.reduce sum %x [2] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
