// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @reduce
func.func @reduce(%x: tensor<4x?x8xf32>, %i: tensor<5x6xi32>)
    -> (tensor<?xf32>, tensor<4x1x1xf32>, tensor<5xi32>, tensor<6xi32>) {
  // CHECK: kf.reduce sum %{{.*}} [0, 2] : tensor<4x?x8xf32> -> tensor<?xf32>
  %0 = kf.reduce sum %x [0, 2] : tensor<4x?x8xf32> -> tensor<?xf32>
  // CHECK: kf.reduce mean %{{.*}} [1, 2] {keep_dims = true} : tensor<4x?x8xf32> -> tensor<4x1x1xf32>
  %1 = kf.reduce mean %x [1, 2] {keep_dims = true} : tensor<4x?x8xf32> -> tensor<4x1x1xf32>
  // CHECK: kf.reduce max %{{.*}} [1] : tensor<5x6xi32> -> tensor<5xi32>
  %2 = kf.reduce max %i [1] : tensor<5x6xi32> -> tensor<5xi32>
  // CHECK: kf.reduce min %{{.*}} [0] : tensor<5x6xi32> -> tensor<6xi32>
  %3 = kf.reduce min %i [0] : tensor<5x6xi32> -> tensor<6xi32>
  return %0, %1, %2, %3 : tensor<?xf32>, tensor<4x1x1xf32>, tensor<5xi32>, tensor<6xi32>
}
