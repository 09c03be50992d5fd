// RUN: kfuse-opt %s -split-input-file --canonicalize --cse | FileCheck %s

// Integer values the analysis in ir/AffineValues.cpp proves constant fold
// to kf.constant; values it cannot prove stay.

// HuggingFace's packed-sequence term on position ids that are an arange:
// diff(positions) != 1 is false everywhere, so its running sum is 0, the
// sequence ids gathered per query and per key are 0, and the term
// "same sequence" is true everywhere: the mask is only causal.
// CHECK-LABEL: func.func @packed_sequences_of_an_arange
// CHECK-NOT: kf.cumsum
// CHECK-NOT: kf.gather
// CHECK: kf.attention %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} {causal = true
func.func @packed_sequences_of_an_arange(%q: tensor<2x4x16x8xf16>) -> tensor<2x4x16x8xf16> {
  %iota = kf.iota {dim = 0 : i64} : tensor<16xi64>
  %row = kf.reshape %iota : tensor<16xi64> -> tensor<1x16xi64>
  %pos = kf.broadcast %row : tensor<1x16xi64> -> tensor<2x16xi64>
  // diff with the first position minus one prepended
  %first = kf.slice %pos starts [0, 0] limits [9223372036854775807, 1] steps [1, 1] : tensor<2x16xi64> -> tensor<2x1xi64>
  %one = kf.constant dense<1> : tensor<i64>
  %ones1 = kf.broadcast %one : tensor<i64> -> tensor<2x1xi64>
  %dummy = kf.sub %first, %ones1 : tensor<2x1xi64>
  %cat = kf.concat %dummy, %pos {axis = 1 : i64} : tensor<2x1xi64>, tensor<2x16xi64> -> tensor<2x17xi64>
  %next = kf.slice %cat starts [0, 1] limits [9223372036854775807, 17] steps [1, 1] : tensor<2x17xi64> -> tensor<2x16xi64>
  %prev = kf.slice %cat starts [0, 0] limits [9223372036854775807, 16] steps [1, 1] : tensor<2x17xi64> -> tensor<2x16xi64>
  %diff = kf.sub %next, %prev : tensor<2x16xi64>
  %ones = kf.broadcast %one : tensor<i64> -> tensor<2x16xi64>
  %starts = kf.compare ne, %diff, %ones : tensor<2x16xi64>, tensor<2x16xi64> -> tensor<2x16xi1>
  %starts32 = kf.cast %starts : tensor<2x16xi1> -> tensor<2x16xi32>
  %seq32 = kf.cumsum %starts32[1] : tensor<2x16xi32> -> tensor<2x16xi32>
  %seq = kf.cast %seq32 : tensor<2x16xi32> -> tensor<2x16xi64>
  %flat = kf.reshape %seq : tensor<2x16xi64> -> tensor<32xi64>
  // ids[b, q] and ids[b, k] as gathers of the flattened ids at b * 16 + i
  %b = kf.iota {dim = 0 : i64} : tensor<2x1x16x1xi64>
  %qi = kf.iota {dim = 2 : i64} : tensor<2x1x16x1xi64>
  %sixteen = kf.constant dense<16> : tensor<i64>
  %s16 = kf.broadcast %sixteen : tensor<i64> -> tensor<2x1x16x1xi64>
  %base = kf.mul %b, %s16 : tensor<2x1x16x1xi64>
  %atq = kf.add %base, %qi : tensor<2x1x16x1xi64>
  %idq = kf.gather %flat[%atq] {axis = 0 : i64} : tensor<32xi64>, tensor<2x1x16x1xi64> -> tensor<2x1x16x1xi64>
  %bk = kf.iota {dim = 0 : i64} : tensor<2x1x1x16xi64>
  %ki = kf.iota {dim = 3 : i64} : tensor<2x1x1x16xi64>
  %k16 = kf.broadcast %sixteen : tensor<i64> -> tensor<2x1x1x16xi64>
  %kbase = kf.mul %bk, %k16 : tensor<2x1x1x16xi64>
  %atk = kf.add %kbase, %ki : tensor<2x1x1x16xi64>
  %idk = kf.gather %flat[%atk] {axis = 0 : i64} : tensor<32xi64>, tensor<2x1x1x16xi64> -> tensor<2x1x1x16xi64>
  %a = kf.broadcast %idq : tensor<2x1x16x1xi64> -> tensor<2x1x16x16xi64>
  %c = kf.broadcast %idk : tensor<2x1x1x16xi64> -> tensor<2x1x16x16xi64>
  %same = kf.compare eq, %a, %c : tensor<2x1x16x16xi64>, tensor<2x1x16x16xi64> -> tensor<2x1x16x16xi1>
  // causal: key <= query
  %kk = kf.iota {dim = 3 : i64} : tensor<1x1x16x16xi64>
  %qq = kf.iota {dim = 2 : i64} : tensor<1x1x16x16xi64>
  %causal = kf.compare le, %kk, %qq : tensor<1x1x16x16xi64>, tensor<1x1x16x16xi64> -> tensor<1x1x16x16xi1>
  %cb = kf.broadcast %causal : tensor<1x1x16x16xi1> -> tensor<2x1x16x16xi1>
  %m = kf.and %cb, %same : tensor<2x1x16x16xi1>
  %mask = kf.broadcast %m : tensor<2x1x16x16xi1> -> tensor<2x4x16x16xi1>
  %o = kf.attention %q, %q, %q mask %mask : tensor<2x4x16x16xi1> {scale = 0.125 : f64} : tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16> -> tensor<2x4x16x8xf16>
  return %o : tensor<2x4x16x8xf16>
}

