// Found by a GPU pytest (transformers' GPT-2 at 256 wide, B2 S128, through
// torch.compile): a split-K matmul whose epilogue reshapes the product to
// [B, S, N] before the residual add. The reduction kernel summing the K
// chunks ends in that shape, not the sum's, and kf-lower-to-gpu refused
// it ("has no reduction whose result has the kernel result's shape"). The
// per-output template now takes any result of the sum's element count.
// kfuse-fuzz: reduction-length 1024 least-precise bf16
// kfuse-fuzz: shapes 2x128x1024 1024x256 256 2x128x256
// RUN: kfuse-fuzz --replay %s
func.func @f(%arg0: tensor<2x128x1024xbf16> {kf.name = "in0"}, %arg1: tensor<1024x256xbf16> {kf.name = "in1"}, %arg2: tensor<256xbf16> {kf.name = "in2"}, %arg3: tensor<2x128x256xbf16> {kf.name = "in3"}) -> (tensor<2x128x256xbf16> {kf.name = "out0"}) {
  %0 = kf.reshape %arg0 : tensor<2x128x1024xbf16> -> tensor<256x1024xbf16>
  %1 = kf.matmul %0, %arg1 : tensor<256x1024xbf16>, tensor<1024x256xbf16> -> tensor<256x256xbf16>
  %2 = kf.broadcast %arg2 : tensor<256xbf16> -> tensor<256x256xbf16>
  %3 = kf.add %1, %2 : tensor<256x256xbf16>
  %4 = kf.reshape %3 : tensor<256x256xbf16> -> tensor<2x128x256xbf16>
  %5 = kf.add %arg3, %4 : tensor<2x128x256xbf16>
  return %5 : tensor<2x128x256xbf16>
}
