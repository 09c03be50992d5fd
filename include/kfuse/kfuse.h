//===- kfuse/kfuse.h - the kfuse public API ---------------------*- C++ -*-===//
//
// kfuse compiles tensor-expression graphs into fused GPU kernels. This
// header pulls in the whole public API; no MLIR or LLVM type appears in it.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_KFUSE_H
#define KFUSE_KFUSE_H

#include "kfuse/Autodiff.h"
#include "kfuse/DType.h"
#include "kfuse/Error.h"
#include "kfuse/Evaluator.h"
#include "kfuse/Compiler.h"
#include "kfuse/Graph.h"
#include "kfuse/Testing.h"

namespace kfuse {
/// kfuse's version, "major.minor.patch".
const char *version();
/// The LLVM kfuse was built with.
const char *llvmVersion();
/// The GNU build ID of the code that compiles kernels (hex), which changes
/// with every rebuild that changes it; "" where the linker wrote none.
/// Part of every kernel-cache key beside the versions.
const char *compilerBuildId();
} // namespace kfuse

#endif // KFUSE_KFUSE_H
