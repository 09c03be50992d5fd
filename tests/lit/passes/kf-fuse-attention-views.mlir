// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-rematerialize --kf-fuse | FileCheck %s

// Attention and its backward over q, k and v split into heads out of one
// projection ([B, S, 3 H D]), as a training graph has them: each kernel
// gets its own slices, reshapes and transposes (kf-rematerialize) and
// reads them in place (the templates copy rows by offset and strides), so
// no kernel copies the heads out. dout, computed, keeps its kernel.
// CHECK-LABEL: func.func @split_heads
// CHECK: kf.kernel attention(%arg0 : tensor<2x128x768xbf16>)
// CHECK: kf.kernel attention_grad(%arg0, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x128x768xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>, tensor<2x4x128xf32>)
// CHECK-COUNT-3: kf.slice %{{.*}} starts
// CHECK: kf.attention_grad
func.func @split_heads(%qkv: tensor<2x128x768xbf16>, %g: tensor<2x4x128x64xf32>)
    -> (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>) {
  %0 = kf.slice %qkv starts [0, 0, 512] limits [9223372036854775807, 9223372036854775807, 768] steps [1, 1, 1] : tensor<2x128x768xbf16> -> tensor<2x128x256xbf16>
  %1 = kf.reshape %0 : tensor<2x128x256xbf16> -> tensor<2x128x4x64xbf16>
  %v = kf.transpose %1 [0, 2, 1, 3] : tensor<2x128x4x64xbf16> -> tensor<2x4x128x64xbf16>
  %3 = kf.slice %qkv starts [0, 0, 256] limits [9223372036854775807, 9223372036854775807, 512] steps [1, 1, 1] : tensor<2x128x768xbf16> -> tensor<2x128x256xbf16>
  %4 = kf.reshape %3 : tensor<2x128x256xbf16> -> tensor<2x128x4x64xbf16>
  %k = kf.transpose %4 [0, 2, 1, 3] : tensor<2x128x4x64xbf16> -> tensor<2x4x128x64xbf16>
  %6 = kf.slice %qkv starts [0, 0, 0] limits [9223372036854775807, 9223372036854775807, 256] steps [1, 1, 1] : tensor<2x128x768xbf16> -> tensor<2x128x256xbf16>
  %7 = kf.reshape %6 : tensor<2x128x256xbf16> -> tensor<2x128x4x64xbf16>
  %q = kf.transpose %7 [0, 2, 1, 3] : tensor<2x128x4x64xbf16> -> tensor<2x4x128x64xbf16>
  %o, %lse = kf.attention %q, %k, %v {causal = true, scale = 1.250000e-01 : f64} : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16> -> tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>
  %do = kf.cast %g : tensor<2x4x128x64xf32> -> tensor<2x4x128x64xbf16>
  %of = kf.cast %o : tensor<2x4x128x64xbf16> -> tensor<2x4x128x64xf32>
  %p = kf.mul %g, %of : tensor<2x4x128x64xf32>
  %delta = kf.reduce sum %p [3] : tensor<2x4x128x64xf32> -> tensor<2x4x128xf32>
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {causal = true, scale = 1.250000e-01 : f64} : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>, tensor<2x4x128xf32> -> tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>
  return %o, %dq, %dk, %dv : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>
}

// -----

// Views the backward's copies cannot read in place stay a kernel of their
// own: a transpose that makes the head dim strided.
// CHECK-LABEL: func.func @strided_head_dim
// CHECK: kf.kernel pointwise
// CHECK: kf.kernel attention_grad(%{{.*}} : tensor<2x4x128x64xbf16>
func.func @strided_head_dim(%qt: tensor<2x4x64x128xbf16>, %k: tensor<2x4x128x64xbf16>, %do: tensor<2x4x128x64xbf16>, %lse: tensor<2x4x128xf32>, %delta: tensor<2x4x128xf32>)
    -> (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>) {
  %q = kf.transpose %qt [0, 1, 3, 2] : tensor<2x4x64x128xbf16> -> tensor<2x4x128x64xbf16>
  %dq, %dk, %dv = kf.attention_grad %q, %k, %k, %do, %lse, %delta {scale = 1.250000e-01 : f64} : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>, tensor<2x4x128xf32> -> tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>
}
