// kf-split-keys computes what the attentions did: the reference
// evaluator's summary of each output, on the same random inputs, before
// and after the split (kf-split-keys.mlir checks its form).
// RUN: kfuse-opt %s --kf-attach-target --kf-split-keys -o %t.split.mlir
// RUN: FileCheck %s --input-file %t.split.mlir
// RUN: kfusec --eval %s > %t.before
// RUN: kfusec --eval %t.split.mlir > %t.after
// RUN: diff %t.before %t.after

// CHECK-COUNT-3: kf.softmax
func.func @two_decodes(%q: tensor<1x8x3x64xbf16>, %k: tensor<1x2x2048x64xbf16>,
                       %v: tensor<1x2x2048x64xbf16>, %q2: tensor<2x2x1x64xf16>,
                       %k2: tensor<2x2x1536x64xf16>, %v2: tensor<2x2x1536x128xf16>)
    -> (tensor<1x8x3x64xbf16>, tensor<2x2x1x128xf16>, tensor<1x3x512xbf16>, tensor<2x128xf16>) {
  %o = kf.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x8x3x64xbf16>, tensor<1x2x2048x64xbf16>, tensor<1x2x2048x64xbf16> -> tensor<1x8x3x64xbf16>
  %o2 = kf.attention %q2, %k2, %v2 {scale = 0.3 : f64} : tensor<2x2x1x64xf16>, tensor<2x2x1536x64xf16>, tensor<2x2x1536x128xf16> -> tensor<2x2x1x128xf16>
  // Heads merged by a transpose and a reshape: a reshape alone when the
  // query rows are one, the row kernel's shape; here a transpose first.
  %t = kf.transpose %o [0, 2, 1, 3] : tensor<1x8x3x64xbf16> -> tensor<1x3x8x64xbf16>
  %m = kf.reshape %t : tensor<1x3x8x64xbf16> -> tensor<1x3x512xbf16>
  %o3 = kf.attention %q2, %k2, %k2 {scale = 0.2 : f64} : tensor<2x2x1x64xf16>, tensor<2x2x1536x64xf16>, tensor<2x2x1536x64xf16> -> tensor<2x2x1x64xf16>
  %r3 = kf.reshape %o3 : tensor<2x2x1x64xf16> -> tensor<2x128xf16>
  return %o, %o2, %m, %r3 : tensor<1x8x3x64xbf16>, tensor<2x2x1x128xf16>, tensor<1x3x512xbf16>, tensor<2x128xf16>
}
