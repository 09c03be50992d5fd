// RUN: kfuse-opt %s -split-input-file --kf-rematerialize | FileCheck %s

// A weight vector stretched to the rows, read by two consumers: each gets
// its own broadcast (recomputing reads 4 KB, materialising writes 16 MB).
// CHECK-LABEL: func.func @broadcast_weight
// CHECK: %[[W1:.*]] = kf.broadcast %arg1
// CHECK: kf.mul %arg0, %[[W1]]
// CHECK: %[[W2:.*]] = kf.broadcast %arg1
// CHECK: kf.add %arg0, %[[W2]]
func.func @broadcast_weight(%x: tensor<4096x1024xf32>, %v: tensor<1024xf32>) -> (tensor<4096x1024xf32>, tensor<4096x1024xf32>) {
  %w = kf.broadcast %v : tensor<1024xf32> -> tensor<4096x1024xf32>
  %a = kf.mul %x, %w : tensor<4096x1024xf32>
  %b = kf.add %x, %w : tensor<4096x1024xf32>
  return %a, %b : tensor<4096x1024xf32>, tensor<4096x1024xf32>
}

// -----

// A widening cast and the centred value of a row statistic, read by a row
// reduction and by an elementwise consumer: both recomputed, each cone
// reading less than its result.
// CHECK-LABEL: func.func @centred
// CHECK-COUNT-2: kf.cast %arg0
// CHECK-NOT: kf.cast %arg0
func.func @centred(%x: tensor<64x256xbf16>, %m: tensor<64x1xf32>) -> (tensor<64x1xf32>, tensor<64x256xf32>) {
  %xf = kf.cast %x : tensor<64x256xbf16> -> tensor<64x256xf32>
  %mb = kf.broadcast %m : tensor<64x1xf32> -> tensor<64x256xf32>
  %d = kf.sub %xf, %mb : tensor<64x256xf32>
  %sq = kf.mul %d, %d : tensor<64x256xf32>
  %v = kf.reduce sum %sq [1] {keep_dims = true} : tensor<64x256xf32> -> tensor<64x1xf32>
  %e = kf.exp %d : tensor<64x256xf32>
  return %v, %e : tensor<64x1xf32>, tensor<64x256xf32>
}

// -----

// Not recomputed: a sum of two full tensors reads twice what it writes,
// and a value a matmul reads from memory anyway serves the other users
// only where they cannot compute it (here one elementwise user: a copy).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-1: kf.add %arg0, %arg1
// CHECK-NOT: kf.add %arg0, %arg1
func.func @kept(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %s = kf.add %x, %y : tensor<64x64xf32>
  %a = kf.exp %s : tensor<64x64xf32>
  %b = kf.sin %s : tensor<64x64xf32>
  return %a, %b : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Normalised rows computed from two bf16 tensors and per-row statistics
// read a little more than their f32 result, but three kernels read them
// (a LayerNorm backward's): each computes them rather than one writing
// them for the three to read back (3 x 66 KB read against 66 + 3 x 66).
// CHECK-LABEL: func.func @normalised_rows
// CHECK-COUNT-3: kf.sub
// CHECK-NOT: kf.sub
func.func @normalised_rows(%x: tensor<64x256xbf16>, %r: tensor<64x256xbf16>, %m: tensor<64x1xf32>, %s: tensor<64x1xf32>, %w: tensor<256xf32>)
    -> (tensor<64x256xf32>, tensor<256xf32>, tensor<64x1xf32>) {
  %sum = kf.add %x, %r : tensor<64x256xbf16>
  %sf = kf.cast %sum : tensor<64x256xbf16> -> tensor<64x256xf32>
  %mb = kf.broadcast %m : tensor<64x1xf32> -> tensor<64x256xf32>
  %c = kf.sub %sf, %mb : tensor<64x256xf32>
  %sb = kf.broadcast %s : tensor<64x1xf32> -> tensor<64x256xf32>
  %xhat = kf.mul %c, %sb : tensor<64x256xf32>
  %wb = kf.broadcast %w : tensor<256xf32> -> tensor<64x256xf32>
  %y = kf.mul %xhat, %wb : tensor<64x256xf32>
  %cols = kf.reduce sum %xhat [0] : tensor<64x256xf32> -> tensor<256xf32>
  %rows = kf.reduce sum %xhat [1] {keep_dims = true} : tensor<64x256xf32> -> tensor<64x1xf32>
  return %y, %cols, %rows : tensor<64x256xf32>, tensor<256xf32>, tensor<64x1xf32>
}

// -----

// CHECK-LABEL: func.func @beside_a_matmul
// CHECK: %[[G1:.*]] = kf.gelu %{{.*}} : tensor<64x64xf32>
// CHECK: kf.matmul %[[G1]], %arg1
// CHECK: %[[G2:.*]] = kf.gelu %{{.*}} : tensor<64x64xf32>
// CHECK: kf.exp %[[G2]]
func.func @beside_a_matmul(%x: tensor<64x64xbf16>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %xf = kf.cast %x : tensor<64x64xbf16> -> tensor<64x64xf32>
  %g = kf.gelu %xf : tensor<64x64xf32>
  %m = kf.matmul %g, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %e = kf.exp %g : tensor<64x64xf32>
  return %m, %e : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// A max's backward compares the values with their max. A copy of the sine
// would compute it unrounded in the comparing kernel, equal to none of the
// rounded values the max was taken over: the sine is not copied. Its
// widening cast is (a cast reproduces the value bit for bit).
// CHECK-LABEL: func.func @compared
// CHECK-COUNT-1: kf.sin
// CHECK-NOT: kf.sin
// CHECK: kf.cast
// CHECK: kf.reduce max
// CHECK: kf.cast
// CHECK: kf.compare eq
func.func @compared(%x: tensor<64x128xbf16>) -> (tensor<64x1xf32>, tensor<64x128xi1>) {
  %s = kf.sin %x : tensor<64x128xbf16>
  %w = kf.cast %s : tensor<64x128xbf16> -> tensor<64x128xf32>
  %m = kf.reduce max %w [1] {keep_dims = true} : tensor<64x128xf32> -> tensor<64x1xf32>
  %b = kf.broadcast %m : tensor<64x1xf32> -> tensor<64x128xf32>
  %e = kf.compare eq, %w, %b : tensor<64x128xf32>, tensor<64x128xf32> -> tensor<64x128xi1>
  return %m, %e : tensor<64x1xf32>, tensor<64x128xi1>
}

// -----

// A value per row that the graph returns and one op reads (a LayerNorm's
// rstd, saved for the backward) is not copied: kf-fuse has the row kernel
// that reads it write it too.
// CHECK-LABEL: func.func @returned_statistic
// CHECK-COUNT-1: kf.rsqrt
// CHECK-NOT: kf.rsqrt
func.func @returned_statistic(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>) {
  %sq = kf.mul %x, %x : tensor<8x64xf32>
  %ms = kf.reduce mean %sq [1] {keep_dims = true} : tensor<8x64xf32> -> tensor<8x1xf32>
  %r = kf.rsqrt %ms : tensor<8x1xf32>
  %rb = kf.broadcast %r : tensor<8x1xf32> -> tensor<8x64xf32>
  %y = kf.mul %x, %rb : tensor<8x64xf32>
  return %y, %r : tensor<8x64xf32>, tensor<8x1xf32>
}
