// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-split-k | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --kf-split-k --kf-tile | FileCheck %s --check-prefix=TILE

// Decode: 16 rows against a 4096 x 4096 weight fill 128 tiles of 128x32,
// half of the 264 block slots of 132 SMs. Two K chunks of 2048 (whole
// 64-column steps) run as a batch of partial products; the epilogue (the
// bias and GELU, after the matmul's rounding to bf16) moves to a reduction
// kernel that sums the two.
// CHECK-LABEL: func.func @decode
// CHECK: %[[P:.*]] = kf.kernel matmul(%arg0, %arg1 : tensor<16x4096xbf16>, tensor<4096x4096xbf16>)
// CHECK: kf.matmul %{{.*}}, %{{.*}} {k_chunk = 2048 : i64, transpose_b = true} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<2x16x4096xf32>
// CHECK: %[[Y:.*]] = kf.kernel reduction(%[[P]], %arg2 : tensor<2x16x4096xf32>, tensor<4096xbf16>)
// CHECK: kf.reduce sum %{{.*}} [0] : tensor<2x16x4096xf32> -> tensor<16x4096xf32>
// CHECK: kf.cast %{{.*}} : tensor<16x4096xf32> -> tensor<16x4096xbf16>
// CHECK: kf.broadcast
// CHECK: kf.add
// CHECK: kf.gelu
// CHECK: return %[[Y]]
// kf-tile launches a block per tile and K chunk.
// TILE-LABEL: func.func @decode
// TILE: kf.kernel matmul
// TILE-SAME: launch = #kf.launch<grid = 256, block = 256, items = 256>, tiling = #kf.mma_tiling<tileM = 128, tileN = 32, tileK = 64, warpsM = 8, warpsN = 1, groupM = 8, wgmma = true>
func.func @decode(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>, %bias: tensor<4096xbf16>) -> tensor<16x4096xbf16> {
  %y = kf.matmul %x, %w {transpose_b = true} : tensor<16x4096xbf16>, tensor<4096x4096xbf16> -> tensor<16x4096xbf16>
  %b = kf.broadcast %bias : tensor<4096xbf16> -> tensor<16x4096xbf16>
  %z = kf.add %y, %b : tensor<16x4096xbf16>
  %g = kf.gelu %z : tensor<16x4096xbf16>
  return %g : tensor<16x4096xbf16>
}

// -----

// Kept whole: enough tiles to fill the SMs (4096^3: 512 tiles of
// 128x256), or too few K steps for two chunks of 8 (K = 256).
// CHECK-LABEL: func.func @kept_whole
// CHECK-NOT: k_chunk
// CHECK-NOT: kf.kernel reduction
// CHECK: return
func.func @kept_whole(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>,
                      %x: tensor<16x256xbf16>, %w: tensor<256x4096xbf16>) -> (tensor<4096x4096xbf16>, tensor<16x4096xbf16>) {
  %c = kf.matmul %a, %b : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  %y = kf.matmul %x, %w : tensor<16x256xbf16>, tensor<256x4096xbf16> -> tensor<16x4096xbf16>
  return %c, %y : tensor<4096x4096xbf16>, tensor<16x4096xbf16>
}
