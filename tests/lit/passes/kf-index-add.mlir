// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=ORDERED
// RUN: kfuse-opt %s --kf-attach-target="aligned=true unordered-adds=true" --kf-fuse --kf-tile | FileCheck %s --check-prefix=UNORDERED
// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-fuse --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s --check-prefix=ORDERED-GPU
// RUN: kfuse-opt %s --kf-attach-target="aligned=true unordered-adds=true" --kf-fuse --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s --check-prefix=UNORDERED-GPU

// kf.index_add is a kernel of its own: its updates' producers (the square
// and the widening cast) are computed where the template reads an update,
// and the narrowing cast of the sums is a kernel after it. Where adds may
// be unordered, a thread takes each of the 8 x 16 updates and adds it with
// an atomic; else a thread takes each of the 5 x 16 sums and walks the 8
// indices, reading the updates of its row only.
// ORDERED: kf.kernel reduction
// ORDERED-SAME: launch = #kf.launch<grid = 1, block = 256, items = 80>, tiling = #kf.index_add_tiling<>
// ORDERED: kf.mul
// ORDERED: kf.cast
// ORDERED: kf.index_add
// ORDERED: kf.kernel pointwise
// UNORDERED: kf.kernel reduction
// UNORDERED-SAME: launch = #kf.launch<grid = 1, block = 256, items = 128>, tiling = #kf.index_add_tiling<unordered = true>
// ORDERED-GPU: gpu.func @k0_reduction
// ORDERED-GPU: scf.for
// ORDERED-GPU: arith.cmpi eq
// ORDERED-GPU: scf.if
// ORDERED-GPU: arith.mulf
// ORDERED-GPU: arith.addf
// ORDERED-GPU: scf.yield
// ORDERED-GPU-NOT: memref.atomic_rmw
// ORDERED-GPU: memref.store
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
