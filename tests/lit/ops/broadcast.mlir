// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%s: tensor<f32>, %r: tensor<1x64xbf16>) -> (tensor<4x64xf32>, tensor<?x64xbf16>) {
  // CHECK: kf.broadcast %{{.*}} : tensor<f32> -> tensor<4x64xf32>
  %0 = kf.broadcast %s : tensor<f32> -> tensor<4x64xf32>
  // CHECK: kf.broadcast %{{.*}} {dim_symbols = ["M", ""]} : tensor<1x64xbf16> -> tensor<?x64xbf16>
  %1 = kf.broadcast %r {dim_symbols = ["M", ""]} : tensor<1x64xbf16> -> tensor<?x64xbf16>
  return %0, %1 : tensor<4x64xf32>, tensor<?x64xbf16>
}
