// RUN: kfuse-opt %s -split-input-file --kf-fuse | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-fuse="mode=unfused" | FileCheck %s --check-prefix=UNFUSED

// An elementwise chain with a broadcast is one pointwise kernel; the splat
// constant is cloned into it.
// CHECK-LABEL: func.func @chain
// CHECK: kf.kernel pointwise(%{{.*}}, %{{.*}} : tensor<32xf32>, tensor<64x32xf32>)
// CHECK:   kf.constant dense<2.000000e+00>
// CHECK:   kf.broadcast
// CHECK:   kf.mul
// CHECK:   kf.exp
// CHECK:   kf.yield
// CHECK-NOT: kf.kernel
// UNFUSED-LABEL: func.func @chain
// UNFUSED-COUNT-4: kf.kernel pointwise
// UNFUSED-NOT: kf.kernel
func.func @chain(%x: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %c = kf.constant dense<2.0> : tensor<64x32xf32>
  %bb = kf.broadcast %b : tensor<32xf32> -> tensor<64x32xf32>
  %m = kf.mul %x, %bb : tensor<64x32xf32>
  %s = kf.mul %m, %c : tensor<64x32xf32>
  %e = kf.exp %s : tensor<64x32xf32>
  return %e : tensor<64x32xf32>
}

// -----

// Softmax from primitives: one normalization kernel keeping the row.
// UNFUSED-LABEL: func.func @softmax
// CHECK-LABEL: func.func @softmax
// CHECK: kf.kernel normalization
// CHECK-COUNT-2: kf.reduce
// CHECK: kf.div
// CHECK-NOT: kf.kernel
func.func @softmax(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %m = kf.reduce max %x [1] {keep_dims = true} : tensor<8x128xf32> -> tensor<8x1xf32>
  %mb = kf.broadcast %m : tensor<8x1xf32> -> tensor<8x128xf32>
  %d = kf.sub %x, %mb : tensor<8x128xf32>
  %e = kf.exp %d : tensor<8x128xf32>
  %s = kf.reduce sum %e [1] {keep_dims = true} : tensor<8x128xf32> -> tensor<8x1xf32>
  %sb = kf.broadcast %s : tensor<8x1xf32> -> tensor<8x128xf32>
  %y = kf.div %e, %sb : tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}

// -----

// A row sum with its prologue is one reduction kernel, and so is a
// reduction over another axis with its prologue (computed at each element
// it reads); a matmul stays on its own.
// CHECK-LABEL: func.func @reductions
// CHECK: kf.kernel reduction
// CHECK:   kf.exp
// CHECK:   kf.reduce sum %{{.*}} [1]
// CHECK-NOT: kf.kernel pointwise
// CHECK: kf.kernel reduction
// CHECK:   kf.neg
// CHECK:   kf.reduce sum %{{.*}} [0]
// CHECK: kf.kernel matmul
func.func @reductions(%x: tensor<16x32xf32>, %w: tensor<32x8xf32>) -> (tensor<16xf32>, tensor<32xf32>, tensor<16x8xf32>) {
  %e = kf.exp %x : tensor<16x32xf32>
  %r = kf.reduce sum %e [1] : tensor<16x32xf32> -> tensor<16xf32>
  %n = kf.neg %x : tensor<16x32xf32>
  %c = kf.reduce sum %n [0] : tensor<16x32xf32> -> tensor<32xf32>
  %m = kf.matmul %x, %w : tensor<16x32xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  return %r, %c, %m : tensor<16xf32>, tensor<32xf32>, tensor<16x8xf32>
}

// -----

// A transcendental on a small tensor broadcast over a large one would be
// recomputed for every element: it gets its own kernel.
// CHECK-LABEL: func.func @no_recompute
// CHECK: kf.kernel pointwise
// CHECK:   kf.exp %{{.*}} : tensor<4xf32>
// CHECK: kf.kernel pointwise
// CHECK-NOT: kf.exp
func.func @no_recompute(%v: tensor<4xf32>, %x: tensor<1024x4xf32>) -> tensor<1024x4xf32> {
  %e = kf.exp %v : tensor<4xf32>
  %b = kf.broadcast %e : tensor<4xf32> -> tensor<1024x4xf32>
  %y = kf.add %x, %b : tensor<1024x4xf32>
  return %y : tensor<1024x4xf32>
}

