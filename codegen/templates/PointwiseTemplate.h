//===- PointwiseTemplate.h - what the pointwise template reads --*- C++ -*-===//
//
// The facts of the vectorised pointwise template (kf-lower-to-gpu) that the
// compiler's plan relies on: which inputs it streams, reading each element
// before it stores the results at that element, so that an output may
// share the buffer of such an input (Plan::inPlace).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_POINTWISETEMPLATE_H
#define KFUSE_CODEGEN_POINTWISETEMPLATE_H

#include "ir/KFDialect.h"

#include "llvm/ADT/SmallVector.h"

namespace kfuse::kf {

/// Whether `kernel` runs the vectorised pointwise template (a pointwise
/// kernel that is neither a tiled transpose nor a writer of padded rows).
bool usesPointwiseTemplate(KernelOp kernel);

/// The arguments of a pointwise kernel that its template streams: those of
/// the output's shape read only through elementwise ops. Each thread step
/// loads them at its elements before it stores any result, and stores only
/// those elements.
llvm::SmallVector<mlir::BlockArgument> streamedInputs(KernelOp kernel);

} // namespace kfuse::kf

#endif // KFUSE_CODEGEN_POINTWISETEMPLATE_H
