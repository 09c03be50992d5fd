// RUN: kfuse-opt %s --kf-separate-row-sums | FileCheck %s --check-prefix=IR
// RUN: kfuse-opt %s --kf-separate-row-sums -o %t.separated.mlir
// RUN: kfusec %s --eval --seed=3 > %t.values
// RUN: echo >> %t.values
// RUN: kfusec %t.separated.mlir --eval --seed=3 >> %t.values
// RUN: FileCheck %s < %t.values

// A LayerNorm backward (64 rows of 256, f32) as kfuse::splitVJP writes it:
// the pass separates the mean gradient's sum from the variance
// gradient's, and the reference evaluator gives the same gradients, to
// f32, before and after on the same random inputs.
// IR-COUNT-3: kf.reduce sum %{{.*}} [1] {keep_dims = true}
// IR-NOT: kf.reduce sum %{{.*}} [1]
// CHECK: grad_x: f32 64x256 min [[XMIN:[^ ]+]] max [[XMAX:[^ ]+]] mean {{.*}} l2 [[XL2:[^ ]+]] nan 0
// CHECK: grad_gamma: f32 256 min [[GMIN:[^ ]+]] max [[GMAX:[^ ]+]] mean {{.*}} l2 [[GL2:[^ ]+]] nan 0
// CHECK: grad_x: f32 64x256 min [[XMIN]] max [[XMAX]] mean {{.*}} l2 [[XL2]] nan 0
// CHECK: grad_gamma: f32 256 min [[GMIN]] max [[GMAX]] mean {{.*}} l2 [[GL2]] nan 0
module {
  func.func @ln_backward(%arg0: tensor<64x256xf32> {kf.name = "x"}, %arg1: tensor<256xf32> {kf.name = "gamma"}, %arg2: tensor<64x1xf32> {kf.name = "saved_0"}, %arg3: tensor<64x1xf32> {kf.name = "saved_1"}, %arg4: tensor<64x256xf32> {kf.name = "grad_y"}) -> (tensor<64x256xf32> {kf.name = "grad_x"}, tensor<256xf32> {kf.name = "grad_gamma"}, tensor<256xf32> {kf.name = "grad_beta"}) {
    %0 = kf.broadcast %arg2 : tensor<64x1xf32> -> tensor<64x256xf32>
    %1 = kf.sub %arg0, %0 : tensor<64x256xf32>
    %2 = kf.broadcast %arg3 : tensor<64x1xf32> -> tensor<64x256xf32>
    %3 = kf.mul %1, %2 : tensor<64x256xf32>
    %4 = kf.broadcast %arg1 : tensor<256xf32> -> tensor<64x256xf32>
    %5 = kf.reduce sum %arg4 [0] : tensor<64x256xf32> -> tensor<256xf32>
    %6 = kf.mul %arg4, %4 : tensor<64x256xf32>
    %7 = kf.mul %arg4, %3 : tensor<64x256xf32>
    %8 = kf.reduce sum %7 [0] : tensor<64x256xf32> -> tensor<256xf32>
    %9 = kf.mul %6, %2 : tensor<64x256xf32>
    %10 = kf.mul %6, %1 : tensor<64x256xf32>
    %11 = kf.reduce sum %10 [1] {keep_dims = true} : tensor<64x256xf32> -> tensor<64x1xf32>
    %12 = kf.constant dense<-5.000000e-01> : tensor<f32>
    %13 = kf.broadcast %12 : tensor<f32> -> tensor<64x1xf32>
    %14 = kf.mul %11, %13 : tensor<64x1xf32>
    %15 = kf.mul %14, %arg3 : tensor<64x1xf32>
    %16 = kf.mul %15, %arg3 : tensor<64x1xf32>
    %17 = kf.mul %16, %arg3 : tensor<64x1xf32>
    %18 = kf.broadcast %17 : tensor<64x1xf32> -> tensor<64x256xf32>
    %19 = kf.constant dense<3.906250e-03> : tensor<f32>
    %20 = kf.broadcast %19 : tensor<f32> -> tensor<64x256xf32>
    %21 = kf.mul %18, %20 : tensor<64x256xf32>
    %22 = kf.mul %21, %1 : tensor<64x256xf32>
    %23 = kf.mul %21, %1 : tensor<64x256xf32>
    %24 = kf.add %9, %22 : tensor<64x256xf32>
    %25 = kf.add %24, %23 : tensor<64x256xf32>
    %26 = kf.neg %25 : tensor<64x256xf32>
    %27 = kf.reduce sum %26 [1] {keep_dims = true} : tensor<64x256xf32> -> tensor<64x1xf32>
    %28 = kf.broadcast %27 : tensor<64x1xf32> -> tensor<64x256xf32>
    %29 = kf.constant dense<3.906250e-03> : tensor<f32>
    %30 = kf.broadcast %29 : tensor<f32> -> tensor<64x256xf32>
    %31 = kf.mul %28, %30 : tensor<64x256xf32>
    %32 = kf.add %25, %31 : tensor<64x256xf32>
    return %32, %8, %5 : tensor<64x256xf32>, tensor<256xf32>, tensor<256xf32>
  }
}

