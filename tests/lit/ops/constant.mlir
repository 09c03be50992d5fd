// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<f32>, tensor<2x2xi32>, tensor<3xbf16>, tensor<2xi1>) {
  // CHECK: kf.constant dense<1.500000e+00> : tensor<f32>
  %0 = kf.constant dense<1.5> : tensor<f32>
  // CHECK: kf.constant dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi32>
  %1 = kf.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  // CHECK: kf.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xbf16>
  %2 = kf.constant dense<[1.0, 2.0, 3.0]> : tensor<3xbf16>
  // CHECK: kf.constant dense<[true, false]> : tensor<2xi1>
  %3 = kf.constant dense<[true, false]> : tensor<2xi1>
  return %0, %1, %2, %3 : tensor<f32>, tensor<2x2xi32>, tensor<3xbf16>, tensor<2xi1>
}
