// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true" --kf-fuse --kf-pad --kf-tile | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-fuse --kf-pad --kf-tile | FileCheck %s --check-prefix=UNALIGNED
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-pad --kf-tile | FileCheck %s --check-prefix=WGMMA
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true allow-tf32=true" --kf-fuse --kf-pad --kf-tile | FileCheck %s --check-prefix=TF32

// Logits of 1001 columns feed a softmax: 1001 bf16 are 2002 bytes a row,
// so the matmul's result gets rows of 1008 (16-byte multiples), and the
// softmax reads them 8 at a time. The softmax's own result goes back to
// the caller and stays dense: its stores are one element at a time.
// CHECK-LABEL: func.func @logits_softmax
// CHECK: kf.kernel matmul
// CHECK-SAME: padded_rows = array<i64: 1008>
// CHECK: kf.kernel normalization
// CHECK-SAME: tiling = #kf.row_tiling<chunks =
// CHECK-NOT: padded_rows
// CHECK: return
// Without kf-pad the logits' rows are dense: the matmul's output tile
// leaves one element at a time, and so does the softmax.
// Unaligned buffers gain nothing from padded rows.
// UNALIGNED-LABEL: func.func @logits_softmax
// UNALIGNED-NOT: padded_rows
func.func @logits_softmax(%x: tensor<256x64xbf16>, %w: tensor<1001x64xbf16>) -> tensor<256x1001xbf16> {
  %l = kf.matmul %x, %w {transpose_b = true} : tensor<256x64xbf16>, tensor<1001x64xbf16> -> tensor<256x1001xbf16>
  %p = kf.softmax %l {axis = 1} : tensor<256x1001xbf16>
  return %p : tensor<256x1001xbf16>
}

// -----

// A softmax whose input and output are both padded (f32 rows of 1001 to
// 1004, bf16 rows to 1008) takes f32 vectors (4 lanes) over the longer
// padded row: 1008 / 4 = 252 vectors. The result feeds a matmul as its
// K-contiguous operand: with rows of 1001 the matmul could not use tensor
// cores (its copies move 8-element chunks); with padded rows it does.
// CHECK-LABEL: func.func @scores_softmax_values
// CHECK: kf.kernel matmul
// CHECK-SAME: padded_rows = array<i64: 1004>
// CHECK: kf.kernel normalization
// CHECK-SAME: padded_rows = array<i64: 1008>
// CHECK-SAME: tiling = #kf.row_tiling<vector = 4, chunks = 4,
// CHECK: kf.kernel matmul
// CHECK-SAME: #kf.mma_tiling
// UNALIGNED-LABEL: func.func @scores_softmax_values
// UNALIGNED: kf.kernel matmul
// UNALIGNED: kf.kernel matmul
// UNALIGNED-SAME: no_tensor_cores
func.func @scores_softmax_values(%q: tensor<1001x64xbf16>, %k: tensor<1001x64xbf16>, %v: tensor<1001x64xbf16>) -> tensor<1001x64xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<1001x64xbf16>, tensor<1001x64xbf16> -> tensor<1001x1001xf32>
  %p = kf.softmax %s {axis = 1} : tensor<1001x1001xf32>
  %c = kf.cast %p : tensor<1001x1001xf32> -> tensor<1001x1001xbf16>
  %o = kf.matmul %c, %v : tensor<1001x1001xbf16>, tensor<1001x64xbf16> -> tensor<1001x64xbf16>
  return %o : tensor<1001x64xbf16>
}

// -----

// What stays dense, and why:
//  - rows of 16-byte multiples (1000 bf16) need no padding;
//  - a pointwise kernel reads its buffers as one flat run of vectors;
//  - rows of 5 would grow by more than an eighth (to 8);
//  - a returned value is the caller's, dense.
// CHECK-LABEL: func.func @dense
// CHECK-NOT: padded_rows
// CHECK: return
func.func @dense(%a: tensor<64x1000xbf16>, %b: tensor<64x1001xf32>, %c: tensor<4096x5xf32>) -> (tensor<64x1000xbf16>, tensor<64x1001xf32>, tensor<4096x1xf32>, tensor<64x1xf32>) {
  %sa = kf.softmax %a {axis = 1} : tensor<64x1000xbf16>
  %ea = kf.exp %sa : tensor<64x1000xbf16>
  %sb = kf.softmax %b {axis = 1} : tensor<64x1001xf32>
  %eb = kf.exp %sb : tensor<64x1001xf32>
  %sc = kf.softmax %c {axis = 1} : tensor<4096x5xf32>
  %rc = kf.reduce sum %sc [1] {keep_dims = true} : tensor<4096x5xf32> -> tensor<4096x1xf32>
  %rb = kf.reduce max %sb [1] {keep_dims = true} : tensor<64x1001xf32> -> tensor<64x1xf32>
  return %ea, %eb, %rc, %rb : tensor<64x1000xbf16>, tensor<64x1001xf32>, tensor<4096x1xf32>, tensor<64x1xf32>
}

