func.func @f(%a: tensor<64x128xbf16>, %b: tensor<256x32xbf16>) -> tensor<64x32xbf16> {
  %c = kf.matmul %a, %b : tensor<64x128xbf16>, tensor<256x32xbf16> -> tensor<64x32xbf16>
  return %c : tensor<64x32xbf16>
}
