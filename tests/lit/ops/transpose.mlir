// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<2x3x?xf16>) -> tensor<?x2x3xf16> {
  // CHECK: kf.transpose %{{.*}} [2, 0, 1] : tensor<2x3x?xf16> -> tensor<?x2x3xf16>
  %0 = kf.transpose %x [2, 0, 1] : tensor<2x3x?xf16> -> tensor<?x2x3xf16>
  return %0 : tensor<?x2x3xf16>
}
