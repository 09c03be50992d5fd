// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true" --kf-fuse --kf-pad --kf-tile --kf-promote-shared --kf-lower-to-gpu | FileCheck %s

// Index maps that keep a vector's lanes consecutive read their operand a
// vector at a time. A stride-2 slice of bf16: 16 consecutive elements in
// two 16-byte loads, every other one kept.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK-COUNT-2: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<16384xbf16>, vector<8xbf16>
// CHECK-NOT: memref.load
// CHECK: vector.store %{{.*}} : memref<8192xbf16>, vector<8xbf16>
func.func @strided(%x: tensor<64x256xbf16>) -> tensor<64x128xbf16> {
  %s = kf.slice %x starts [0, 0] limits [64, 256] steps [1, 2] : tensor<64x256xbf16> -> tensor<64x128xbf16>
  return %s : tensor<64x128xbf16>
}

// -----

// Concat parts of 64 along the last dim: a vector lies in one part, one
// branch a vector yields all its lanes.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: vector.load %arg0[{{.*}}] {{.*}} : memref<4096xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK: vector.load %arg1[{{.*}}] {{.*}} : memref<4096xbf16>, vector<8xbf16>
// CHECK-NOT: memref.load
func.func @concat(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x128xbf16> {
  %c = kf.concat %a, %b {axis = 1} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x128xbf16>
  return %c : tensor<64x128xbf16>
}

// -----

// An embedding lookup: one id a vector, then a vector of the table's row,
// selected against NaN where the id is out of range.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: memref.load %arg1[{{.*}}] : memref<64xi64>
// CHECK: arith.cmpi ult
// CHECK: vector.load %arg0[{{.*}}] {{.*}} : memref<64000xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.select
func.func @embedding(%t: tensor<1000x64xbf16>, %ids: tensor<2x32xi64>) -> tensor<2x32x64xbf16> {
  %g = kf.gather %t[%ids] {axis = 0} : tensor<1000x64xbf16>, tensor<2x32xi64> -> tensor<2x32x64xbf16>
  return %g : tensor<2x32x64xbf16>
}

// -----

// A slice starting at 3 breaks a vector across two of its operand's: read
// element by element.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK-NOT: vector.load
// CHECK-COUNT-4: memref.load %arg0
// CHECK: vector.store %{{.*}} : memref<1024xf32>, vector<4xf32>
func.func @unaligned(%x: tensor<64x20xf32>) -> tensor<64x16xf32> {
  %s = kf.slice %x starts [0, 3] limits [64, 19] steps [1, 1] : tensor<64x20xf32> -> tensor<64x16xf32>
  return %s : tensor<64x16xf32>
}

// -----

// A stride-3 slice of 2-lane vectors would read 6 lanes from every sixth
// element on: a 4-lane load at 12-byte steps, misaligned in odd rows
// (fuzz seed 8701016: CUDA_ERROR_MISALIGNED_ADDRESS). Element by element.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK-NOT: vector.load
// CHECK-COUNT-2: memref.load %arg0
// CHECK: vector.store %{{.*}} : memref<2062xf16>, vector<2xf16>
func.func @stride_not_a_power_of_two(%x: tensor<1031x6xf16>) -> tensor<1031x2xf16> {
  %s = kf.slice %x starts [0, 0] limits [1031, 4] steps [1, 3] : tensor<1031x6xf16> -> tensor<1031x2xf16>
  return %s : tensor<1031x2xf16>
}

// -----

// pow by 2 and 3 are products (GELU's tanh form, RMSNorm's x.pow(2)).
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK-NOT: math.powf
// CHECK: arith.mulf
// CHECK-NOT: math.powf
// CHECK: gpu.return
func.func @squares_and_cubes(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %two = kf.constant dense<2.0> : tensor<1024xf32>
  %three = kf.constant dense<3.0> : tensor<1024xf32>
  %s = kf.pow %x, %two : tensor<1024xf32>
  %c = kf.pow %x, %three : tensor<1024xf32>
  %sum = kf.add %s, %c : tensor<1024xf32>
  return %sum : tensor<1024xf32>
}

// -----

// Another exponent is powf.
// CHECK-LABEL: gpu.func @k0_pointwise
// CHECK: math.powf
func.func @other_power(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = kf.constant dense<2.5> : tensor<1024xf32>
  %p = kf.pow %x, %e : tensor<1024xf32>
  return %p : tensor<1024xf32>
}
