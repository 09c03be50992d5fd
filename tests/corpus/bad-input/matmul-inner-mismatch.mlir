// ERROR: matmul-inner-mismatch.mlir:3:8 | inner dimensions differ: a is 64x128, b is 256x32
func.func @f(%a: tensor<64x128xbf16>, %b: tensor<256x32xbf16>) -> tensor<64x32xbf16> {
  %0 = kf.matmul %a, %b : tensor<64x128xbf16>, tensor<256x32xbf16> -> tensor<64x32xbf16>
  return %0 : tensor<64x32xbf16>
}
