// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @neg
func.func @neg(%x: tensor<4x?xf32>, %i: tensor<7xi32>, %h: tensor<2x3xbf16>)
    -> (tensor<4x?xf32>, tensor<7xi32>, tensor<2x3xbf16>) {
  // CHECK: kf.neg %{{.*}} : tensor<4x?xf32>
  %0 = kf.neg %x : tensor<4x?xf32>
  // CHECK: kf.neg %{{.*}} : tensor<7xi32>
  %1 = kf.neg %i : tensor<7xi32>
  // CHECK: kf.neg %{{.*}} : tensor<2x3xbf16>
  %2 = kf.neg %h : tensor<2x3xbf16>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<7xi32>, tensor<2x3xbf16>
}
