// Found by kfuse-fuzz --cpu --backward --seed 9720117 (compile fused): kf-fuse
// joined a reshape of an index_add's sums to its kernel, whose ordered
// tiling stores the sums in the result's shape; its verifier refused.
// kfuse-fuzz: reduction-length 6 least-precise f32
// kfuse-fuzz: input-seed 76973606523
// kfuse-fuzz: shapes 1x1x1x1 1 6x1x1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_9720117(%arg0: tensor<1x1x1x1xf32> {kf.name = "in0"}, %arg1: tensor<1xi64> {kf.name = "in1"}, %arg2: tensor<6x1x1xf32> {kf.name = "grad_out0"}) -> (tensor<6x1x1xf32> {kf.name = "out0"}, tensor<1x1x1x1xf32> {kf.name = "grad_in0"}) {
    %0 = kf.index_add %arg0[%arg1] {axis = 0 : i64, size = 6 : i64} : tensor<1x1x1x1xf32>, tensor<1xi64> -> tensor<6x1x1x1xf32>
    %1 = kf.reshape %0 : tensor<6x1x1x1xf32> -> tensor<6x1x1xf32>
    %2 = kf.reshape %arg2 : tensor<6x1x1xf32> -> tensor<6x1x1x1xf32>
    %3 = kf.gather %2[%arg1] {axis = 0 : i64} : tensor<6x1x1x1xf32>, tensor<1xi64> -> tensor<1x1x1x1xf32>
    %4 = kf.constant dense<6> : tensor<i32>
    %5 = kf.cast %4 : tensor<i32> -> tensor<i64>
    %6 = kf.broadcast %5 : tensor<i64> -> tensor<1xi64>
    %7 = kf.compare lt, %arg1, %6 : tensor<1xi64>, tensor<1xi64> -> tensor<1xi1>
    %8 = kf.constant dense<-6> : tensor<i32>
    %9 = kf.cast %8 : tensor<i32> -> tensor<i64>
    %10 = kf.broadcast %9 : tensor<i64> -> tensor<1xi64>
    %11 = kf.compare ge, %arg1, %10 : tensor<1xi64>, tensor<1xi64> -> tensor<1xi1>
    %12 = kf.and %11, %7 : tensor<1xi1>
    %13 = kf.reshape %12 : tensor<1xi1> -> tensor<1x1x1x1xi1>
    %14 = kf.constant dense<0.000000e+00> : tensor<f32>
    %15 = kf.broadcast %14 : tensor<f32> -> tensor<1x1x1x1xf32>
    %16 = kf.select %13, %3, %15 : tensor<1x1x1x1xi1>, tensor<1x1x1x1xf32>
    return %1, %16 : tensor<6x1x1xf32>, tensor<1x1x1x1xf32>
  }
}
