//===- LibraryVersion.cpp - libkfuse.so's own translation unit ------------===//
//
// libkfuse.so is made of the static kfuse libraries; CMake needs one source
// of its own for the target. It records the LLVM the library was built
// with, which is part of every kernel-cache key.

#include "llvm/Config/llvm-config.h"

namespace kfuse {
const char *llvmVersion() { return LLVM_VERSION_STRING; }
} // namespace kfuse
