// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// The decision attributes round-trip, in the custom and the generic form;
// parameters at their defaults are left out.
// CHECK: module attributes {kf.target = #kf.target<chip = "sm_90a", aligned = true, wgmma = true>}
module attributes {kf.target = #kf.target<chip = "sm_90a", multiprocessors = 132, aligned = true, wgmma = true>} {
// CHECK-LABEL: func.func @kernel
func.func @kernel(%x: tensor<128x64xf32>) -> (tensor<128x64xf32>, tensor<128xf32>) {
  // CHECK: kf.kernel normalization(%{{.*}} : tensor<128x64xf32>) attributes {launch = #kf.launch<grid = 128, block = 32, items = 128>, tiling = #kf.row_tiling<vector = 4, inRegisters = true>}
  // CHECK: kf.yield %{{.*}}, %{{.*}} : tensor<128x64xf32>, tensor<128xf32>
  %0:2 = kf.kernel normalization(%x : tensor<128x64xf32>) attributes {launch = #kf.launch<grid = 128, block = 32, items = 128, sharedBytes = 0>, tiling = #kf.row_tiling<vector = 4, chunks = 1, inRegisters = true>} {
  ^bb0(%a: tensor<128x64xf32>):
    %e = kf.exp %a : tensor<128x64xf32>
    %s = kf.reduce sum %e [1] : tensor<128x64xf32> -> tensor<128xf32>
    kf.yield %e, %s : tensor<128x64xf32>, tensor<128xf32>
  } -> (tensor<128x64xf32>, tensor<128xf32>)
  return %0#0, %0#1 : tensor<128x64xf32>, tensor<128xf32>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<256x64xbf16>, %b: tensor<64x256xbf16>) -> tensor<256x256xbf16> {
  // CHECK: kf.kernel matmul(%{{.*}}, %{{.*}} : tensor<256x64xbf16>, tensor<64x256xbf16>) attributes {launch = #kf.launch<grid = 2, block = 384, items = 2, sharedBytes = 100000>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true, tma = true, mmaGroups = 2>, tiling = #kf.mma_tiling<tileM = 128, tileN = 256, tileK = 64, warpsM = 8, warpsN = 1, groupM = 8, wgmma = true>}
  %0 = kf.kernel matmul(%a, %b : tensor<256x64xbf16>, tensor<64x256xbf16>) attributes {launch = #kf.launch<grid = 2, block = 384, items = 2, sharedBytes = 100000>, pipeline = #kf.mma_pipeline<stages = 4, stageOutput = true, tma = true, mmaGroups = 2>, tiling = #kf.mma_tiling<tileM = 128, tileN = 256, tileK = 64, warpsM = 8, warpsN = 1, groupM = 8, wgmma = true>} {
  ^bb0(%x: tensor<256x64xbf16>, %y: tensor<64x256xbf16>):
    %c = kf.matmul %x, %y : tensor<256x64xbf16>, tensor<64x256xbf16> -> tensor<256x256xbf16>
    kf.yield %c : tensor<256x256xbf16>
  } -> (tensor<256x256xbf16>)
  return %0 : tensor<256x256xbf16>
}
}
