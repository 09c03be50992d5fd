func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = builtin.unrealized_conversion_cast %x : tensor<4xf32> to tensor<4xf32>
  return %y : tensor<4xf32>
}
