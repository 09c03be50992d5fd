// Found by kfuse-fuzz --seed 3100827 (compile fused): a broadcast of a
// per-row maximum to a new leading dim was fused into the row kernel.
// kfuse-fuzz: reduction-length 2 least-precise f32
// RUN: kfuse-fuzz --replay %s
func.func @max_broadcast(%x: tensor<2xf32> {kf.name = "in0"}) -> (tensor<1x1xf32> {kf.name = "out0"}) {
  %0 = kf.reduce max %x [0] {keep_dims = true} : tensor<2xf32> -> tensor<1xf32>
  %1 = kf.broadcast %0 : tensor<1xf32> -> tensor<1x1xf32>
  return %1 : tensor<1x1xf32>
}
