// Found by kfuse-fuzz --backward --seed 5700029 (mismatch fused: kf-rematerialize copied the sine a max was taken over into the kernel comparing them; values a comparison reads are no longer copied), shrunk to 3 nodes.
// kfuse-fuzz: reduction-length 2 least-precise bf16
// kfuse-fuzz: shapes 2 scalar
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_5700029(%arg0: tensor<2xbf16> {kf.name = "in0"}, %arg1: tensor<bf16> {kf.name = "grad_out0"}) -> (tensor<bf16> {kf.name = "out0"}, tensor<2xbf16> {kf.name = "grad_in0"}) {
    %0 = kf.sin %arg0 : tensor<2xbf16>
    %1 = kf.reduce max %0 [0] : tensor<2xbf16> -> tensor<bf16>
    %2 = kf.cast %arg1 : tensor<bf16> -> tensor<f32>
    %3 = kf.reshape %2 : tensor<f32> -> tensor<1xf32>
    %4 = kf.broadcast %3 : tensor<1xf32> -> tensor<2xf32>
    %5 = kf.reshape %1 : tensor<bf16> -> tensor<1xbf16>
    %6 = kf.broadcast %5 : tensor<1xbf16> -> tensor<2xbf16>
    %7 = kf.compare eq, %0, %6 : tensor<2xbf16>, tensor<2xbf16> -> tensor<2xi1>
    %8 = kf.cast %7 : tensor<2xi1> -> tensor<2xf32>
    %9 = kf.reduce sum %8 [0] {keep_dims = true} : tensor<2xf32> -> tensor<1xf32>
    %10 = kf.constant dense<0.000000e+00> : tensor<f32>
    %11 = kf.broadcast %9 : tensor<1xf32> -> tensor<2xf32>
    %12 = kf.div %4, %11 : tensor<2xf32>
    %13 = kf.broadcast %10 : tensor<f32> -> tensor<2xf32>
    %14 = kf.select %7, %12, %13 : tensor<2xi1>, tensor<2xf32>
    %15 = kf.cast %0 : tensor<2xbf16> -> tensor<2xf32>
    %16 = kf.cast %arg0 : tensor<2xbf16> -> tensor<2xf32>
    %17 = kf.cos %16 : tensor<2xf32>
    %18 = kf.mul %14, %17 : tensor<2xf32>
    %19 = kf.cast %18 : tensor<2xf32> -> tensor<2xbf16>
    return %1, %19 : tensor<bf16>, tensor<2xbf16>
  }
}
