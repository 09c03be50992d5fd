// RUN: kfuse-opt %s -split-input-file --canonicalize --cse | FileCheck %s

// The gradient of splitting a fused QKV projection into q, k and v: each
// piece's gradient, widened to f32 and moved back into place, padded with
// zeros to the whole width and summed; then rounded to bf16 for the next
// matmul, and summed down the columns in f32 for the bias. The sum of pads
// is a concat; the rounding sinks through the views to the widenings it
// undoes, so the matmul's operand is the bf16 pieces moved into place,
// and the widening rises above the concat, so that the bias's sum reads
// that one concat widened (one [B, S, 3 H D] tensor written, not two).
// (The gradient of a slice pads with -0.0, the additive identity: the sum
// is the concat exactly.)
// CHECK-LABEL: func.func @qkv_split_gradient
// CHECK-NOT: kf.pad
// CHECK-NOT: kf.add
// CHECK: %[[NARROW:.*]] = kf.concat %arg0, %arg1, %arg2 {axis = 1 : i64} : tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<8x48xbf16>
// CHECK-NOT: kf.concat
// CHECK: %[[WIDE:.*]] = kf.cast %[[NARROW]] : tensor<8x48xbf16> -> tensor<8x48xf32>
// CHECK: kf.reduce sum %[[WIDE]] [0]
// CHECK: return %[[NARROW]], %{{.*}}
func.func @qkv_split_gradient(%dq: tensor<8x16xbf16>, %dk: tensor<8x16xbf16>, %dv: tensor<8x16xbf16>)
    -> (tensor<8x48xbf16>, tensor<48xf32>) {
  %q = kf.cast %dq : tensor<8x16xbf16> -> tensor<8x16xf32>
  %k = kf.cast %dk : tensor<8x16xbf16> -> tensor<8x16xf32>
  %v = kf.cast %dv : tensor<8x16xbf16> -> tensor<8x16xf32>
  %pv = kf.pad %v low [0, 32] high [0, 0] value -0.0 : tensor<8x16xf32> -> tensor<8x48xf32>
  %pk = kf.pad %k low [0, 16] high [0, 16] value -0.0 : tensor<8x16xf32> -> tensor<8x48xf32>
  %s = kf.add %pv, %pk : tensor<8x48xf32>
  %pq = kf.pad %q low [0, 0] high [0, 32] value -0.0 : tensor<8x16xf32> -> tensor<8x48xf32>
  %t = kf.add %s, %pq : tensor<8x48xf32>
  %r = kf.cast %t : tensor<8x48xf32> -> tensor<8x48xbf16>
  %b = kf.reduce sum %t [0] : tensor<8x48xf32> -> tensor<48xf32>
  return %r, %b : tensor<8x48xbf16>, tensor<48xf32>
}

// -----

// Adjacent pieces that leave the ends zero: the concat, padded.
// CHECK-LABEL: func.func @inner_pieces
// CHECK: %[[C:.*]] = kf.concat %arg0, %arg1 {axis = 0 : i64} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<5x4xf32>
// CHECK: kf.pad %[[C]] low [1, 0] high [2, 0] value -0.000000e+00 : tensor<5x4xf32> -> tensor<8x4xf32>
func.func @inner_pieces(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) -> tensor<8x4xf32> {
  %pa = kf.pad %a low [1, 0] high [5, 0] value -0.0 : tensor<2x4xf32> -> tensor<8x4xf32>
  %pb = kf.pad %b low [3, 0] high [2, 0] value -0.0 : tensor<3x4xf32> -> tensor<8x4xf32>
  %s = kf.add %pa, %pb : tensor<8x4xf32>
  return %s : tensor<8x4xf32>
}

// -----

// Left as they are: overlapping pieces (a real sum), a gap between
// pieces, a pad of ones, pads along two axes, and a cast of views of a
// cast that the outer cast does not undo (f32 rounded to bf16 and widened
// back loses bits).
// CHECK-LABEL: func.func @not_pieces
// CHECK-COUNT-5: kf.add
// CHECK-NOT: kf.concat
// CHECK: kf.transpose
// CHECK: kf.cast
// CHECK: return
func.func @not_pieces(%a: tensor<4x4xf32>, %b: tensor<2x4xf32>, %x: tensor<4x2xf32>)
    -> (tensor<6x4xf32>, tensor<7x4xf32>, tensor<6x4xf32>, tensor<6x5xf32>, tensor<6x4xf32>, tensor<2x4xf32>) {
  %oa1 = kf.pad %a low [0, 0] high [2, 0] value -0.0 : tensor<4x4xf32> -> tensor<6x4xf32>
  %pb = kf.pad %b low [3, 0] high [1, 0] value -0.0 : tensor<2x4xf32> -> tensor<6x4xf32>
  %overlap = kf.add %oa1, %pb : tensor<6x4xf32>
  %ga = kf.pad %a low [0, 0] high [3, 0] value -0.0 : tensor<4x4xf32> -> tensor<7x4xf32>
  %gb = kf.pad %b low [5, 0] high [0, 0] value -0.0 : tensor<2x4xf32> -> tensor<7x4xf32>
  %gap = kf.add %ga, %gb : tensor<7x4xf32>
  %oa = kf.pad %a low [0, 0] high [2, 0] value 1.0 : tensor<4x4xf32> -> tensor<6x4xf32>
  %ob = kf.pad %b low [4, 0] high [0, 0] value 1.0 : tensor<2x4xf32> -> tensor<6x4xf32>
  %ones = kf.add %oa, %ob : tensor<6x4xf32>
  %ta = kf.pad %a low [0, 0] high [2, 1] value -0.0 : tensor<4x4xf32> -> tensor<6x5xf32>
  %tb = kf.pad %b low [4, 1] high [0, 0] value -0.0 : tensor<2x4xf32> -> tensor<6x5xf32>
  %two = kf.add %ta, %tb : tensor<6x5xf32>
  %pa = kf.pad %a low [0, 0] high [2, 0] value 0.0 : tensor<4x4xf32> -> tensor<6x4xf32>
  %pz = kf.pad %b low [4, 0] high [0, 0] value 0.0 : tensor<2x4xf32> -> tensor<6x4xf32>
  %positive = kf.add %pa, %pz : tensor<6x4xf32>
  %n = kf.cast %x : tensor<4x2xf32> -> tensor<4x2xbf16>
  %t = kf.transpose %n [1, 0] : tensor<4x2xbf16> -> tensor<2x4xbf16>
  %w = kf.cast %t : tensor<2x4xbf16> -> tensor<2x4xf32>
  return %overlap, %gap, %ones, %two, %positive, %w : tensor<6x4xf32>, tensor<7x4xf32>, tensor<6x4xf32>, tensor<6x5xf32>, tensor<6x4xf32>, tensor<2x4xf32>
}

