//===- PiecewisePatterns.h - sums of pieces as concats, casts sunk -*- C++ -*-===//

#ifndef KFUSE_IR_PIECEWISEPATTERNS_H
#define KFUSE_IR_PIECEWISEPATTERNS_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace kfuse::kf {

/// The kf dialect's canonicalizations of tensors assembled from pieces
/// (PiecewisePatterns.cpp): sums of zero pads of adjacent pieces as
/// concats, and casts sunk through views to the casts they undo.
void populatePiecewisePatterns(mlir::RewritePatternSet &patterns);

} // namespace kfuse::kf

#endif // KFUSE_IR_PIECEWISEPATTERNS_H
