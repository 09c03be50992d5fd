// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// An embedding lookup: a [vocab, dim] table indexed by [batch, seq] ids.
// CHECK-LABEL: func.func @embedding
func.func @embedding(%table: tensor<1000x64xbf16>, %ids: tensor<2x?xi64>) -> tensor<2x?x64xbf16> {
  // CHECK: kf.gather %{{.*}}[%{{.*}}] {axis = 0 : i64} : tensor<1000x64xbf16>, tensor<2x?xi64> -> tensor<2x?x64xbf16>
  %0 = kf.gather %table[%ids] {axis = 0} : tensor<1000x64xbf16>, tensor<2x?xi64> -> tensor<2x?x64xbf16>
  return %0 : tensor<2x?x64xbf16>
}

// A label's logit per row.
// CHECK-LABEL: func.func @take_along_axis
func.func @take_along_axis(%logits: tensor<8x50xf32>, %labels: tensor<8x1xi32>) -> tensor<8x1xf32> {
  // CHECK: kf.take_along_axis %{{.*}}[%{{.*}}] {axis = 1 : i64} : tensor<8x50xf32>, tensor<8x1xi32> -> tensor<8x1xf32>
  %0 = kf.take_along_axis %logits[%labels] {axis = 1} : tensor<8x50xf32>, tensor<8x1xi32> -> tensor<8x1xf32>
  return %0 : tensor<8x1xf32>
}

// gather's transpose: [2, ?] rows of updates added into 1000 rows (an
// embedding's gradient).
// CHECK-LABEL: func.func @index_add
func.func @index_add(%g: tensor<2x?x64xf32>, %ids: tensor<2x?xi64>) -> tensor<1000x64xf32> {
  // CHECK: kf.index_add %{{.*}}[%{{.*}}] {axis = 0 : i64, size = 1000 : i64} : tensor<2x?x64xf32>, tensor<2x?xi64> -> tensor<1000x64xf32>
  %0 = kf.index_add %g[%ids] {axis = 0, size = 1000} : tensor<2x?x64xf32>, tensor<2x?xi64> -> tensor<1000x64xf32>
  return %0 : tensor<1000x64xf32>
}
