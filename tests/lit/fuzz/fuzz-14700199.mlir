// Found by kfuse-fuzz --seed 14700199 (mismatch fused), shrunk to 6 nodes.
// The cumsum kernel stores it rounded to f16, the next kernel scales it in
// f32: neither reading, but within their span (Check.cpp spannedByReadings).
// kfuse-fuzz: reduction-length 16 least-precise f16 discrete
// kfuse-fuzz: shapes 1x23x16 1x1 1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_14700199(%arg0: tensor<1x23x16xf16> {kf.name = "in0"}, %arg1: tensor<1x1xi32> {kf.name = "in1"}, %arg2: tensor<1xf32> {kf.name = "in2"}) -> (tensor<1x23x16xf32> {kf.name = "out0"}) {
    %0 = kf.cast %arg1 : tensor<1x1xi32> -> tensor<1x1xf16>
    %1 = kf.broadcast %0 : tensor<1x1xf16> -> tensor<1x23x16xf16>
    %2 = kf.add %1, %arg0 : tensor<1x23x16xf16>
    %3 = kf.cumsum %2[2] : tensor<1x23x16xf16> -> tensor<1x23x16xf16>
    %4 = kf.abs %arg2 : tensor<1xf32>
    %5 = kf.constant dense<1.000000e+00> : tensor<f32>
    %6 = kf.broadcast %5 : tensor<f32> -> tensor<1xf32>
    %7 = kf.add %4, %6 : tensor<1xf32>
    %8 = kf.constant dense<7.500000e-01> : tensor<f16>
    %9 = kf.broadcast %8 : tensor<f16> -> tensor<1x23x16xf16>
    %10 = kf.mul %3, %9 : tensor<1x23x16xf16>
    %11 = kf.constant dense<3.000490e-01> : tensor<f16>
    %12 = kf.broadcast %11 : tensor<f16> -> tensor<1x23x16xf16>
    %13 = kf.add %10, %12 : tensor<1x23x16xf16>
    %14 = kf.cast %13 : tensor<1x23x16xf16> -> tensor<1x23x16xf32>
    %15 = kf.broadcast %7 : tensor<1xf32> -> tensor<1x23x16xf32>
    %16 = kf.mod %14, %15 : tensor<1x23x16xf32>
    return %16 : tensor<1x23x16xf32>
  }
}
