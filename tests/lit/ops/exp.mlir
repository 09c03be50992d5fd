// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @exp
func.func @exp(%x: tensor<4x?xf32>, %h: tensor<f16>, %b: tensor<2x3xbf16>)
    -> (tensor<4x?xf32>, tensor<f16>, tensor<2x3xbf16>) {
  // CHECK: kf.exp %{{.*}} : tensor<4x?xf32>
  %0 = kf.exp %x : tensor<4x?xf32>
  // CHECK: kf.exp %{{.*}} : tensor<f16>
  %1 = kf.exp %h : tensor<f16>
  // CHECK: kf.exp %{{.*}} : tensor<2x3xbf16>
  %2 = kf.exp %b : tensor<2x3xbf16>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<f16>, tensor<2x3xbf16>
}
