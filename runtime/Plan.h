//===- Plan.h - what running a compiled graph means -------------*- C++ -*-===//
//
// A Plan is everything the runtime needs to run one specialisation of a
// graph, and nothing of MLIR or LLVM: the buffers (the caller's inputs and
// outputs, and temporaries), the kernel launches in order, copies for
// outputs that are inputs or repeat another output, which outputs may share
// memory with an input, the PTX (and the cubin
// and ptxas log once loaded on a GPU), and the text of every compiler
// stage for dumps. It is what the disk cache stores.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_PLAN_H
#define KFUSE_RUNTIME_PLAN_H

#include "kfuse/DType.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse::runtime {

enum class BufferRole : uint8_t { Input, Output, Temp };

struct BufferDesc {
  BufferRole role;
  uint32_t index; ///< position among the inputs, outputs or temporaries
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t bytes;
};

/// A TMA tensor map over a buffer of 16-bit elements, which the launch
/// builds (the buffer's address changes from run to run) and passes by
/// value: `rank` dims, innermost first, the byte strides of dims 1 and up,
/// the box one copy moves, and the 128-byte swizzle that wgmma's operand
/// layouts use. Out-of-bounds elements read as zeros.
struct TensorMapDesc {
  uint32_t buffer = 0, rank = 0;
  uint64_t dims[3] = {}, strides[2] = {};
  uint32_t box[3] = {};
  /// With a launch extent's index: rows of a [slices][rows][cols] map whose
  /// row count is that extent's value at run time (dims[1], and strides[1]
  /// = strides[0] times it); -1 where the dims are fixed.
  int32_t rowsExtent = -1;
};

/// A size a kernel takes at run time, as an i64 parameter: dim `dim` of
/// input buffer `buffer` as the call gives it (the plan's shape holds the
/// size it was compiled for).
struct ExtentDesc {
  uint32_t buffer = 0, dim = 0;
};

struct LaunchDesc {
  std::string kernel;
  uint32_t grid = 0, block = 0, sharedBytes = 0;
  std::vector<uint32_t> buffers; ///< one per kernel parameter
  /// Kernel parameters after the buffers, before the tensor maps.
  std::vector<ExtentDesc> extents;
  /// Kernel parameters after the buffers: one CUtensorMap each.
  std::vector<TensorMapDesc> tensorMaps;
  uint64_t flops = 0; ///< arithmetic it does, for the roofline
};

struct CopyDesc {
  uint32_t dst, src;
};
/// A buffer that launch `launch` adds into (atomics), zeroed on the stream
/// just before it.
struct ZeroDesc {
  uint32_t launch, buffer;
};

/// An input and an output that may be one buffer (the same address and
/// size): the plan reads each element of the input before it writes the
/// same element of the output, and nothing else touches them. run() gives
/// any other overlap of an output with an input a temporary of its own.
struct InPlaceDesc {
  uint32_t input, output; ///< buffer indices
};

struct Plan {
  std::vector<BufferDesc> buffers; ///< inputs, then outputs, then temporaries
  std::vector<LaunchDesc> launches;
  std::vector<ZeroDesc> zeroes; ///< each before its launch
  std::vector<CopyDesc> copies; ///< after the launches
  std::vector<InPlaceDesc> inPlace;
  std::string ptx;
  std::string cubin;    ///< set once loaded through the driver
  std::string ptxasLog; ///< likewise
  /// Stage name -> text. Not on disk (they are several times the size of
  /// the rest, and a disk hit should read only what runs): a plan loaded
  /// from the disk cache has none until asked for (Executable::dump).
  std::map<std::string, std::string> dumps;

  /// Whether some launch takes a size at run time.
  bool hasExtents() const;
  size_t numInputs() const { return count(BufferRole::Input); }
  size_t numOutputs() const { return count(BufferRole::Output); }
  size_t count(BufferRole role) const;
  bool allowsInPlace(uint32_t input, uint32_t output) const;

  /// A self-describing text form, the dumps with it or not; deserialize
  /// rejects anything malformed.
  std::string serialize(bool withDumps = true) const;
  static std::optional<Plan> deserialize(std::string_view text);
};

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_PLAN_H
