// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// A strided slice of a known dim, and a symbolic dim kept whole (limit
// INT64_MAX: the end of the dim).
// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<?x12xbf16>) -> tensor<?x4xbf16> {
  // CHECK: kf.slice %{{.*}} starts [0, 1] limits [9223372036854775807, 12] steps [1, 3] : tensor<?x12xbf16> -> tensor<?x4xbf16>
  %0 = kf.slice %x starts [0, 1] limits [9223372036854775807, 12] steps [1, 3] : tensor<?x12xbf16> -> tensor<?x4xbf16>
  return %0 : tensor<?x4xbf16>
}
