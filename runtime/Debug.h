//===- Debug.h - KFUSE_DEBUG messages ---------------------------*- C++ -*-===//
//
// Debian's LLVM has no -debug-only; kfuse's own switch is the environment
// variable KFUSE_DEBUG (any value): messages go to stderr, prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_DEBUG_H
#define KFUSE_RUNTIME_DEBUG_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kfuse {

inline bool debugEnabled() {
  static const bool enabled = std::getenv("KFUSE_DEBUG") != nullptr;
  return enabled;
}

inline void debugLog(const std::string &message) {
  if (debugEnabled())
    std::fprintf(stderr, "kfuse: %s\n", message.c_str());
}

} // namespace kfuse

#endif // KFUSE_RUNTIME_DEBUG_H
