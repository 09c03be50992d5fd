// ERROR: unterminated-string.mlir:2: | string literal
func.func @f(%x: tensor<4xf32> {kf.name = "x) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