// -----

// The same with position ids the caller passes: nothing is known of them,
// so the sequence ids stay.
// CHECK-LABEL: func.func @packed_sequences_of_an_argument
// CHECK: kf.cumsum
// CHECK: kf.attention %{{.*}}, %{{.*}}, %{{.*}} mask
func.func @packed_sequences_of_an_argument(%q: tensor<2x4x16x8xf16>, %pos: tensor<2x16xi64>) -> tensor<2x4x16x8xf16> {
  %first = kf.slice %pos starts [0, 0] limits [9223372036854775807, 1] steps [1, 1] : tensor<2x16xi64> -> tensor<2x1xi64>
  %one = kf.constant dense<1> : tensor<i64>
  %ones1 = kf.broadcast %one : tensor<i64> -> tensor<2x1xi64>
  %dummy = kf.sub %first, %ones1 : tensor<2x1xi64>
  %cat = kf.concat %dummy, %pos {axis = 1 : i64} : tensor<2x1xi64>, tensor<2x16xi64> -> tensor<2x17xi64>
  %next = kf.slice %cat starts [0, 1] limits [9223372036854775807, 17] steps [1, 1] : tensor<2x17xi64> -> tensor<2x16xi64>
  %prev = kf.slice %cat starts [0, 0] limits [9223372036854775807, 16] steps [1, 1] : tensor<2x17xi64> -> tensor<2x16xi64>
  %diff = kf.sub %next, %prev : tensor<2x16xi64>
  %ones = kf.broadcast %one : tensor<i64> -> tensor<2x16xi64>
  %starts = kf.compare ne, %diff, %ones : tensor<2x16xi64>, tensor<2x16xi64> -> tensor<2x16xi1>
  %starts32 = kf.cast %starts : tensor<2x16xi1> -> tensor<2x16xi32>
  %seq32 = kf.cumsum %starts32[1] : tensor<2x16xi32> -> tensor<2x16xi32>
  %r = kf.reshape %seq32 : tensor<2x16xi32> -> tensor<2x1x16x1xi32>
  %rk = kf.reshape %seq32 : tensor<2x16xi32> -> tensor<2x1x1x16xi32>
  %a = kf.broadcast %r : tensor<2x1x16x1xi32> -> tensor<2x1x16x16xi32>
  %c = kf.broadcast %rk : tensor<2x1x1x16xi32> -> tensor<2x1x16x16xi32>
  %same = kf.compare eq, %a, %c : tensor<2x1x16x16xi32>, tensor<2x1x16x16xi32> -> tensor<2x1x16x16xi1>
  %mask = kf.broadcast %same : tensor<2x1x16x16xi1> -> tensor<2x4x16x16xi1>
  %o = kf.attention %q, %q, %q mask %mask : tensor<2x4x16x16xi1> {scale = 0.125 : f64} : tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16> -> tensor<2x4x16x8xf16>
  return %o : tensor<2x4x16x8xf16>
}

// -----

