// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @logic
func.func @logic(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  // CHECK: kf.and %{{.*}}, %{{.*}} : tensor<4xi1>
  %0 = kf.and %a, %b : tensor<4xi1>
  // CHECK: kf.or %{{.*}}, %{{.*}} : tensor<4xi1>
  %1 = kf.or %a, %b : tensor<4xi1>
  // CHECK: kf.xor %{{.*}}, %{{.*}} : tensor<4xi1>
  %2 = kf.xor %a, %b : tensor<4xi1>
  // CHECK: kf.not %{{.*}} : tensor<4xi1>
  %3 = kf.not %a : tensor<4xi1>
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// CHECK-LABEL: func.func @rounding
func.func @rounding(%x: tensor<4xbf16>, %i: tensor<4xi64>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi64>) {
  // CHECK: kf.floor %{{.*}} : tensor<4xbf16>
  %0 = kf.floor %x : tensor<4xbf16>
  // CHECK: kf.round %{{.*}} : tensor<4xbf16>
  %1 = kf.round %x : tensor<4xbf16>
  // CHECK: kf.mod %{{.*}}, %{{.*}} : tensor<4xbf16>
  %2 = kf.mod %x, %x : tensor<4xbf16>
  // CHECK: kf.mod %{{.*}}, %{{.*}} : tensor<4xi64>
  %3 = kf.mod %i, %i : tensor<4xi64>
  return %0, %1, %2, %3 : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi64>
}
