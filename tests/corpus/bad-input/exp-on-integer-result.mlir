// ERROR: exp-on-integer-result.mlir:3: | expected
func.func @f(%x: tensor<4xf32>) -> tensor<4xi32> {
  %0 = kf.exp %x : tensor<4xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
