// RUN: kfuse-opt %s -split-input-file --kf-online-softmax | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-online-softmax --kf-fuse | FileCheck %s --check-prefix=FUSED

// The softmax op over scaled scores, K^T by the matmul's flag, the
// probabilities cast to bf16 for the second product.
// CHECK-LABEL: func.func @softmax_op
// FUSED-LABEL: func.func @softmax_op
// FUSED: kf.kernel attention
// FUSED-NOT: kf.kernel
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x64x32xbf16>, %[[K:.*]]: tensor<2x4x64x32xbf16>, %[[V:.*]]: tensor<2x4x64x32xbf16>)
// CHECK-NEXT: %[[O:.*]] = kf.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @softmax_op(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x64xf32>
  %c = kf.constant dense<0.125> : tensor<2x4x64x64xf32>
  %t = kf.mul %s, %c : tensor<2x4x64x64xf32>
  %p = kf.softmax %t {axis = 3} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o : tensor<2x4x64x32xbf16>
}

// -----

// exp/max/sum/div with keep_dims, the scale on Q, K^T through a transpose.
// CHECK-LABEL: func.func @primitive_softmax
// FUSED-LABEL: func.func @primitive_softmax
// FUSED: kf.kernel attention
// FUSED-NOT: kf.kernel
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x64x32xf16>, %[[K:.*]]: tensor<2x4x64x32xf16>, %[[V:.*]]: tensor<2x4x64x32xf16>)
// CHECK-NEXT: %[[O:.*]] = kf.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @primitive_softmax(%q: tensor<2x4x64x32xf16>, %k: tensor<2x4x64x32xf16>, %v: tensor<2x4x64x32xf16>) -> tensor<2x4x64x32xf16> {
  %c = kf.constant dense<0.25> : tensor<2x4x64x32xf16>
  %qs = kf.mul %c, %q : tensor<2x4x64x32xf16>
  %kt = kf.transpose %k [0, 1, 3, 2] : tensor<2x4x64x32xf16> -> tensor<2x4x32x64xf16>
  %s = kf.matmul %qs, %kt : tensor<2x4x64x32xf16>, tensor<2x4x32x64xf16> -> tensor<2x4x64x64xf16>
  %m = kf.reduce max %s [3] {keep_dims = true} : tensor<2x4x64x64xf16> -> tensor<2x4x64x1xf16>
  %mb = kf.broadcast %m : tensor<2x4x64x1xf16> -> tensor<2x4x64x64xf16>
  %d = kf.sub %s, %mb : tensor<2x4x64x64xf16>
  %e = kf.exp %d : tensor<2x4x64x64xf16>
  %z = kf.reduce sum %e [3] {keep_dims = true} : tensor<2x4x64x64xf16> -> tensor<2x4x64x1xf16>
  %zb = kf.broadcast %z : tensor<2x4x64x1xf16> -> tensor<2x4x64x64xf16>
  %p = kf.div %e, %zb : tensor<2x4x64x64xf16>
  %o = kf.matmul %p, %v : tensor<2x4x64x64xf16>, tensor<2x4x64x32xf16> -> tensor<2x4x64x32xf16>
  return %o : tensor<2x4x64x32xf16>
}

// -----

