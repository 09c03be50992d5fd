// RUN: kfuse-opt %s --kf-attach-target="aligned=true" --kf-lower-to-gpu -verify-diagnostics

// Column partials (kf-fuse-column-sums) are summed by blocks that each take
// whole rows: a row split over a cluster is refused, not lowered with
// half of each row's lanes unread.
func.func @partials_over_a_cluster(%x: tensor<8x1024xf32>) -> (tensor<8x1024xf32>, tensor<2x1024xf32>) {
  // expected-error @+1 {{'kf.kernel' op sums column partials, which its blocks take whole rows for, but splits its rows over clusters of 2 blocks}}
  %0:2 = kf.kernel normalization(%x : tensor<8x1024xf32>) attributes {launch = #kf.launch<grid = 4, block = 128, items = 8>, tiling = #kf.row_tiling<vector = 4, chunks = 1, inRegisters = true, cluster = 2>} {
  ^bb0(%a: tensor<8x1024xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<8x1024xf32>
    %g = kf.reshape %s : tensor<8x1024xf32> -> tensor<2x2x2x1024xf32>
    %p = kf.reduce sum %g [0, 2] : tensor<2x2x2x1024xf32> -> tensor<2x1024xf32>
    kf.yield %s, %p : tensor<8x1024xf32>, tensor<2x1024xf32>
  } -> (tensor<8x1024xf32>, tensor<2x1024xf32>)
  return %0#0, %0#1 : tensor<8x1024xf32>, tensor<2x1024xf32>
}
