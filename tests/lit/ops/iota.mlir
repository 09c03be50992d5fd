// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @iota
func.func @iota() -> (tensor<4x8xi32>, tensor<?x8xf32>) {
  // CHECK: kf.iota {dim = 1 : i64} : tensor<4x8xi32>
  %0 = kf.iota {dim = 1} : tensor<4x8xi32>
  // CHECK: kf.iota {dim = 0 : i64, dim_symbols = ["S", ""]} : tensor<?x8xf32>
  %1 = kf.iota {dim = 0, dim_symbols = ["S", ""]} : tensor<?x8xf32>
  return %0, %1 : tensor<4x8xi32>, tensor<?x8xf32>
}
