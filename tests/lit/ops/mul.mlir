// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @mul
func.func @mul(%x: tensor<4x?xf32>, %y: tensor<4x?xf32>, %i: tensor<7xi32>,
               %h: tensor<3xf16>) -> (tensor<4x?xf32>, tensor<7xi32>, tensor<3xf16>) {
  // CHECK: kf.mul %{{.*}}, %{{.*}} : tensor<4x?xf32>
  %0 = kf.mul %x, %y : tensor<4x?xf32>
  // CHECK: kf.mul %{{.*}}, %{{.*}} : tensor<7xi32>
  %1 = kf.mul %i, %i : tensor<7xi32>
  // CHECK: kf.mul %{{.*}}, %{{.*}} : tensor<3xf16>
  %2 = kf.mul %h, %h : tensor<3xf16>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<7xi32>, tensor<3xf16>
}
