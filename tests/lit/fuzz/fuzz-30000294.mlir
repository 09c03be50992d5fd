// Found by kfuse-fuzz --seed 30000294 (a crash, on the GPU and in the
// compile): two softmaxes over different rows of one input (9x255 and, through
// a reshape, 3x765) merged as siblings, their epilogues having as many
// elements; tiling the kernel read a softmax from its first yield.
// kfuse-fuzz: reduction-length 765 least-precise bf16
// RUN: kfuse-fuzz --replay %s
func.func @fuzz_30000294(%x: tensor<3x1x3x255xbf16> {kf.name = "in0"}) -> (tensor<3x1x3x255xbf16> {kf.name = "out0"}, tensor<3x1x765xf32> {kf.name = "out1"}) {
  %1 = kf.cast %x : tensor<3x1x3x255xbf16> -> tensor<3x1x3x255xf32>
  %2 = kf.reshape %1 : tensor<3x1x3x255xf32> -> tensor<3x1x765xf32>
  %3 = kf.softmax %x {axis = 3 : i64} : tensor<3x1x3x255xbf16>
  %4 = kf.softmax %2 {axis = 2 : i64} : tensor<3x1x765xf32>
  %5 = kf.mul %4, %2 : tensor<3x1x765xf32>
  %6 = kf.sigmoid %3 : tensor<3x1x3x255xbf16>
  %7 = kf.mul %3, %6 : tensor<3x1x3x255xbf16>
  %8 = kf.sigmoid %7 : tensor<3x1x3x255xbf16>
  return %8, %5 : tensor<3x1x3x255xbf16>, tensor<3x1x765xf32>
}
