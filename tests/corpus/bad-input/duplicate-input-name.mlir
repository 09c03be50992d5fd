// ERROR: duplicate-input-name.mlir:2:1 | input name 'x' is given twice
func.func @f(%x: tensor<4xf32> {kf.name = "x"}, %y: tensor<4xf32> {kf.name = "x"}) -> tensor<4xf32> {
  %0 = kf.add %x, %y : tensor<4xf32>
  return %0 : tensor<4xf32>
}