// -----

// The caller's operands, rows not whole 16-byte chunks: a B of 1001
// columns, and an A and B^T along K = 771. kf-pad copies each into a
// padded buffer (a pointwise kernel writing padded rows: B's rows of N on
// whole 128-byte lines, 1024; rows of K = 771 to 776) and the matmul takes
// tensor cores; a matmul too small to pay for the copies keeps the
// fallback.
// CHECK-LABEL: func.func @caller_operands
// CHECK: %[[B:.*]] = kf.kernel pointwise(%arg1 : tensor<768x1001xbf16>)
// CHECK-SAME: padded_rows = array<i64: 1024>
// CHECK: kf.kernel matmul(%arg0, %[[B]] :
// CHECK-SAME: #kf.mma_tiling
// CHECK: %[[A2:.*]] = kf.kernel pointwise(%arg2 : tensor<2x512x771xbf16>)
// CHECK-SAME: padded_rows = array<i64: 776>
// CHECK: %[[B2:.*]] = kf.kernel pointwise(%arg3 : tensor<1024x771xbf16>)
// CHECK-SAME: padded_rows = array<i64: 776>
// CHECK: kf.kernel matmul(%[[A2]], %[[B2]] :
// CHECK-SAME: #kf.mma_tiling
// CHECK: kf.kernel matmul(%arg4, %arg5 :
// CHECK-SAME: no_tensor_cores
// UNALIGNED-LABEL: func.func @caller_operands
// UNALIGNED-NOT: padded_rows
// UNALIGNED: return
func.func @caller_operands(%x: tensor<512x768xbf16>, %w: tensor<768x1001xbf16>, %a: tensor<2x512x771xbf16>, %b: tensor<1024x771xbf16>, %s: tensor<33x27xbf16>, %t: tensor<27x40xbf16>) -> (tensor<512x1001xbf16>, tensor<2x512x1024xbf16>, tensor<33x40xbf16>) {
  %0 = kf.matmul %x, %w : tensor<512x768xbf16>, tensor<768x1001xbf16> -> tensor<512x1001xbf16>
  %1 = kf.matmul %a, %b {transpose_b = true} : tensor<2x512x771xbf16>, tensor<1024x771xbf16> -> tensor<2x512x1024xbf16>
  %2 = kf.matmul %s, %t : tensor<33x27xbf16>, tensor<27x40xbf16> -> tensor<33x40xbf16>
  return %0, %1, %2 : tensor<512x1001xbf16>, tensor<2x512x1024xbf16>, tensor<33x40xbf16>
}

// -----

// A B of whole 16-byte vectors whose rows start off 128-byte lines (4104
// bf16 columns, 8208 bytes): a 4096 x 4104 x 4096 matmul pays for a copy
// into rows of 4160, and its result stays the caller's dense one; a
// decode-sized matmul (M = 16) does not pay, and a B given as [N, K] has
// rows of K = 4096, on the lines.
// WGMMA-LABEL: func.func @b_rows_off_lines
// WGMMA: %[[B:.*]] = kf.kernel pointwise(%arg1 : tensor<4096x4104xbf16>)
// WGMMA-SAME: padded_rows = array<i64: 4160>
// WGMMA: %[[C:.*]] = kf.kernel matmul(%arg0, %[[B]] :
// WGMMA-NOT: padded_rows
// WGMMA: %[[DECODE:.*]] = kf.kernel matmul(%arg2, %arg1 :
// WGMMA-NOT: padded_rows
// WGMMA: %[[CT:.*]] = kf.kernel matmul(%arg0, %arg3 :
// WGMMA-NOT: padded_rows
// WGMMA: return %[[C]], %[[DECODE]], %[[CT]]
func.func @b_rows_off_lines(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4104xbf16>, %d: tensor<16x4096xbf16>, %bt: tensor<4104x4096xbf16>) -> (tensor<4096x4104xbf16>, tensor<16x4104xbf16>, tensor<4096x4104xbf16>) {
  %0 = kf.matmul %a, %b : tensor<4096x4096xbf16>, tensor<4096x4104xbf16> -> tensor<4096x4104xbf16>
  %1 = kf.matmul %d, %b : tensor<16x4096xbf16>, tensor<4096x4104xbf16> -> tensor<16x4104xbf16>
  %2 = kf.matmul %a, %bt {transpose_b = true} : tensor<4096x4096xbf16>, tensor<4104x4096xbf16> -> tensor<4096x4104xbf16>
  return %0, %1, %2 : tensor<4096x4104xbf16>, tensor<16x4104xbf16>, tensor<4096x4104xbf16>
}

