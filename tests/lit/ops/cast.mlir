// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @cast
func.func @cast(%x: tensor<8xf32>, %c: tensor<8xi1>) -> (tensor<8xbf16>, tensor<8xi32>, tensor<8xf16>) {
  // CHECK: kf.cast %{{.*}} : tensor<8xf32> -> tensor<8xbf16>
  %0 = kf.cast %x : tensor<8xf32> -> tensor<8xbf16>
  // CHECK: kf.cast %{{.*}} : tensor<8xf32> -> tensor<8xi32>
  %1 = kf.cast %x : tensor<8xf32> -> tensor<8xi32>
  // CHECK: kf.cast %{{.*}} : tensor<8xi1> -> tensor<8xf16>
  %2 = kf.cast %c : tensor<8xi1> -> tensor<8xf16>
  return %0, %1, %2 : tensor<8xbf16>, tensor<8xi32>, tensor<8xf16>
}
