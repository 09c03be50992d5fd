// Found by kfuse-fuzz --seed 11910185 (mismatch fused), shrunk to 5 nodes.
// kfuse-fuzz: reduction-length 17 least-precise f16
// kfuse-fuzz: shapes 17 1 17
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_11910185(%arg0: tensor<17xf16> {kf.name = "in0"}, %arg1: tensor<1xf16> {kf.name = "in1"}, %arg2: tensor<17xf16> {kf.name = "grad_out0"}) -> (tensor<17xf16> {kf.name = "out0"}, tensor<17xf16> {kf.name = "grad_in0"}, tensor<1xf16> {kf.name = "grad_in1"}) {
    %0 = kf.broadcast %arg1 : tensor<1xf16> -> tensor<17xf16>
    %1 = kf.add %arg0, %0 : tensor<17xf16>
    %2 = kf.sigmoid %1 : tensor<17xf16>
    %3 = kf.abs %2 : tensor<17xf16>
    %4 = kf.constant dense<1.000000e+00> : tensor<f16>
    %5 = kf.broadcast %4 : tensor<f16> -> tensor<17xf16>
    %6 = kf.add %3, %5 : tensor<17xf16>
    %7 = kf.rsqrt %6 : tensor<17xf16>
    %8 = kf.cast %arg2 : tensor<17xf16> -> tensor<17xf32>
    %9 = kf.cast %7 : tensor<17xf16> -> tensor<17xf32>
    %10 = kf.cast %6 : tensor<17xf16> -> tensor<17xf32>
    %11 = kf.constant dense<-5.000000e-01> : tensor<f32>
    %12 = kf.broadcast %11 : tensor<f32> -> tensor<17xf32>
    %13 = kf.mul %8, %12 : tensor<17xf32>
    %14 = kf.mul %13, %9 : tensor<17xf32>
    %15 = kf.mul %14, %9 : tensor<17xf32>
    %16 = kf.mul %15, %9 : tensor<17xf32>
    %17 = kf.cast %6 : tensor<17xf16> -> tensor<17xf32>
    %18 = kf.cast %5 : tensor<17xf16> -> tensor<17xf32>
    %19 = kf.cast %3 : tensor<17xf16> -> tensor<17xf32>
    %20 = kf.cast %3 : tensor<17xf16> -> tensor<17xf32>
    %21 = kf.cast %2 : tensor<17xf16> -> tensor<17xf32>
    %22 = kf.constant dense<0.000000e+00> : tensor<f32>
    %23 = kf.neg %16 : tensor<17xf32>
    %24 = kf.broadcast %22 : tensor<f32> -> tensor<17xf32>
    %25 = kf.compare lt, %21, %24 : tensor<17xf32>, tensor<17xf32> -> tensor<17xi1>
    %26 = kf.constant dense<0.000000e+00> : tensor<f32>
    %27 = kf.broadcast %26 : tensor<f32> -> tensor<17xf32>
    %28 = kf.select %25, %23, %27 : tensor<17xi1>, tensor<17xf32>
    %29 = kf.broadcast %22 : tensor<f32> -> tensor<17xf32>
    %30 = kf.compare gt, %21, %29 : tensor<17xf32>, tensor<17xf32> -> tensor<17xi1>
    %31 = kf.select %30, %16, %28 : tensor<17xi1>, tensor<17xf32>
    %32 = kf.cast %2 : tensor<17xf16> -> tensor<17xf32>
    %33 = kf.cast %1 : tensor<17xf16> -> tensor<17xf32>
    %34 = kf.constant dense<1.000000e+00> : tensor<f32>
    %35 = kf.broadcast %34 : tensor<f32> -> tensor<17xf32>
    %36 = kf.sub %35, %32 : tensor<17xf32>
    %37 = kf.mul %31, %32 : tensor<17xf32>
    %38 = kf.mul %37, %36 : tensor<17xf32>
    %39 = kf.cast %1 : tensor<17xf16> -> tensor<17xf32>
    %40 = kf.cast %0 : tensor<17xf16> -> tensor<17xf32>
    %41 = kf.cast %arg0 : tensor<17xf16> -> tensor<17xf32>
    %42 = kf.reduce sum %38 [0] {keep_dims = true} : tensor<17xf32> -> tensor<1xf32>
    %43 = kf.cast %38 : tensor<17xf32> -> tensor<17xf16>
    %44 = kf.cast %42 : tensor<1xf32> -> tensor<1xf16>
    return %7, %43, %44 : tensor<17xf16>, tensor<17xf16>, tensor<1xf16>
  }
}
