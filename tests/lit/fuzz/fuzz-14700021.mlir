// Found by kfuse-fuzz --backward --seed 14700021 (mismatch fused: the sigmoid of an i32 sum near -100 is 0 in an f32 kernel and a subnormal f32 in the evaluator; the checker accepts differences below f32's smallest normal), shrunk to 3 nodes.
// kfuse-fuzz: reduction-length 255 least-precise f32
// kfuse-fuzz: shapes 255 1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_14700021(%arg0: tensor<255xi32> {kf.name = "in0"}, %arg1: tensor<1xf32> {kf.name = "grad_out0"}) -> (tensor<1xf32> {kf.name = "out0"}) {
    %0 = kf.reduce sum %arg0 [0] {keep_dims = true} : tensor<255xi32> -> tensor<1xi32>
    %1 = kf.cast %0 : tensor<1xi32> -> tensor<1xf32>
    %2 = kf.sigmoid %1 : tensor<1xf32>
    return %2 : tensor<1xf32>
  }
}
