// Found by kfuse-fuzz --seed 100280 on the GPU (mismatch fused): an output
// that is a splat constant was written by no kernel.
// kfuse-fuzz: reduction-length 1 least-precise f32
// RUN: kfuse-fuzz --replay %s
func.func @constant_output(%x: tensor<4xf32> {kf.name = "in0"}) -> (tensor<i32> {kf.name = "out0"}, tensor<4xf32> {kf.name = "out1"}) {
  %0 = kf.constant dense<-2> : tensor<i32>
  %1 = kf.exp %x : tensor<4xf32>
  return %0, %1 : tensor<i32>, tensor<4xf32>
}
