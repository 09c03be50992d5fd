// Found by kfuse-fuzz --cpu --seed 9700183 (crash in kf-tile): a row
// kernel whose input is also yielded through a reshape. Deciding which
// inputs a row streams asked the reshape's one user, the kernel's yield,
// for a result it does not have.
// RUN: kfuse-fuzz --replay %s
func.func @row_input_yielded_through_reshape(%x: tensor<31x31xbf16> {kf.name = "in0"}) -> (tensor<31x31xbf16> {kf.name = "out0"}, tensor<961xbf16> {kf.name = "out1"}) {
  %0 = kf.reshape %x : tensor<31x31xbf16> -> tensor<961xbf16>
  %1 = kf.reduce min %x [1] {keep_dims = true} : tensor<31x31xbf16> -> tensor<31x1xbf16>
  %2 = kf.broadcast %1 : tensor<31x1xbf16> -> tensor<31x31xbf16>
  %3 = kf.sub %x, %2 : tensor<31x31xbf16>
  return %3, %0 : tensor<31x31xbf16>, tensor<961xbf16>
}
