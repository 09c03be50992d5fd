// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --cse --kf-fuse-column-sums | FileCheck %s
// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true wgmma=true" --kf-fuse --cse --kf-fuse-column-sums --kf-tile --kf-promote-shared | FileCheck %s --check-prefix=STAGED

// A bias gradient: the f32 product through an activation's derivative,
// summed over its rows and rounded for the next matmul. The sums over
// each 16 rows, their prologue (the derivative reads %h) and the rounding
// join the matmul kernel, whose result is then the bf16 copy: the f32
// product is never written. The reduction kernel sums the 64 partial rows
// and rounds the sums (the cast is its epilogue).
// The matmul kernel still stages its tile: the partials leave from
// registers.
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[MM:.*]]:2 = kf.kernel matmul(%arg0, %arg1, %arg2 : tensor<4x256x64xbf16>, tensor<512x64xbf16>, tensor<4x256x512xbf16>)
// CHECK:   %[[P:.*]] = kf.matmul
// CHECK:   %[[DH:.*]] = kf.mul %[[P]]
// CHECK:   %[[ROUNDED:.*]] = kf.cast %[[DH]] : tensor<4x256x512xf32> -> tensor<4x256x512xbf16>
// CHECK:   %[[G:.*]] = kf.reshape %[[DH]] : tensor<4x256x512xf32> -> tensor<64x16x512xf32>
// CHECK:   %[[S:.*]] = kf.reduce sum %[[G]] [1] : tensor<64x16x512xf32> -> tensor<64x512xf32>
// CHECK:   kf.yield %[[ROUNDED]], %[[S]]
// CHECK: kf.kernel reduction(%[[MM]]#1 : tensor<64x512xf32>)
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<64x512xf32> -> tensor<512xf32>
// CHECK-NEXT: kf.cast %{{.*}} : tensor<512xf32> -> tensor<512xbf16>
// CHECK: kf.kernel matmul(%[[MM]]#0,
// CHECK-NOT: kf.kernel
// CHECK: return
// STAGED-LABEL: func.func @bias_grad
// STAGED: kf.kernel matmul({{.*}}) attributes {{.*}}stageOutput = true
func.func @bias_grad(%dy: tensor<4x256x64xbf16>, %w: tensor<512x64xbf16>, %h: tensor<4x256x512xbf16>, %w2: tensor<32x512xbf16>)
    -> (tensor<512xbf16>, tensor<4x256x32xf32>) {
  %p = kf.matmul %dy, %w {transpose_b = true} : tensor<4x256x64xbf16>, tensor<512x64xbf16> -> tensor<4x256x512xf32>
  %hf = kf.cast %h : tensor<4x256x512xbf16> -> tensor<4x256x512xf32>
  %d = kf.sigmoid %hf : tensor<4x256x512xf32>
  %dh = kf.mul %p, %d : tensor<4x256x512xf32>
  %db = kf.reduce sum %dh [0, 1] : tensor<4x256x512xf32> -> tensor<512xf32>
  %dbb = kf.cast %db : tensor<512xf32> -> tensor<512xbf16>
  %dhb = kf.cast %dh : tensor<4x256x512xf32> -> tensor<4x256x512xbf16>
  %dx = kf.matmul %dhb, %w2 {transpose_b = true} : tensor<4x256x512xbf16>, tensor<32x512xbf16> -> tensor<4x256x32xf32>
  return %dbb, %dx : tensor<512xbf16>, tensor<4x256x32xf32>
}

// -----

