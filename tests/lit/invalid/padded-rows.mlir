// RUN: kfuse-opt %s -split-input-file --kf-attach-target="aligned=true" --kf-tile --kf-lower-to-gpu -verify-diagnostics

// kf-pad never pads a buffer a pointwise kernel reads (its vectors run
// across rows); a hand-written `padded_rows` there is refused, not
// miscompiled.
func.func @pointwise_reads_padded(%x: tensor<8x1001xf32>) -> tensor<8x1001xf32> {
  %0 = kf.kernel normalization(%x : tensor<8x1001xf32>) attributes {padded_rows = array<i64: 1004>} {
  ^bb0(%a: tensor<8x1001xf32>):
    %s = kf.softmax %a {axis = 1} : tensor<8x1001xf32>
    kf.yield %s : tensor<8x1001xf32>
  } -> (tensor<8x1001xf32>)
  // expected-error @+1 {{'kf.kernel' op has a buffer with padded rows ('tensor<8x1001xf32>'), which its template does not address}}
  %1 = kf.kernel pointwise(%0 : tensor<8x1001xf32>) {
  ^bb0(%b: tensor<8x1001xf32>):
    %e = kf.exp %b : tensor<8x1001xf32>
    kf.yield %e : tensor<8x1001xf32>
  } -> (tensor<8x1001xf32>)
  return %1 : tensor<8x1001xf32>
}
