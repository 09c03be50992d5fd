// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --canonicalize | FileCheck %s --check-prefix=FOLD

// kf.stop_gradient holds any dtype; canonicalisation folds it to its input
// (it matters only to differentiation, which runs before).

// CHECK-LABEL: func.func @stop_gradient
// FOLD-LABEL: func.func @stop_gradient
// FOLD-SAME: (%[[X:[^:]*]]: tensor<4x?xf32>, %[[I:[^:]*]]: tensor<7xi64>, %[[B:[^:]*]]: tensor<3xi1>)
// FOLD-NEXT: return %[[X]], %[[I]], %[[B]]
func.func @stop_gradient(%x: tensor<4x?xf32>, %i: tensor<7xi64>, %b: tensor<3xi1>)
    -> (tensor<4x?xf32>, tensor<7xi64>, tensor<3xi1>) {
  // CHECK: kf.stop_gradient %{{.*}} : tensor<4x?xf32>
  %0 = kf.stop_gradient %x : tensor<4x?xf32>
  // CHECK: kf.stop_gradient %{{.*}} : tensor<7xi64>
  %1 = kf.stop_gradient %i : tensor<7xi64>
  // CHECK: kf.stop_gradient %{{.*}} : tensor<3xi1>
  %2 = kf.stop_gradient %b : tensor<3xi1>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<7xi64>, tensor<3xi1>
}