// Reductions without keep_dims, reshaped back; the scale as a division
// of the scores (by sqrt(64)); rank-3 operands.
// CHECK-LABEL: func.func @rank3_divided
// FUSED-LABEL: func.func @rank3_divided
// FUSED-COUNT-1: kf.kernel attention
// FUSED-NOT: kf.kernel matmul
// CHECK-DAG: %[[Q4:.*]] = kf.reshape %arg0 : tensor<8x64x64xbf16> -> tensor<1x8x64x64xbf16>
// CHECK-DAG: %[[K4:.*]] = kf.reshape %arg1 : tensor<8x64x64xbf16> -> tensor<1x8x64x64xbf16>
// CHECK-DAG: %[[V4:.*]] = kf.reshape %arg2 : tensor<8x64x64xbf16> -> tensor<1x8x64x64xbf16>
// CHECK: %[[A:.*]] = kf.attention %[[Q4]], %[[K4]], %[[V4]] {scale = 1.250000e-01 : f64}
// CHECK: %[[O:.*]] = kf.reshape %[[A]] : tensor<1x8x64x64xbf16> -> tensor<8x64x64xbf16>
// CHECK-NOT: kf.matmul
// CHECK: return %[[O]]
func.func @rank3_divided(%q: tensor<8x64x64xbf16>, %k: tensor<8x64x64xbf16>, %v: tensor<8x64x64xbf16>) -> tensor<8x64x64xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<8x64x64xbf16>, tensor<8x64x64xbf16> -> tensor<8x64x64xbf16>
  %c = kf.constant dense<8.0> : tensor<8x64x64xbf16>
  %t = kf.div %s, %c : tensor<8x64x64xbf16>
  %m = kf.reduce max %t [2] : tensor<8x64x64xbf16> -> tensor<8x64xbf16>
  %mr = kf.reshape %m : tensor<8x64xbf16> -> tensor<8x64x1xbf16>
  %mb = kf.broadcast %mr : tensor<8x64x1xbf16> -> tensor<8x64x64xbf16>
  %d = kf.sub %t, %mb : tensor<8x64x64xbf16>
  %e = kf.exp %d : tensor<8x64x64xbf16>
  %z = kf.reduce sum %e [2] : tensor<8x64x64xbf16> -> tensor<8x64xbf16>
  %zr = kf.reshape %z : tensor<8x64xbf16> -> tensor<8x64x1xbf16>
  %zb = kf.broadcast %zr : tensor<8x64x1xbf16> -> tensor<8x64x64xbf16>
  %p = kf.div %e, %zb : tensor<8x64x64xbf16>
  %o = kf.matmul %p, %v : tensor<8x64x64xbf16>, tensor<8x64x64xbf16> -> tensor<8x64x64xbf16>
  return %o : tensor<8x64x64xbf16>
}

// -----

// A causal mask: keep where row >= column, else -inf.
// CHECK-LABEL: func.func @causal
// FUSED-LABEL: func.func @causal
// FUSED: kf.kernel attention
// FUSED-NOT: kf.kernel
// CHECK: kf.attention %arg0, %arg1, %arg2 {causal = true, scale = 1.250000e-01 : f64}
// CHECK-NOT: kf.select
func.func @causal(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x64xf32>
  %c = kf.constant dense<0.125> : tensor<2x4x64x64xf32>
  %t = kf.mul %s, %c : tensor<2x4x64x64xf32>
  %row = kf.iota {dim = 0} : tensor<64x64xi32>
  %col = kf.iota {dim = 1} : tensor<64x64xi32>
  %keep = kf.compare ge, %row, %col : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi1>
  %kb = kf.broadcast %keep : tensor<64x64xi1> -> tensor<2x4x64x64xi1>
  %ninf = kf.constant dense<0xFF800000> : tensor<2x4x64x64xf32>
  %masked = kf.select %kb, %t, %ninf : tensor<2x4x64x64xi1>, tensor<2x4x64x64xf32>
  %p = kf.softmax %masked {axis = 3} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o : tensor<2x4x64x32xbf16>
}

// -----

