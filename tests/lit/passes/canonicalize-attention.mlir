// RUN: kfuse-opt %s -split-input-file --canonicalize --cse | FileCheck %s

// kf.attention's canonical forms (ir/AttentionPatterns.cpp): a mask term
// that is true exactly where key <= query becomes `causal`, all-true terms
// go, other terms stay the mask; keys and values repeated per query head
// are read as their kv heads.

// HuggingFace's mask: positions compared under broadcasts and reshapes,
// and-ed with an all-true padding term and with same-sequence ids.
// CHECK-LABEL: func.func @positions_and_ids
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf16>, %[[IDQ:.*]]: tensor<2x1x16x1xi64>, %[[IDK:.*]]: tensor<2x1x1x16xi64>)
// CHECK-NOT: kf.iota
// CHECK: %[[A:.*]] = kf.broadcast %[[IDQ]] : tensor<2x1x16x1xi64> -> tensor<2x1x16x16xi64>
// CHECK: %[[B:.*]] = kf.broadcast %[[IDK]] : tensor<2x1x1x16xi64> -> tensor<2x1x16x16xi64>
// CHECK: %[[SAME:.*]] = kf.compare eq, %[[A]], %[[B]]
// CHECK: %[[M:.*]] = kf.broadcast %[[SAME]] : tensor<2x1x16x16xi1> -> tensor<2x4x16x16xi1>
// CHECK: kf.attention %[[Q]], %[[Q]], %[[Q]] mask %[[M]] : tensor<2x4x16x16xi1> {causal = true
func.func @positions_and_ids(%q: tensor<2x4x16x8xf16>, %idq: tensor<2x1x16x1xi64>, %idk: tensor<2x1x1x16xi64>) -> tensor<2x4x16x8xf16> {
  %iq = kf.iota {dim = 0 : i64} : tensor<16xi64>
  %zero = kf.constant dense<0> : tensor<i64>
  %z = kf.broadcast %zero : tensor<i64> -> tensor<16xi64>
  %pos = kf.add %iq, %z : tensor<16xi64>
  %ik = kf.iota {dim = 0 : i64} : tensor<16xi64>
  %rq = kf.reshape %pos : tensor<16xi64> -> tensor<1x1x16x1xi64>
  %rk = kf.reshape %ik : tensor<16xi64> -> tensor<1x1x1x16xi64>
  %bk = kf.broadcast %rk : tensor<1x1x1x16xi64> -> tensor<1x1x16x16xi64>
  %bq = kf.broadcast %rq : tensor<1x1x16x1xi64> -> tensor<1x1x16x16xi64>
  %causal = kf.compare le, %bk, %bq : tensor<1x1x16x16xi64>, tensor<1x1x16x16xi64> -> tensor<1x1x16x16xi1>
  %true = kf.constant dense<true> : tensor<i1>
  %t = kf.broadcast %true : tensor<i1> -> tensor<1x1x16x16xi1>
  %m0 = kf.and %t, %causal : tensor<1x1x16x16xi1>
  %a = kf.broadcast %idq : tensor<2x1x16x1xi64> -> tensor<2x1x16x16xi64>
  %b = kf.broadcast %idk : tensor<2x1x1x16xi64> -> tensor<2x1x16x16xi64>
  %same = kf.compare eq, %a, %b : tensor<2x1x16x16xi64>, tensor<2x1x16x16xi64> -> tensor<2x1x16x16xi1>
  %m0b = kf.broadcast %m0 : tensor<1x1x16x16xi1> -> tensor<2x1x16x16xi1>
  %m1 = kf.and %m0b, %same : tensor<2x1x16x16xi1>
  %mask = kf.broadcast %m1 : tensor<2x1x16x16xi1> -> tensor<2x4x16x16xi1>
  %o = kf.attention %q, %q, %q mask %mask : tensor<2x4x16x16xi1> {scale = 0.125 : f64} : tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16> -> tensor<2x4x16x8xf16>
  return %o : tensor<2x4x16x8xf16>
}

// -----

