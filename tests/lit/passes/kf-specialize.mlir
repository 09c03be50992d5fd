// RUN: kfuse-opt %s -split-input-file --kf-specialize="shapes=128x64,64" -verify-diagnostics | FileCheck %s

// Symbols bound from the argument shapes flow through every op; fully
// bound dim_symbols annotations disappear.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-SAME: (%{{.*}}: tensor<128x64xf32>, %{{.*}}: tensor<64xf32>) -> tensor<128x1xf32>
// CHECK: kf.broadcast %{{.*}} : tensor<64xf32> -> tensor<128x64xf32>
// CHECK: kf.add %{{.*}} : tensor<128x64xf32>
// CHECK: kf.gelu %{{.*}} : tensor<128x64xf32>
// CHECK: kf.reduce sum %{{.*}} [1] {keep_dims = true} : tensor<128x64xf32> -> tensor<128x1xf32>
// CHECK-NOT: dim_symbols
func.func @bias_gelu(%x: tensor<?x64xf32> {kf.dim_symbols = ["M", ""]}, %b: tensor<64xf32>) -> tensor<?x1xf32> {
  %bb = kf.broadcast %b {dim_symbols = ["M", ""]} : tensor<64xf32> -> tensor<?x64xf32>
  %y = kf.add %x, %bb : tensor<?x64xf32>
  %g = kf.gelu %y : tensor<?x64xf32>
  %s = kf.reduce sum %g [1] {keep_dims = true} : tensor<?x64xf32> -> tensor<?x1xf32>
  return %s : tensor<?x1xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_transpose
// CHECK-SAME: (%{{.*}}: tensor<128x64xf32>, %{{.*}}: tensor<64xf32>) -> tensor<64x128xf32>
func.func @matmul_transpose(%x: tensor<?x?xf32> {kf.dim_symbols = ["M", "K"]}, %w: tensor<?xf32> {kf.dim_symbols = ["K"]}) -> tensor<?x?xf32> {
  %w2 = kf.reshape %w {dim_symbols = ["K", ""]} : tensor<?xf32> -> tensor<?x1xf32>
  // CHECK: kf.reshape %{{.*}} : tensor<64xf32> -> tensor<64x1xf32>
  %y = kf.matmul %x, %w2 : tensor<?x?xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  // CHECK: kf.matmul %{{.*}}, %{{.*}} : tensor<128x64xf32>, tensor<64x1xf32> -> tensor<128x1xf32>
  %t = kf.transpose %y [1, 0] : tensor<?x1xf32> -> tensor<1x?xf32>
  // CHECK: kf.transpose %{{.*}} [1, 0] : tensor<128x1xf32> -> tensor<1x128xf32>
  %o = kf.iota {dim = 0, dim_symbols = ["K", "M"]} : tensor<?x?xf32>
  // CHECK: kf.iota {dim = 0 : i64} : tensor<64x128xf32>
  return %o : tensor<?x?xf32>
}

// -----

// expected-error @+1 {{symbolic dim 'M' is bound to 128 by argument 0 dim 0 and to 64 by argument 1 dim 0}}
func.func @conflict(%x: tensor<?x64xf32> {kf.dim_symbols = ["M", ""]}, %y: tensor<?xf32> {kf.dim_symbols = ["M"]}) {
  return
}

// -----

// expected-error @+1 {{argument 0 dim 1 is 32 in the graph but 64 in the call}}
func.func @static_mismatch(%x: tensor<128x32xf32>, %y: tensor<64xf32>) {
  return
}

// -----

// expected-error @+1 {{argument 'w' is 'tensor<64x64xf32>' but the call gives the shape 64}}
func.func @rank_mismatch(%x: tensor<128x64xf32>, %w: tensor<64x64xf32> {kf.name = "w"}) {
  return
}

// -----

func.func @unbound(%x: tensor<128x64xf32>, %y: tensor<64xf32>) -> tensor<128x?xf32> {
  // expected-error @+1 {{'kf.iota' op symbolic dim 1 ('N') of 'tensor<128x?xf32>' is not bound to a size}}
  %z = kf.iota {dim = 0, dim_symbols = ["", "N"]} : tensor<128x?xf32>
  return %z : tensor<128x?xf32>
}
