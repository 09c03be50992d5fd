// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=ORDERED
// RUN: kfuse-opt %s --kf-attach-target="aligned=true unordered-adds=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=UNORDERED
// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s --check-prefix=ORDERED-GPU
// RUN: kfuse-opt %s --kf-attach-target="aligned=true unordered-adds=true" --kf-fuse --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s --check-prefix=UNORDERED-GPU

// kf.index_add is a kernel of its own: its updates' producers (the square
// and the widening cast) are computed where the template reads an update.
// Where adds may be unordered, a thread takes each of the 8 x 16 updates
// and adds it with an atomic into the f32 result, and the narrowing cast
// is a kernel after it. Else a block takes a tile of rows by the 16
// columns: all 5 rows here (its 256 threads are 128 groups of 2, each
// thread a vector of 8 columns, each group its rows), however few blocks
// that leaves the GPU. Its threads mark the indices naming the tile's rows
// by warp ballots (1,024 indices a chunk: 32 masks, a row offset an
// index), a ballot of the masks says which have marks, and the block walks
// the marks (trailing zeros), adding the updates (one 16-byte read each)
// into the tile's sums in shared memory; the cast is its epilogue,
// computed where each sum is stored, a vector at a time, so no f32 copy of
// the sums is written.
// ORDERED: kf.kernel reduction
// ORDERED-SAME: launch = #kf.launch<grid = 1, block = 256, items = 1, sharedBytes = 320>, tiling = #kf.index_add_tiling<rowsPerBlock = 5, columnsPerBlock = 16, vector = 8>
// ORDERED: kf.mul
// ORDERED: kf.cast
// ORDERED: kf.index_add
// ORDERED-NEXT: kf.cast
// ORDERED-NEXT: kf.yield
// ORDERED-NOT: kf.kernel
// UNORDERED: kf.kernel reduction
// UNORDERED-SAME: launch = #kf.launch<grid = 1, block = 256, items = 128>, tiling = #kf.index_add_tiling<unordered = true>
// UNORDERED: kf.index_add
// UNORDERED-NEXT: kf.yield
// UNORDERED: kf.kernel pointwise
// UNORDERED: kf.cast
// ORDERED-GPU: gpu.func @k0_reduction
// ORDERED-GPU-SAME: workgroup(%{{.*}} : memref<32xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1024xi32, #gpu.address_space<workgroup>>)
// ORDERED-GPU: gpu.dynamic_shared_memory
// ORDERED-GPU: memref.view {{.*}} to memref<80xf32, #gpu.address_space<workgroup>>
// ORDERED-GPU: nvvm.vote.sync ballot
// ORDERED-GPU: gpu.barrier
// ORDERED-GPU: nvvm.vote.sync ballot
// ORDERED-GPU: scf.while
// ORDERED-GPU: llvm.intr.cttz
// ORDERED-GPU: vector.load {{.*}} : memref<128xbf16>, vector<8xbf16>
// ORDERED-GPU: arith.mulf
// ORDERED-GPU: arith.addf
// ORDERED-GPU: gpu.barrier
// ORDERED-GPU-NOT: memref.atomic_rmw
// ORDERED-GPU: arith.truncf {{.*}} : f32 to bf16
// ORDERED-GPU: vector.store {{.*}} : memref<80xbf16>, vector<8xbf16>
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
