// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @erf
func.func @erf(%x: tensor<4x?xf32>, %h: tensor<f16>, %b: tensor<2x3xbf16>)
    -> (tensor<4x?xf32>, tensor<f16>, tensor<2x3xbf16>) {
  // CHECK: kf.erf %{{.*}} : tensor<4x?xf32>
  %0 = kf.erf %x : tensor<4x?xf32>
  // CHECK: kf.erf %{{.*}} : tensor<f16>
  %1 = kf.erf %h : tensor<f16>
  // CHECK: kf.erf %{{.*}} : tensor<2x3xbf16>
  %2 = kf.erf %b : tensor<2x3xbf16>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<f16>, tensor<2x3xbf16>
}
