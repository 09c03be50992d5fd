// ERROR: result-type-mismatch.mlir:4:3 | doesn't match function result type
func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {
  %0 = kf.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
