//===- DeviceArguments.h - host tensors as run()'s arguments ----*- C++ -*-===//
//
// Internal to libkfuse: device copies of a graph's inputs and buffers for
// its outputs, for Executable::runOnHost and kfuse::testing's timing.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_DEVICEARGUMENTS_H
#define KFUSE_COMPILER_DEVICEARGUMENTS_H

#include "kfuse/Compiler.h"

#include <vector>

namespace kfuse::detail {

/// An output buffer to allocate: its tensor, and the bytes it holds (more
/// than the tensor's where kf-pad padded its rows).
struct OutputSpec {
  DType dtype;
  std::vector<int64_t> shape;
  size_t bytes;
};

/// The buffers (inputs, then outputs) and the tensors run() takes.
struct DeviceArguments {
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceTensor> in, out;
};

/// Uploads `inputs` and allocates `outputs`; with `poison`, fills the
/// outputs with 0xFF bytes (NaN in every float dtype).
Expected<DeviceArguments>
deviceArguments(const std::vector<HostTensor> &inputs,
                const std::vector<OutputSpec> &outputs, bool poison);

} // namespace kfuse::detail

#endif // KFUSE_COMPILER_DEVICEARGUMENTS_H
