func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kf.exp %x : tensor<4xf32>
  return %y : tens
