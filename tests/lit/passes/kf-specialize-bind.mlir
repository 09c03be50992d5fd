// RUN: kfuse-opt %s --kf-specialize="bind=M=8,N=16" | FileCheck %s
// RUN: kfuse-opt %s --kf-specialize="bind=M=8" -verify-diagnostics -o /dev/null
// RUN: not kfuse-opt %s --kf-specialize="bind=M" 2>&1 | FileCheck %s --check-prefix=BAD

// Explicit bindings, without argument shapes.
// CHECK-LABEL: func.func @bind
// CHECK-SAME: tensor<8x16xf16>
// CHECK: kf.softmax %{{.*}} {axis = 1 : i64} : tensor<8x16xf16>
// BAD: bad binding 'M', expected NAME=SIZE
// expected-error @+1 {{symbolic dim 1 ('N') of 'tensor<?x?xf16>' is not bound to a size}}
func.func @bind(%x: tensor<?x?xf16> {kf.dim_symbols = ["M", "N"]}) -> tensor<?x?xf16> {
  %y = kf.softmax %x {axis = 1} : tensor<?x?xf16>
  return %y : tensor<?x?xf16>
}
