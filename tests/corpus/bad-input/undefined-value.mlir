// ERROR: undefined-value.mlir:3:15 | undeclared SSA value
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kf.exp %y : tensor<4xf32>
  return %0 : tensor<4xf32>
}
