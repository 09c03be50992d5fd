// RUN: kfuse-opt %s -split-input-file --kf-rematerialize="attention-only=true" | FileCheck %s

// Two layers' attentions whose q prologues scale q by the same table
// broadcast to the heads (RoPE's cos, as a stack shares it): each layer
// gets its own broadcast, computed in its attention kernel's Q tile. The
// table's broadcast that k reads is not copied: the template copies k from
// memory, so a copy would be a kernel of its own.
// CHECK-LABEL: func.func @shared_q_table
// CHECK: %[[T1:.*]] = kf.broadcast %arg3
// CHECK: %[[K:.*]] = kf.broadcast %arg4
// CHECK: kf.mul %arg0, %[[T1]]
// CHECK: %[[T2:.*]] = kf.broadcast %arg3
// CHECK-NEXT: kf.mul %arg1, %[[T2]]
// CHECK-NOT: kf.broadcast
// CHECK: kf.attention {{.*}}, %[[K]], %[[K]]
// CHECK: kf.attention {{.*}}, %[[K]], %[[K]]
func.func @shared_q_table(%q1: tensor<1x2x64x64xbf16>, %q2: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>, %cos: tensor<64x64xbf16>, %kt: tensor<64x64xbf16>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) {
  %c = kf.broadcast %cos : tensor<64x64xbf16> -> tensor<1x2x64x64xbf16>
  %k = kf.broadcast %kt : tensor<64x64xbf16> -> tensor<1x2x64x64xbf16>
  %a = kf.mul %q1, %c : tensor<1x2x64x64xbf16>
  %b = kf.mul %q2, %c : tensor<1x2x64x64xbf16>
  %o1 = kf.attention %a, %k, %k {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %o2 = kf.attention %b, %k, %k {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o1, %o2 : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
}