// The product read by a row kernel too: the matmul kernel keeps its f32
// result and adds the partials of both column sums, which one reduction
// kernel finishes.
// CHECK-LABEL: func.func @beside_f32
// CHECK: %[[MM:.*]]:3 = kf.kernel matmul
// CHECK:   kf.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<512x384xf32>, tensor<32x384xf32>, tensor<32x384xf32>
// CHECK: kf.kernel reduction(%[[MM]]#0 : tensor<512x384xf32>)
// CHECK: kf.kernel reduction(%[[MM]]#1, %[[MM]]#2 : tensor<32x384xf32>, tensor<32x384xf32>)
// CHECK-COUNT-2: kf.reduce sum %{{.*}} [0] : tensor<32x384xf32> -> tensor<384xf32>
// CHECK-NOT: kf.kernel
func.func @beside_f32(%a: tensor<512x128xbf16>, %b: tensor<128x384xbf16>, %c: tensor<512x384xf32>)
    -> (tensor<512xf32>, tensor<384xf32>, tensor<384xf32>) {
  %p = kf.matmul %a, %b : tensor<512x128xbf16>, tensor<128x384xbf16> -> tensor<512x384xf32>
  %rows = kf.reduce sum %p [1] : tensor<512x384xf32> -> tensor<512xf32>
  %cols = kf.reduce sum %p [0] : tensor<512x384xf32> -> tensor<384xf32>
  %pc = kf.mul %p, %c : tensor<512x384xf32>
  %scaled = kf.reduce sum %pc [0] : tensor<512x384xf32> -> tensor<384xf32>
  return %rows, %cols, %scaled : tensor<512xf32>, tensor<384xf32>, tensor<384xf32>
}

// -----

