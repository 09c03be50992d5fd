// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @shapes_differ(%a: tensor<4x8xf32>, %b: tensor<4x9xf32>) {
  // expected-error @+1 {{'kf.add' op operands and result must have one shape and dtype: lhs is 'tensor<4x8xf32>', rhs is 'tensor<4x9xf32>', result is 'tensor<4x8xf32>'}}
  %0 = kf.add %a, %b : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dtypes_differ(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'kf.mul' op operands and result must have one shape and dtype: lhs is 'tensor<4xf32>', rhs is 'tensor<4xbf16>'}}
  %0 = kf.mul %a, %b : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @unary_result_differs(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.exp' op operands and result must have one shape and dtype: input is 'tensor<4xf32>', result is 'tensor<5xf32>'}}
  %0 = kf.exp %a : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @float_only(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kf.exp' op requires f32, f16 or bf16 operands, got 'tensor<4xi32>'}}
  %0 = kf.exp %a : tensor<4xi32>
  return
}

// -----

func.func @pow_float_only(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kf.pow' op requires f32, f16 or bf16 operands, got 'tensor<4xi32>'}}
  %0 = kf.pow %a, %a : tensor<4xi32>
  return
}

// -----

func.func @numeric_only(%a: tensor<4xi1>) {
  // expected-error @+1 {{'kf.add' op requires f32, f16, bf16, i32 or i64 operands, got 'tensor<4xi1>'}}
  %0 = kf.add %a, %a : tensor<4xi1>
  return
}

// -----

func.func @unsupported_dtype(%a: tensor<4xf64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer or 1-bit signless integer values}}
  %0 = kf.neg %a : tensor<4xf64>
  return
}

// -----

func.func @stop_gradient_changes_dtype(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.stop_gradient' op operands and result must have one shape and dtype: input is 'tensor<4xf32>', result is 'tensor<4xbf16>'}}
  %0 = kf.stop_gradient %a : (tensor<4xf32>) -> tensor<4xbf16>
  return
}
