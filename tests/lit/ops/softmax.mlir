// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<?x128xf32>) -> tensor<?x128xf32> {
  // CHECK: kf.softmax %{{.*}} {axis = 1 : i64} : tensor<?x128xf32>
  %0 = kf.softmax %x {axis = 1} : tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}
