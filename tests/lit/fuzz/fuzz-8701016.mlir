// Found by kfuse-fuzz --seed 8701016 (run unfused: CUDA_ERROR_MISALIGNED_ADDRESS), shrunk to 4 nodes:
// the stride-3 slice read 6 f16 lanes as a 4-lane load at 12-byte steps.
// kfuse-fuzz: reduction-length 1 least-precise f16
// kfuse-fuzz: shapes 1031x1 1031x6
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_8701016(%arg0: tensor<1031x1xf16> {kf.name = "in0"}, %arg1: tensor<1031x6xi64> {kf.name = "in1"}) -> (tensor<1031x2xf16> {kf.name = "out0"}) {
    %0 = kf.constant dense<1> : tensor<i32>
    %1 = kf.cast %0 : tensor<i32> -> tensor<i64>
    %2 = kf.broadcast %1 : tensor<i64> -> tensor<1031x6xi64>
    %3 = kf.mod %arg1, %2 : tensor<1031x6xi64>
    %4 = kf.take_along_axis %arg0[%3] {axis = 1 : i64} : tensor<1031x1xf16>, tensor<1031x6xi64> -> tensor<1031x6xf16>
    %5 = kf.slice %4 starts [0, 0] limits [9223372036854775807, 4] steps [1, 3] : tensor<1031x6xf16> -> tensor<1031x2xf16>
    return %5 : tensor<1031x2xf16>
  }
}
