//===- RuntimeDims.h - dims whose size changes from call to call -*- C++ -*-===//
//
// CompileOptions::dynamicDims names symbols whose sizes change from call to
// call (a KV cache growing by a token a step). Rather than a compile per
// size, a specialisation covers a bucket of them: it is compiled for the
// bucket's size, and kernels that can (kf-runtime-extents) take the call's
// size as a parameter. Buckets are powers of two from 64 on, so a run of
// sizes compiles once per doubling: 256 consecutive sizes at most three
// times. Where some kernel cannot, the compiler says why and specialises
// those dims exactly, as for any other symbol.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_RUNTIMEDIMS_H
#define KFUSE_COMPILER_RUNTIMEDIMS_H

#include "kfuse/Compiler.h"
#include "kfuse/Graph.h"

#include <string>
#include <vector>

namespace kfuse::compiler {

class RuntimeDims {
public:
  /// The dims of `inputs` named by one of `symbols`.
  static RuntimeDims of(const std::vector<TensorInfo> &inputs,
                        const std::vector<std::string> &symbols);
  bool empty() const { return symbols_.empty(); }
  /// The symbols that name some input's dims, in the order given.
  const std::vector<std::string> &symbols() const { return symbols_; }

  /// The size a specialisation for `size` is compiled for.
  static int64_t bucket(int64_t size);
  /// `shapes` (one per input) with every runtime dim at its bucket.
  std::vector<std::vector<int64_t>>
  bucketed(std::vector<std::vector<int64_t>> shapes) const;
  /// Whether the call's shape `actual` of input `input` falls in the
  /// buckets of `compiled`: equal but in runtime dims, whose sizes share a
  /// bucket.
  bool matches(size_t input, const Dims &compiled, const Dims &actual) const;
  /// Whether dim `dim` of input `input` is a runtime dim.
  bool isRuntime(size_t input, size_t dim) const;
  /// The sizes a specialisation compiled for `compiled` (bucketed shapes)
  /// runs: "L in 513..1024", one range per symbol.
  std::string bucketRanges(
      const std::vector<std::vector<int64_t>> &compiled) const;

private:
  std::vector<std::vector<unsigned>> dims_; ///< per input
  std::vector<std::string> symbols_;
  /// Per symbol, an (input, dim) it names.
  std::vector<std::pair<size_t, unsigned>> firstUse_;
};

} // namespace kfuse::compiler

#endif // KFUSE_COMPILER_RUNTIMEDIMS_H
