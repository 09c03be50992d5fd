// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<?x3xf32>, %b: tensor<?x5xf32>) -> tensor<?x8xf32> {
  // CHECK: kf.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<?x3xf32>, tensor<?x5xf32> -> tensor<?x8xf32>
  %0 = kf.concat %a, %b {axis = 1} : tensor<?x3xf32>, tensor<?x5xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
