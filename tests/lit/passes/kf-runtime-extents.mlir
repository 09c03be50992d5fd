// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-tile --kf-promote-shared --kf-runtime-extents | FileCheck %s

// The cache's length (dim 2 of k and v) changes from call to call: the
// FlashAttention kernel takes it as a parameter, recorded as the pair
// (its K input, dim 2); the module is not refused.
// CHECK-LABEL: module attributes
// CHECK-NOT: kf.runtime_refusal
// CHECK-LABEL: func.func @cache
// CHECK: kf.kernel attention
// CHECK-SAME: runtime_extents = array<i64: 1, 2>
func.func @cache(%q: tensor<1x8x1x128xbf16>,
                 %k: tensor<1x2x256x128xbf16> {kf.runtime_dims = array<i64: 2>},
                 %v: tensor<1x2x256x128xbf16> {kf.runtime_dims = array<i64: 2>})
    -> tensor<1x8x1x128xbf16> {
  %o = kf.attention %q, %k, %v {scale = 0.1 : f64} : tensor<1x8x1x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x8x1x128xbf16>
  return %o : tensor<1x8x1x128xbf16>
}

// -----

// The cache is also summed, by kernels that cannot take its length:
// nothing is recorded, and the module says why.
// CHECK: kf.runtime_refusal = "dim 2 of argument 1: a reduction kernel reads it, and only the FlashAttention template takes a size at run time"
// CHECK-NOT: runtime_extents
func.func @summed(%q: tensor<1x8x1x128xbf16>,
                  %k: tensor<1x2x256x128xbf16> {kf.runtime_dims = array<i64: 2>},
                  %v: tensor<1x2x256x128xbf16>)
    -> (tensor<1x8x1x128xbf16>, tensor<1x2x128xf32>) {
  %o = kf.attention %q, %k, %v {scale = 0.1 : f64} : tensor<1x8x1x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x8x1x128xbf16>
  %kf = kf.cast %k : tensor<1x2x256x128xbf16> -> tensor<1x2x256x128xf32>
  %s = kf.reduce sum %kf [2] : tensor<1x2x256x128xf32> -> tensor<1x2x128xf32>
  return %o, %s : tensor<1x8x1x128xbf16>, tensor<1x2x128xf32>
}

// -----

// A dim other than the keys (the head dim) is never taken at run time.
// CHECK: kf.runtime_refusal = "dim 3 of argument 1: dim 3 is not the key length"
func.func @head_dim(%q: tensor<1x8x1x128xbf16>,
                    %k: tensor<1x2x256x128xbf16> {kf.runtime_dims = array<i64: 3>},
                    %v: tensor<1x2x256x128xbf16>)
    -> tensor<1x8x1x128xbf16> {
  %o = kf.attention %q, %k, %v {scale = 0.1 : f64} : tensor<1x8x1x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16> -> tensor<1x8x1x128xbf16>
  return %o : tensor<1x8x1x128xbf16>
}
