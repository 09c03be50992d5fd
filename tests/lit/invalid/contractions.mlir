// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @reduce_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'kf.reduce' op sum does not take 'tensor<4xi1>'}}
  %0 = kf.reduce sum %a [0] : tensor<4xi1> -> tensor<i1>
  return
}

// -----

func.func @reduce_mean_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kf.reduce' op mean does not take 'tensor<4xi32>'}}
  %0 = kf.reduce mean %a [0] : tensor<4xi32> -> tensor<i32>
  return
}

// -----

func.func @reduce_no_axes(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.reduce' op no axes to reduce over 4}}
  %0 = kf.reduce sum %a [] : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis_range(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'kf.reduce' op axis 2 is out of range for rank 2}}
  %0 = kf.reduce sum %a [2] : tensor<4x5xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis_order(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'kf.reduce' op reduction axes must be distinct and ascending}}
  %0 = kf.reduce sum %a [1, 0] : tensor<4x5xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_result(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'kf.reduce' op result is 'tensor<5xf32>' but the operands give the shape 4}}
  %0 = kf.reduce max %a [1] : tensor<4x5xf32> -> tensor<5xf32>
  return
}

// -----

func.func @reduce_dtype(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'kf.reduce' op result has dtype 'bf16', expected 'f32'}}
  %0 = kf.reduce max %a [1] : tensor<4x5xf32> -> tensor<4xbf16>
  return
}

// -----

func.func @matmul_inner(%a: tensor<64x128xbf16>, %b: tensor<256x32xbf16>) {
  // expected-error @+1 {{'kf.matmul' op inner dimensions differ: a is 64x128, b is 256x32}}
  %0 = kf.matmul %a, %b : tensor<64x128xbf16>, tensor<256x32xbf16> -> tensor<64x32xbf16>
  return
}

// -----

func.func @matmul_inner_transposed(%a: tensor<64x128xbf16>, %b: tensor<32x256xbf16>) {
  // expected-error @+1 {{'kf.matmul' op inner dimensions differ: a is 64x128, b is 32x256 (transposed)}}
  %0 = kf.matmul %a, %b {transpose_b = true} : tensor<64x128xbf16>, tensor<32x256xbf16> -> tensor<64x32xbf16>
  return
}

// -----

func.func @matmul_rank(%a: tensor<64xbf16>, %b: tensor<64x32xbf16>) {
  // expected-error @+1 {{'kf.matmul' op operands must have rank >= 2: a is 64, b is 64x32}}
  %0 = kf.matmul %a, %b : tensor<64xbf16>, tensor<64x32xbf16> -> tensor<32xbf16>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf16>, %b: tensor<3x8x4xf16>) {
  // expected-error @+1 {{'kf.matmul' op batch dims differ: a is 2x4x8, b is 3x8x4}}
  %0 = kf.matmul %a, %b : tensor<2x4x8xf16>, tensor<3x8x4xf16> -> tensor<2x4x4xf16>
  return
}

// -----

func.func @matmul_batch_rank(%a: tensor<2x4x8xf16>, %b: tensor<1x2x8x4xf16>) {
  // expected-error @+1 {{'kf.matmul' op batch dims differ: a is 2x4x8, b is 1x2x8x4 (b must be rank 2 or of a's rank)}}
  %0 = kf.matmul %a, %b : tensor<2x4x8xf16>, tensor<1x2x8x4xf16> -> tensor<2x4x4xf16>
  return
}

// -----

func.func @matmul_dtypes(%a: tensor<4x8xf16>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{'kf.matmul' op operands must share one float dtype, got tensor<4x8xf16> and tensor<8x4xbf16>}}
  %0 = kf.matmul %a, %b : tensor<4x8xf16>, tensor<8x4xbf16> -> tensor<4x4xf16>
  return
}

// -----

func.func @matmul_result_dtype(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{'kf.matmul' op result dtype 'f16' must be 'bf16' or f32}}
  %0 = kf.matmul %a, %b : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xf16>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{'kf.matmul' op result is 'tensor<4x8xbf16>' but the operands give the shape 4x4}}
  %0 = kf.matmul %a, %b : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x8xbf16>
  return
}

// -----

func.func @softmax_int(%a: tensor<4x8xi32>) {
  // expected-error @+1 {{'kf.softmax' op requires a float operand, got 'tensor<4x8xi32>'}}
  %0 = kf.softmax %a {axis = 1} : tensor<4x8xi32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.softmax' op axis 2 is out of range for rank 2 of 'tensor<4x8xf32>'}}
  %0 = kf.softmax %a {axis = 2} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_result(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.softmax' op result 'tensor<4x8xf16>' must match the input 'tensor<4x8xf32>'}}
  %0 = kf.softmax %a {axis = 1} : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return
}

// -----

func.func @split_k_zero(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{'kf.matmul' op k_chunk must be positive and K non-empty, got 0 for K = 8}}
  %0 = kf.matmul %a, %b {k_chunk = 0 : i64} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<1x4x4xf32>
  return
}

// -----

func.func @split_k_not_f32(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{'kf.matmul' op split-K partial sums are f32, got 'tensor<2x4x4xbf16>'}}
  %0 = kf.matmul %a, %b {k_chunk = 4 : i64} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<2x4x4xbf16>
  return
}

// -----

func.func @split_k_count(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{'kf.matmul' op}}
  %0 = kf.matmul %a, %b {k_chunk = 3 : i64} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<2x4x4xf32>
  return
}
