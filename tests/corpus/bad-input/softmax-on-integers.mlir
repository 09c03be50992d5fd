// ERROR: softmax-on-integers.mlir:3:8 | 'kf.softmax' | float
func.func @f(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %0 = kf.softmax %x {axis = 1 : i64} : tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}
