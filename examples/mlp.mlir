// A linear layer with bias and GELU: matmul with an elementwise epilogue.
func.func @mlp(%x: tensor<?x256xbf16> {kf.name = "x", kf.dim_symbols = ["M", ""]},
               %w: tensor<256x512xbf16> {kf.name = "w"},
               %bias: tensor<512xbf16> {kf.name = "bias"})
    -> (tensor<?x512xbf16> {kf.name = "y"}) {
  %h = kf.matmul %x, %w : tensor<?x256xbf16>, tensor<256x512xbf16> -> tensor<?x512xbf16>
  %bb = kf.broadcast %bias {dim_symbols = ["M", ""]} : tensor<512xbf16> -> tensor<?x512xbf16>
  %hb = kf.add %h, %bb : tensor<?x512xbf16>
  %y = kf.gelu %hb : tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}
