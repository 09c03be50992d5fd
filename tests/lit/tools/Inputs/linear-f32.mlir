func.func @linear(%x: tensor<1024x512xf32>, %w: tensor<768x512xf32>) -> tensor<1024x768xf32> {
  %y = kf.matmul %x, %w {transpose_b = true} : tensor<1024x512xf32>, tensor<768x512xf32> -> tensor<1024x768xf32>
  return %y : tensor<1024x768xf32>
}
