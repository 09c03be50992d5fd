// ERROR: unsupported-dtype.mlir:3:8 | tensor<4xf64>
func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
  %0 = kf.exp %x : tensor<4xf64>
  return %0 : tensor<4xf64>
}
