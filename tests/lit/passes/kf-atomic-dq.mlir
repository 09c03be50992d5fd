// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true unordered-adds=true" --kf-atomic-dq | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-atomic-dq | FileCheck %s --check-prefix=ORDERED
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true unordered-adds=true" --kf-atomic-dq --kf-fuse --kf-tile --kf-promote-shared | FileCheck %s --check-prefix=TILED

// Where adds may come in any order, attention's backward produces dq in
// f32 (its key blocks add into it) and casts it to q's dtype after.
// CHECK-LABEL: func.func @grad
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = kf.attention_grad {{.*}} -> tensor<2x4x200x64xf32>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
// CHECK: %[[CAST:.*]] = kf.cast %[[DQ]] : tensor<2x4x200x64xf32> -> tensor<2x4x200x64xbf16>
// CHECK: return %[[CAST]], %[[DK]], %[[DV]]
// A deterministic compile keeps dq's blocks of query rows.
// ORDERED-LABEL: func.func @grad
// ORDERED: kf.attention_grad {{.*}} -> tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
// ORDERED-NOT: kf.cast
// Only key blocks (2 x 2 heads x 2 blocks of 128 keys), and shared memory
// for dS^T and the f32 tile of dq: 2 x (64 + 64) x (128 + 2 x 64)
// + 2 x 128 x 64 + 4 x 64 x 64 bytes.
// TILED-LABEL: func.func @grad
// TILED: kf.kernel attention_grad
// TILED-SAME: launch = #kf.launch<grid = 8, block = 256, items = 8, sharedBytes = 98304>
// TILED-SAME: tiling = #kf.flash_grad_tiling<blockRows = 128, blockCols = 64, headDim = 64, valueDim = 64, kvBlocks = 8, dqAtomic = true>
// TILED: kf.kernel pointwise
// TILED: kf.cast {{.*}} tensor<2x4x200x64xf32> -> tensor<2x4x200x64xbf16>
func.func @grad(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x2x200x64xbf16>, %v: tensor<2x2x200x64xbf16>,
                %do: tensor<2x4x200x64xbf16>, %lse: tensor<2x4x200xf32>, %delta: tensor<2x4x200xf32>)
    -> (tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>) {
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {causal = true, scale = 0.125 : f64}
      : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x4x200x64xbf16>,
        tensor<2x4x200xf32>, tensor<2x4x200xf32> -> tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x200x64xbf16>, tensor<2x2x200x64xbf16>, tensor<2x2x200x64xbf16>
}

// -----

// A dq that is f32 already needs no cast; its kernel adds into it all the
// same where adds may be unordered.
// CHECK-LABEL: func.func @f32_dq
// CHECK-NOT: kf.cast
// ORDERED-LABEL: func.func @f32_dq
// TILED-LABEL: func.func @f32_dq
// TILED: kf.kernel attention_grad
// TILED-SAME: dqAtomic = true
func.func @f32_dq(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>,
                  %do: tensor<1x2x64x64xbf16>, %lse: tensor<1x2x64xf32>, %delta: tensor<1x2x64xf32>)
    -> tensor<1x2x64x64xf32> {
  %dq, %dk, %dv = kf.attention_grad %q, %k, %v, %do, %lse, %delta {scale = 0.125 : f64}
      : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>,
        tensor<1x2x64xf32>, tensor<1x2x64xf32> -> tensor<1x2x64x64xf32>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
  return %dq : tensor<1x2x64x64xf32>
}
