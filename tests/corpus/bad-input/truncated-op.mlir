// ERROR: truncated-op.mlir:3: | expected
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kf.exp %x : tensor<4x
