// ERROR: unknown-op.mlir:3:8 | 'kf.frobnicate' is unknown
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kf.frobnicate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
