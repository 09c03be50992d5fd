// LayerNorm over the last dim, with scale and shift, in bf16 (f32 math).
func.func @layernorm(%x: tensor<256x768xbf16> {kf.name = "x"},
                     %gamma: tensor<768xbf16> {kf.name = "gamma"},
                     %beta: tensor<768xbf16> {kf.name = "beta"})
    -> (tensor<256x768xbf16> {kf.name = "y"}) {
  %xf = kf.cast %x : tensor<256x768xbf16> -> tensor<256x768xf32>
  %mean = kf.reduce mean %xf [1] {keep_dims = true} : tensor<256x768xf32> -> tensor<256x1xf32>
  %meanb = kf.broadcast %mean : tensor<256x1xf32> -> tensor<256x768xf32>
  %centered = kf.sub %xf, %meanb : tensor<256x768xf32>
  %sq = kf.mul %centered, %centered : tensor<256x768xf32>
  %var = kf.reduce mean %sq [1] {keep_dims = true} : tensor<256x768xf32> -> tensor<256x1xf32>
  %eps = kf.constant dense<1.0e-5> : tensor<256x1xf32>
  %vareps = kf.add %var, %eps : tensor<256x1xf32>
  %inv = kf.rsqrt %vareps : tensor<256x1xf32>
  %invb = kf.broadcast %inv : tensor<256x1xf32> -> tensor<256x768xf32>
  %norm = kf.mul %centered, %invb : tensor<256x768xf32>
  %g = kf.cast %gamma : tensor<768xbf16> -> tensor<768xf32>
  %gb = kf.broadcast %g : tensor<768xf32> -> tensor<256x768xf32>
  %b = kf.cast %beta : tensor<768xbf16> -> tensor<768xf32>
  %bb = kf.broadcast %b : tensor<768xf32> -> tensor<256x768xf32>
  %scaled = kf.mul %norm, %gb : tensor<256x768xf32>
  %shifted = kf.add %scaled, %bb : tensor<256x768xf32>
  %y = kf.cast %shifted : tensor<256x768xf32> -> tensor<256x768xbf16>
  return %y : tensor<256x768xbf16>
}
