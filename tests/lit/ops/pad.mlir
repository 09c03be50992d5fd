// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<3x4xi32>) -> tensor<4x7xi32> {
  // CHECK: kf.pad %{{.*}} low [1, 0] high [0, 3] value -2.000000e+00 : tensor<3x4xi32> -> tensor<4x7xi32>
  %0 = kf.pad %x low [1, 0] high [0, 3] value -2.0 : tensor<3x4xi32> -> tensor<4x7xi32>
  return %0 : tensor<4x7xi32>
}
