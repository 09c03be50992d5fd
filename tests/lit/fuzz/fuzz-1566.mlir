// Found by kfuse-fuzz --seed 1566 (compile fused), shrunk to 3 nodes.
// kfuse-fuzz: reduction-length 1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_1566(%arg0: tensor<1x1x1xf32> {kf.name = "in0"}) -> (tensor<1x1x1xf32> {kf.name = "out0"}) {
    %0 = kf.reduce max %arg0 [2] {keep_dims = true} : tensor<1x1x1xf32> -> tensor<1x1x1xf32>
    %1 = kf.softmax %0 {axis = 2 : i64} : tensor<1x1x1xf32>
    return %1 : tensor<1x1x1xf32>
  }
}
