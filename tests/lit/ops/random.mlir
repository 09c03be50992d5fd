// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @random
func.func @random(%seed: tensor<i32>) -> (tensor<4x8xf32>, tensor<?x8xbf16>) {
  // CHECK: kf.random %{{.*}} {stream = 0 : i64} : tensor<i32> -> tensor<4x8xf32>
  %0 = kf.random %seed {stream = 0} : tensor<i32> -> tensor<4x8xf32>
  // CHECK: kf.random %{{.*}} {dim_symbols = ["S", ""], stream = 1 : i64} : tensor<i32> -> tensor<?x8xbf16>
  %1 = kf.random %seed {stream = 1, dim_symbols = ["S", ""]} : tensor<i32> -> tensor<?x8xbf16>
  return %0, %1 : tensor<4x8xf32>, tensor<?x8xbf16>
}
