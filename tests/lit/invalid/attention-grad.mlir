// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @dout_shape(%q: tensor<1x4x8x64xf16>, %k: tensor<1x2x16x64xf16>, %do: tensor<1x4x16x64xf16>,
                      %s: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'kf.attention_grad' op dout is 'tensor<1x4x16x64xf16>' but must be 1x4x8x64}}
  %0:3 = kf.attention_grad %q, %k, %k, %do, %s, %s {scale = 1.0 : f64}
      : tensor<1x4x8x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x4x16x64xf16>,
        tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x8x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
  return
}

// -----

func.func @lse_dtype(%q: tensor<1x4x8x64xf16>, %k: tensor<1x2x16x64xf16>, %s: tensor<1x4x8xf16>,
                     %delta: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'kf.attention_grad' op lse must be f32, got 'tensor<1x4x8xf16>'}}
  %0:3 = kf.attention_grad %q, %k, %k, %q, %s, %delta {scale = 1.0 : f64}
      : tensor<1x4x8x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x4x8x64xf16>,
        tensor<1x4x8xf16>, tensor<1x4x8xf32> -> tensor<1x4x8x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
  return
}

// -----

func.func @delta_rows(%q: tensor<1x4x8x64xf16>, %k: tensor<1x2x16x64xf16>, %s: tensor<1x4x8xf32>,
                      %delta: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'kf.attention_grad' op delta is 'tensor<1x4x16xf32>' but must be 1x4x8}}
  %0:3 = kf.attention_grad %q, %k, %k, %q, %s, %delta {scale = 1.0 : f64}
      : tensor<1x4x8x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x4x8x64xf16>,
        tensor<1x4x8xf32>, tensor<1x4x16xf32> -> tensor<1x4x8x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
  return
}

// -----

func.func @dk_shape(%q: tensor<1x4x8x64xf16>, %k: tensor<1x2x16x64xf16>, %s: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'kf.attention_grad' op dk is 'tensor<1x4x16x64xf32>' but must be 1x2x16x64}}
  %0:3 = kf.attention_grad %q, %k, %k, %q, %s, %s {scale = 1.0 : f64}
      : tensor<1x4x8x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x4x8x64xf16>,
        tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x8x64xf32>, tensor<1x4x16x64xf32>, tensor<1x2x16x64xf32>
  return
}

// -----

func.func @mixed_dtypes(%q: tensor<1x4x8x64xf16>, %k: tensor<1x2x16x64xbf16>, %s: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'kf.attention_grad' op operands must share one float dtype}}
  %0:3 = kf.attention_grad %q, %k, %k, %q, %s, %s {scale = 1.0 : f64}
      : tensor<1x4x8x64xf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x4x8x64xf16>,
        tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x8x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>
  return
}
