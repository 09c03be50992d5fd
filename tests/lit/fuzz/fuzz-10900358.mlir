// Found by kfuse-fuzz --seed 10900358 (mismatch fused), shrunk to 4 nodes.
// kfuse-fuzz: reduction-length 1 least-precise bf16 discrete
// kfuse-fuzz: shapes 1x1x50x1
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_10900358(%arg0: tensor<1x1x50x1xi32> {kf.name = "in0"}) -> (tensor<1x1x50x1xi32> {kf.name = "out0"}) {
    %0 = kf.cast %arg0 : tensor<1x1x50x1xi32> -> tensor<1x1x50x1xbf16>
    %1 = kf.constant dense<-2.500000e+00> : tensor<bf16>
    %2 = kf.broadcast %1 : tensor<bf16> -> tensor<1x1x50x1xbf16>
    %3 = kf.max %0, %2 : tensor<1x1x50x1xbf16>
    %4 = kf.gelu %3 : tensor<1x1x50x1xbf16>
    %5 = kf.cast %4 : tensor<1x1x50x1xbf16> -> tensor<1x1x50x1xi32>
    return %5 : tensor<1x1x50x1xi32>
  }
}
