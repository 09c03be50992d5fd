//===- CApiIndexing.cpp - the C API's indexing ops ------------------------===//
//
// kfuse_slice, kfuse_concat, kfuse_pad, kfuse_gather, kfuse_take_along_axis,
// kfuse_index_add,
// kfuse_rand, kfuse_dropout, kfuse_arg_reduce and kfuse_cumsum over
// kfuse/Graph.h, with the conversions of CApiSupport.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/CApiSupport.h"

using namespace kfuse;
using namespace kfuse::capi;

namespace {

/// kfuse_gather and kfuse_take_along_axis: `op` of two C tensors.
kfuse_tensor indexingOp(kfuse_graph graph, kfuse_tensor x, kfuse_tensor indices,
                        int64_t axis, const char *name,
                        Tensor (*op)(Tensor, Tensor, int64_t)) {
  Tensor t = tensorOf(graph, x, name), i = tensorOf(graph, indices, name);
  if (!t.isValid() || !i.isValid())
    return -1;
  return idOf(graph, op(t, i, axis));
}

} // namespace

extern "C" {

kfuse_tensor kfuse_slice(kfuse_graph graph, kfuse_tensor x, int64_t axis,
                         int64_t start, int has_stop, int64_t stop,
                         int64_t step) {
  Tensor t = tensorOf(graph, x, "slice");
  if (!t.isValid())
    return -1;
  std::optional<int64_t> end;
  if (has_stop)
    end = stop;
  return idOf(graph, slice(t, axis, start, end, step));
}

kfuse_tensor kfuse_concat(kfuse_graph graph, int64_t count,
                          const kfuse_tensor *tensors, int64_t axis) {
  if (count < 1 || !tensors) {
    fail("concat: needs at least one tensor, got " + std::to_string(count));
    return -1;
  }
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < count; ++i) {
    parts.push_back(tensorOf(graph, tensors[i], "concat"));
    if (!parts.back().isValid())
      return -1;
  }
  return idOf(graph, concat(parts, axis));
}

kfuse_tensor kfuse_pad(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                       const int64_t *widths, double value) {
  Tensor t = tensorOf(graph, x, "pad");
  if (!t.isValid() || !sizesOf(rank, widths, "pad"))
    return -1;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t d = 0; d < rank; ++d)
    pairs.push_back({widths[2 * d], widths[2 * d + 1]});
  return idOf(graph, pad(t, pairs, value));
}

kfuse_tensor kfuse_gather(kfuse_graph graph, kfuse_tensor x,
                          kfuse_tensor indices, int64_t axis) {
  return indexingOp(graph, x, indices, axis, "gather", gather);
}

kfuse_tensor kfuse_take_along_axis(kfuse_graph graph, kfuse_tensor x,
                                   kfuse_tensor indices, int64_t axis) {
  return indexingOp(graph, x, indices, axis, "take_along_axis",
                    takeAlongAxis);
}

kfuse_tensor kfuse_index_add(kfuse_graph graph, kfuse_tensor updates,
                             kfuse_tensor indices, int64_t axis,
                             int64_t size) {
  Tensor u = tensorOf(graph, updates, "index_add"),
         i = tensorOf(graph, indices, "index_add");
  if (!u.isValid() || !i.isValid())
    return -1;
  return idOf(graph, indexAdd(u, i, axis, size));
}

kfuse_tensor kfuse_rand(kfuse_graph graph, kfuse_tensor seed, int64_t rank,
                        const int64_t *sizes, kfuse_dtype dtype) {
  Tensor s = tensorOf(graph, seed, "rand");
  std::optional<std::vector<int64_t>> shape = sizesOf(rank, sizes, "rand");
  std::optional<DType> type = dtypeOf(dtype);
  if (!s.isValid() || !shape)
    return -1;
  if (!type) {
    fail("rand: " + std::to_string(dtype) + " is not a kfuse_dtype");
    return -1;
  }
  return idOf(graph, rand(s, Shape(shape->begin(), shape->end()), *type));
}

kfuse_tensor kfuse_dropout(kfuse_graph graph, kfuse_tensor x,
                           kfuse_tensor seed, double p) {
  Tensor t = tensorOf(graph, x, "dropout"), s = tensorOf(graph, seed, "dropout");
  if (!t.isValid() || !s.isValid())
    return -1;
  return idOf(graph, dropout(t, s, p));
}

kfuse_tensor kfuse_arg_reduce(kfuse_graph graph, const char *op,
                              kfuse_tensor x, int64_t axis, int keep_dims) {
  std::string name = op ? op : "";
  if (name != "argmax" && name != "argmin") {
    fail("kfuse_arg_reduce: no op '" + name + "' (argmax or argmin)");
    return -1;
  }
  Tensor t = tensorOf(graph, x, name.c_str());
  if (!t.isValid())
    return -1;
  return idOf(graph, name == "argmax" ? argmax(t, axis, keep_dims != 0)
                                      : argmin(t, axis, keep_dims != 0));
}

kfuse_tensor kfuse_cumsum(kfuse_graph graph, kfuse_tensor x, int64_t axis) {
  Tensor t = tensorOf(graph, x, "cumsum");
  return t.isValid() ? idOf(graph, cumsum(t, axis)) : -1;
}

} // extern "C"
