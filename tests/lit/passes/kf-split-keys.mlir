// RUN: kfuse-opt %s -split-input-file --kf-attach-target --kf-split-keys | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target --kf-split-keys --kf-fuse | FileCheck %s --check-prefix=FUSE
// kf-split-keys-values.mlir checks the values the split computes.

// Grouped-query decode-sized attention: 8 heads of 3 query rows over 2
// kv heads of 2048 keys are 8 blocks on 132 SMs. Chunks of 256 keys (the
// fewest keys a block with one wave of blocks) make 16 kv heads and 64
// query heads (each query head broadcast to its kv head's 8 chunks); the
// chunks' f32 results are weighted by the softmax of their log-sum-exps.
// CHECK-LABEL: func.func @decode_gqa
// CHECK-DAG: %[[K:.*]] = kf.reshape %arg1 : tensor<1x2x2048x64xbf16> -> tensor<1x16x256x64xbf16>
// CHECK-DAG: %[[V:.*]] = kf.reshape %arg2 : tensor<1x2x2048x64xbf16> -> tensor<1x16x256x64xbf16>
// CHECK: %[[Q5:.*]] = kf.reshape %arg0 : tensor<1x8x3x64xbf16> -> tensor<1x2x1x12x64xbf16>
// CHECK: %[[QB:.*]] = kf.broadcast %[[Q5]] : tensor<1x2x1x12x64xbf16> -> tensor<1x2x8x12x64xbf16>
// CHECK: %[[Q:.*]] = kf.reshape %[[QB]] : tensor<1x2x8x12x64xbf16> -> tensor<1x64x3x64xbf16>
// CHECK: %[[O:.*]], %[[L:.*]] = kf.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f64} : {{.*}} -> tensor<1x64x3x64xf32>, tensor<1x64x3xf32>
// CHECK: kf.softmax %{{.*}} {axis = 4 : i64} : tensor<1x8x3x64x8xf32>
// CHECK: %[[S:.*]] = kf.reduce sum %{{.*}} [4] : tensor<1x8x3x64x8xf32> -> tensor<1x8x3x64xf32>
// CHECK: %[[C:.*]] = kf.cast %[[S]] : tensor<1x8x3x64xf32> -> tensor<1x8x3x64xbf16>
// CHECK: return %[[C]]
// The chunks' attention is one kernel reading k and v in place (q's
// broadcast is its prologue), the combination and the cast another.
// FUSE-LABEL: func.func @decode_gqa
// FUSE: %[[A:.*]]:2 = kf.kernel attention(%arg1, %arg2, %arg0 :
// FUSE: kf.attention {{.*}} -> tensor<1x64x3x64xf32>, tensor<1x64x3xf32>
// FUSE: kf.kernel reduction(%[[A]]#0, %[[A]]#1 :
// FUSE: kf.softmax
// FUSE: kf.reduce sum
// FUSE: kf.cast
// FUSE-NOT: kf.kernel
// FUSE: return
func.func @decode_gqa(%q: tensor<1x8x3x64xbf16>, %k: tensor<1x2x2048x64xbf16>,
                      %v: tensor<1x2x2048x64xbf16>) -> tensor<1x8x3x64xbf16> {
  %o = kf.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x8x3x64xbf16>, tensor<1x2x2048x64xbf16>, tensor<1x2x2048x64xbf16> -> tensor<1x8x3x64xbf16>
  return %o : tensor<1x8x3x64xbf16>
}

// -----

// Heads merged by a reshape that alone reads the result ([B, S, H * Dv]):
// the combination's rows take its shape, so that the row kernel writes
// the merged heads (a view would split its rows otherwise).
// CHECK-LABEL: func.func @merged_heads
// CHECK: kf.reduce sum %{{.*}} [3] : tensor<1x1x4096x4xf32> -> tensor<1x1x4096xf32>
// CHECK: %[[C:.*]] = kf.cast %{{.*}} : tensor<1x1x4096xf32> -> tensor<1x1x4096xbf16>
// CHECK: return %[[C]]
// FUSE-LABEL: func.func @merged_heads
// FUSE: kf.kernel attention
// FUSE: kf.kernel reduction
// FUSE-NOT: kf.kernel
// FUSE: return
func.func @merged_heads(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x4096x128xbf16>,
                        %v: tensor<1x8x4096x128xbf16>) -> tensor<1x1x4096xbf16> {
  %o = kf.attention %q, %k, %v {scale = 0.088 : f64} : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16> -> tensor<1x32x1x128xbf16>
  %m = kf.reshape %o : tensor<1x32x1x128xbf16> -> tensor<1x1x4096xbf16>
  return %m : tensor<1x1x4096xbf16>
}

