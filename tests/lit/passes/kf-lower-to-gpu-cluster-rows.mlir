// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-lower-to-gpu | FileCheck %s

// A softmax whose f32 rows of 32768 are split over clusters of 2 blocks
// (row_tiling's cluster): the kernel declares its cluster size; block
// rank (block id mod 2) takes the lanes of threads 512 rank on of a
// 1024-thread row; the cluster meets once before any block writes into
// another's shared memory. Each of the row's two reductions (max, then the
// sum of exponentials) reduces over the block, then thread t < 2 stores
// the block's value into slot [turn][rank] of block t's exchange buffer
// (mapa, a store to the cluster's shared window), the cluster barrier,
// and every thread folds both slots, rank 0's first.
// CHECK-LABEL: gpu.func @k0_normalization
// CHECK-SAME: workgroup(%{{.*}} : memref<32xf32, {{.*}}>, %[[MAX:.*]] : memref<4xf32, {{.*}}>, %[[SUM:.*]] : memref<4xf32, {{.*}}>)
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>, known_cluster_size = array<i32: 2, 1, 1>
// CHECK: %[[TID:.*]] = arith.remui %{{.*}}, %c512
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[RANK:.*]] = arith.remui %[[BID]], %c2
// CHECK: %[[RANKTHREADS:.*]] = arith.muli %[[RANK]], %c512
// CHECK: %[[LANETID:.*]] = arith.addi %[[RANKTHREADS]], %[[TID]]
// CHECK: %[[FIRST:.*]] = arith.divui %[[BID]], %c2
// CHECK: nvvm.cluster.arrive.relaxed {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: scf.for %[[ROW:.*]] = %[[FIRST]] to %c8 step
// CHECK: %[[TURN:.*]] = arith.remui %{{.*}}, %c2
// CHECK: arith.muli %{{.*}}, %c1024
// CHECK-NEXT: arith.addi %{{.*}}, %[[LANETID]]
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: memref.extract_aligned_pointer_as_index %[[MAX]]
// CHECK: %[[SENDS:.*]] = arith.cmpi ult, %[[TID]], %c2
// CHECK: scf.if %[[SENDS]] {
// CHECK: %[[PEER:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: %[[LOCAL:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: %[[REMOTE:.*]] = nvvm.mapa %[[LOCAL]], %[[PEER]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: llvm.store %{{.*}}, %[[REMOTE]] : f32, !llvm.ptr<7>
// CHECK: }
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: memref.load %[[MAX]]
// CHECK: memref.load %[[MAX]]
// CHECK: arith.maximumf
// CHECK: memref.extract_aligned_pointer_as_index %[[SUM]]
// CHECK: nvvm.mapa
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: memref.load %[[SUM]]
// CHECK: memref.load %[[SUM]]
// CHECK: arith.addf
// CHECK: vector.store
func.func @cluster_softmax(%x: tensor<8x32768xf32>) -> tensor<8x32768xf32> {
  %0 = kf.kernel normalization(%x : tensor<8x32768xf32>) attributes {launch = #kf.launch<grid = 16, block = 512, items = 8, minBlocksPerSM = 2>, tiling = #kf.row_tiling<vector = 4, chunks = 8, inRegisters = true, cluster = 2>} {
  ^bb0(%a: tensor<8x32768xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<8x32768xf32>
    kf.yield %s : tensor<8x32768xf32>
  } -> (tensor<8x32768xf32>)
  return %0 : tensor<8x32768xf32>
}
