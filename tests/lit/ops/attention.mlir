// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>,
                     %m: tensor<2x8x?x?xi1>, %bias: tensor<2x8x?x?xbf16>)
    -> (tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>) {
  // CHECK: kf.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 1.250000e-01 : f64}
  %0 = kf.attention %q, %k, %v {causal = true, scale = 0.125 : f64}
      : tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16> -> tensor<2x8x?x64xbf16>
  // CHECK: kf.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : tensor<2x8x?x?xi1> bias %{{.*}} : tensor<2x8x?x?xbf16>
  %1 = kf.attention %q, %k, %v mask %m : tensor<2x8x?x?xi1> bias %bias : tensor<2x8x?x?xbf16> {scale = 0.125 : f64}
      : tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16> -> tensor<2x8x?x64xbf16>
  return %0, %1 : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>
}

// The optional log-sum-exp result.
// CHECK-LABEL: func.func @attention_lse
// CHECK: %{{.*}}, %{{.*}} = kf.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : {{.*}} -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
func.func @attention_lse(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>)
    -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %o, %lse = kf.attention %q, %k, %v {scale = 0.125 : f64}
      : tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16> -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  return %o, %lse : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}
