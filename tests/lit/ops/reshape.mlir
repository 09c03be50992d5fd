// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @reshape
func.func @reshape(%x: tensor<4x6xf32>, %y: tensor<?x6xi32>) -> (tensor<2x3x4xf32>, tensor<?xi32>) {
  // CHECK: kf.reshape %{{.*}} : tensor<4x6xf32> -> tensor<2x3x4xf32>
  %0 = kf.reshape %x : tensor<4x6xf32> -> tensor<2x3x4xf32>
  // CHECK: kf.reshape %{{.*}} {dim_symbols = ["N"]} : tensor<?x6xi32> -> tensor<?xi32>
  %1 = kf.reshape %y {dim_symbols = ["N"]} : tensor<?x6xi32> -> tensor<?xi32>
  return %0, %1 : tensor<2x3x4xf32>, tensor<?xi32>
}
