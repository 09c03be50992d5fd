// ERROR: input 'arg0' | zero-size dim
func.func @f(%x: tensor<0x8xf32>) -> tensor<0x8xf32> {
  %0 = kf.exp %x : tensor<0x8xf32>
  return %0 : tensor<0x8xf32>
}
