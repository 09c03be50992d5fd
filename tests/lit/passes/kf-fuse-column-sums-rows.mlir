// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-rematerialize --kf-fuse --cse --kf-fuse-column-sums | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-rematerialize --kf-fuse --cse --kf-fuse-column-sums --kf-tile --kf-promote-shared | FileCheck %s --check-prefix=STAGED

// An RMSNorm's backward: the weight gradient sums dy * x_hat over the rows
// that the input gradient's row kernel reads. The sum joins the row
// kernel, which yields it over each block's rows (264 blocks of 4 rows at
// once, 4 steps); a reduction kernel sums the partials. kf-tile runs the
// row kernel on those blocks: 512 threads, 128 a row.
// CHECK-LABEL: func.func @rmsnorm_grad
// CHECK: %[[ROWS:.*]]:2 = kf.kernel normalization(
// CHECK:   kf.reduce sum %{{.*}} [1] {keep_dims = true}
// CHECK:   %[[G:.*]] = kf.reshape %{{.*}} : tensor<4224x1000xf32> -> tensor<4x264x4x1000xf32>
// CHECK:   %[[S:.*]] = kf.reduce sum %[[G]] [0, 2] : tensor<4x264x4x1000xf32> -> tensor<264x1000xf32>
// CHECK:   kf.yield %{{.*}}, %[[S]] : tensor<4224x1000xbf16>, tensor<264x1000xf32>
// CHECK: %[[W:.*]] = kf.kernel reduction(%[[ROWS]]#1 : tensor<264x1000xf32>)
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<264x1000xf32> -> tensor<1000xf32>
// CHECK-NOT: kf.kernel reduction
// CHECK: return %[[ROWS]]#0, %{{.*}}
// STAGED-LABEL: func.func @rmsnorm_grad
// STAGED: kf.kernel normalization({{.*}}) attributes {launch = #kf.launch<grid = 264, block = 512, items = 1056, minBlocksPerSM = 2>, tiling = #kf.row_tiling<vector = 8, inRegisters = true, rowsPerBlock = 4>}
func.func @rmsnorm_grad(%x: tensor<4224x1000xbf16>, %w: tensor<1000xbf16>, %rstd: tensor<4224x1xf32>, %dy: tensor<4224x1000xbf16>)
    -> (tensor<4224x1000xbf16>, tensor<1000xf32>) {
  %xf = kf.cast %x : tensor<4224x1000xbf16> -> tensor<4224x1000xf32>
  %wf = kf.cast %w : tensor<1000xbf16> -> tensor<1000xf32>
  %r = kf.broadcast %rstd : tensor<4224x1xf32> -> tensor<4224x1000xf32>
  %xhat = kf.mul %xf, %r : tensor<4224x1000xf32>
  %wb = kf.broadcast %wf : tensor<1000xf32> -> tensor<4224x1000xf32>
  %dyf = kf.cast %dy : tensor<4224x1000xbf16> -> tensor<4224x1000xf32>
  %g = kf.mul %dyf, %wb : tensor<4224x1000xf32>
  %gx = kf.mul %dyf, %xhat : tensor<4224x1000xf32>
  %dw = kf.reduce sum %gx [0] : tensor<4224x1000xf32> -> tensor<1000xf32>
  %t = kf.mul %g, %xhat : tensor<4224x1000xf32>
  %dot = kf.reduce sum %t [1] {keep_dims = true} : tensor<4224x1000xf32> -> tensor<4224x1xf32>
  %dotb = kf.broadcast %dot : tensor<4224x1xf32> -> tensor<4224x1000xf32>
  %u = kf.mul %dotb, %xhat : tensor<4224x1000xf32>
  %v = kf.sub %g, %u : tensor<4224x1000xf32>
  %dx = kf.mul %v, %r : tensor<4224x1000xf32>
  %dxb = kf.cast %dx : tensor<4224x1000xf32> -> tensor<4224x1000xbf16>
  return %dxb, %dw : tensor<4224x1000xbf16>, tensor<1000xf32>
}

// -----

// Too few rows for every block to take four groups of them: the weight
// gradient stays a kernel of its own.
// CHECK-LABEL: func.func @few_rows
// CHECK: kf.kernel reduction
// CHECK: kf.kernel normalization
// CHECK-NOT: [0, 2]
func.func @few_rows(%x: tensor<64x1000xf32>, %dy: tensor<64x1000xf32>)
    -> (tensor<64x1000xf32>, tensor<1000xf32>) {
  %gx = kf.mul %dy, %x : tensor<64x1000xf32>
  %dw = kf.reduce sum %gx [0] : tensor<64x1000xf32> -> tensor<1000xf32>
  %s = kf.softmax %gx {axis = 1} : tensor<64x1000xf32>
  return %s, %dw : tensor<64x1000xf32>, tensor<1000xf32>
}

// -----

