// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @arg_reduce
func.func @arg_reduce(%x: tensor<?x10xbf16>, %i: tensor<4x6xi32>) -> (tensor<?xi64>, tensor<1x6xi64>) {
  // CHECK: kf.arg_reduce max %{{.*}}[1] : tensor<?x10xbf16> -> tensor<?xi64>
  %0 = kf.arg_reduce max %x[1] : tensor<?x10xbf16> -> tensor<?xi64>
  // CHECK: kf.arg_reduce min %{{.*}}[0] {keep_dims = true} : tensor<4x6xi32> -> tensor<1x6xi64>
  %1 = kf.arg_reduce min %i[0] {keep_dims = true} : tensor<4x6xi32> -> tensor<1x6xi64>
  return %0, %1 : tensor<?xi64>, tensor<1x6xi64>
}

// CHECK-LABEL: func.func @cumsum
func.func @cumsum(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  // CHECK: kf.cumsum %{{.*}}[0] : tensor<?x10xf32> -> tensor<?x10xf32>
  %0 = kf.cumsum %x[0] : tensor<?x10xf32> -> tensor<?x10xf32>
  return %0 : tensor<?x10xf32>
}
