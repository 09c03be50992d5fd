// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @relu
func.func @relu(%x: tensor<4x?xf32>, %i: tensor<7xi32>, %h: tensor<2x3xbf16>)
    -> (tensor<4x?xf32>, tensor<7xi32>, tensor<2x3xbf16>) {
  // CHECK: kf.relu %{{.*}} : tensor<4x?xf32>
  %0 = kf.relu %x : tensor<4x?xf32>
  // CHECK: kf.relu %{{.*}} : tensor<7xi32>
  %1 = kf.relu %i : tensor<7xi32>
  // CHECK: kf.relu %{{.*}} : tensor<2x3xbf16>
  %2 = kf.relu %h : tensor<2x3xbf16>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<7xi32>, tensor<2x3xbf16>
}
