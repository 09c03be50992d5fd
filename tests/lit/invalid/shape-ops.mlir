// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_dim(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'kf.broadcast' op cannot broadcast 3x4 to 2x5x4: input dim 0 is 3, not 1 or 5}}
  %0 = kf.broadcast %a : tensor<3x4xf32> -> tensor<2x5x4xf32>
  return
}

// -----

func.func @broadcast_rank(%a: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'kf.broadcast' op cannot broadcast 2x3x4 to 3x4: the input has more dims}}
  %0 = kf.broadcast %a : tensor<2x3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @broadcast_dtype(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.broadcast' op result has dtype 'bf16', expected 'f32'}}
  %0 = kf.broadcast %a : tensor<4xf32> -> tensor<2x4xbf16>
  return
}

// -----

func.func @broadcast_missing_symbols(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.broadcast' op result 'tensor<?x4xf32>' has symbolic dims but no dim_symbols}}
  %0 = kf.broadcast %a : tensor<4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @broadcast_symbol_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.broadcast' op dim_symbols has 1 entries for the rank-2 result 'tensor<?x4xf32>'}}
  %0 = kf.broadcast %a {dim_symbols = ["M"]} : tensor<4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @broadcast_symbol_place(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.broadcast' op dim_symbols entry 1 ('N') must name a symbol exactly where 'tensor<?x4xf32>' has a '?'}}
  %0 = kf.broadcast %a {dim_symbols = ["M", "N"]} : tensor<4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{'kf.reshape' op cannot reshape 4x6 (24 elements) to 5x5 (25 elements)}}
  %0 = kf.reshape %a : tensor<4x6xf32> -> tensor<5x5xf32>
  return
}

// -----

func.func @reshape_dtype(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.reshape' op result has dtype 'i32', expected 'f32'}}
  %0 = kf.reshape %a : tensor<4xf32> -> tensor<2x2xi32>
  return
}

// -----

func.func @transpose_length(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'kf.transpose' op permutation [0] has 1 entries but the input 2x3 has rank 2}}
  %0 = kf.transpose %a [0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_not_permutation(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'kf.transpose' op permutation [0, 0] is not a permutation of the dims of 2x3}}
  %0 = kf.transpose %a [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_result(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'kf.transpose' op result is 'tensor<2x3xf32>' but the operands give the shape 3x2}}
  %0 = kf.transpose %a [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_dtype(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'kf.transpose' op result has dtype 'f16', expected 'f32'}}
  %0 = kf.transpose %a [1, 0] : tensor<2x3xf32> -> tensor<3x2xf16>
  return
}

// -----

func.func @iota_dim() {
  // expected-error @+1 {{'kf.iota' op axis 2 is out of range for rank 2 of 'tensor<4x8xi32>'}}
  %0 = kf.iota {dim = 2} : tensor<4x8xi32>
  return
}

// -----

func.func @iota_dtype() {
  // expected-error @+1 {{'kf.iota' op result must be numeric, got 'tensor<4xi1>'}}
  %0 = kf.iota {dim = 0} : tensor<4xi1>
  return
}
