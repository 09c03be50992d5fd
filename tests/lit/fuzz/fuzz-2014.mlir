// Found by kfuse-fuzz --seed 2014 (compile fused), shrunk to 3 nodes.
// kfuse-fuzz: reduction-length 1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_2014(%arg0: tensor<1x1xf32> {kf.name = "in0"}) -> (tensor<1x1xf32> {kf.name = "out0"}) {
    %0 = kf.reduce max %arg0 [1] {keep_dims = true} : tensor<1x1xf32> -> tensor<1x1xf32>
    %1 = kf.transpose %0 [1, 0] : tensor<1x1xf32> -> tensor<1x1xf32>
    return %1 : tensor<1x1xf32>
  }
}
