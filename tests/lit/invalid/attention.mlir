// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @rank(%q: tensor<8x64xf16>, %k: tensor<1x1x8x64xf16>) {
  // expected-error @+1 {{'kf.attention' op q, k and v must be [batch, heads, seq, head_dim]: q is 8x64, k is 1x1x8x64, v is 1x1x8x64}}
  %0 = kf.attention %q, %k, %k {scale = 1.0 : f64} : tensor<8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return
}

// -----

func.func @batch(%q: tensor<2x4x8x64xf16>, %k: tensor<1x4x8x64xf16>) {
  // expected-error @+1 {{'kf.attention' op batch sizes differ: q is 2x4x8x64, k is 1x4x8x64, v is 1x4x8x64}}
  %0 = kf.attention %q, %k, %k {scale = 1.0 : f64} : tensor<2x4x8x64xf16>, tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16> -> tensor<2x4x8x64xf16>
  return
}

// -----

func.func @kv(%q: tensor<1x4x8x64xf16>, %k: tensor<1x4x8x64xf16>, %v: tensor<1x4x9x64xf16>) {
  // expected-error @+1 {{'kf.attention' op k and v differ in heads or sequence: q is 1x4x8x64, k is 1x4x8x64, v is 1x4x9x64}}
  %0 = kf.attention %q, %k, %v {scale = 1.0 : f64} : tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16>, tensor<1x4x9x64xf16> -> tensor<1x4x8x64xf16>
  return
}

// -----

func.func @head_dim(%q: tensor<1x4x8x64xf16>, %k: tensor<1x4x8x32xf16>) {
  // expected-error @+1 {{'kf.attention' op head dims of q and k differ: q is 1x4x8x64, k is 1x4x8x32, v is 1x4x8x32}}
  %0 = kf.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x4x8x64xf16>, tensor<1x4x8x32xf16>, tensor<1x4x8x32xf16> -> tensor<1x4x8x32xf16>
  return
}

// -----

func.func @gqa(%q: tensor<1x6x8x64xf16>, %k: tensor<1x4x8x64xf16>) {
  // expected-error @+1 {{'kf.attention' op query heads must be a multiple of key/value heads: q is 1x6x8x64, k is 1x4x8x64, v is 1x4x8x64}}
  %0 = kf.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x6x8x64xf16>, tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16> -> tensor<1x6x8x64xf16>
  return
}

// -----

func.func @mask_dtype(%q: tensor<1x1x8x64xf16>, %m: tensor<1x1x8x8xf16>) {
  // expected-error @+1 {{'kf.attention' op mask must be i1, got 'tensor<1x1x8x8xf16>'}}
  %0 = kf.attention %q, %q, %q mask %m : tensor<1x1x8x8xf16> {scale = 1.0 : f64} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return
}

// -----

func.func @mask_shape(%q: tensor<1x1x8x64xf16>, %m: tensor<1x1x8x9xi1>) {
  // expected-error @+1 {{'kf.attention' op mask is 1x1x8x9 but the scores are 1x1x8x8}}
  %0 = kf.attention %q, %q, %q mask %m : tensor<1x1x8x9xi1> {scale = 1.0 : f64} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return
}

// -----

func.func @bias_dtype(%q: tensor<1x1x8x64xf16>, %b: tensor<1x1x8x8xi32>) {
  // expected-error @+1 {{'kf.attention' op bias must be a float tensor, got 'tensor<1x1x8x8xi32>'}}
  %0 = kf.attention %q, %q, %q bias %b : tensor<1x1x8x8xi32> {scale = 1.0 : f64} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return
}

// -----

func.func @dtypes(%q: tensor<1x1x8x64xf16>, %k: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{'kf.attention' op operands must share one float dtype, got tensor<1x1x8x64xf16> and tensor<1x1x8x64xbf16>}}
  %0 = kf.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xf16>
  return
}

// -----

func.func @result(%q: tensor<1x1x8x64xf16>, %v: tensor<1x1x8x32xf16>) {
  // expected-error @+1 {{'kf.attention' op result is 'tensor<1x1x8x64xf16>' but the operands give the shape 1x1x8x32}}
  %0 = kf.attention %q, %q, %v {scale = 1.0 : f64} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x32xf16> -> tensor<1x1x8x64xf16>
  return
}

// -----

func.func @lse_dtype(%q: tensor<1x1x8x64xf16>) {
  // expected-error @+1 {{'kf.attention' op lse must be f32, got 'tensor<1x1x8xf16>'}}
  %0, %1 = kf.attention %q, %q, %q {scale = 1.0 : f64} : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>, tensor<1x1x8xf16>
  return
}

// -----

func.func @lse_shape(%q: tensor<1x2x8x64xf16>) {
  // expected-error @+1 {{'kf.attention' op lse is 'tensor<1x2x64xf32>' but the query rows are 1x2x8}}
  %0, %1 = kf.attention %q, %q, %q {scale = 1.0 : f64} : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x8x64xf16>, tensor<1x2x64xf32>
  return
}
