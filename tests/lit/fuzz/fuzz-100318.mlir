// Found by kfuse-fuzz --seed 100318 on the GPU (mismatch fused): a
// transpose fused into the softmax's row kernel read other rows.
// kfuse-fuzz: reduction-length 2 least-precise f32
// RUN: kfuse-fuzz --replay %s
func.func @softmax_transpose(%x: tensor<2x2x2xf32> {kf.name = "in0"}) -> (tensor<2x2x2xf32> {kf.name = "out0"}) {
  %0 = kf.softmax %x {axis = 2 : i64} : tensor<2x2x2xf32>
  %1 = kf.transpose %0 [0, 2, 1] : tensor<2x2x2xf32> -> tensor<2x2x2xf32>
  return %1 : tensor<2x2x2xf32>
}
