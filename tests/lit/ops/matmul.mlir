// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<?x64xbf16>, %b: tensor<64x32xbf16>, %ba: tensor<3x16x8xf16>,
                  %bb: tensor<3x32x8xf16>) -> (tensor<?x32xf32>, tensor<3x16x32xf16>) {
  // CHECK: kf.matmul %{{.*}}, %{{.*}} : tensor<?x64xbf16>, tensor<64x32xbf16> -> tensor<?x32xf32>
  %0 = kf.matmul %a, %b : tensor<?x64xbf16>, tensor<64x32xbf16> -> tensor<?x32xf32>
  // CHECK: kf.matmul %{{.*}}, %{{.*}} {transpose_b = true} : tensor<3x16x8xf16>, tensor<3x32x8xf16> -> tensor<3x16x32xf16>
  %1 = kf.matmul %ba, %bb {transpose_b = true} : tensor<3x16x8xf16>, tensor<3x32x8xf16> -> tensor<3x16x32xf16>
  return %0, %1 : tensor<?x32xf32>, tensor<3x16x32xf16>
}
