// Found by kfuse-fuzz on the GPU (compile fused; seeds 4700232 and 8700071):
// the transpose template staged its 32x32 tiles as f32 bits, so a
// transpose of an i64 failed to compile (an i1 could not be bitcast
// either). Its tile now holds f32 for floats up to 32 bits, i32 for
// narrower integers, and i64 as i64. Shapes with partial tiles.
// kfuse-fuzz: reduction-length 1 least-precise f32 discrete
// kfuse-fuzz: shapes 40x70 3x33x45
// RUN: kfuse-fuzz --replay %s
func.func @f(%arg0: tensor<40x70xi64> {kf.name = "in0"}, %arg1: tensor<3x33x45xi1> {kf.name = "in1"}) -> (tensor<70x40xi64> {kf.name = "out0"}, tensor<3x45x33xi1> {kf.name = "out1"}) {
  %0 = kf.transpose %arg0 [1, 0] : tensor<40x70xi64> -> tensor<70x40xi64>
  %1 = kf.transpose %arg1 [0, 2, 1] : tensor<3x33x45xi1> -> tensor<3x45x33xi1>
  return %0, %1 : tensor<70x40xi64>, tensor<3x45x33xi1>
}
