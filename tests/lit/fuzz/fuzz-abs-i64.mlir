// Found by kfuse-fuzz on the CPU (compile fused): |x| of an i64, whose
// math.absi has no NVVM lowering, failed translation to LLVM IR. The
// emitter now computes it as max(x, -x) for i64.
// kfuse-fuzz: reduction-length 1 least-precise i64 discrete
// kfuse-fuzz: shapes 3x5
// RUN: kfuse-fuzz --replay %s
func.func @f(%arg0: tensor<3x5xi64> {kf.name = "in0"}) -> (tensor<3x5xi64> {kf.name = "out0"}) {
  %0 = kf.abs %arg0 : tensor<3x5xi64>
  return %0 : tensor<3x5xi64>
}
