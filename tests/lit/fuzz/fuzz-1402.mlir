// Found by kfuse-fuzz --seed 1402 (crash), shrunk to 4 nodes.
// kfuse-fuzz: reduction-length 1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_1402(%arg0: tensor<1xf32> {kf.name = "in0"}, %arg1: tensor<f32> {kf.name = "in1"}) -> (tensor<f32> {kf.name = "out0"}) {
    %0 = kf.reduce min %arg0 [0] : tensor<1xf32> -> tensor<f32>
    %1 = kf.tanh %arg1 : tensor<f32>
    %2 = kf.constant dense<2.000000e+00> : tensor<f32>
    %3 = kf.mul %1, %2 : tensor<f32>
    %4 = kf.abs %0 : tensor<f32>
    %5 = kf.constant dense<5.000000e-01> : tensor<f32>
    %6 = kf.add %4, %5 : tensor<f32>
    %7 = kf.pow %6, %3 : tensor<f32>
    return %7 : tensor<f32>
  }
}
