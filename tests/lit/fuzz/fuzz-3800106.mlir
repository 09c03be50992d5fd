// OPEN (session 31): fails on the H200 (fused: one column's min off by 1;
// also at the fuzz seed's inputs, in a process of its own). The PTX kfuse
// emits reads as right (24 loads a column, neg.s32, min.s32); the SASS was
// not looked at (no disassembler on the build machine). Kept so that the
// GPU replay shows it until it is understood.
// Found by kfuse-fuzz --seed 3800106 (mismatch fused), shrunk to 3 nodes.
// kfuse-fuzz: reduction-length 24 least-precise f32
// kfuse-fuzz: shapes 1x24x2
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_3800106(%arg0: tensor<1x24x2xi32> {kf.name = "in0"}) -> (tensor<1x2xi32> {kf.name = "out0"}) {
    %0 = kf.neg %arg0 : tensor<1x24x2xi32>
    %1 = kf.reduce min %0 [1] : tensor<1x24x2xi32> -> tensor<1x2xi32>
    return %1 : tensor<1x2xi32>
  }
}
