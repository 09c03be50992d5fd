// RUN: kfuse-opt %s -split-input-file --kf-fuse --kf-tile="aligned=true" --kf-lower-to-gpu | FileCheck %s

// A pointwise kernel: flat memref arguments known to be 16-byte aligned,
// vector loads and stores, f32 math on widened bf16.
// CHECK-LABEL: gpu.module @kf_kernels
// CHECK: gpu.func @k0_pointwise(%{{.*}}: memref<4096xbf16> {llvm.align = 16 : i64}, %{{.*}}: memref<4096xbf16> {llvm.align = 16 : i64}) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: vector.load %{{.*}} : memref<4096xbf16>, vector<8xbf16>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: math.tanh %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: vector.store %{{.*}} : memref<4096xbf16>, vector<8xbf16>
func.func @pointwise(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %y = kf.tanh %x : tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// A row kernel: a block reduction through warp shuffles and workgroup
// memory, then the normalised row.
// CHECK-LABEL: gpu.func @k0_normalization
// CHECK-SAME: workgroup(%{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: math.exp
// CHECK: vector.store
func.func @rows(%x: tensor<16x2048xf32>) -> tensor<16x2048xf32> {
  %y = kf.softmax %x {axis = 1} : tensor<16x2048xf32>
  return %y : tensor<16x2048xf32>
}

// -----

// The kernel records which gpu.func computes it.
// CHECK-LABEL: func.func @named
// CHECK: kf.kernel matmul{{.*}}gpu_func = "k0_matmul"
func.func @named(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %c = kf.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %c : tensor<4x2xf32>
}
