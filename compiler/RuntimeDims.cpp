//===- RuntimeDims.cpp - dims whose size changes from call to call --------===//

#include "compiler/RuntimeDims.h"

#include <algorithm>

namespace kfuse::compiler {

RuntimeDims RuntimeDims::of(const std::vector<TensorInfo> &inputs,
                            const std::vector<std::string> &symbols) {
  RuntimeDims out;
  out.dims_.resize(inputs.size());
  for (const std::string &symbol : symbols) {
    bool named = false;
    for (size_t i = 0; i < inputs.size(); ++i)
      for (size_t d = 0; d < inputs[i].shape.size(); ++d)
        if (inputs[i].shape[d].isSymbolic() &&
            inputs[i].shape[d].symbol() == symbol) {
          out.dims_[i].push_back(d);
          named = true;
        }
    if (named && std::find(out.symbols_.begin(), out.symbols_.end(),
                           symbol) == out.symbols_.end()) {
      out.symbols_.push_back(symbol);
      for (size_t i = 0; i < inputs.size(); ++i)
        for (size_t d = 0; d < inputs[i].shape.size(); ++d)
          if (out.firstUse_.size() < out.symbols_.size() &&
              inputs[i].shape[d].isSymbolic() &&
              inputs[i].shape[d].symbol() == symbol)
            out.firstUse_.push_back({i, unsigned(d)});
    }
  }
  for (std::vector<unsigned> &dims : out.dims_)
    std::sort(dims.begin(), dims.end());
  return out;
}

int64_t RuntimeDims::bucket(int64_t size) {
  // Past 2^40 elements a dim is its own bucket (no shift overflows).
  if (size > (int64_t(1) << 40))
    return size;
  int64_t b = 64;
  while (b < size)
    b *= 2;
  return b;
}

std::vector<std::vector<int64_t>>
RuntimeDims::bucketed(std::vector<std::vector<int64_t>> shapes) const {
  for (size_t i = 0; i < shapes.size() && i < dims_.size(); ++i)
    for (unsigned d : dims_[i])
      if (d < shapes[i].size())
        shapes[i][d] = bucket(shapes[i][d]);
  return shapes;
}

bool RuntimeDims::isRuntime(size_t input, size_t dim) const {
  return input < dims_.size() &&
         std::find(dims_[input].begin(), dims_[input].end(), dim) !=
             dims_[input].end();
}

std::string RuntimeDims::bucketRanges(
    const std::vector<std::vector<int64_t>> &compiled) const {
  std::string out;
  for (size_t s = 0; s < symbols_.size(); ++s) {
    auto [input, dim] = firstUse_[s];
    int64_t top = compiled[input][dim];
    int64_t bottom = top <= 64 ? 1 : top / 2 + 1;
    out += (out.empty() ? "" : ", ") + symbols_[s] + " in " +
           std::to_string(bottom) + ".." + std::to_string(top);
  }
  return out;
}

bool RuntimeDims::matches(size_t input, const Dims &compiled,
                          const Dims &actual) const {
  if (compiled.rank() != actual.rank())
    return false;
  const std::vector<unsigned> &runtime = dims_[input];
  size_t next = 0; // runtime is sorted
  for (int d = 0; d < compiled.rank(); ++d) {
    bool isRuntimeDim = next < runtime.size() && runtime[next] == unsigned(d);
    next += isRuntimeDim;
    if (isRuntimeDim ? compiled[d] != bucket(actual[d])
                     : compiled[d] != actual[d])
      return false;
  }
  return true;
}

} // namespace kfuse::compiler
