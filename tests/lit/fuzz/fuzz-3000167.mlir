// Found by kfuse-fuzz --seed 3000167 (run unfused: cuLaunchKernel CUDA_ERROR_INVALID_VALUE):
// the softmax's kernel staged 48 KiB of its row in dynamic shared memory
// beside its static reduction scratch, over 48 KiB in all, without opting in.
// kfuse-fuzz: reduction-length 17408 least-precise bf16
// kfuse-fuzz: shapes 1024x17
// RUN: kfuse-fuzz --replay %s
module {
  func.func @fuzz_3000167(%arg0: tensor<1024x17xbf16> {kf.name = "in0"}) -> (tensor<bf16> {kf.name = "out0"}) {
    %0 = kf.reshape %arg0 : tensor<1024x17xbf16> -> tensor<17408xbf16>
    %1 = kf.softmax %0 {axis = 0 : i64} : tensor<17408xbf16>
    %2 = kf.reduce sum %1 [0] : tensor<17408xbf16> -> tensor<bf16>
    return %2 : tensor<bf16>
  }
}