// A LayerNorm's bias gradient (the sum of dy) beside a row kernel over rows
// of 4096: a block a row at a time (512 threads of 8 columns), 264 blocks
// of 8 rows each.
// CHECK-LABEL: func.func @bias_grad_long_rows
// CHECK: %[[ROWS:.*]]:2 = kf.kernel normalization(
// CHECK:   kf.reshape %{{.*}} : tensor<2112x4096xf32> -> tensor<8x264x1x4096xf32>
// CHECK: kf.kernel reduction(%[[ROWS]]#1 : tensor<264x4096xf32>)
// STAGED-LABEL: func.func @bias_grad_long_rows
// STAGED: kf.kernel normalization({{.*}}) attributes {launch = #kf.launch<grid = 264, block = 512, items = 2112, minBlocksPerSM = 2>, tiling = #kf.row_tiling<vector = 4, chunks = 2, inRegisters = true>}
func.func @bias_grad_long_rows(%x: tensor<2112x4096xf32>, %dy: tensor<2112x4096xf32>)
    -> (tensor<2112x4096xf32>, tensor<4096xf32>) {
  %db = kf.reduce sum %dy [0] : tensor<2112x4096xf32> -> tensor<4096xf32>
  %g = kf.mul %dy, %x : tensor<2112x4096xf32>
  %s = kf.softmax %g {axis = 1} : tensor<2112x4096xf32>
  return %s, %db : tensor<2112x4096xf32>, tensor<4096xf32>
}

// -----

// Rows of 5120: more than 8 columns a thread of a block, where the running
// sums beside the row spilled; the sum stays a kernel of its own.
// CHECK-LABEL: func.func @rows_too_long
// CHECK: kf.kernel reduction
// CHECK-NOT: [0, 2]
// CHECK: return
func.func @rows_too_long(%x: tensor<2112x5120xf32>, %dy: tensor<2112x5120xf32>)
    -> (tensor<2112x5120xf32>, tensor<5120xf32>) {
  %db = kf.reduce sum %dy [0] : tensor<2112x5120xf32> -> tensor<5120xf32>
  %g = kf.mul %dy, %x : tensor<2112x5120xf32>
  %s = kf.softmax %g {axis = 1} : tensor<2112x5120xf32>
  return %s, %db : tensor<2112x5120xf32>, tensor<5120xf32>
}

// -----

// A LayerNorm's weight and bias gradients, each rounded to bf16: both sums
// join the input gradient's row kernel, and one reduction kernel adds up
// both partials and rounds them (its epilogues).
// CHECK-LABEL: func.func @weight_and_bias_grads
// CHECK: %[[ROWS:.*]]:3 = kf.kernel normalization(
// CHECK: %[[SUMS:.*]]:2 = kf.kernel reduction(%[[ROWS]]#1, %[[ROWS]]#2 : tensor<264x1000xf32>, tensor<264x1000xf32>)
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<264x1000xf32> -> tensor<1000xf32>
// CHECK-NEXT: kf.cast %{{.*}} : tensor<1000xf32> -> tensor<1000xbf16>
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<264x1000xf32> -> tensor<1000xf32>
// CHECK-NEXT: kf.cast %{{.*}} : tensor<1000xf32> -> tensor<1000xbf16>
// CHECK-NOT: kf.kernel
// CHECK: return %[[ROWS]]#0, %[[SUMS]]#{{[01]}}, %[[SUMS]]#{{[01]}}
// STAGED-LABEL: func.func @weight_and_bias_grads
// STAGED: kf.kernel reduction({{.*}}) attributes {launch = #kf.launch<grid = 32, block = 1024, items = 1000>, tiling = #kf.column_tiling}
func.func @weight_and_bias_grads(%x: tensor<4224x1000xbf16>, %dy: tensor<4224x1000xbf16>)
    -> (tensor<4224x1000xbf16>, tensor<1000xbf16>, tensor<1000xbf16>) {
  %xf = kf.cast %x : tensor<4224x1000xbf16> -> tensor<4224x1000xf32>
  %dyf = kf.cast %dy : tensor<4224x1000xbf16> -> tensor<4224x1000xf32>
  %gx = kf.mul %dyf, %xf : tensor<4224x1000xf32>
  %dw = kf.reduce sum %gx [0] : tensor<4224x1000xf32> -> tensor<1000xf32>
  %dwb = kf.cast %dw : tensor<1000xf32> -> tensor<1000xbf16>
  %db = kf.reduce sum %dyf [0] : tensor<4224x1000xf32> -> tensor<1000xf32>
  %dbb = kf.cast %db : tensor<1000xf32> -> tensor<1000xbf16>
  %s = kf.softmax %gx {axis = 1} : tensor<4224x1000xf32>
  %sb = kf.cast %s : tensor<4224x1000xf32> -> tensor<4224x1000xbf16>
  return %sb, %dwb, %dbb : tensor<4224x1000xbf16>, tensor<1000xbf16>, tensor<1000xbf16>
}
