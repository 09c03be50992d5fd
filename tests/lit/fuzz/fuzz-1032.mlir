// Found by kfuse-fuzz --seed 1032 (compile fused), shrunk to 3 nodes.
// kfuse-fuzz: reduction-length 1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_1032(%arg0: tensor<1x1x1xf32> {kf.name = "in0"}) -> (tensor<1xf32> {kf.name = "out0"}) {
    %0 = kf.reduce max %arg0 [2] : tensor<1x1x1xf32> -> tensor<1x1xf32>
    %1 = kf.reduce min %0 [1] : tensor<1x1xf32> -> tensor<1xf32>
    return %1 : tensor<1xf32>
  }
}