// -----

// CHECK-LABEL: func.func @bad_mode
// RUN: not kfuse-opt %s --kf-fuse="mode=sometimes" 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: kf-fuse: mode must be fused or unfused, got 'sometimes'
func.func @bad_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Siblings reading one input become one kernel with two results, so x is
// read once; likewise two reductions over the same rows.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[P:.*]]:2 = kf.kernel pointwise
// CHECK:   kf.exp
// CHECK:   kf.sin
// CHECK:   kf.yield %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<64x32xf32>
// CHECK: %[[R:.*]]:2 = kf.kernel reduction
// CHECK:   kf.reduce sum
// CHECK:   kf.reduce max
// CHECK: return %[[P]]#0, %[[P]]#1, %[[R]]#0, %[[R]]#1
func.func @siblings(%x: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e = kf.exp %x : tensor<64x32xf32>
  %s = kf.sin %x : tensor<64x32xf32>
  %sum = kf.reduce sum %x [1] : tensor<64x32xf32> -> tensor<64xf32>
  %max = kf.reduce max %x [1] : tensor<64x32xf32> -> tensor<64xf32>
  return %e, %s, %sum, %max : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// Two softmaxes of one input's elements over different rows (3x255 and
// 765) do not merge as siblings, though their epilogues have as many
// elements: a row kernel holds one row space (fuzz seed 30000294 crashed
// tiling such a kernel).
// CHECK-LABEL: func.func @siblings_over_other_rows
// CHECK: kf.kernel normalization
// CHECK:   kf.softmax {{.*}} : tensor<9x255xf32>
// CHECK:   kf.yield {{.*}} : tensor<9x255xf32>
// CHECK: kf.kernel normalization
// CHECK:   kf.softmax {{.*}} : tensor<3x765xf32>
// CHECK:   kf.yield {{.*}} : tensor<3x765xf32>
func.func @siblings_over_other_rows(%x: tensor<9x255xf32>) -> (tensor<9x255xf32>, tensor<3x765xf32>) {
  %r = kf.reshape %x : tensor<9x255xf32> -> tensor<3x765xf32>
  %a = kf.softmax %x {axis = 1 : i64} : tensor<9x255xf32>
  %b = kf.softmax %r {axis = 1 : i64} : tensor<3x765xf32>
  %sa = kf.sigmoid %a : tensor<9x255xf32>
  %sb = kf.mul %b, %r : tensor<3x765xf32>
  return %sa, %sb : tensor<9x255xf32>, tensor<3x765xf32>
}

// -----

// A transpose of a softmax's rows would read other rows than the one a row
// kernel holds: the softmax is a kernel of its own, the transpose another.
// CHECK-LABEL: func.func @softmax_then_transpose
// CHECK: kf.kernel normalization
// CHECK:   kf.softmax
// CHECK: kf.kernel pointwise
// CHECK:   kf.transpose
func.func @softmax_then_transpose(%x: tensor<8x16xf32>) -> tensor<16x8xf32> {
  %s = kf.softmax %x {axis = 1 : i64} : tensor<8x16xf32>
  %t = kf.transpose %s [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

// -----

// Per-row sums broadcast along the row stay in the row kernel; broadcast
// across rows (a new leading dim) they do not.
// (The two row kernels read the same input: they merge as siblings.)
// CHECK-LABEL: func.func @row_broadcasts
// CHECK: kf.kernel reduction
// CHECK:   kf.reduce sum
// CHECK:   kf.broadcast {{.*}} : tensor<8x1xf32> -> tensor<8x16xf32>
// CHECK:   kf.div
// CHECK:   kf.reduce sum
// CHECK: kf.kernel pointwise
// CHECK:   kf.broadcast {{.*}} : tensor<8xf32> -> tensor<8x8xf32>
func.func @row_broadcasts(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x8xf32>) {
  %s = kf.reduce sum %x [1] {keep_dims = true} : tensor<8x16xf32> -> tensor<8x1xf32>
  %b = kf.broadcast %s : tensor<8x1xf32> -> tensor<8x16xf32>
  %n = kf.div %x, %b : tensor<8x16xf32>
  %r = kf.reduce sum %x [1] : tensor<8x16xf32> -> tensor<8xf32>
  %across = kf.broadcast %r : tensor<8xf32> -> tensor<8x8xf32>
  return %n, %across : tensor<8x16xf32>, tensor<8x8xf32>
}

// -----

// A splat constant that is an output is written by a kernel of its own.
// CHECK-LABEL: func.func @constant_output
// CHECK: kf.kernel pointwise {
// CHECK:   kf.constant dense<2.500000e+00> : tensor<f32>
// CHECK:   kf.yield
func.func @constant_output() -> tensor<f32> {
  %c = kf.constant dense<2.5> : tensor<f32>
  return %c : tensor<f32>
}

// -----

// A matmul takes its elementwise consumers as an epilogue (bias add, GELU),
// but not a prologue: the cast feeding it is a kernel of its own.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK: kf.kernel pointwise
// CHECK: kf.cast
// CHECK: kf.kernel matmul
// CHECK: kf.matmul
// CHECK: kf.add
// CHECK: kf.gelu
// CHECK-NOT: kf.kernel
func.func @matmul_epilogue(%x: tensor<64x32xf32>, %w: tensor<32x48xbf16>,
                           %bias: tensor<48xbf16>) -> tensor<64x48xbf16> {
  %xb = kf.cast %x : tensor<64x32xf32> -> tensor<64x32xbf16>
  %h = kf.matmul %xb, %w : tensor<64x32xbf16>, tensor<32x48xbf16> -> tensor<64x48xbf16>
  %bb = kf.broadcast %bias : tensor<48xbf16> -> tensor<64x48xbf16>
  %s = kf.add %h, %bb : tensor<64x48xbf16>
  %y = kf.gelu %s : tensor<64x48xbf16>
  return %y : tensor<64x48xbf16>
}

// -----

// SwiGLU of bf16 projections accumulated in f32: the kernel of the up
// projection takes silu(gate) * up as its epilogue; the gate projection's
// cast to bf16 stays in its own matmul's epilogue (it writes bf16, not its
// f32 accumulators for the consumer to round).
// CHECK-LABEL: func.func @swiglu_casts
// CHECK: %[[GATE:.*]] = kf.kernel matmul(%arg0, %arg1
// CHECK: kf.matmul
// CHECK-NEXT: kf.cast
// CHECK-SAME: -> tensor<64x96xbf16>
// CHECK: kf.kernel matmul(%arg0, %arg2, %[[GATE]]
// CHECK: kf.matmul
// CHECK: kf.cast
// CHECK: kf.silu
// CHECK: kf.mul
// CHECK-NOT: kf.kernel
func.func @swiglu_casts(%h: tensor<64x32xbf16>, %wg: tensor<32x96xbf16>,
                        %wu: tensor<32x96xbf16>) -> tensor<64x96xbf16> {
  %g32 = kf.matmul %h, %wg : tensor<64x32xbf16>, tensor<32x96xbf16> -> tensor<64x96xf32>
  %g = kf.cast %g32 : tensor<64x96xf32> -> tensor<64x96xbf16>
  %u32 = kf.matmul %h, %wu : tensor<64x32xbf16>, tensor<32x96xbf16> -> tensor<64x96xf32>
  %u = kf.cast %u32 : tensor<64x96xf32> -> tensor<64x96xbf16>
  %a = kf.silu %g : tensor<64x96xbf16>
  %y = kf.mul %a, %u : tensor<64x96xbf16>
  return %y : tensor<64x96xbf16>
}

// -----

// A consumer that reads the product out of place (a transpose) cannot be
// computed from a thread's accumulators: the matmul stays alone.
// CHECK-LABEL: func.func @matmul_then_transpose
// CHECK: kf.kernel matmul
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kf.matmul
// CHECK-NEXT: kf.yield
// CHECK: kf.kernel pointwise
// CHECK: kf.transpose
func.func @matmul_then_transpose(%a: tensor<16x32xbf16>, %b: tensor<32x16xbf16>) -> tensor<16x16xbf16> {
  %h = kf.matmul %a, %b : tensor<16x32xbf16>, tensor<32x16xbf16> -> tensor<16x16xbf16>
  %t = kf.transpose %h [1, 0] : tensor<16x16xbf16> -> tensor<16x16xbf16>
  %y = kf.exp %t : tensor<16x16xbf16>
  return %y : tensor<16x16xbf16>
}

// -----

// Elementwise ops that build an attention's bias (or mask) are computed
// at each score inside the attention kernel, and those on q (RoPE, a
// scale) once a block into its Q tile; those on k or v are not (the
// FlashAttention template copies them straight into shared memory).
// CHECK-LABEL: func.func @attention_prologues
// CHECK: %[[K:.*]] = kf.kernel pointwise(%arg1
// CHECK: kf.mul
// CHECK: kf.kernel attention(%arg0, %arg3, %[[K]], %arg2 :
// CHECK: kf.mul
// CHECK: kf.cast
// CHECK: kf.attention
// CHECK-NOT: kf.kernel
// CHECK: return
func.func @attention_prologues(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>, %b: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %two = kf.constant dense<2.0> : tensor<1x2x64x64xbf16>
  %q2 = kf.mul %q, %two : tensor<1x2x64x64xbf16>
  %k2 = kf.mul %k, %two : tensor<1x2x64x64xbf16>
  %bias = kf.cast %b : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf32>
  %o = kf.attention %q2, %k2, %v bias %bias : tensor<1x2x64x64xf32> {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// q, k and v split into heads by slices, reshapes and transposes join the
// attention kernel, which reads them in place from the packed projection
// (analysis/StridedViews.h); the bias add before them does not. A view
// whose rows are not 16-byte aligned (a slice 4 elements in) is copied by
// a kernel of its own.
// CHECK-LABEL: func.func @attention_head_views
// CHECK: %[[QKV:.*]] = kf.kernel pointwise(%arg0, %arg1
// CHECK: kf.add
// CHECK: kf.kernel attention(%[[QKV]] : tensor<2x8x384xbf16>)
// CHECK-COUNT-3: kf.transpose
// CHECK: kf.attention
// CHECK: %[[ODD:.*]] = kf.kernel pointwise(%[[QKV]]
// CHECK: kf.slice
// CHECK: kf.kernel attention(%[[ODD]], %[[QKV]] :
// CHECK: return
func.func @attention_head_views(%x: tensor<2x8x384xbf16>, %b: tensor<2x8x384xbf16>) -> (tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16>) {
  %qkv = kf.add %x, %b : tensor<2x8x384xbf16>
  %qs = kf.slice %qkv starts [0, 0, 0] limits [9223372036854775807, 9223372036854775807, 128] steps [1, 1, 1] : tensor<2x8x384xbf16> -> tensor<2x8x128xbf16>
  %ks = kf.slice %qkv starts [0, 0, 128] limits [9223372036854775807, 9223372036854775807, 256] steps [1, 1, 1] : tensor<2x8x384xbf16> -> tensor<2x8x128xbf16>
  %vs = kf.slice %qkv starts [0, 0, 256] limits [9223372036854775807, 9223372036854775807, 384] steps [1, 1, 1] : tensor<2x8x384xbf16> -> tensor<2x8x128xbf16>
  %qr = kf.reshape %qs : tensor<2x8x128xbf16> -> tensor<2x8x2x64xbf16>
  %kr = kf.reshape %ks : tensor<2x8x128xbf16> -> tensor<2x8x2x64xbf16>
  %vr = kf.reshape %vs : tensor<2x8x128xbf16> -> tensor<2x8x2x64xbf16>
  %q = kf.transpose %qr [0, 2, 1, 3] : tensor<2x8x2x64xbf16> -> tensor<2x2x8x64xbf16>
  %k = kf.transpose %kr [0, 2, 1, 3] : tensor<2x8x2x64xbf16> -> tensor<2x2x8x64xbf16>
  %v = kf.transpose %vr [0, 2, 1, 3] : tensor<2x8x2x64xbf16> -> tensor<2x2x8x64xbf16>
  %o = kf.attention %q, %k, %v {scale = 0.125 : f64} : tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16> -> tensor<2x2x8x64xbf16>
  %os = kf.slice %qkv starts [0, 0, 4] limits [9223372036854775807, 9223372036854775807, 132] steps [1, 1, 1] : tensor<2x8x384xbf16> -> tensor<2x8x128xbf16>
  %or = kf.reshape %os : tensor<2x8x128xbf16> -> tensor<2x8x2x64xbf16>
  %oq = kf.transpose %or [0, 2, 1, 3] : tensor<2x8x2x64xbf16> -> tensor<2x2x8x64xbf16>
  %ko = kf.slice %qkv starts [0, 0, 136] limits [9223372036854775807, 9223372036854775807, 264] steps [1, 1, 1] : tensor<2x8x384xbf16> -> tensor<2x8x128xbf16>
  %kor = kf.reshape %ko : tensor<2x8x128xbf16> -> tensor<2x8x2x64xbf16>
  %kot = kf.transpose %kor [0, 2, 1, 3] : tensor<2x8x2x64xbf16> -> tensor<2x2x8x64xbf16>
  %o2 = kf.attention %oq, %kot, %kot {scale = 0.125 : f64} : tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16> -> tensor<2x2x8x64xbf16>
  return %o, %o2 : tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16>
}

// -----

// The merge of heads after an attention (transpose to [B, S, H, D],
// reshape to [B * S, H * D]) is stored in place by the attention kernel,
// which yields the merged tensor; an elementwise op after it is not.
// CHECK-LABEL: func.func @attention_merged_heads
// CHECK: %[[O:.*]] = kf.kernel attention(%arg0, %arg1, %arg2 :
// CHECK: kf.attention
// CHECK: kf.transpose
// CHECK: kf.reshape
// CHECK: } -> (tensor<16x128xbf16>)
// CHECK: kf.kernel pointwise(%[[O]]
// CHECK: kf.neg
func.func @attention_merged_heads(%q: tensor<2x2x8x64xbf16>, %k: tensor<2x2x8x64xbf16>, %v: tensor<2x2x8x64xbf16>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>) {
  %o = kf.attention %q, %k, %v {scale = 0.125 : f64} : tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16>, tensor<2x2x8x64xbf16> -> tensor<2x2x8x64xbf16>
  %t = kf.transpose %o [0, 2, 1, 3] : tensor<2x2x8x64xbf16> -> tensor<2x8x2x64xbf16>
  %m = kf.reshape %t : tensor<2x8x2x64xbf16> -> tensor<16x128xbf16>
  %n = kf.neg %m : tensor<16x128xbf16>
  return %m, %n : tensor<16x128xbf16>, tensor<16x128xbf16>
}

// -----

// An attention whose log-sum-exp alone is used still yields O first: the
// templates write both. The consumer of the log-sum-exp is its own kernel.
// CHECK-LABEL: func.func @attention_lse_only
// CHECK: %[[K:.*]]:2 = kf.kernel attention
// CHECK: %[[O:.*]], %[[L:.*]] = kf.attention
// CHECK: kf.yield %[[O]], %[[L]]
// CHECK: kf.kernel pointwise(%[[K]]#1
// CHECK: kf.exp
func.func @attention_lse_only(%q: tensor<1x2x64x64xbf16>) -> tensor<1x2x64xf32> {
  %o, %lse = kf.attention %q, %q, %q {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
  %e = kf.exp %lse : tensor<1x2x64xf32>
  return %e : tensor<1x2x64xf32>
}

// -----

// A Linear over flattened tokens: bias, the reshape back to [B, S, N],
// the residual and GELU are the matmul's epilogue, on its accumulators.
// CHECK-LABEL: func.func @linear_epilogue_through_reshape
// CHECK: kf.kernel matmul(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<512x64xbf16>, tensor<64x96xbf16>, tensor<96xbf16>, tensor<4x128x96xbf16>)
// CHECK:   kf.matmul
// CHECK:   kf.reshape
// CHECK:   kf.gelu
// CHECK-NOT: kf.kernel
// UNFUSED-LABEL: func.func @linear_epilogue_through_reshape
func.func @linear_epilogue_through_reshape(%x: tensor<512x64xbf16>, %w: tensor<64x96xbf16>, %b: tensor<96xbf16>, %r: tensor<4x128x96xbf16>) -> tensor<4x128x96xbf16> {
  %m = kf.matmul %x, %w : tensor<512x64xbf16>, tensor<64x96xbf16> -> tensor<512x96xbf16>
  %bb = kf.broadcast %b : tensor<96xbf16> -> tensor<512x96xbf16>
  %y = kf.add %m, %bb : tensor<512x96xbf16>
  %t = kf.reshape %y : tensor<512x96xbf16> -> tensor<4x128x96xbf16>
  %s = kf.add %t, %r : tensor<4x128x96xbf16>
  %g = kf.gelu %s : tensor<4x128x96xbf16>
  return %g : tensor<4x128x96xbf16>
}

// -----

// A packed-sequence mask: the per-query and per-key ids are gathered once,
// in a kernel of their own (they are 1/128 of the attention's output),
// and compared at each score inside the attention.
// CHECK-LABEL: func.func @mask_of_gathered_ids
// CHECK: %[[IDS:.*]] = kf.kernel pointwise
// CHECK:   kf.gather
// CHECK: kf.kernel attention(%[[IDS]],
// CHECK:   kf.broadcast
// CHECK:   kf.compare eq
// CHECK:   kf.attention
// CHECK-NOT: kf.kernel
// UNFUSED-LABEL: func.func @mask_of_gathered_ids
func.func @mask_of_gathered_ids(%q: tensor<2x4x64x32xf16>, %ids: tensor<128xi32>, %at: tensor<2x1x64x1xi32>) -> tensor<2x4x64x32xf16> {
  %g = kf.gather %ids[%at] {axis = 0 : i64} : tensor<128xi32>, tensor<2x1x64x1xi32> -> tensor<2x1x64x1xi32>
  %gk = kf.reshape %g : tensor<2x1x64x1xi32> -> tensor<2x1x1x64xi32>
  %a = kf.broadcast %g : tensor<2x1x64x1xi32> -> tensor<2x4x64x64xi32>
  %b = kf.broadcast %gk : tensor<2x1x1x64xi32> -> tensor<2x4x64x64xi32>
  %same = kf.compare eq, %a, %b : tensor<2x4x64x64xi32>, tensor<2x4x64x64xi32> -> tensor<2x4x64x64xi1>
  %o = kf.attention %q, %q, %q mask %same : tensor<2x4x64x64xi1> {scale = 0.125 : f64} : tensor<2x4x64x32xf16>, tensor<2x4x64x32xf16>, tensor<2x4x64x32xf16> -> tensor<2x4x64x32xf16>
  return %o : tensor<2x4x64x32xf16>
}

// -----

// A training forward's LayerNorm saves its statistics for the backward:
// the row kernel writes the mean and the variance (graph outputs) beside
// the normalised rows, reading x once. A row-shaped graph output (the
// centred rows) keeps a kernel of its own.
// CHECK-LABEL: func.func @saved_statistics
// CHECK: %[[K:.*]]:3 = kf.kernel normalization(%arg0 : tensor<8x64xf32>)
// CHECK:   kf.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>
// CHECK: return %[[K]]#0, %[[K]]#1, %[[K]]#2
// CHECK-LABEL: func.func @saved_rows
// CHECK: kf.kernel pointwise
// CHECK: kf.kernel normalization
func.func @saved_statistics(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>) {
  %mean = kf.reduce mean %x [1] {keep_dims = true} : tensor<8x64xf32> -> tensor<8x1xf32>
  %mb = kf.broadcast %mean : tensor<8x1xf32> -> tensor<8x64xf32>
  %c = kf.sub %x, %mb : tensor<8x64xf32>
  %sq = kf.mul %c, %c : tensor<8x64xf32>
  %var = kf.reduce mean %sq [1] {keep_dims = true} : tensor<8x64xf32> -> tensor<8x1xf32>
  %r = kf.rsqrt %var : tensor<8x1xf32>
  %rb = kf.broadcast %r : tensor<8x1xf32> -> tensor<8x64xf32>
  %y = kf.mul %c, %rb : tensor<8x64xf32>
  return %y, %mean, %var : tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>
}
func.func @saved_rows(%x: tensor<8x64xf32>, %z: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %s = kf.add %x, %z : tensor<8x64xf32>
  %e = kf.exp %s : tensor<8x64xf32>
  %m = kf.reduce sum %e [1] {keep_dims = true} : tensor<8x64xf32> -> tensor<8x1xf32>
  %mb = kf.broadcast %m : tensor<8x1xf32> -> tensor<8x64xf32>
  %y = kf.div %e, %mb : tensor<8x64xf32>
  return %y, %s : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// A column sum rounded to bf16 (a weight gradient): the cast is the
// reduction kernel's epilogue, computed at each column. A transpose of
// the sums reads other columns than the thread's: its own kernel.
// CHECK-LABEL: func.func @column_sum_epilogue
// CHECK: kf.kernel reduction(%{{.*}} : tensor<64x128xf32>)
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<64x128xf32> -> tensor<128xf32>
// CHECK-NEXT: kf.cast %{{.*}} : tensor<128xf32> -> tensor<128xbf16>
// CHECK-NEXT: kf.yield
// CHECK: kf.kernel reduction(%{{.*}} : tensor<64x8x16xf32>)
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<64x8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: kf.yield
// CHECK: kf.kernel pointwise
// CHECK:   kf.transpose
// CHECK-NOT: kf.kernel
// UNFUSED-LABEL: func.func @column_sum_epilogue
// UNFUSED-COUNT-5: kf.kernel
// UNFUSED-NOT: kf.kernel
func.func @column_sum_epilogue(%x: tensor<64x128xf32>, %y: tensor<64x8x16xf32>)
    -> (tensor<128xbf16>, tensor<16x8xf32>) {
  %s = kf.reduce sum %x [0] : tensor<64x128xf32> -> tensor<128xf32>
  %c = kf.cast %s : tensor<128xf32> -> tensor<128xbf16>
  %t = kf.reduce sum %y [0] : tensor<64x8x16xf32> -> tensor<8x16xf32>
  %u = kf.transpose %t [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  %e = kf.exp %u : tensor<16x8xf32>
  return %c, %e : tensor<128xbf16>, tensor<16x8xf32>
}

// -----

// A view that two kernels read, each able to read it in place: each takes
// a copy of it, rather than a kernel of its own copying it to memory.
// CHECK-LABEL: func.func @shared_view
// UNFUSED-LABEL: func.func @shared_view
// UNFUSED-COUNT-3: kf.kernel
// CHECK: kf.kernel pointwise(%{{.*}} : tensor<64x4x32xf32>)
// CHECK:   kf.transpose
// CHECK:   kf.exp
// CHECK: kf.kernel reduction(%{{.*}} : tensor<64x4x32xf32>)
// CHECK:   kf.transpose
// CHECK:   kf.reduce sum
// CHECK-NOT: kf.kernel
func.func @shared_view(%x: tensor<64x4x32xf32>) -> (tensor<4x64x32xf32>, tensor<4x64xf32>) {
  %t = kf.transpose %x [1, 0, 2] : tensor<64x4x32xf32> -> tensor<4x64x32xf32>
  %e = kf.exp %t : tensor<4x64x32xf32>
  %s = kf.reduce sum %t [2] : tensor<4x64x32xf32> -> tensor<4x64xf32>
  return %e, %s : tensor<4x64x32xf32>, tensor<4x64xf32>
}

// -----

// An attention whose log-sum-exp is read (saved for the backward) still
// stores its heads merged: the kernel yields the view first, then the
// log-sum-exp.
// CHECK-LABEL: func.func @merged_heads_with_lse
// UNFUSED-LABEL: func.func @merged_heads_with_lse
// CHECK: kf.kernel attention
// CHECK:   kf.transpose
// CHECK:   kf.reshape
// CHECK:   kf.yield %{{.*}}, %lse : tensor<2x16x32xbf16>, tensor<2x4x16xf32>
// CHECK-NOT: kf.kernel
func.func @merged_heads_with_lse(%q: tensor<2x4x16x8xbf16>) -> (tensor<2x16x32xbf16>, tensor<2x4x16xf32>) {
  %o, %lse = kf.attention %q, %q, %q {causal = true, scale = 0.125 : f64} : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16> -> tensor<2x4x16x8xbf16>, tensor<2x4x16xf32>
  %t = kf.transpose %o [0, 2, 1, 3] : tensor<2x4x16x8xbf16> -> tensor<2x16x4x8xbf16>
  %m = kf.reshape %t : tensor<2x16x4x8xbf16> -> tensor<2x16x32xbf16>
  return %m, %lse : tensor<2x16x32xbf16>, tensor<2x4x16xf32>
}

// -----

// A view of a matmul's result that two kernels read stays the matmul's
// epilogue to store (kf-fuse-column-sums finds the column sums of the
// product through it): no copy of it in its readers.
// CHECK-LABEL: func.func @matmul_view_shared
// CHECK: kf.kernel matmul
// CHECK:   kf.reshape
// CHECK:   kf.yield %{{.*}} : tensor<2x128x96xf32>
// CHECK: kf.kernel pointwise(%{{.*}} : tensor<2x128x96xf32>)
// CHECK-NOT: kf.reshape
// CHECK: kf.kernel reduction(%{{.*}} : tensor<2x128x96xf32>)
// CHECK-NOT: kf.reshape
// UNFUSED-LABEL: func.func @matmul_view_shared
func.func @matmul_view_shared(%a: tensor<256x64xbf16>, %b: tensor<64x96xbf16>) -> (tensor<2x128x96xf32>, tensor<96xf32>) {
  %m = kf.matmul %a, %b : tensor<256x64xbf16>, tensor<64x96xbf16> -> tensor<256x96xf32>
  %r = kf.reshape %m : tensor<256x96xf32> -> tensor<2x128x96xf32>
  %e = kf.exp %r : tensor<2x128x96xf32>
  %s = kf.reduce sum %r [0, 1] : tensor<2x128x96xf32> -> tensor<96xf32>
  return %e, %s : tensor<2x128x96xf32>, tensor<96xf32>
}

// -----

// A training forward saves a matmul's pre-activation h and its GELU, which
// the next matmul reads: the matmul's epilogue writes both (an elementwise
// kernel stores any value of its shape), where h was a graph output the
// GELU's kernel could not write, and GELU a kernel reading h back.
// CHECK-LABEL: func.func @saved_pre_activation
// CHECK: %[[K:.*]]:2 = kf.kernel matmul
// CHECK:   %[[H:.*]] = kf.cast
// CHECK:   %[[G:.*]] = kf.gelu %[[H]]
// CHECK:   kf.yield %[[G]], %[[H]] : tensor<256x128xbf16>, tensor<256x128xbf16>
// CHECK-NOT: kf.kernel
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @saved_pre_activation(%x: tensor<256x64xbf16>, %w: tensor<64x128xbf16>, %b: tensor<128xf32>) -> (tensor<256x128xbf16>, tensor<256x128xbf16>) {
  %m = kf.matmul %x, %w : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
  %bb = kf.broadcast %b : tensor<128xf32> -> tensor<256x128xf32>
  %a = kf.add %m, %bb : tensor<256x128xf32>
  %h = kf.cast %a : tensor<256x128xf32> -> tensor<256x128xbf16>
  %g = kf.gelu %h : tensor<256x128xbf16>
  return %g, %h : tensor<256x128xbf16>, tensor<256x128xbf16>
}

// -----

// An elementwise chain whose middle value is a graph output too: one
// kernel writes both. A value of fewer elements (broadcast into the
// chain) is not written there.
// CHECK-LABEL: func.func @pointwise_middle_output
// CHECK: %[[K:.*]]:2 = kf.kernel pointwise
// CHECK-NOT: kf.kernel
// CHECK: return %[[K]]#0, %[[K]]#1
// CHECK-LABEL: func.func @pointwise_smaller_output
// CHECK-COUNT-2: kf.kernel pointwise
func.func @pointwise_middle_output(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = kf.exp %x : tensor<64x64xf32>
  %y = kf.mul %e, %e : tensor<64x64xf32>
  return %y, %e : tensor<64x64xf32>, tensor<64x64xf32>
}
func.func @pointwise_smaller_output(%x: tensor<64x64xf32>, %v: tensor<64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
  %e = kf.exp %v : tensor<64xf32>
  %eb = kf.broadcast %e : tensor<64xf32> -> tensor<64x64xf32>
  %y = kf.mul %x, %eb : tensor<64x64xf32>
  return %y, %e : tensor<64x64xf32>, tensor<64xf32>
}