// -----

// Value head dim other than the query's, f16, 1536 keys: 4 blocks take
// 6 chunks of 256 (3 of 512 would be the same waves but more keys a
// block).
// CHECK-LABEL: func.func @value_dim
// CHECK: kf.attention {{.*}} -> tensor<2x12x1x128xf32>, tensor<2x12x1xf32>
func.func @value_dim(%q: tensor<2x2x1x64xf16>, %k: tensor<2x2x1536x64xf16>,
                     %v: tensor<2x2x1536x128xf16>) -> tensor<2x2x1x128xf16> {
  %o = kf.attention %q, %k, %v {scale = 0.125 : f64} : tensor<2x2x1x64xf16>, tensor<2x2x1536x64xf16>, tensor<2x2x1536x128xf16> -> tensor<2x2x1x128xf16>
  return %o : tensor<2x2x1x128xf16>
}

// -----

// What stays whole: enough blocks (128 query rows x 132 heads), causal
// masking, a log-sum-exp a backward reads, too few keys, keys that are a
// view (a transpose of the projection's heads), and sizes that change at
// run time (kf-runtime-extents' bucket).
// CHECK-LABEL: func.func @stays_whole
// CHECK-NOT: kf.softmax
// CHECK: return
func.func @stays_whole(%q: tensor<1x132x128x64xbf16>, %k: tensor<1x132x2048x64xbf16>,
                       %qs: tensor<1x4x1x64xbf16>, %ks: tensor<1x4x2048x64xbf16>,
                       %short: tensor<1x4x511x64xbf16>, %kt: tensor<1x2048x4x64xbf16>)
    -> (tensor<1x132x128x64xbf16>, tensor<1x4x1x64xbf16>, tensor<1x4x1x64xbf16>, tensor<1x4xf32>,
        tensor<1x4x1x64xbf16>, tensor<1x4x1x64xbf16>) {
  %full = kf.attention %q, %k, %k {scale = 0.125 : f64} : tensor<1x132x128x64xbf16>, tensor<1x132x2048x64xbf16>, tensor<1x132x2048x64xbf16> -> tensor<1x132x128x64xbf16>
  %causal = kf.attention %qs, %ks, %ks {scale = 0.125 : f64, causal = true} : tensor<1x4x1x64xbf16>, tensor<1x4x2048x64xbf16>, tensor<1x4x2048x64xbf16> -> tensor<1x4x1x64xbf16>
  %o, %lse = kf.attention %qs, %ks, %ks {scale = 0.125 : f64} : tensor<1x4x1x64xbf16>, tensor<1x4x2048x64xbf16>, tensor<1x4x2048x64xbf16> -> tensor<1x4x1x64xbf16>, tensor<1x4x1xf32>
  %l = kf.reshape %lse : tensor<1x4x1xf32> -> tensor<1x4xf32>
  %few = kf.attention %qs, %short, %short {scale = 0.125 : f64} : tensor<1x4x1x64xbf16>, tensor<1x4x511x64xbf16>, tensor<1x4x511x64xbf16> -> tensor<1x4x1x64xbf16>
  %kv = kf.transpose %kt [0, 2, 1, 3] : tensor<1x2048x4x64xbf16> -> tensor<1x4x2048x64xbf16>
  %view = kf.attention %qs, %kv, %kv {scale = 0.125 : f64} : tensor<1x4x1x64xbf16>, tensor<1x4x2048x64xbf16>, tensor<1x4x2048x64xbf16> -> tensor<1x4x1x64xbf16>
  return %full, %causal, %o, %l, %few, %view : tensor<1x132x128x64xbf16>, tensor<1x4x1x64xbf16>, tensor<1x4x1x64xbf16>, tensor<1x4xf32>, tensor<1x4x1x64xbf16>, tensor<1x4x1x64xbf16>
}

// -----

// CHECK-LABEL: func.func @runtime_keys
// CHECK-NOT: kf.softmax
// CHECK: return
func.func @runtime_keys(%q: tensor<1x4x1x64xbf16>,
                        %k: tensor<1x4x2048x64xbf16> {kf.runtime_dims = array<i64: 2>})
    -> tensor<1x4x1x64xbf16> {
  %o = kf.attention %q, %k, %k {scale = 0.125 : f64} : tensor<1x4x1x64xbf16>, tensor<1x4x2048x64xbf16>, tensor<1x4x2048x64xbf16> -> tensor<1x4x1x64xbf16>
  return %o : tensor<1x4x1x64xbf16>
}
