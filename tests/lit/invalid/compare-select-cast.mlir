// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @compare_operands(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'kf.compare' op operands must have one shape and dtype: lhs is 'tensor<4xf32>', rhs is 'tensor<4xf16>'}}
  %0 = kf.compare lt, %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xi1>
  return
}

// -----

func.func @compare_i1_order(%a: tensor<4xi1>) {
  // expected-error @+1 {{'kf.compare' op i1 operands allow only eq and ne, got lt}}
  %0 = kf.compare lt, %a, %a : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return
}

// -----

func.func @compare_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.compare' op result must be i1 of the operands' shape: operands are 'tensor<4xf32>', result is 'tensor<4xf32>'}}
  %0 = kf.compare eq, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @select_condition(%c: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.select' op condition must be i1, got 'tensor<4xi32>'}}
  %0 = kf.select %c, %a, %a : tensor<4xi32>, tensor<4xf32>
  return
}

// -----

func.func @select_shapes(%c: tensor<5xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.select' op operands must have one shape (and both branches one dtype): cond is 'tensor<5xi1>', on_true is 'tensor<4xf32>', on_false is 'tensor<4xf32>', result is 'tensor<4xf32>'}}
  %0 = kf.select %c, %a, %a : tensor<5xi1>, tensor<4xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kf.cast' op cast keeps the shape: input is 'tensor<4xf32>', result is 'tensor<5xbf16>'}}
  %0 = kf.cast %a : tensor<4xf32> -> tensor<5xbf16>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{'kf.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "kf.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return
}