// Not fused: sums that keep the rows of each batch, a reduction reading
// the product through a transpose (another thread's elements), rows that
// are not whole groups of 16, and a product on the CUDA cores (f32
// operands, TF32 not allowed).
// CHECK-LABEL: func.func @not_column_sums
// CHECK-COUNT-4: kf.kernel matmul
// CHECK-NOT: tensor<{{[0-9]+}}x16x
// CHECK: return
func.func @not_column_sums(%a: tensor<2x64x32xbf16>, %b: tensor<32x64xbf16>, %c: tensor<40x32xbf16>, %d: tensor<32x64xf32>, %e: tensor<64x32xf32>)
    -> (tensor<2x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %p = kf.matmul %a, %b : tensor<2x64x32xbf16>, tensor<32x64xbf16> -> tensor<2x64x64xf32>
  %perbatch = kf.reduce sum %p [1] : tensor<2x64x64xf32> -> tensor<2x64xf32>
  %q = kf.matmul %a, %b : tensor<2x64x32xbf16>, tensor<32x64xbf16> -> tensor<2x64x64xf32>
  %qt = kf.transpose %q [0, 2, 1] : tensor<2x64x64xf32> -> tensor<2x64x64xf32>
  %viaT = kf.reduce sum %qt [0, 1] : tensor<2x64x64xf32> -> tensor<64xf32>
  %r = kf.matmul %c, %b : tensor<40x32xbf16>, tensor<32x64xbf16> -> tensor<40x64xf32>
  %odd = kf.reduce sum %r [0] : tensor<40x64xf32> -> tensor<64xf32>
  %s = kf.matmul %e, %d : tensor<64x32xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  %cuda = kf.reduce sum %s [0] : tensor<64x64xf32> -> tensor<64xf32>
  return %perbatch, %viaT, %odd, %cuda : tensor<2x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// Not a column sum, but the same round trip: a matmul's f32 result split
// into heads after its rounding to bf16. The rounding joins the matmul's
// epilogue (a 16-bit result) and the split copies bf16, not f32.
// CHECK-LABEL: func.func @rounded_then_split
// CHECK: %[[MM:.*]] = kf.kernel matmul
// CHECK:   kf.cast %{{.*}} : tensor<256x128xf32> -> tensor<256x128xbf16>
// CHECK: kf.kernel pointwise(%[[MM]] : tensor<256x128xbf16>)
// CHECK-NOT: kf.cast
// CHECK:   kf.transpose
func.func @rounded_then_split(%a: tensor<256x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<2x256x64xbf16> {
  %m = kf.matmul %a, %b : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
  %c = kf.cast %m : tensor<256x128xf32> -> tensor<256x128xbf16>
  %r = kf.reshape %c : tensor<256x128xbf16> -> tensor<256x2x64xbf16>
  %t = kf.transpose %r [1, 0, 2] : tensor<256x2x64xbf16> -> tensor<2x256x64xbf16>
  return %t : tensor<2x256x64xbf16>
}

// -----

// The matmul kernel's result is a reshape of the product that keeps its
// rows ([256, 128] as [2, 128, 128]): the same rows of N, summed as such.
// CHECK-LABEL: func.func @reshaped_product
// CHECK: %[[MM:.*]]:2 = kf.kernel matmul
// CHECK:   kf.yield %{{.*}}, %{{.*}} : tensor<2x128x128xbf16>, tensor<16x128xf32>
// CHECK: kf.kernel reduction(%[[MM]]#1 : tensor<16x128xf32>)
func.func @reshaped_product(%a: tensor<256x64xbf16>, %b: tensor<64x128xbf16>, %h: tensor<2x128x128xbf16>) -> (tensor<128xf32>, tensor<2x128x128xbf16>) {
  %m = kf.matmul %a, %b : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
  %r = kf.reshape %m : tensor<256x128xf32> -> tensor<2x128x128xf32>
  %hf = kf.cast %h : tensor<2x128x128xbf16> -> tensor<2x128x128xf32>
  %d = kf.mul %r, %hf : tensor<2x128x128xf32>
  %s = kf.reduce sum %d [0, 1] : tensor<2x128x128xf32> -> tensor<128xf32>
  %c = kf.cast %d : tensor<2x128x128xf32> -> tensor<2x128x128xbf16>
  return %s, %c : tensor<128xf32>, tensor<2x128x128xbf16>
}


// -----

// A bias gradient of a gradient that arrives from outside: 8192 rows of
// 1024 columns, 32 column tiles on 132 SMs. The rows are summed as 16
// interleaved partials first (512 tiles), then the partials; the cast
// follows the final sum.
// CHECK-LABEL: func.func @tall_column_sum
// CHECK: %[[P:.*]] = kf.kernel reduction(%{{.*}} : tensor<8192x1024xbf16>)
// CHECK:   kf.cast
// CHECK:   kf.reshape %{{.*}} : tensor<8192x1024xf32> -> tensor<512x16384xf32>
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<512x16384xf32> -> tensor<16384xf32>
// CHECK: kf.kernel reduction(%[[P]] : tensor<16384xf32>)
// CHECK:   kf.reshape %{{.*}} : tensor<16384xf32> -> tensor<16x1024xf32>
// CHECK:   kf.reduce sum %{{.*}} [0] : tensor<16x1024xf32> -> tensor<1024xf32>
// CHECK:   kf.cast %{{.*}} : tensor<1024xf32> -> tensor<1024xbf16>
// CHECK-NOT: kf.kernel
func.func @tall_column_sum(%dy: tensor<8192x1024xbf16>) -> tensor<1024xbf16> {
  %w = kf.cast %dy : tensor<8192x1024xbf16> -> tensor<8192x1024xf32>
  %s = kf.reduce sum %w [0] : tensor<8192x1024xf32> -> tensor<1024xf32>
  %c = kf.cast %s : tensor<1024xf32> -> tensor<1024xbf16>
  return %c : tensor<1024xbf16>
}

// -----

// Few rows (the sums of a matmul's partials): one kernel.
// CHECK-LABEL: func.func @short_column_sum
// CHECK-COUNT-1: kf.kernel reduction
// CHECK-NOT: kf.kernel
func.func @short_column_sum(%p: tensor<512x1024xf32>) -> tensor<1024xf32> {
  %s = kf.reduce sum %p [0] : tensor<512x1024xf32> -> tensor<1024xf32>
  return %s : tensor<1024xf32>
}