// -----

// A matmul's f32 result split into heads and rounded to bf16: the rounding
// moves above the views (the same values), where it joins the matmul's
// epilogue; a widening cast and a view with another reader stay.
// CHECK-LABEL: func.func @narrow_before_views
// CHECK: %[[M:.*]] = kf.matmul
// CHECK: %[[C:.*]] = kf.cast %[[M]] : tensor<256x128xf32> -> tensor<256x128xbf16>
// CHECK: %[[R:.*]] = kf.reshape %[[C]] : tensor<256x128xbf16> -> tensor<256x2x64xbf16>
// CHECK: kf.transpose %[[R]] [1, 0, 2] : tensor<256x2x64xbf16> -> tensor<2x256x64xbf16>
// CHECK: %[[T:.*]] = kf.transpose %arg2 [1, 0] : tensor<64x32xbf16> -> tensor<32x64xbf16>
// CHECK: kf.cast %[[T]] : tensor<32x64xbf16> -> tensor<32x64xf32>
// CHECK: %[[V:.*]] = kf.transpose %arg3 [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
// CHECK: kf.cast %[[V]] : tensor<32x64xf32> -> tensor<32x64xbf16>
func.func @narrow_before_views(%a: tensor<256x64xbf16>, %b: tensor<64x128xbf16>, %c: tensor<64x32xbf16>, %d: tensor<64x32xf32>)
    -> (tensor<2x256x64xbf16>, tensor<32x64xf32>, tensor<32x64xbf16>, tensor<32x64xf32>) {
  %m = kf.matmul %a, %b : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
  %r = kf.reshape %m : tensor<256x128xf32> -> tensor<256x2x64xf32>
  %t = kf.transpose %r [1, 0, 2] : tensor<256x2x64xf32> -> tensor<2x256x64xf32>
  %h = kf.cast %t : tensor<2x256x64xf32> -> tensor<2x256x64xbf16>
  %ct = kf.transpose %c [1, 0] : tensor<64x32xbf16> -> tensor<32x64xbf16>
  %wide = kf.cast %ct : tensor<32x64xbf16> -> tensor<32x64xf32>
  %dt = kf.transpose %d [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %shared = kf.cast %dt : tensor<32x64xf32> -> tensor<32x64xbf16>
  return %h, %wide, %shared, %dt : tensor<2x256x64xbf16>, tensor<32x64xf32>, tensor<32x64xbf16>, tensor<32x64xf32>
}

// -----

// Widenings rise above a concat only from one dtype: bf16 and f16 pieces
// have no narrow concat.
// CHECK-LABEL: func.func @widen_two_dtypes
// CHECK: %[[A:.*]] = kf.cast %arg0
// CHECK: %[[B:.*]] = kf.cast %arg1
// CHECK: kf.concat %[[A]], %[[B]] {axis = 0 : i64} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<5x4xf32>
func.func @widen_two_dtypes(%a: tensor<2x4xbf16>, %b: tensor<3x4xf16>) -> tensor<5x4xf32> {
  %wa = kf.cast %a : tensor<2x4xbf16> -> tensor<2x4xf32>
  %wb = kf.cast %b : tensor<3x4xf16> -> tensor<3x4xf32>
  %c = kf.concat %wa, %wb {axis = 0 : i64} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<5x4xf32>
  return %c : tensor<5x4xf32>
}

// -----

// A widened concat of pieces from one dtype: the concat of the narrow
// pieces, widened (half the bytes moved where a kernel copies them).
// CHECK-LABEL: func.func @widen_after_concat
// CHECK: %[[C:.*]] = kf.concat %arg0, %arg1 {axis = 0 : i64} : tensor<2x4xbf16>, tensor<3x4xbf16> -> tensor<5x4xbf16>
// CHECK: kf.cast %[[C]] : tensor<5x4xbf16> -> tensor<5x4xf32>
func.func @widen_after_concat(%a: tensor<2x4xbf16>, %b: tensor<3x4xbf16>) -> tensor<5x4xf32> {
  %wa = kf.cast %a : tensor<2x4xbf16> -> tensor<2x4xf32>
  %wb = kf.cast %b : tensor<3x4xbf16> -> tensor<3x4xf32>
  %c = kf.concat %wa, %wb {axis = 0 : i64} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<5x4xf32>
  return %c : tensor<5x4xf32>
}
