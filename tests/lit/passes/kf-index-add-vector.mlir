// RUN: kfuse-opt %s --split-input-file --kf-attach-target="aligned=true" --kf-fuse --kf-tile | FileCheck %s
// RUN: kfuse-opt %s --split-input-file --kf-attach-target --kf-fuse --kf-tile | FileCheck %s --check-prefix=UNALIGNED

// An ordered index_add's thread reads `vector` consecutive columns of an
// update, 16 bytes of the widest buffer it reads or writes along them. The
// indices, and what only they are computed from (the i64 ids flattened by
// a reshape), are read an index at a time and do not narrow it: bf16
// updates and table give 8. Buffers not known to be aligned give 1.
// CHECK-LABEL: func.func @flattened_ids
// CHECK: sharedBytes = {{[0-9]+}}>, tiling = #kf.index_add_tiling<rowsPerBlock = {{[0-9]+}}, columnsPerBlock = 64, vector = 8>
// UNALIGNED-LABEL: func.func @flattened_ids
// UNALIGNED: tiling = #kf.index_add_tiling<rowsPerBlock = {{[0-9]+}}, columnsPerBlock = 64>
func.func @flattened_ids(%u: tensor<4x512x64xbf16>, %i: tensor<4x512xi64>) -> tensor<1000x64xbf16> {
  %w = kf.cast %u : tensor<4x512x64xbf16> -> tensor<4x512x64xf32>
  %w2 = kf.reshape %w : tensor<4x512x64xf32> -> tensor<2048x64xf32>
  %j = kf.reshape %i : tensor<4x512xi64> -> tensor<2048xi64>
  %r = kf.index_add %w2[%j] {axis = 0 : i64, size = 1000 : i64} : tensor<2048x64xf32>, tensor<2048xi64> -> tensor<1000x64xf32>
  %c = kf.cast %r : tensor<1000x64xf32> -> tensor<1000x64xbf16>
  return %c : tensor<1000x64xbf16>
}

// -----

// An f32 result is 4 columns to 16 bytes.
// CHECK-LABEL: func.func @f32_sums
// CHECK: tiling = #kf.index_add_tiling<rowsPerBlock = {{[0-9]+}}, columnsPerBlock = 64, vector = 4>
func.func @f32_sums(%u: tensor<2048x64xbf16>, %i: tensor<2048xi32>) -> tensor<1000x64xf32> {
  %w = kf.cast %u : tensor<2048x64xbf16> -> tensor<2048x64xf32>
  %r = kf.index_add %w[%i] {axis = 0 : i64, size = 1000 : i64} : tensor<2048x64xf32>, tensor<2048xi32> -> tensor<1000x64xf32>
  return %r : tensor<1000x64xf32>
}

// -----

// Rows of 6 columns take vectors of 2: a vector lies in one row.
// CHECK-LABEL: func.func @short_rows
// CHECK: tiling = #kf.index_add_tiling<rowsPerBlock = {{[0-9]+}}, columnsPerBlock = 6, vector = 2>
func.func @short_rows(%u: tensor<2048x6xbf16>, %i: tensor<2048xi32>) -> tensor<1000x6xbf16> {
  %w = kf.cast %u : tensor<2048x6xbf16> -> tensor<2048x6xf32>
  %r = kf.index_add %w[%i] {axis = 0 : i64, size = 1000 : i64} : tensor<2048x6xf32>, tensor<2048xi32> -> tensor<1000x6xf32>
  %c = kf.cast %r : tensor<1000x6xf32> -> tensor<1000x6xbf16>
  return %c : tensor<1000x6xbf16>
}
