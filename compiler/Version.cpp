//===- Version.cpp - kfuse's and LLVM's versions --------------------------===//
//
// Both are part of every kernel-cache key: a kernel compiled by another
// kfuse or another LLVM is never loaded.

#include "kfuse/kfuse.h"

#include "llvm/Config/llvm-config.h"

namespace kfuse {
const char *version() { return KFUSE_VERSION; }
const char *llvmVersion() { return LLVM_VERSION_STRING; }
} // namespace kfuse
