// Found by kfuse-fuzz --seed 2100426 on the GPU (mismatch fused): in a
// multi-output kernel, a broadcast was indexed with another output's shape.
// kfuse-fuzz: reduction-length 1 least-precise f32
// RUN: kfuse-fuzz --replay %s
func.func @siblings_of_two_shapes(%x: tensor<2x2x1x1xf32> {kf.name = "in0"}, %y: tensor<1x2x1x1xf32> {kf.name = "in1"}) -> (tensor<2x2x1xf32> {kf.name = "out0"}, tensor<2x2x1x1xf32> {kf.name = "out1"}) {
  %0 = kf.reshape %x : tensor<2x2x1x1xf32> -> tensor<2x2x1xf32>
  %1 = kf.broadcast %y : tensor<1x2x1x1xf32> -> tensor<2x2x1x1xf32>
  %2 = kf.add %1, %x : tensor<2x2x1x1xf32>
  return %0, %2 : tensor<2x2x1xf32>, tensor<2x2x1x1xf32>
}
