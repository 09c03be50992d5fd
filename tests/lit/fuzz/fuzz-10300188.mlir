// Found by kfuse-fuzz --seed 10300188 (mismatch fused: erf(3) + erf(-4) of i32 inputs cancels; the checker now measures conditioning against the op-by-op rounded reading), shrunk to 5 nodes.
// kfuse-fuzz: reduction-length 2 least-precise f32
// kfuse-fuzz: shapes 1x1x2
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_10300188(%arg0: tensor<1x1x2xi32> {kf.name = "in0"}) -> (tensor<1x1x1xf32> {kf.name = "out0"}) {
    %0 = kf.cast %arg0 : tensor<1x1x2xi32> -> tensor<1x1x2xf32>
    %1 = kf.erf %0 : tensor<1x1x2xf32>
    %2 = kf.reshape %1 : tensor<1x1x2xf32> -> tensor<2x1x1xf32>
    %3 = kf.reshape %2 : tensor<2x1x1xf32> -> tensor<2xf32>
    %4 = kf.reduce sum %3 [0] : tensor<2xf32> -> tensor<f32>
    %5 = kf.reshape %4 : tensor<f32> -> tensor<1x1x1xf32>
    %6 = kf.reduce min %5 [1] {keep_dims = true} : tensor<1x1x1xf32> -> tensor<1x1x1xf32>
    return %6 : tensor<1x1x1xf32>
  }
}
