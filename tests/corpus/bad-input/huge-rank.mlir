// ERROR: has rank 10 | rank up to 8
func.func @f(%x: tensor<1x1x1x1x1x1x1x1x1x1xf32>) -> tensor<1x1x1x1x1x1x1x1x1x1xf32> {
  %0 = kf.exp %x : tensor<1x1x1x1x1x1x1x1x1x1xf32>
  return %0 : tensor<1x1x1x1x1x1x1x1x1x1xf32>
}
