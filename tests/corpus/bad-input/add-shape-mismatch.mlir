// ERROR: add-shape-mismatch.mlir:3:8 | 'kf.add' | tensor<4x7xf32>
func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x7xf32>) -> tensor<4x8xf32> {
  %0 = kf.add %x, %y : (tensor<4x8xf32>, tensor<4x7xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
