// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @arg_reduce_sum(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.arg_reduce' op kind must be max or min, got sum}}
  %0 = kf.arg_reduce sum %x[1] : tensor<4x8xf32> -> tensor<4xi64>
  return
}

// -----

func.func @arg_reduce_i64(%x: tensor<4x8xi64>) {
  // expected-error @+1 {{'kf.arg_reduce' op arg_reduce takes floats or i32, got 'tensor<4x8xi64>'}}
  %0 = kf.arg_reduce max %x[1] : tensor<4x8xi64> -> tensor<4xi64>
  return
}

// -----

func.func @arg_reduce_result_dtype(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.arg_reduce' op result has dtype 'i32', expected 'i64'}}
  %0 = kf.arg_reduce max %x[1] : tensor<4x8xf32> -> tensor<4xi32>
  return
}

// -----

func.func @arg_reduce_empty(%x: tensor<4x0xf32>) {
  // expected-error @+1 {{'kf.arg_reduce' op axis 1 of 'tensor<4x0xf32>' is empty: no position to return}}
  %0 = kf.arg_reduce max %x[1] : tensor<4x0xf32> -> tensor<4xi64>
  return
}

// -----

func.func @arg_reduce_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.arg_reduce' op result is 'tensor<8xi64>' but the operands give the shape 4}}
  %0 = kf.arg_reduce max %x[1] : tensor<4x8xf32> -> tensor<8xi64>
  return
}

// -----

func.func @cumsum_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.cumsum' op axis 2 is out of range for 'tensor<4x8xf32>'}}
  %0 = kf.cumsum %x[2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @cumsum_bool(%x: tensor<4x8xi1>) {
  // expected-error @+1 {{'kf.cumsum' op cumsum takes floats or i32, got 'tensor<4x8xi1>'}}
  %0 = kf.cumsum %x[1] : tensor<4x8xi1> -> tensor<4x8xi1>
  return
}
