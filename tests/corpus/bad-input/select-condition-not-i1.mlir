// ERROR: select-condition-not-i1.mlir:3:8 | condition must be i1
func.func @f(%c: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kf.select %c, %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}
