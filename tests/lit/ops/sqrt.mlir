// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @sqrt
func.func @sqrt(%x: tensor<4x?xf32>, %h: tensor<f16>, %b: tensor<2x3xbf16>)
    -> (tensor<4x?xf32>, tensor<f16>, tensor<2x3xbf16>) {
  // CHECK: kf.sqrt %{{.*}} : tensor<4x?xf32>
  %0 = kf.sqrt %x : tensor<4x?xf32>
  // CHECK: kf.sqrt %{{.*}} : tensor<f16>
  %1 = kf.sqrt %h : tensor<f16>
  // CHECK: kf.sqrt %{{.*}} : tensor<2x3xbf16>
  %2 = kf.sqrt %b : tensor<2x3xbf16>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<f16>, tensor<2x3xbf16>
}