// Comparisons decided over the whole range fold; one that is not stays.
// CHECK-LABEL: func.func @ranges
// CHECK-DAG: %[[F:.*]] = kf.constant dense<false> : tensor<16xi1>
// CHECK-DAG: %[[T:.*]] = kf.constant dense<true> : tensor<16xi1>
// CHECK-DAG: %[[HALF:.*]] = kf.compare lt, %{{.*}}, %{{.*}} : tensor<16xi64>, tensor<16xi64> -> tensor<16xi1>
// CHECK: return %[[F]], %[[T]], %[[HALF]]
func.func @ranges() -> (tensor<16xi1>, tensor<16xi1>, tensor<16xi1>) {
  %i = kf.iota {dim = 0 : i64} : tensor<16xi64>
  %zero = kf.constant dense<0> : tensor<i64>
  %z = kf.broadcast %zero : tensor<i64> -> tensor<16xi64>
  %n = kf.constant dense<16> : tensor<i64>
  %nn = kf.broadcast %n : tensor<i64> -> tensor<16xi64>
  %h = kf.constant dense<8> : tensor<i64>
  %hh = kf.broadcast %h : tensor<i64> -> tensor<16xi64>
  %negative = kf.compare lt, %i, %z : tensor<16xi64>, tensor<16xi64> -> tensor<16xi1>
  %inside = kf.compare lt, %i, %nn : tensor<16xi64>, tensor<16xi64> -> tensor<16xi1>
  %half = kf.compare lt, %i, %hh : tensor<16xi64>, tensor<16xi64> -> tensor<16xi1>
  return %negative, %inside, %half : tensor<16xi1>, tensor<16xi1>, tensor<16xi1>
}

// -----

// An i32 running sum that would wrap is no affine function: 2^20 summed
// over 4096 elements passes 2^31, so "sum >= 0" is not true everywhere.
// CHECK-LABEL: func.func @wrapping_cumsum
// CHECK: kf.cumsum
// CHECK: %[[GE:.*]] = kf.compare ge
// CHECK: return %[[GE]]
func.func @wrapping_cumsum() -> tensor<4096xi1> {
  %c = kf.constant dense<1048576> : tensor<i32>
  %b = kf.broadcast %c : tensor<i32> -> tensor<4096xi32>
  %s = kf.cumsum %b[0] : tensor<4096xi32> -> tensor<4096xi32>
  %zero = kf.constant dense<0> : tensor<i32>
  %z = kf.broadcast %zero : tensor<i32> -> tensor<4096xi32>
  %ge = kf.compare ge, %s, %z : tensor<4096xi32>, tensor<4096xi32> -> tensor<4096xi1>
  return %ge : tensor<4096xi1>
}

// -----

// A gather from a constant table is the constant where every index is in
// range; an index that may be out of range gives 0 there, so a table of
// 7 read at positions up to 19 stays a gather.
// CHECK-LABEL: func.func @gathers_of_constants
// CHECK-DAG: %[[SEVEN:.*]] = kf.constant dense<7> : tensor<16xi64>
// CHECK-DAG: %[[G:.*]] = kf.gather
// CHECK: return %[[SEVEN]], %[[G]]
func.func @gathers_of_constants() -> (tensor<16xi64>, tensor<16xi64>) {
  %c = kf.constant dense<7> : tensor<i64>
  %table = kf.broadcast %c : tensor<i64> -> tensor<16xi64>
  %i = kf.iota {dim = 0 : i64} : tensor<16xi64>
  %in = kf.gather %table[%i] {axis = 0 : i64} : tensor<16xi64>, tensor<16xi64> -> tensor<16xi64>
  %four = kf.constant dense<4> : tensor<i64>
  %f = kf.broadcast %four : tensor<i64> -> tensor<16xi64>
  %shifted = kf.add %i, %f : tensor<16xi64>
  %out = kf.gather %table[%shifted] {axis = 0 : i64} : tensor<16xi64>, tensor<16xi64> -> tensor<16xi64>
  return %in, %out : tensor<16xi64>, tensor<16xi64>
}

// -----

// Pieces concatenated that do not continue one another stay: [0..8) and
// [0..8) again is no affine function of the position.
// CHECK-LABEL: func.func @concat_that_restarts
// CHECK: kf.concat
// CHECK: %[[LT:.*]] = kf.compare lt
// CHECK: return %[[LT]]
func.func @concat_that_restarts() -> tensor<16xi1> {
  %i = kf.iota {dim = 0 : i64} : tensor<8xi64>
  %cat = kf.concat %i, %i {axis = 0 : i64} : tensor<8xi64>, tensor<8xi64> -> tensor<16xi64>
  %e = kf.constant dense<4> : tensor<i64>
  %ee = kf.broadcast %e : tensor<i64> -> tensor<16xi64>
  %lt = kf.compare lt, %cat, %ee : tensor<16xi64>, tensor<16xi64> -> tensor<16xi1>
  return %lt : tensor<16xi1>
}
