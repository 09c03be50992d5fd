// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @kernel
func.func @kernel(%x: tensor<128x64xf32>) -> (tensor<128x64xf32>, tensor<128xf32>) {
  // CHECK: kf.kernel pointwise(%{{.*}} : tensor<128x64xf32>) attributes {config = {block = 256 : i64}}
  // CHECK: kf.yield %{{.*}}, %{{.*}} : tensor<128x64xf32>, tensor<128xf32>
  %0:2 = kf.kernel pointwise(%x : tensor<128x64xf32>) attributes {config = {block = 256 : i64}} {
  ^bb0(%a: tensor<128x64xf32>):
    %e = kf.exp %a : tensor<128x64xf32>
    %s = kf.reduce sum %e [1] : tensor<128x64xf32> -> tensor<128xf32>
    kf.yield %e, %s : tensor<128x64xf32>, tensor<128xf32>
  } -> (tensor<128x64xf32>, tensor<128xf32>)
  return %0#0, %0#1 : tensor<128x64xf32>, tensor<128xf32>
}