// query >= key, and key < query + 1 through an i32 cast: causal, no mask.
// CHECK-LABEL: func.func @causal_spellings
// CHECK-NOT: mask
// CHECK: kf.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true
// CHECK-NOT: mask
// CHECK: kf.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true
// CHECK-NOT: mask
func.func @causal_spellings(%q: tensor<1x2x8x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %rows = kf.iota {dim = 2 : i64} : tensor<1x2x8x8xi64>
  %cols = kf.iota {dim = 3 : i64} : tensor<1x2x8x8xi64>
  %ge = kf.compare ge, %rows, %cols : tensor<1x2x8x8xi64>, tensor<1x2x8x8xi64> -> tensor<1x2x8x8xi1>
  %o1 = kf.attention %q, %q, %q mask %ge : tensor<1x2x8x8xi1> {scale = 0.5 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %one = kf.constant dense<1> : tensor<i64>
  %ones = kf.broadcast %one : tensor<i64> -> tensor<1x2x8x8xi64>
  %next = kf.add %rows, %ones : tensor<1x2x8x8xi64>
  %next32 = kf.cast %next : tensor<1x2x8x8xi64> -> tensor<1x2x8x8xi32>
  %cols32 = kf.cast %cols : tensor<1x2x8x8xi64> -> tensor<1x2x8x8xi32>
  %lt = kf.compare lt, %cols32, %next32 : tensor<1x2x8x8xi32>, tensor<1x2x8x8xi32> -> tensor<1x2x8x8xi1>
  %o2 = kf.attention %q, %q, %q mask %lt : tensor<1x2x8x8xi1> {scale = 0.25 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %o1, %o2 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// Not causal: key <= query + 2 (bottom-right alignment of a longer key
// sequence), key < query, and positions along the wrong axes stay masks.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: causal = true
func.func @not_causal(%q: tensor<1x2x8x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %rows = kf.iota {dim = 2 : i64} : tensor<1x2x8x8xi64>
  %cols = kf.iota {dim = 3 : i64} : tensor<1x2x8x8xi64>
  %heads = kf.iota {dim = 1 : i64} : tensor<1x2x8x8xi64>
  %two = kf.constant dense<2> : tensor<i64>
  %twos = kf.broadcast %two : tensor<i64> -> tensor<1x2x8x8xi64>
  %shifted = kf.add %rows, %twos : tensor<1x2x8x8xi64>
  %m1 = kf.compare le, %cols, %shifted : tensor<1x2x8x8xi64>, tensor<1x2x8x8xi64> -> tensor<1x2x8x8xi1>
  %o1 = kf.attention %q, %q, %q mask %m1 : tensor<1x2x8x8xi1> {scale = 0.5 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %m2 = kf.compare lt, %cols, %rows : tensor<1x2x8x8xi64>, tensor<1x2x8x8xi64> -> tensor<1x2x8x8xi1>
  %o2 = kf.attention %q, %q, %q mask %m2 : tensor<1x2x8x8xi1> {scale = 0.5 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  %m3 = kf.compare le, %heads, %rows : tensor<1x2x8x8xi64>, tensor<1x2x8x8xi64> -> tensor<1x2x8x8xi1>
  %o3 = kf.attention %q, %q, %q mask %m3 : tensor<1x2x8x8xi1> {scale = 0.5 : f64} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %o1, %o2, %o3 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// repeat_kv: keys and values of 2 kv heads repeated for 4 query heads.
// CHECK-LABEL: func.func @repeated_kv
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x8x4xf16>, %[[K:.*]]: tensor<1x2x8x4xf16>, %[[V:.*]]: tensor<1x2x8x4xf16>)
// CHECK: kf.attention %[[Q]], %[[K]], %[[V]] {{.*}} : tensor<1x4x8x4xf16>, tensor<1x2x8x4xf16>, tensor<1x2x8x4xf16>
// Only the keys repeated: no grouped read of both.
// CHECK: kf.attention %[[Q]], %{{.*}}, %{{.*}} {{.*}} : tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16>
func.func @repeated_kv(%q: tensor<1x4x8x4xf16>, %k: tensor<1x2x8x4xf16>, %v: tensor<1x2x8x4xf16>) -> (tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16>) {
  %k1 = kf.reshape %k : tensor<1x2x8x4xf16> -> tensor<1x2x1x8x4xf16>
  %k2 = kf.broadcast %k1 : tensor<1x2x1x8x4xf16> -> tensor<1x2x2x8x4xf16>
  %kr = kf.reshape %k2 : tensor<1x2x2x8x4xf16> -> tensor<1x4x8x4xf16>
  %v1 = kf.reshape %v : tensor<1x2x8x4xf16> -> tensor<1x2x1x8x4xf16>
  %v2 = kf.broadcast %v1 : tensor<1x2x1x8x4xf16> -> tensor<1x2x2x8x4xf16>
  %vr = kf.reshape %v2 : tensor<1x2x2x8x4xf16> -> tensor<1x4x8x4xf16>
  %o1 = kf.attention %q, %kr, %vr {scale = 0.5 : f64} : tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16> -> tensor<1x4x8x4xf16>
  %o2 = kf.attention %q, %kr, %q {scale = 0.5 : f64} : tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16> -> tensor<1x4x8x4xf16>
  return %o1, %o2 : tensor<1x4x8x4xf16>, tensor<1x4x8x4xf16>
}

// -----

// An attention asked for again with its log-sum-exp (as a backward pass
// does) is one attention, where the first stood; one of other operands or
// another scale stays apart.
// CHECK-LABEL: func.func @asked_again_with_lse
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x8x16xbf16>, %[[K:.*]]: tensor<1x2x8x16xbf16>)
// CHECK: %[[O:.*]], %[[LSE:.*]] = kf.attention %[[Q]], %[[K]], %[[K]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NEXT: kf.neg %[[O]]
// CHECK-NEXT: kf.attention %[[Q]], %[[K]], %[[K]] {scale = 2.500000e-01 : f64}
// CHECK-NEXT: kf.attention %[[Q]], %[[K]], %[[K]] {causal = true, scale = 5.000000e-01 : f64}
// CHECK-NOT: kf.attention
// CHECK: return %{{.*}}, %[[LSE]]
func.func @asked_again_with_lse(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>)
    -> (tensor<1x2x8x16xbf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) {
  %o = kf.attention %q, %k, %k {causal = true, scale = 0.25 : f64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>
  %n = kf.neg %o : tensor<1x2x8x16xbf16>
  %other = kf.attention %q, %k, %k {scale = 0.25 : f64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>
  %scaled = kf.attention %q, %k, %k {causal = true, scale = 0.5 : f64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>
  %o2, %lse = kf.attention %q, %k, %k {causal = true, scale = 0.25 : f64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>, tensor<1x2x8xf32>
  %sum = kf.add %other, %scaled : tensor<1x2x8x16xbf16>
  %sum2 = kf.add %sum, %o2 : tensor<1x2x8x16xbf16>
  return %n, %lse, %sum2, %o : tensor<1x2x8x16xbf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>
}
