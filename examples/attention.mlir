// Causal attention written from primitives: softmax(Q K^T / sqrt(d)) V with
// an iota mask. kf-online-softmax rewrites it into one kf.attention.
func.func @attention(%q: tensor<1x2x64x32xf16> {kf.name = "q"},
                     %k: tensor<1x2x64x32xf16> {kf.name = "k"},
                     %v: tensor<1x2x64x32xf16> {kf.name = "v"})
    -> (tensor<1x2x64x32xf16> {kf.name = "out"}) {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16> -> tensor<1x2x64x64xf16>
  %scale = kf.constant dense<0.17677669529> : tensor<1x2x64x64xf16>
  %ss = kf.mul %s, %scale : tensor<1x2x64x64xf16>
  %row = kf.iota {dim = 2} : tensor<1x2x64x64xi32>
  %col = kf.iota {dim = 3} : tensor<1x2x64x64xi32>
  %keep = kf.compare le, %col, %row : tensor<1x2x64x64xi32>, tensor<1x2x64x64xi32> -> tensor<1x2x64x64xi1>
  %ninf = kf.constant dense<0xFC00> : tensor<1x2x64x64xf16>
  %masked = kf.select %keep, %ss, %ninf : tensor<1x2x64x64xi1>, tensor<1x2x64x64xf16>
  %p = kf.softmax %masked {axis = 3} : tensor<1x2x64x64xf16>
  %o = kf.matmul %p, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x32xf16> -> tensor<1x2x64x32xf16>
  return %o : tensor<1x2x64x32xf16>
}
