// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=ORDERED
// RUN: kfuse-opt %s --kf-attach-target="aligned=true unordered-adds=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=UNORDERED
// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s --check-prefix=ORDERED-GPU
// RUN: kfuse-opt %s --kf-attach-target="aligned=true unordered-adds=true" --kf-fuse --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s --check-prefix=UNORDERED-GPU

// kf.index_add is a kernel of its own: its updates' producers (the square
// and the widening cast) are computed where the template reads an update,
// and the narrowing cast of the sums is a kernel after it. Where adds may
// be unordered, a thread takes each of the 8 x 16 updates and adds it with
// an atomic; else a block takes a tile of rows by the 16 columns: one row
// a tile here, so that the 5 tiles spread over the GPU. Its threads mark
// the indices naming the tile's row by a warp ballot and walk the marks
// (population count, trailing zeros), adding the updates into the tile's
// sums in shared memory, which they store once.
// ORDERED: kf.kernel reduction
// ORDERED-SAME: launch = #kf.launch<grid = 5, block = 256, items = 5>, tiling = #kf.index_add_tiling<rowsPerBlock = 1, columnsPerBlock = 16>
// ORDERED: kf.mul
// ORDERED: kf.cast
// ORDERED: kf.index_add
// ORDERED: kf.kernel pointwise
// UNORDERED: kf.kernel reduction
// UNORDERED-SAME: launch = #kf.launch<grid = 1, block = 256, items = 128>, tiling = #kf.index_add_tiling<unordered = true>
// ORDERED-GPU: gpu.func @k0_reduction
// ORDERED-GPU-SAME: workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<256xi32, #gpu.address_space<workgroup>>)
// ORDERED-GPU: nvvm.vote.sync ballot
// ORDERED-GPU: gpu.barrier
// ORDERED-GPU: llvm.intr.ctpop
// ORDERED-GPU: scf.for
// ORDERED-GPU: llvm.intr.cttz
// ORDERED-GPU: arith.mulf
// ORDERED-GPU: arith.addf
// ORDERED-GPU: gpu.barrier
// ORDERED-GPU-NOT: memref.atomic_rmw
// ORDERED-GPU: memref.store
// ORDERED-GPU: gpu.return
// UNORDERED-GPU: gpu.func @k0_reduction
// UNORDERED-GPU: arith.mulf
// UNORDERED-GPU: scf.if
// UNORDERED-GPU: memref.atomic_rmw addf
// UNORDERED-GPU-NOT: memref.store
// UNORDERED-GPU: gpu.return
func.func @embedding_gradient(%u: tensor<8x16xbf16>, %i: tensor<8xi32>) -> tensor<5x16xbf16> {
  %m = kf.mul %u, %u : tensor<8x16xbf16>
  %w = kf.cast %m : tensor<8x16xbf16> -> tensor<8x16xf32>
  %r = kf.index_add %w[%i] {axis = 0 : i64, size = 5 : i64} : tensor<8x16xf32>, tensor<8xi32> -> tensor<5x16xf32>
  %c = kf.cast %r : tensor<5x16xf32> -> tensor<5x16xbf16>
  return %c : tensor<5x16xbf16>
}
