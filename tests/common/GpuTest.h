//===- GpuTest.h - what the GPU tests share ---------------------*- C++ -*-===//

#ifndef KFUSE_TESTS_GPUTEST_H
#define KFUSE_TESTS_GPUTEST_H

#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

/// Skips the test, saying why, where there is no GPU (CI).
#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    if (kfuse::Expected<kfuse::DeviceInfo> gpu = kfuse::device(); !gpu)        \
      GTEST_SKIP() << "no GPU: " << gpu.error().message();                     \
  } while (0)

#endif // KFUSE_TESTS_GPUTEST_H
