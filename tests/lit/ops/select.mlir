// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @select
func.func @select(%c: tensor<2x?xi1>, %x: tensor<2x?xbf16>, %y: tensor<2x?xbf16>) -> tensor<2x?xbf16> {
  // CHECK: kf.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x?xi1>, tensor<2x?xbf16>
  %0 = kf.select %c, %x, %y : tensor<2x?xi1>, tensor<2x?xbf16>
  return %0 : tensor<2x?xbf16>
}
