// ERROR: transpose-bad-perm.mlir:3:8 | [0, 0] is not a permutation
func.func @f(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = kf.transpose %x [0, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