// -----

// An attention whose head dims are odd (rows of 21 bf16, 42 bytes): on
// sm_90 q, k and v are copied into rows of 24 (zeros past the end), which
// the FlashAttention template reads 16 bytes at a time; the output stays
// dense. Without wgmma the one-thread-per-output kernel reads them as they
// are, uncopied. q and k are one buffer here: one copy.
// WGMMA-LABEL: func.func @attention_odd_head_dim
// WGMMA: %[[Q:.*]] = kf.kernel pointwise(%arg0
// WGMMA-SAME: padded_rows = array<i64: 24>
// WGMMA: %[[V:.*]] = kf.kernel pointwise(%arg1
// WGMMA-SAME: padded_rows = array<i64: 24>
// WGMMA: kf.kernel attention(%[[Q]], %[[V]] :
// WGMMA-SAME: #kf.flash_tiling
// WGMMA-NOT: padded_rows
// WGMMA: return
// CHECK-LABEL: func.func @attention_odd_head_dim
// CHECK-NOT: padded_rows
// CHECK: no_tensor_cores = "the FlashAttention template needs sm_90 (wgmma)"
func.func @attention_odd_head_dim(%q: tensor<1x2x64x21xbf16>, %v: tensor<1x2x64x21xbf16>) -> tensor<1x2x64x21xbf16> {
  %o = kf.attention %q, %q, %v {scale = 0.125 : f64} : tensor<1x2x64x21xbf16>, tensor<1x2x64x21xbf16>, tensor<1x2x64x21xbf16> -> tensor<1x2x64x21xbf16>
  return %o : tensor<1x2x64x21xbf16>
}

// -----

// The bias is computed in the attention kernel from q itself: a copy of q
// with padded rows would be read dense by the bias, so nothing is copied
// and the attention stays off the FlashAttention template.
// WGMMA-LABEL: func.func @attention_odd_head_dim_bias_from_q
// WGMMA-NOT: padded_rows
// WGMMA: no_tensor_cores = "head dims 21 and 21 leave rows of odd length, not copied into padded rows"
func.func @attention_odd_head_dim_bias_from_q(%q: tensor<1x2x21x21xbf16>, %k: tensor<1x2x21x21xbf16>) -> tensor<1x2x21x21xbf16> {
  %bias = kf.mul %q, %q : tensor<1x2x21x21xbf16>
  %o = kf.attention %q, %k, %k bias %bias : tensor<1x2x21x21xbf16> {scale = 0.125 : f64} : tensor<1x2x21x21xbf16>, tensor<1x2x21x21xbf16>, tensor<1x2x21x21xbf16> -> tensor<1x2x21x21xbf16>
  return %o : tensor<1x2x21x21xbf16>
}

// -----

// TF32 products read both operands K-major. With allow-tf32, an f32 B of
// [K, N] is copied transposed (a tiled transpose kernel) and the matmul
// reads the copy as [N, K]: the copy moves 2 MB, the exact fallback would
// take 16 GFLOP. A matmul too small for the copy to pay stays exact.
// TF32-LABEL: func.func @tf32_b_copied_transposed
// TF32: %[[T:.*]] = kf.kernel pointwise(%arg1 : tensor<1024x512xf32>)
// TF32-SAME: #kf.transpose_tiling
// TF32: kf.transpose %{{.*}} [1, 0] : tensor<1024x512xf32> -> tensor<512x1024xf32>
// TF32: kf.kernel matmul(%arg0, %[[T]] : tensor<8192x1024xf32>, tensor<512x1024xf32>)
// TF32-SAME: tf32 = true
// TF32: kf.matmul %{{.*}}, %{{.*}} {transpose_b = true} : tensor<8192x1024xf32>, tensor<512x1024xf32> -> tensor<8192x512xf32>
// TF32: kf.kernel matmul(%arg2, %arg3 : tensor<64x64xf32>, tensor<64x64xf32>)
// TF32-SAME: no_tensor_cores = "its f32 operands are not both K-major
// Without allow-tf32 f32 stays exact, and nothing is copied.
// WGMMA-LABEL: func.func @tf32_b_copied_transposed
// WGMMA-NOT: kf.transpose
// WGMMA: no_tensor_cores = "its operands are f32 (exact: TF32 not allowed)"
func.func @tf32_b_copied_transposed(%a: tensor<8192x1024xf32>, %b: tensor<1024x512xf32>,
                                    %x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> (tensor<8192x512xf32>, tensor<64x64xf32>) {
  %c = kf.matmul %a, %b : tensor<8192x1024xf32>, tensor<1024x512xf32> -> tensor<8192x512xf32>
  %z = kf.matmul %x, %y : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %c, %z : tensor<8192x512xf32>, tensor<64x64xf32>
}
