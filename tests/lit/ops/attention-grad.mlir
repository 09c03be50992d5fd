// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// Grouped-query attention's backward: dk and dv have k's and v's two heads.
// CHECK-LABEL: func.func @attention_grad
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = kf.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 1.250000e-01 : f64}
// CHECK-SAME: -> tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>
func.func @attention_grad(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x32xbf16>,
                          %do: tensor<2x8x?x32xbf16>, %lse: tensor<2x8x?xf32>, %delta: tensor<2x8x?xf32>)
    -> (tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>) {
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {causal = true, scale = 0.125 : f64}
      : tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x32xbf16>, tensor<2x8x?x32xbf16>,
        tensor<2x8x?xf32>, tensor<2x8x?xf32> -> tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>
  return %dq, %dk, %dv : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>
}