// The causal mask the other way round (-inf where column > row), the
// exp/max/sum/div softmax (causal rows always keep key 0: no NaN row).
// CHECK-LABEL: func.func @causal_dropped
// FUSED-LABEL: func.func @causal_dropped
// FUSED: kf.kernel attention
// FUSED-NOT: kf.kernel
// CHECK: kf.attention %arg0, %arg1, %arg2 {causal = true, scale = 1.000000e+00 : f64}
func.func @causal_dropped(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>, %v: tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x64xf32>
  %row = kf.iota {dim = 2} : tensor<2x4x64x64xi32>
  %col = kf.iota {dim = 3} : tensor<2x4x64x64xi32>
  %drop = kf.compare gt, %col, %row : tensor<2x4x64x64xi32>, tensor<2x4x64x64xi32> -> tensor<2x4x64x64xi1>
  %ninf = kf.constant dense<0xFF800000> : tensor<2x4x64x64xf32>
  %masked = kf.select %drop, %ninf, %s : tensor<2x4x64x64xi1>, tensor<2x4x64x64xf32>
  %m = kf.reduce max %masked [3] {keep_dims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
  %mb = kf.broadcast %m : tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
  %d = kf.sub %masked, %mb : tensor<2x4x64x64xf32>
  %e = kf.exp %d : tensor<2x4x64x64xf32>
  %z = kf.reduce sum %e [3] {keep_dims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
  %zb = kf.broadcast %z : tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
  %p = kf.div %e, %zb : tensor<2x4x64x64xf32>
  %o = kf.matmul %p, %v : tensor<2x4x64x64xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// -----

// A bias after the scale, an arbitrary mask with the softmax op (whose
// fully masked rows give 0, as kf.attention's do).
// CHECK-LABEL: func.func @bias_and_mask
// FUSED-LABEL: func.func @bias_and_mask
// FUSED: kf.kernel attention
// FUSED-NOT: kf.kernel
// CHECK: kf.attention %arg0, %arg1, %arg2 mask %arg4 : tensor<2x4x64x64xi1> bias %arg3 : tensor<2x4x64x64xf32> {scale = 5.000000e-01 : f64}
func.func @bias_and_mask(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>, %bias: tensor<2x4x64x64xf32>, %keep: tensor<2x4x64x64xi1>) -> tensor<2x4x64x32xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x64xf32>
  %c = kf.constant dense<0.5> : tensor<2x4x64x64xf32>
  %t = kf.mul %s, %c : tensor<2x4x64x64xf32>
  %u = kf.add %bias, %t : tensor<2x4x64x64xf32>
  %ninf = kf.constant dense<0xFF800000> : tensor<2x4x64x64xf32>
  %masked = kf.select %keep, %u, %ninf : tensor<2x4x64x64xi1>, tensor<2x4x64x64xf32>
  %p = kf.softmax %masked {axis = 3} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o : tensor<2x4x64x32xbf16>
}

// -----

// Grouped-query attention: 2 K/V heads repeated for 8 query heads.
// CHECK-LABEL: func.func @grouped_query
// FUSED-LABEL: func.func @grouped_query
// FUSED: kf.kernel attention
// FUSED-NOT: kf.kernel
// CHECK: kf.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f64} : tensor<1x8x64x32xbf16>, tensor<1x2x64x32xbf16>, tensor<1x2x64x32xbf16> -> tensor<1x8x64x32xbf16>
// CHECK-NOT: kf.broadcast
func.func @grouped_query(%q: tensor<1x8x64x32xbf16>, %k: tensor<1x2x64x32xbf16>, %v: tensor<1x2x64x32xbf16>) -> tensor<1x8x64x32xbf16> {
  %k1 = kf.reshape %k : tensor<1x2x64x32xbf16> -> tensor<1x2x1x64x32xbf16>
  %k4 = kf.broadcast %k1 : tensor<1x2x1x64x32xbf16> -> tensor<1x2x4x64x32xbf16>
  %kr = kf.reshape %k4 : tensor<1x2x4x64x32xbf16> -> tensor<1x8x64x32xbf16>
  %v1 = kf.reshape %v : tensor<1x2x64x32xbf16> -> tensor<1x2x1x64x32xbf16>
  %v4 = kf.broadcast %v1 : tensor<1x2x1x64x32xbf16> -> tensor<1x2x4x64x32xbf16>
  %vr = kf.reshape %v4 : tensor<1x2x4x64x32xbf16> -> tensor<1x8x64x32xbf16>
  %s = kf.matmul %q, %kr {transpose_b = true} : tensor<1x8x64x32xbf16>, tensor<1x8x64x32xbf16> -> tensor<1x8x64x64xf32>
  %c = kf.constant dense<0.125> : tensor<1x8x64x64xf32>
  %t = kf.mul %s, %c : tensor<1x8x64x64xf32>
  %p = kf.softmax %t {axis = 3} : tensor<1x8x64x64xf32>
  %pb = kf.cast %p : tensor<1x8x64x64xf32> -> tensor<1x8x64x64xbf16>
  %o = kf.matmul %pb, %vr : tensor<1x8x64x64xbf16>, tensor<1x8x64x32xbf16> -> tensor<1x8x64x32xbf16>
  return %o : tensor<1x8x64x32xbf16>
}

// -----

// K given already transposed ([B, H, D, S]): kf.attention gets it back
// in rows through a transpose (O(S D) work, not S x S).
// CHECK-LABEL: func.func @k_columns
// FUSED-LABEL: func.func @k_columns
// FUSED: kf.kernel pointwise
// FUSED: kf.transpose
// FUSED: kf.kernel attention
// FUSED-NOT: kf.kernel
// CHECK: %[[K:.*]] = kf.transpose %arg1 [0, 1, 3, 2] : tensor<2x4x32x64xbf16> -> tensor<2x4x64x32xbf16>
// CHECK: kf.attention %arg0, %[[K]], %arg2
func.func @k_columns(%q: tensor<2x4x64x32xbf16>, %kt: tensor<2x4x32x64xbf16>, %v: tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xbf16> {
  %s = kf.matmul %q, %kt : tensor<2x4x64x32xbf16>, tensor<2x4x32x64xbf16> -> tensor<2x4x64x64xf32>
  %p = kf.softmax %s {axis = 3} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o : tensor<2x4x64x32xbf16>
}

// -----

// Near-matches that keep their meaning only unfused.
// CHECK-LABEL: func.func @negative_scale
// FUSED-LABEL: func.func @negative_scale
// FUSED-NOT: kf.kernel attention
// FUSED: kf.kernel matmul
// FUSED: kf.kernel normalization
// FUSED: kf.kernel matmul
// CHECK-NOT: kf.attention
// CHECK: kf.matmul {{.*}}kf.online_softmax = "not rewritten: the scale is not a positive finite constant"
func.func @negative_scale(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x64xf32>
  %c = kf.constant dense<-0.125> : tensor<2x4x64x64xf32>
  %t = kf.mul %s, %c : tensor<2x4x64x64xf32>
  %p = kf.softmax %t {axis = 3} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o : tensor<2x4x64x32xbf16>
}

// -----

// CHECK-LABEL: func.func @scaled_bias
// FUSED-LABEL: func.func @scaled_bias
// FUSED-NOT: kf.kernel attention
// FUSED: kf.kernel matmul
// FUSED: kf.kernel normalization
// FUSED: kf.kernel matmul
// CHECK: kf.online_softmax = "not rewritten: the scale multiplies the bias too
func.func @scaled_bias(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>, %bias: tensor<2x4x64x64xf32>) -> tensor<2x4x64x32xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x64xf32>
  %u = kf.add %s, %bias : tensor<2x4x64x64xf32>
  %c = kf.constant dense<0.125> : tensor<2x4x64x64xf32>
  %t = kf.mul %u, %c : tensor<2x4x64x64xf32>
  %p = kf.softmax %t {axis = 3} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o : tensor<2x4x64x32xbf16>
}

// -----

// CHECK-LABEL: func.func @primitive_softmax_masked
// FUSED-LABEL: func.func @primitive_softmax_masked
// FUSED-NOT: kf.kernel attention
// FUSED: kf.kernel matmul
// FUSED: kf.kernel normalization
// FUSED: kf.kernel matmul
// CHECK: kf.online_softmax = "not rewritten: a mask with the exp/max/sum/div softmax
func.func @primitive_softmax_masked(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>, %v: tensor<2x4x64x32xf32>, %keep: tensor<2x4x64x64xi1>) -> tensor<2x4x64x32xf32> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x64xf32>
  %ninf = kf.constant dense<0xFF800000> : tensor<2x4x64x64xf32>
  %masked = kf.select %keep, %s, %ninf : tensor<2x4x64x64xi1>, tensor<2x4x64x64xf32>
  %m = kf.reduce max %masked [3] {keep_dims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
  %mb = kf.broadcast %m : tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
  %d = kf.sub %masked, %mb : tensor<2x4x64x64xf32>
  %e = kf.exp %d : tensor<2x4x64x64xf32>
  %z = kf.reduce sum %e [3] {keep_dims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
  %zb = kf.broadcast %z : tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
  %p = kf.div %e, %zb : tensor<2x4x64x64xf32>
  %o = kf.matmul %p, %v : tensor<2x4x64x64xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// -----

// The probabilities are a graph output too: the S x S matrix is written
// anyway, so the rewrite would only add work.
// CHECK-LABEL: func.func @probabilities_returned
// FUSED-LABEL: func.func @probabilities_returned
// FUSED-NOT: kf.kernel attention
// FUSED: kf.kernel matmul
// FUSED: kf.kernel normalization
// FUSED: kf.kernel matmul
// CHECK: kf.online_softmax = "not rewritten: the kf.cast of the scores is also used outside the attention"
func.func @probabilities_returned(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>) -> (tensor<2x4x64x32xbf16>, tensor<2x4x64x64xbf16>) {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x64xf32>
  %p = kf.softmax %s {axis = 3} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o, %pb : tensor<2x4x64x32xbf16>, tensor<2x4x64x64xbf16>
}

// -----

// CHECK-LABEL: func.func @softmax_over_queries
// FUSED-LABEL: func.func @softmax_over_queries
// FUSED-NOT: kf.kernel attention
// FUSED: kf.kernel matmul
// FUSED: kf.kernel normalization
// FUSED: kf.kernel matmul
// CHECK: kf.online_softmax = "not rewritten: the softmax is not along the keys (the last axis)"
func.func @softmax_over_queries(%q: tensor<2x4x64x32xbf16>, %k: tensor<2x4x64x32xbf16>, %v: tensor<2x4x64x32xbf16>) -> tensor<2x4x64x32xbf16> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x64xf32>
  %p = kf.softmax %s {axis = 2} : tensor<2x4x64x64xf32>
  %pb = kf.cast %p : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
  %o = kf.matmul %pb, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x32xbf16> -> tensor<2x4x64x32xbf16>
  return %o : tensor<2x4x64x32xbf16>
}

// -----

// exp(s) / sum exp(s) without the max overflows where softmax does not.
// CHECK-LABEL: func.func @unshifted_softmax
// FUSED-LABEL: func.func @unshifted_softmax
// FUSED-NOT: kf.kernel attention
// FUSED: kf.kernel matmul
// FUSED: kf.kernel normalization
// FUSED: kf.kernel matmul
// CHECK: kf.online_softmax = "not rewritten: the left operand is not a softmax
func.func @unshifted_softmax(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>, %v: tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32> {
  %s = kf.matmul %q, %k {transpose_b = true} : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x64xf32>
  %e = kf.exp %s : tensor<2x4x64x64xf32>
  %z = kf.reduce sum %e [3] {keep_dims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
  %zb = kf.broadcast %z : tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
  %p = kf.div %e, %zb : tensor<2x4x64x64xf32>
  %o = kf.matmul %p, %v : tensor<2x4x64x64xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// -----

// A plain chain of two products is no near-match: no attribute.
// CHECK-LABEL: func.func @two_products
// FUSED-LABEL: func.func @two_products
// FUSED-COUNT-2: kf.kernel matmul
// FUSED-NOT: kf.kernel
// CHECK-NOT: kf.online_softmax
// CHECK: return
func.func @two_products(%a: tensor<64x32xbf16>, %b: tensor<32x64xbf16>, %c: tensor<64x32xbf16>) -> tensor<64x32xbf16> {
  %ab = kf.matmul %a, %b : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xbf16>
  %o = kf.matmul %ab, %c : tensor<64x64xbf16>, tensor<64x32xbf16> -> tensor<64x32xbf16>
  return %o : tensor<64x32xbf16>
}
