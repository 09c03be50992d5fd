// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @compare
func.func @compare(%x: tensor<4xf32>, %i: tensor<4xi32>, %c: tensor<4xi1>)
    -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  // CHECK: kf.compare lt, %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %0 = kf.compare lt, %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  // CHECK: kf.compare ge, %{{.*}}, %{{.*}} : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
  %1 = kf.compare ge, %i, %i : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
  // CHECK: kf.compare ne, %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %2 = kf.compare ne, %c, %c : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}
