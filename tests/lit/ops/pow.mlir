// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @pow
func.func @pow(%x: tensor<4x?xf32>, %b: tensor<3xbf16>) -> (tensor<4x?xf32>, tensor<3xbf16>) {
  // CHECK: kf.pow %{{.*}}, %{{.*}} : tensor<4x?xf32>
  %0 = kf.pow %x, %x : tensor<4x?xf32>
  // CHECK: kf.pow %{{.*}}, %{{.*}} : tensor<3xbf16>
  %1 = kf.pow %b, %b : tensor<3xbf16>
  return %0, %1 : tensor<4x?xf32>, tensor<3xbf16>
}
