// RUN: kfuse-opt %s -split-input-file --kf-lower-to-gpu -verify-diagnostics

// Decisions that verify on their own but that the lowering cannot follow
// for this kernel are refused with the reason, not lowered into a kernel
// that would compute something else.

// Output tiles taking rows 4 apart: 4 rows of 1001 f16 are not a whole
// number of 8-element vectors, so the groups' rows cannot all start on
// 16-byte boundaries.
module attributes {kf.target = #kf.target<aligned = true, wgmma = true>} {
func.func @rows_not_aligned(%a: tensor<1024x128xf16>, %b: tensor<1001x128xf16>) -> tensor<1024x1001xf16> {
  // expected-error @+1 {{'kf.kernel' op has rowGroups = 4, rowAlign = 8: does not align the rows of this output and tile}}
  %0 = kf.kernel matmul(%a, %b : tensor<1024x128xf16>, tensor<1001x128xf16>) attributes {launch = #kf.launch<grid = 128, block = 384, items = 128, sharedBytes = 200000>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true, tma = true, mmaGroups = 2, rowGroups = 4, rowAlign = 8>, tiling = #kf.mma_tiling<tileM = 128, tileN = 128, tileK = 64, warpsM = 8, warpsN = 1, groupM = 8, wgmma = true>} {
  ^bb0(%x: tensor<1024x128xf16>, %y: tensor<1001x128xf16>):
    %c = kf.matmul %x, %y {transpose_b = true} : tensor<1024x128xf16>, tensor<1001x128xf16> -> tensor<1024x1001xf16>
    kf.yield %c : tensor<1024x1001xf16>
  } -> (tensor<1024x1001xf16>)
  return %0 : tensor<1024x1001xf16>
}
}

// -----

// FlashAttention's shared memory is kf-promote-shared's decision.
module attributes {kf.target = #kf.target<aligned = true, wgmma = true>} {
func.func @flash_without_pipeline(%q: tensor<1x1x128x64xbf16>) -> tensor<1x1x128x64xbf16> {
  // expected-error @+1 {{'kf.kernel' op has no flash_pipeline: run kf-promote-shared first}}
  %0 = kf.kernel attention(%q : tensor<1x1x128x64xbf16>) attributes {launch = #kf.launch<grid = 1, block = 256, items = 1>, tiling = #kf.flash_tiling<blockQ = 128, blockK = 64, headDim = 64, valueDim = 64, qInRegisters = true>} {
  ^bb0(%a: tensor<1x1x128x64xbf16>):
    %o = kf.attention %a, %a, %a {scale = 0.125 : f64} : tensor<1x1x128x64xbf16>, tensor<1x1x128x64xbf16>, tensor<1x1x128x64xbf16> -> tensor<1x1x128x64xbf16>
    kf.yield %o : tensor<1x1x128x64xbf16>
  } -> (tensor<1x1x128x64xbf16>)
  return %0 : tensor<1x1x128x64xbf16>
}
}

// -----

// A pointwise kernel's vectors are kf-tile's decision.
func.func @pointwise_without_tiling(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'kf.kernel' op has no pointwise_tiling: run kf-tile first}}
  %0 = kf.kernel pointwise(%x : tensor<64xf32>) attributes {launch = #kf.launch<grid = 1, block = 64, items = 64>} {
  ^bb0(%a: tensor<64xf32>):
    %e = kf.exp %a : tensor<64xf32>
    kf.yield %e : tensor<64xf32>
  } -> (tensor<64xf32>)
  return %0 : tensor<64xf32>
}

// -----

func.func @no_launch(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'kf.kernel' op has no launch: run kf-tile first}}
  %0 = kf.kernel pointwise(%x : tensor<64xf32>) {
  ^bb0(%a: tensor<64xf32>):
    %e = kf.exp %a : tensor<64xf32>
    kf.yield %e : tensor<64xf32>
  } -> (tensor<64xf32>)
  return %0 : tensor<64xf32>
}
