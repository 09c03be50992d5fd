// RUN: kfuse-opt %s -split-input-file --kf-attach-target --kf-split-reduction | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target --kf-split-reduction --kf-fuse | FileCheck %s --check-prefix=FUSE

// 64 rows of 2^20 on 132 SMs: 16 chunks of 65536 a row make 1024 blocks
// (8 would make 512, fewer than four an SM); the 16 partial sums of a row
// are summed by a second reduction. Each reduction is a kernel of its own,
// the exp computed in the first.
// CHECK-LABEL: func.func @few_long_rows
// CHECK: %[[V:.*]] = kf.reshape %{{.*}} : tensor<64x1048576xf32> -> tensor<64x16x65536xf32>
// CHECK: %[[P:.*]] = kf.reduce sum %[[V]] [2] : tensor<64x16x65536xf32> -> tensor<64x16xf32>
// CHECK: %[[S:.*]] = kf.reduce sum %[[P]] [1] : tensor<64x16xf32> -> tensor<64xf32>
// CHECK: return %[[S]]
// FUSE-LABEL: func.func @few_long_rows
// FUSE: kf.kernel reduction(%arg0 : tensor<64x1048576xf32>)
// FUSE: kf.exp
// FUSE: kf.reduce sum %{{.*}} [2] : tensor<64x16x65536xf32> -> tensor<64x16xf32>
// FUSE: kf.kernel reduction(%{{.*}} : tensor<64x16xf32>)
// FUSE: kf.reduce sum %{{.*}} [1] : tensor<64x16xf32> -> tensor<64xf32>
func.func @few_long_rows(%x: tensor<64x1048576xf32>) -> tensor<64xf32> {
  %e = kf.exp %x : tensor<64x1048576xf32>
  %s = kf.reduce sum %e [1] : tensor<64x1048576xf32> -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// -----

// A bf16 mean over one row of 2^24: 1024 chunks (the smallest divisor
// giving 528 blocks or more), their means in f32, rounded to bf16 once.
// CHECK-LABEL: func.func @bf16_mean
// CHECK: %[[C:.*]] = kf.cast %{{.*}} : tensor<1x16777216xbf16> -> tensor<1x16777216xf32>
// CHECK: %[[V:.*]] = kf.reshape %[[C]] : tensor<1x16777216xf32> -> tensor<1x1024x16384xf32>
// CHECK: %[[P:.*]] = kf.reduce mean %[[V]] [2] : tensor<1x1024x16384xf32> -> tensor<1x1024xf32>
// CHECK: %[[M:.*]] = kf.reduce mean %[[P]] [1] {keep_dims = true} : tensor<1x1024xf32> -> tensor<1x1xf32>
// CHECK: %[[R:.*]] = kf.cast %[[M]] : tensor<1x1xf32> -> tensor<1x1xbf16>
// CHECK: return %[[R]]
func.func @bf16_mean(%x: tensor<1x16777216xbf16>) -> tensor<1x1xbf16> {
  %m = kf.reduce mean %x [1] {keep_dims = true} : tensor<1x16777216xbf16> -> tensor<1x1xbf16>
  return %m : tensor<1x1xbf16>
}

// -----

// Stays: rows that fill the GPU; rows too short for two chunks of 8192;
// a prime length (65521: no divisor leaves chunks); a statistic broadcast
// back over its rows (a normalisation's, whose row kernel keeps it).
// CHECK-LABEL: func.func @stays
// CHECK-NOT: kf.reshape
// CHECK: return
func.func @stays(%a: tensor<1024x65536xf32>, %b: tensor<8x16383xf32>,
                 %c: tensor<2x65521xf32>, %d: tensor<4x1048576xf32>)
    -> (tensor<1024xf32>, tensor<8xf32>, tensor<2xf32>, tensor<4x1048576xf32>) {
  %0 = kf.reduce sum %a [1] : tensor<1024x65536xf32> -> tensor<1024xf32>
  %1 = kf.reduce max %b [1] : tensor<8x16383xf32> -> tensor<8xf32>
  %2 = kf.reduce min %c [1] : tensor<2x65521xf32> -> tensor<2xf32>
  %3 = kf.reduce max %d [1] {keep_dims = true} : tensor<4x1048576xf32> -> tensor<4x1xf32>
  %4 = kf.broadcast %3 : tensor<4x1xf32> -> tensor<4x1048576xf32>
  %5 = kf.sub %d, %4 : tensor<4x1048576xf32>
  return %0, %1, %2, %5 : tensor<1024xf32>, tensor<8xf32>, tensor<2xf32>, tensor<4x1048576xf32>
}
