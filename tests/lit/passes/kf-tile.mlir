// RUN: kfuse-opt %s -split-input-file --kf-fuse --kf-tile="aligned=true" | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-fuse --kf-tile | FileCheck %s --check-prefix=UNALIGNED

// Pointwise: 16-byte vectors of f32 (4), one a thread step (two for
// large 16-bit tensors), 256 threads, the grid covering the work once.
// CHECK-LABEL: func.func @pointwise
// CHECK: config = {aligned = 16 : i64, block = 256 : i64, grid = 2048 : i64, items = 2097152 : i64, unroll = 1 : i64, vec = 4 : i64}
// UNALIGNED-LABEL: func.func @pointwise
// UNALIGNED: config = {aligned = 0 : i64, block = 256 : i64, grid = 8192 : i64, items = 2097152 : i64, unroll = 1 : i64, vec = 1 : i64}
func.func @pointwise(%x: tensor<2048x1024xf32>) -> tensor<2048x1024xf32> {
  %y = kf.exp %x : tensor<2048x1024xf32>
  return %y : tensor<2048x1024xf32>
}

// -----

// A row kernel: one block per row, threads holding about 4 vectors each,
// the row in registers (8 vectors of 8 bf16 = 64 values is too many: 2
// chunks of 8 is 16).
// CHECK-LABEL: func.func @rows
// CHECK: kf.kernel normalization
// CHECK-SAME: config = {aligned = 16 : i64, block = 128 : i64, chunks = 4 : i64, grid = 300 : i64, in_registers = 1 : i64, items = 300 : i64, vec = 8 : i64}
func.func @rows(%x: tensor<300x4096xbf16>) -> tensor<300x4096xbf16> {
  %y = kf.softmax %x {axis = 1} : tensor<300x4096xbf16>
  return %y : tensor<300x4096xbf16>
}

// -----

// i1 buffers are never vectorised (LLVM packs vectors of i1 into bits).
// CHECK-LABEL: func.func @bools
// CHECK: vec = 1 : i64
func.func @bools(%x: tensor<1024xf32>) -> tensor<1024xi1> {
  %y = kf.compare lt, %x, %x : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xi1>
  return %y : tensor<1024xi1>
}
