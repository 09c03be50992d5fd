// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @block_arguments(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kf.kernel' op block arguments must match the inputs: 0 arguments for 1 inputs}}
  %0 = kf.kernel pointwise(%x : tensor<4xf32>) {
    %c = kf.constant dense<1.0> : tensor<4xf32>
    kf.yield %c : tensor<4xf32>
  } -> (tensor<4xf32>)
  return
}

// -----

func.func @yield_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kf.kernel' op kf.yield gives 1 values that must match the 1 results' types}}
  %0 = kf.kernel pointwise(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    kf.yield %a : tensor<4xf32>
  } -> (tensor<5xf32>)
  return
}

// -----

func.func @bad_kind(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [pointwise, reduction, normalization, matmul, attention, attention_grad]}}
  %0 = kf.kernel tiling(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    kf.yield %a : tensor<4xf32>
  } -> (tensor<4xf32>)
  return
}
