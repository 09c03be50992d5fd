// ERROR: reshape-element-count.mlir:3:8 | 32 elements | 33 elements
func.func @f(%x: tensor<4x8xf32>) -> tensor<33xf32> {
  %0 = kf.reshape %x : tensor<4x8xf32> -> tensor<33xf32>
  return %0 : tensor<33xf32>
}
