// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-rematerialize --kf-fuse | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-rematerialize --kf-fuse --kf-split-k | FileCheck %s --check-prefix=SPLIT

// A Linear's weight gradients: reshapes that regroup the rows of 16-bit
// operands ([B, S, K] as [B * S, K]) are read in place by the matmul
// kernel, no copy kernel; kf-rematerialize gives each matmul its own copy
// of a shared one. A reshape of a computed operand is not a view of a
// kernel input: the exp writes its result, which the matmul reads through
// the reshape. The same view as both operands is one kernel input.
// CHECK-LABEL: func.func @operand_views
// CHECK: kf.kernel matmul(%arg0, %arg1 : tensor<4x64x32xbf16>, tensor<4x64x48xbf16>)
// CHECK:   kf.reshape %{{.*}} : tensor<4x64x32xbf16> -> tensor<256x32xbf16>
// CHECK:   kf.reshape %{{.*}} : tensor<4x64x48xbf16> -> tensor<256x48xbf16>
// CHECK:   kf.matmul
// CHECK: %[[E:.*]] = kf.kernel pointwise(%arg1 : tensor<4x64x48xbf16>)
// CHECK:   kf.exp
// CHECK: kf.kernel matmul(%[[E]], %arg0 : tensor<4x64x48xbf16>, tensor<4x64x32xbf16>)
// CHECK: kf.kernel matmul(%arg2 : tensor<4x8x32xbf16>)
// CHECK:   %[[V:.*]] = kf.reshape %{{.*}} : tensor<4x8x32xbf16> -> tensor<32x32xbf16>
// CHECK:   kf.matmul %[[V]], %[[V]]
// CHECK-NOT: kf.kernel
// CHECK: return
func.func @operand_views(%x: tensor<4x64x32xbf16>, %dy: tensor<4x64x48xbf16>, %h: tensor<4x8x32xbf16>)
    -> (tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x32xf32>) {
  %a = kf.reshape %x : tensor<4x64x32xbf16> -> tensor<256x32xbf16>
  %b = kf.reshape %dy : tensor<4x64x48xbf16> -> tensor<256x48xbf16>
  %w = kf.matmul %a, %b {transpose_a = true} : tensor<256x32xbf16>, tensor<256x48xbf16> -> tensor<32x48xf32>
  %e = kf.exp %dy : tensor<4x64x48xbf16>
  %eb = kf.reshape %e : tensor<4x64x48xbf16> -> tensor<256x48xbf16>
  %w2 = kf.matmul %a, %eb {transpose_a = true} : tensor<256x32xbf16>, tensor<256x48xbf16> -> tensor<32x48xf32>
  %hr = kf.reshape %h : tensor<4x8x32xbf16> -> tensor<32x32xbf16>
  %w3 = kf.matmul %hr, %hr : tensor<32x32xbf16>, tensor<32x32xbf16> -> tensor<32x32xf32>
  return %w, %w2, %w3 : tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x32xf32>
}

// -----

// Not views the template can read in place: f32 rows (TF32 products take
// K-major operands only, which kf-pad may have to copy), rows of 12 bf16
// (not whole 16-byte chunks), and a reshape that changes the rows.
// CHECK-LABEL: func.func @not_views
// CHECK: kf.kernel pointwise
// CHECK: kf.kernel matmul
// CHECK: kf.kernel pointwise
// CHECK: kf.kernel matmul
// CHECK: kf.kernel pointwise
// CHECK: kf.kernel matmul
func.func @not_views(%x: tensor<4x64x32xf32>, %y: tensor<4x64x12xbf16>, %z: tensor<64x16x16xbf16>)
    -> (tensor<32x32xf32>, tensor<12x12xf32>, tensor<32x32xf32>) {
  %a = kf.reshape %x : tensor<4x64x32xf32> -> tensor<256x32xf32>
  %w = kf.matmul %a, %a {transpose_a = true} : tensor<256x32xf32>, tensor<256x32xf32> -> tensor<32x32xf32>
  %b = kf.reshape %y : tensor<4x64x12xbf16> -> tensor<256x12xbf16>
  %w2 = kf.matmul %b, %b {transpose_a = true} : tensor<256x12xbf16>, tensor<256x12xbf16> -> tensor<12x12xf32>
  %c = kf.reshape %z : tensor<64x16x16xbf16> -> tensor<32x512xbf16>
  %w3 = kf.matmul %c, %c {transpose_b = true} : tensor<32x512xbf16>, tensor<32x512xbf16> -> tensor<32x32xf32>
  return %w, %w2, %w3 : tensor<32x32xf32>, tensor<12x12xf32>, tensor<32x32xf32>
}

// -----

// kf-split-k splits a weight gradient with few output tiles (1024 x 1024
// over K = 8192): the partials kernel takes the views along; the kernel
// summing the chunks reads neither activation.
// SPLIT-LABEL: func.func @split_weight_gradient
// SPLIT: %[[P:.*]] = kf.kernel matmul(%arg0, %arg1 : tensor<4x2048x1024xbf16>, tensor<4x2048x1024xbf16>)
// SPLIT:   kf.reshape %{{.*}} : tensor<4x2048x1024xbf16> -> tensor<8192x1024xbf16>
// SPLIT:   kf.reshape %{{.*}} : tensor<4x2048x1024xbf16> -> tensor<8192x1024xbf16>
// SPLIT:   kf.matmul %{{.*}}, %{{.*}} {k_chunk = {{[0-9]+}} : i64, transpose_a = true}
// SPLIT: kf.kernel reduction(%[[P]] : tensor<{{[0-9]+}}x1024x1024xf32>)
// SPLIT-NOT: kf.reshape
// SPLIT: kf.cast
// SPLIT: return
func.func @split_weight_gradient(%x: tensor<4x2048x1024xbf16>, %dy: tensor<4x2048x1024xbf16>) -> tensor<1024x1024xbf16> {
  %a = kf.reshape %x : tensor<4x2048x1024xbf16> -> tensor<8192x1024xbf16>
  %b = kf.reshape %dy : tensor<4x2048x1024xbf16> -> tensor<8192x1024xbf16>
  %w = kf.matmul %a, %b {transpose_a = true} : tensor<8192x1024xbf16>, tensor<8192x1024xbf16> -> tensor<1024x1024xbf16>
  return %w : tensor<1024x1024xbf16>
}
