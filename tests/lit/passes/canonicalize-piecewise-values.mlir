// The piecewise canonicalizations compute what the graph did: the
// reference evaluator's summary of each output, on the same random
// inputs, before and after (canonicalize-piecewise.mlir checks the form).
// Each output is also summed weighted by its position, which a summary of
// the elements alone would not tell from a permutation of the pieces.
// RUN: kfuse-opt %s --canonicalize -o %t.canonical.mlir
// RUN: FileCheck %s --input-file %t.canonical.mlir
// RUN: kfusec --eval %s > %t.before
// RUN: kfusec --eval %t.canonical.mlir > %t.after
// RUN: diff %t.before %t.after

// One concat, of the bf16 pieces: the f32 sum reads it widened.
// CHECK-NOT: kf.pad
// CHECK-COUNT-1: kf.concat
// CHECK-NOT: kf.concat
func.func @qkv_split_gradient(%dq: tensor<2x4x8x16xbf16>, %dk: tensor<2x4x8x16xbf16>, %dv: tensor<2x4x8x16xbf16>)
    -> (tensor<2x8x192xbf16>, tensor<192xf32>, tensor<f32>, tensor<f32>) {
  %q = kf.cast %dq : tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
  %k = kf.cast %dk : tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
  %v = kf.cast %dv : tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
  %qt = kf.transpose %q [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  %kt = kf.transpose %k [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  %vt = kf.transpose %v [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  %qr = kf.reshape %qt : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %kr = kf.reshape %kt : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %vr = kf.reshape %vt : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %pv = kf.pad %vr low [0, 0, 128] high [0, 0, 0] value -0.0 : tensor<2x8x64xf32> -> tensor<2x8x192xf32>
  %pk = kf.pad %kr low [0, 0, 64] high [0, 0, 64] value -0.0 : tensor<2x8x64xf32> -> tensor<2x8x192xf32>
  %s = kf.add %pv, %pk : tensor<2x8x192xf32>
  %pq = kf.pad %qr low [0, 0, 0] high [0, 0, 128] value -0.0 : tensor<2x8x64xf32> -> tensor<2x8x192xf32>
  %t = kf.add %s, %pq : tensor<2x8x192xf32>
  %r = kf.cast %t : tensor<2x8x192xf32> -> tensor<2x8x192xbf16>
  %b = kf.reduce sum %t [0, 1] : tensor<2x8x192xf32> -> tensor<192xf32>
  %at = kf.iota {dim = 2 : i64} : tensor<2x8x192xf32>
  %rw = kf.cast %r : tensor<2x8x192xbf16> -> tensor<2x8x192xf32>
  %rp = kf.mul %rw, %at : tensor<2x8x192xf32>
  %rs = kf.reduce sum %rp [0, 1, 2] : tensor<2x8x192xf32> -> tensor<f32>
  %bt = kf.iota {dim = 0 : i64} : tensor<192xf32>
  %bp = kf.mul %b, %bt : tensor<192xf32>
  %bs = kf.reduce sum %bp [0] : tensor<192xf32> -> tensor<f32>
  return %r, %b, %rs, %bs : tensor<2x8x192xbf16>, tensor<192xf32>, tensor<f32>, tensor<f32>
}
