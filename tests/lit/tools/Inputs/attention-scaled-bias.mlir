// Attention whose scale multiplies the bias too: not kf.attention's meaning.
func.func @scaled_bias(%q: tensor<1x2x64x32xbf16>, %k: tensor<1x2x64x32xbf16>, %v: tensor<1x2x64x32xbf16>, %bias: tensor<1x2x64x64xf32>) -> tensor<1x2x64x32xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<1x2x64x32xbf16>, tensor<1x2x64x32xbf16> -> tensor<1x2x64x64xf32>
  %u = kf.add %s, %bias : tensor<1x2x64x64xf32>
  %c = kf.constant dense<0.125> : tensor<1x2x64x64xf32>
  %t = kf.mul %u, %c : tensor<1x2x64x64xf32>
  %p = kf.softmax %t {axis = 3} : tensor<1x2x64x64xf32>
  %pb = kf.cast %p : tensor<1x2x64x64xf32> -> tensor<1x2x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x32xbf16> -> tensor<1x2x64x32xbf16>
  return %o : tensor<1x2x64x32xbf16>
}
