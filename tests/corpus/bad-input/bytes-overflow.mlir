// ERROR: 4294967296x4294967296 | more bytes than 64 bits can count
func.func @f(%x: tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32> {
  %0 = kf.exp %x : tensor<4294967296x4294967296xf32>
  return %0 : tensor<4294967296x4294967296xf32>
}
