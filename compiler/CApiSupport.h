//===- CApiSupport.h - what the C API's files share -------------*- C++ -*-===//
//
// Internal to compiler/: the structs behind the C API's handles and the
// argument conversions every entry point uses (CApi.cpp defines them).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_CAPISUPPORT_H
#define KFUSE_COMPILER_CAPISUPPORT_H

#include "kfuse/kfuse.h"
#include "kfuse/kfuse_c.h"

#include <optional>
#include <string>
#include <vector>

struct kfuse_graph_t {
  kfuse::Graph graph;
  /// The C ids: index into this vector.
  std::vector<kfuse::Tensor> tensors;
  /// The graph's inputs and outputs as last reported (kfuse_graph_value
  /// hands out pointers to their names).
  std::vector<kfuse::TensorInfo> values[2];
};

struct kfuse_executable_t {
  kfuse::Executable exe;
};

namespace kfuse::capi {

/// Records `error` for kfuse_last_error() and returns its status.
kfuse_status fail(const Error &error);
/// Records an invalid-argument error "kfuse: message".
kfuse_status fail(const std::string &message);
/// KFUSE_OK, or the status's error recorded.
kfuse_status finish(const Status &status);
std::optional<DType> dtypeOf(int dtype);
kfuse_dtype cDtype(DType dtype);
/// A malloc'd copy for the caller to free with kfuse_free_string.
char *copyString(const std::string &text);
/// The tensor with C id `id`, or an invalid one (and the error recorded).
Tensor tensorOf(kfuse_graph g, kfuse_tensor id, const char *what);
/// The C id of `t`, or -1 with the graph's error when it is invalid.
kfuse_tensor idOf(kfuse_graph g, Tensor t);
/// `rank` sizes from C, or nullopt (and the error) for a bad rank.
std::optional<std::vector<int64_t>> sizesOf(int64_t rank, const int64_t *sizes,
                                            const char *what);
/// The message kfuse_last_error() returns on this thread.
extern thread_local std::string lastError;
/// Writes a shape to C (symbolic dims as -1); an error if it does not fit
/// `capacity` sizes.
kfuse_status writeShape(const Shape &shape, int64_t *rank, int64_t *sizes,
                        int64_t capacity);
/// Host tensors from C, copied.
Expected<std::vector<HostTensor>> hostTensorsOf(const kfuse_host_tensor *in,
                                                int64_t count);
/// `tensors` to C, each in malloc'd memory the caller frees with
/// kfuse_host_tensor_free.
kfuse_status writeHostTensors(const std::vector<HostTensor> &tensors,
                              kfuse_host_tensor *out, int64_t count);

} // namespace kfuse::capi

#endif // KFUSE_COMPILER_CAPISUPPORT_H
