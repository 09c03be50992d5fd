// Found by kfuse-fuzz --seed 28000080 on the GPU (mismatch fused, 6.8e-5 >
// 4e-5): a softmax over a length-1 axis of values near 2000 stored its
// output through softmaxAt, whose exp(x - max) was divided by a row sum of
// 2^(x log2 e - max log2 e); the rounding of max log2 e (half an ulp of
// 2885) cancelled only in the sum.
// kfuse-fuzz: reduction-length 1 least-precise f32
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_28000080(%arg2: tensor<1x1xf32> {kf.name = "in2"}, %arg3: tensor<1x2048xf32> {kf.name = "in3"}) -> (tensor<1x1xf32> {kf.name = "out0"}, tensor<4x1xf32> {kf.name = "out1"}) {
    %0 = kf.arg_reduce max %arg3[1] {keep_dims = true} : tensor<1x2048xf32> -> tensor<1x1xi64>
    %1 = kf.cast %0 : tensor<1x1xi64> -> tensor<1x1xf32>
    %2 = kf.add %1, %arg2 : tensor<1x1xf32>
    %3 = kf.softmax %2 {axis = 1 : i64} : tensor<1x1xf32>
    %4 = kf.constant dense<3000.0> : tensor<4x1xf32>
    %5 = kf.reshape %arg3 : tensor<1x2048xf32> -> tensor<512x4xf32>
    %6 = kf.slice %5 starts [0, 0] limits [4, 1] steps [1, 1] : tensor<512x4xf32> -> tensor<4x1xf32>
    %7 = kf.mul %6, %4 : tensor<4x1xf32>
    %8 = kf.softmax %7 {axis = 1 : i64} : tensor<4x1xf32>
    return %3, %8 : tensor<1x1xf32>, tensor<4x1xf32>
  }
}
