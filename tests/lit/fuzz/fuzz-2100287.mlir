// Found by kfuse-fuzz --seed 2100287 (compile fused): a transpose of
// per-row sums was fused into the reduction's row kernel.
// kfuse-fuzz: reduction-length 2 least-precise f32
// RUN: kfuse-fuzz --replay %s
func.func @sum_transpose(%x: tensor<3x1x2xf32> {kf.name = "in0"}) -> (tensor<1x3xf32> {kf.name = "out0"}) {
  %0 = kf.reduce sum %x [2] : tensor<3x1x2xf32> -> tensor<3x1xf32>
  %1 = kf.transpose %0 [1, 0] : tensor<3x1xf32> -> tensor<1x3xf32>
  return %1 : tensor<1x3xf32>
}
