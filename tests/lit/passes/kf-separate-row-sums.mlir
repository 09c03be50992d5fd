// RUN: kfuse-opt %s -split-input-file --kf-separate-row-sums | FileCheck %s

// A LayerNorm backward's chain: the second sum's input is a sum of terms,
// one of them a row scalar computed from the first sum times a value that
// needs no sum. It becomes the sums of the terms' values, which need no
// sum, combined per row.
// CHECK-LABEL: func.func @layernorm_chain
// CHECK-SAME: (%[[G:.*]]: tensor<8x256xf32>, %[[Z:.*]]: tensor<8x256xf32>)
// CHECK: %[[S1:.*]] = kf.reduce sum %{{.*}} [1] {keep_dims = true}
// CHECK: %[[F:.*]] = kf.mul %[[S1]], %{{.*}} : tensor<8x1xf32>
// CHECK: %[[RG:.*]] = kf.reduce sum %[[G]] [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
// CHECK: %[[RZ:.*]] = kf.reduce sum %[[Z]] [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
// CHECK: %[[N:.*]] = kf.neg %[[RG]]
// CHECK: %[[C:.*]] = kf.constant dense<2.500000e-01> : tensor<8x1xf32>
// CHECK: %[[FC:.*]] = kf.mul %[[F]], %[[C]] : tensor<8x1xf32>
// CHECK: %[[T:.*]] = kf.mul %[[FC]], %[[RZ]] : tensor<8x1xf32>
// CHECK: %[[R:.*]] = kf.sub %[[N]], %[[T]] : tensor<8x1xf32>
// CHECK: return %{{.*}}, %[[R]]
func.func @layernorm_chain(%g: tensor<8x256xf32>, %z: tensor<8x256xf32>)
    -> (tensor<8x1xf32>, tensor<8x1xf32>) {
  %p = kf.mul %g, %z : tensor<8x256xf32>
  %s1 = kf.reduce sum %p [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
  %c = kf.constant dense<0.25> : tensor<8x256xf32>
  %half = kf.constant dense<-0.5> : tensor<8x1xf32>
  %f = kf.mul %s1, %half : tensor<8x1xf32>
  %fb = kf.broadcast %f : tensor<8x1xf32> -> tensor<8x256xf32>
  %fc = kf.mul %fb, %c : tensor<8x256xf32>
  %t = kf.mul %fc, %z : tensor<8x256xf32>
  %u = kf.add %g, %t : tensor<8x256xf32>
  %n = kf.neg %u : tensor<8x256xf32>
  %s2 = kf.reduce sum %n [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
  return %s1, %s2 : tensor<8x1xf32>, tensor<8x1xf32>
}

// -----

// No chain to shorten: the terms of a sum that needs no other sum stay in
// one reduction.
// CHECK-LABEL: func.func @no_chain
// CHECK: kf.reduce sum
// CHECK-NOT: kf.reduce
func.func @no_chain(%a: tensor<8x256xf32>, %b: tensor<8x256xf32>)
    -> tensor<8xf32> {
  %u = kf.add %a, %b : tensor<8x256xf32>
  %s = kf.reduce sum %u [1] : tensor<8x256xf32> -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// A product of two values that vary along the row is one term: the chain
// through a row scalar inside it cannot be cut, and the sum stays.
// CHECK-LABEL: func.func @variance
// CHECK-COUNT-2: kf.reduce mean
// CHECK-NOT: kf.reduce
func.func @variance(%x: tensor<8x256xf32>) -> tensor<8x1xf32> {
  %m = kf.reduce mean %x [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
  %mb = kf.broadcast %m : tensor<8x1xf32> -> tensor<8x256xf32>
  %c = kf.sub %x, %mb : tensor<8x256xf32>
  %sq = kf.mul %c, %c : tensor<8x256xf32>
  %v = kf.reduce mean %sq [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
  return %v : tensor<8x1xf32>
}

// -----

// A mean without kept dims: the terms' means per row, reshaped to the
// result; a broadcast of one value for all rows is a row constant too.
// CHECK-LABEL: func.func @mean_without_kept_dims
// CHECK: %[[M:.*]] = kf.reduce mean %[[A:.*]] [1] {keep_dims = true}
// CHECK: %[[MA:.*]] = kf.reduce mean %[[A]] [1] {keep_dims = true}
// CHECK: %[[MB:.*]] = kf.reduce mean %{{.*}} [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
// CHECK: %[[S:.*]] = kf.broadcast %{{.*}} : tensor<1xf32> -> tensor<8x1xf32>
// CHECK: %[[W:.*]] = kf.mul %[[M]], %[[S]]
// CHECK: %[[T:.*]] = kf.mul %[[W]], %[[MB]]
// CHECK: %[[D:.*]] = kf.sub %[[MA]], %[[T]]
// CHECK: kf.reshape %[[D]] : tensor<8x1xf32> -> tensor<8xf32>
func.func @mean_without_kept_dims(%a: tensor<8x256xf32>, %b: tensor<8x256xf32>,
                                  %s: tensor<1xf32>) -> tensor<8xf32> {
  %m = kf.reduce mean %a [1] {keep_dims = true} : tensor<8x256xf32> -> tensor<8x1xf32>
  %mb = kf.broadcast %m : tensor<8x1xf32> -> tensor<8x256xf32>
  %sb = kf.broadcast %s : tensor<1xf32> -> tensor<8x256xf32>
  %w = kf.mul %mb, %sb : tensor<8x256xf32>
  %t = kf.mul %w, %b : tensor<8x256xf32>
  %u = kf.sub %a, %t : tensor<8x256xf32>
  %r = kf.reduce mean %u [1] : tensor<8x256xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}
