// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

func.func @slice_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.slice' op slice [2:9] of dim 1 of 4x8 needs 0 <= start <= limit <= 8}}
  %0 = kf.slice %x starts [0, 2] limits [4, 9] steps [1, 1] : tensor<4x8xf32> -> tensor<4x7xf32>
  return
}

// -----

func.func @slice_negative_step(%x: tensor<8xf32>) {
  // expected-error @+1 {{'kf.slice' op step -1 of dim 0 of 8 must be >= 1 (negative steps are not supported)}}
  %0 = kf.slice %x starts [7] limits [0] steps [-1] : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @slice_symbolic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'kf.slice' op dim 0 of ? is symbolic: only a known dim can be sliced}}
  %0 = kf.slice %x starts [1] limits [9223372036854775807] steps [1] : tensor<?xf32> -> tensor<?xf32>
  return
}

// -----

func.func @slice_entries(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kf.slice' op starts [0], limits [4] and steps [1] need one entry per dim of 4x8}}
  %0 = kf.slice %x starts [0] limits [4] steps [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_result(%x: tensor<8xf32>) {
  // expected-error @+1 {{'kf.slice' op result is 'tensor<4xf32>' but the operands give the shape 3}}
  %0 = kf.slice %x starts [0] limits [8] steps [3] : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{'kf.concat' op operands differ in dim 0, which is not the axis 1: operand 1 is 4x3, operand 0 is 2x3}}
  %0 = kf.concat %a, %b {axis = 1} : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_dtype(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{'kf.concat' op result has dtype 'f32', expected 'f16'}}
  %0 = kf.concat %a, %b {axis = 0} : tensor<2xf32>, tensor<2xf16> -> tensor<4xf32>
  return
}

// -----

func.func @concat_symbolic_axis(%a: tensor<?xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'kf.concat' op the axis 0 of operand 0 (?) is symbolic: only known dims can be joined}}
  %0 = kf.concat %a, %b {axis = 0} : tensor<?xf32>, tensor<2xf32> -> tensor<?xf32>
  return
}

// -----

func.func @pad_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kf.pad' op padding -1, 0 of dim 0 of 4 must be >= 0 (crop with slice)}}
  %0 = kf.pad %x low [-1] high [0] value 0.0 : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @gather_index_dtype(%x: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'kf.gather' op indices must be i32 or i64, got 'tensor<3xf32>'}}
  %0 = kf.gather %x[%i] {axis = 0} : tensor<10x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<10x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{'kf.gather' op axis 2 is out of range for rank 2 of 'tensor<10x4xf32>'}}
  %0 = kf.gather %x[%i] {axis = 2} : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_result(%x: tensor<10x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{'kf.gather' op result is 'tensor<4x3xf32>' but the operands give the shape 3x4}}
  %0 = kf.gather %x[%i] {axis = 0} : tensor<10x4xf32>, tensor<3xi32> -> tensor<4x3xf32>
  return
}

// -----

func.func @take_dims(%x: tensor<8x50xf32>, %i: tensor<4x1xi32>) {
  // expected-error @+1 {{'kf.take_along_axis' op indices differ from the input in dim 0, which is not the axis 1: input is 8x50, indices are 4x1}}
  %0 = kf.take_along_axis %x[%i] {axis = 1} : tensor<8x50xf32>, tensor<4x1xi32> -> tensor<4x1xf32>
  return
}

// -----

func.func @random_seed(%seed: tensor<2xi32>) {
  // expected-error @+1 {{'kf.random' op seed must be a rank-0 i32 tensor, got 'tensor<2xi32>'}}
  %0 = kf.random %seed {stream = 0} : tensor<2xi32> -> tensor<4xf32>
  return
}

// -----

func.func @random_dtype(%seed: tensor<i32>) {
  // expected-error @+1 {{'kf.random' op result must be f32, f16 or bf16, got 'tensor<4xi32>'}}
  %0 = kf.random %seed {stream = 0} : tensor<i32> -> tensor<4xi32>
  return
}

// -----

func.func @logic_operands(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kf.and' op requires i1 operands, got 'tensor<4xi32>'}}
  %0 = kf.and %a, %a : tensor<4xi32>
  return
}

// -----

func.func @floor_int(%a: tensor<4xi64>) {
  // expected-error @+1 {{'kf.floor' op requires f32, f16 or bf16 operands, got 'tensor<4xi64>'}}
  %0 = kf.floor %a : tensor<4xi64>
  return
}

// -----

func.func @reduce_i64(%a: tensor<4xi64>) {
  // expected-error @+1 {{'kf.reduce' op sum does not take 'tensor<4xi64>'}}
  %0 = kf.reduce sum %a [0] : tensor<4xi64> -> tensor<i64>
  return
}

// -----

func.func @index_add_dtype(%u: tensor<3x4xbf16>, %i: tensor<3xi32>) {
  // expected-error @+1 {{'kf.index_add' op adds f32 updates into an f32 result (cast 16-bit ones first), got 'tensor<3x4xbf16>' -> 'tensor<10x4xbf16>'}}
  %0 = kf.index_add %u[%i] {axis = 0, size = 10} : tensor<3x4xbf16>, tensor<3xi32> -> tensor<10x4xbf16>
  return
}

// -----

func.func @index_add_index_dtype(%u: tensor<3x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'kf.index_add' op indices must be i32 or i64, got 'tensor<3xf32>'}}
  %0 = kf.index_add %u[%i] {axis = 0, size = 10} : tensor<3x4xf32>, tensor<3xf32> -> tensor<10x4xf32>
  return
}

// -----

func.func @index_add_dims(%u: tensor<3x4xf32>, %i: tensor<5xi32>) {
  // expected-error @+1 {{'kf.index_add' op updates dim 0 differs from indices dim 0: updates are 3x4, indices are 5}}
  %0 = kf.index_add %u[%i] {axis = 0, size = 10} : tensor<3x4xf32>, tensor<5xi32> -> tensor<10x4xf32>
  return
}

// -----

func.func @index_add_axis(%u: tensor<3x4xf32>, %i: tensor<4x2xi32>) {
  // expected-error @+1 {{'kf.index_add' op axis 1 leaves no room for the indices' dims: updates are 3x4, indices are 4x2}}
  %0 = kf.index_add %u[%i] {axis = 1, size = 10} : tensor<3x4xf32>, tensor<4x2xi32> -> tensor<3x10xf32>
  return
}

// -----

func.func @index_add_size(%u: tensor<3x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{'kf.index_add' op size 0 must be positive}}
  %0 = kf.index_add %u[%i] {axis = 0, size = 0} : tensor<3x4xf32>, tensor<3xi32> -> tensor<0x4xf32>
  return
}

// -----

func.func @index_add_result(%u: tensor<3x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{'kf.index_add' op result is 'tensor<10x5xf32>' but the operands give the shape 10x4}}
  %0 = kf.index_add %u[%i] {axis = 0, size = 10} : tensor<3x4xf32>, tensor<3xi32> -> tensor<10x5xf32>
  return
}
