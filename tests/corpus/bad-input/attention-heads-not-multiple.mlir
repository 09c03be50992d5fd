// ERROR: attention-heads-not-multiple.mlir:3:8 | 'kf.attention'
func.func @f(%q: tensor<1x3x16x64xf16>, %k: tensor<1x2x16x64xf16>, %v: tensor<1x2x16x64xf16>) -> tensor<1x3x16x64xf16> {
  %0 = kf.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x3x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16> -> tensor<1x3x16x64xf16>
  return %0 : tensor<1x3x16x64xf16>
}
