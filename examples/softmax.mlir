// Row softmax written from primitives; kfuse fuses it into one kernel that
// keeps each row on chip. M is symbolic: bound at run time.
func.func @softmax(%x: tensor<?x1024xf32> {kf.name = "x", kf.dim_symbols = ["M", ""]})
    -> (tensor<?x1024xf32> {kf.name = "y"}) {
  %max = kf.reduce max %x [1] {keep_dims = true} : tensor<?x1024xf32> -> tensor<?x1xf32>
  %maxb = kf.broadcast %max {dim_symbols = ["M", ""]} : tensor<?x1xf32> -> tensor<?x1024xf32>
  %shifted = kf.sub %x, %maxb : tensor<?x1024xf32>
  %e = kf.exp %shifted : tensor<?x1024xf32>
  %sum = kf.reduce sum %e [1] {keep_dims = true} : tensor<?x1024xf32> -> tensor<?x1xf32>
  %sumb = kf.broadcast %sum {dim_symbols = ["M", ""]} : tensor<?x1xf32> -> tensor<?x1024xf32>
  %y = kf.div %e, %sumb : tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
