// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --canonicalize | FileCheck %s --check-prefix=FOLD

// CHECK-LABEL: func.func @select
func.func @select(%c: tensor<2x?xi1>, %x: tensor<2x?xbf16>, %y: tensor<2x?xbf16>) -> tensor<2x?xbf16> {
  // CHECK: kf.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x?xi1>, tensor<2x?xbf16>
  %0 = kf.select %c, %x, %y : tensor<2x?xi1>, tensor<2x?xbf16>
  return %0 : tensor<2x?xbf16>
}

// A select of one value both ways is that value; of two, it stays.
// FOLD-LABEL: func.func @same_branches
// FOLD-SAME: (%{{[^:]*}}: tensor<3xi1>, %[[X:[^:]*]]: tensor<3xf32>, %{{[^:]*}}: tensor<3xf32>)
// FOLD-NEXT: %[[S:.*]] = kf.select
// FOLD-NEXT: return %[[X]], %[[S]]
func.func @same_branches(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = kf.select %c, %x, %x : tensor<3xi1>, tensor<3xf32>
  %1 = kf.select %c, %x, %y : tensor<3xi1>, tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
