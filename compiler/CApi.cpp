//===- CApi.cpp - the C API of kfuse_c.h over the C++ API -----------------===//
//
// Each entry point converts its C arguments, calls the public C++ API and
// converts back; a failure records its message for kfuse_last_error() and
// returns a status. Nothing here throws or aborts on bad input.
//
//===----------------------------------------------------------------------===//

#include "compiler/CApiSupport.h"
#include "kfuse/kfuse.h"

#include "kfuse/kfuse_c.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

using namespace kfuse;

namespace kfuse::capi {

thread_local std::string lastError;

kfuse_status statusOf(ErrorCode code) {
  switch (code) {
  case ErrorCode::InvalidGraph:
    return KFUSE_INVALID_GRAPH;
  case ErrorCode::InvalidArgument:
    return KFUSE_INVALID_ARGUMENT;
  case ErrorCode::CompileFailed:
    return KFUSE_COMPILE_FAILED;
  case ErrorCode::NoDevice:
    return KFUSE_NO_DEVICE;
  case ErrorCode::DeviceError:
    return KFUSE_DEVICE_ERROR;
  case ErrorCode::IOError:
    return KFUSE_IO_ERROR;
  }
  return KFUSE_INVALID_ARGUMENT;
}

kfuse_status fail(const Error &error) {
  lastError = error.message();
  return statusOf(error.code());
}

kfuse_status fail(const std::string &message) {
  return fail(Error(ErrorCode::InvalidArgument, "kfuse: " + message));
}

kfuse_status finish(const Status &status) {
  return status ? KFUSE_OK : fail(status.error());
}

char *copyString(const std::string &text) {
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out)
    std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

std::optional<DType> dtypeOf(int dtype) {
  switch (dtype) {
  case KFUSE_F32:
    return DType::f32;
  case KFUSE_F16:
    return DType::f16;
  case KFUSE_BF16:
    return DType::bf16;
  case KFUSE_I32:
    return DType::i32;
  case KFUSE_I1:
    return DType::i1;
  case KFUSE_I64:
    return DType::i64;
  }
  return std::nullopt;
}

kfuse_dtype cDtype(DType dtype) {
  return static_cast<kfuse_dtype>(static_cast<int>(dtype));
}

/// The tensor with C id `id`, or an invalid one (and the error recorded).
Tensor tensorOf(kfuse_graph g, kfuse_tensor id, const char *what) {
  if (!g || id < 0 || id >= static_cast<int64_t>(g->tensors.size())) {
    fail(std::string(what) + ": tensor id " + std::to_string(id) +
         " is not a tensor of this graph");
    return Tensor();
  }
  return g->tensors[id];
}

/// The C id of `t`, or -1 with the graph's error when it is invalid.
kfuse_tensor idOf(kfuse_graph g, Tensor t) {
  if (!t.isValid()) {
    if (!g->graph.status())
      fail(g->graph.status().error());
    return -1;
  }
  g->tensors.push_back(t);
  return static_cast<kfuse_tensor>(g->tensors.size() - 1);
}

/// `rank` sizes from C, or nullopt (and the error) for a bad rank.
std::optional<std::vector<int64_t>> sizesOf(int64_t rank, const int64_t *sizes,
                                            const char *what) {
  if (rank < 0 || rank > Dims::kMaxRank || (rank > 0 && !sizes)) {
    fail(std::string(what) + ": rank " + std::to_string(rank) + " needs 0 to " +
         std::to_string(Dims::kMaxRank) + " sizes");
    return std::nullopt;
  }
  return std::vector<int64_t>(sizes, sizes + rank);
}

/// Writes a shape to C (symbolic dims as -1).
kfuse_status writeShape(const Shape &shape, int64_t *rank, int64_t *sizes,
                        int64_t capacity) {
  if (rank)
    *rank = static_cast<int64_t>(shape.size());
  if (sizes && capacity < static_cast<int64_t>(shape.size()))
    return fail("a shape of rank " + std::to_string(shape.size()) +
                " does not fit " + std::to_string(capacity) + " sizes");
  for (size_t i = 0; sizes && i < shape.size(); ++i)
    sizes[i] = shape[i].isSymbolic() ? -1 : shape[i].size();
  return KFUSE_OK;
}

Expected<std::vector<HostTensor>> hostTensorsOf(const kfuse_host_tensor *in,
                                                int64_t count) {
  std::vector<HostTensor> out;
  for (int64_t i = 0; i < count; ++i) {
    std::optional<DType> dtype = dtypeOf(in[i].dtype);
    std::optional<std::vector<int64_t>> shape =
        sizesOf(in[i].rank, in[i].sizes, "host tensor");
    if (!dtype || !shape || (!in[i].data && in[i].rank >= 0))
      return Error(ErrorCode::InvalidArgument,
                   "kfuse: host tensor " + std::to_string(i) +
                       ": bad dtype, rank or data pointer");
    HostTensor t(*dtype, *shape);
    std::memcpy(t.data(), in[i].data, t.sizeInBytes());
    out.push_back(std::move(t));
  }
  return out;
}

kfuse_status writeHostTensors(const std::vector<HostTensor> &tensors,
                              kfuse_host_tensor *out, int64_t count) {
  if (count != static_cast<int64_t>(tensors.size()))
    return fail("expected room for " + std::to_string(tensors.size()) +
                " outputs, got " + std::to_string(count));
  for (int64_t i = 0; i < count; ++i) {
    const HostTensor &t = tensors[i];
    void *data = std::malloc(std::max<size_t>(t.sizeInBytes(), 1));
    auto *sizes = static_cast<int64_t *>(
        std::malloc(std::max<size_t>(t.shape().size(), 1) * sizeof(int64_t)));
    if (!data || !sizes)
      return fail("out of host memory for output " + std::to_string(i));
    std::memcpy(data, t.data(), t.sizeInBytes());
    // A rank-0 output has no sizes (and memcpy may not take null).
    if (!t.shape().empty())
      std::memcpy(sizes, t.shape().data(), t.shape().size() * sizeof(int64_t));
    out[i] = {data, cDtype(t.dtype()), static_cast<int64_t>(t.shape().size()),
              sizes};
  }
  return KFUSE_OK;
}

} // namespace kfuse::capi

using namespace kfuse::capi;

namespace {

using UnaryFn = Tensor (*)(Tensor);
using BinaryFn = std::function<Tensor(Tensor, Tensor)>;
// (Qualified below: <cmath> and <cstdlib> declare exp, div, pow, ... too.)

const std::map<std::string, UnaryFn> &unaryOps() {
  static const std::map<std::string, UnaryFn> ops = {
      {"neg", kfuse::neg},
      {"abs", kfuse::abs},
      {"relu", kfuse::relu},
      {"exp", kfuse::exp},
      {"log", kfuse::log},
      {"sqrt", kfuse::sqrt},
      {"rsqrt", kfuse::rsqrt},
      {"sin", kfuse::sin},
      {"cos", kfuse::cos},
      {"tanh", kfuse::tanh},
      {"sigmoid", kfuse::sigmoid},
      {"erf", kfuse::erf},
      {"gelu", kfuse::gelu},
      {"silu", kfuse::silu},
      {"reciprocal", kfuse::reciprocal},
      {"floor", kfuse::floor},
      {"round", kfuse::round},
      {"logical_not", kfuse::logicalNot},
      {"stop_gradient", kfuse::stopGradient}};
  return ops;
}

const std::map<std::string, BinaryFn> &binaryOps() {
  auto compareBy = [](Compare predicate) -> BinaryFn {
    return [predicate](Tensor a, Tensor b) { return compare(predicate, a, b); };
  };
  static const std::map<std::string, BinaryFn> ops = {
      {"add", kfuse::add},
      {"sub", kfuse::sub},
      {"mul", kfuse::mul},
      {"div", kfuse::div},
      {"maximum", kfuse::maximum},
      {"minimum", kfuse::minimum},
      {"pow", kfuse::pow},
      {"mod", kfuse::mod},
      {"logical_and", kfuse::logicalAnd},
      {"logical_or", kfuse::logicalOr},
      {"logical_xor", kfuse::logicalXor},
      {"eq", compareBy(Compare::eq)},
      {"ne", compareBy(Compare::ne)},
      {"lt", compareBy(Compare::lt)},
      {"le", compareBy(Compare::le)},
      {"gt", compareBy(Compare::gt)},
      {"ge", compareBy(Compare::ge)}};
  return ops;
}

/// An op of a tensor and a list of `rank` integers (a shape, a
/// permutation).
template <typename Op>
kfuse_tensor shapeOp(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                     const int64_t *values, const char *name, Op op) {
  Tensor t = tensorOf(graph, x, name);
  std::optional<std::vector<int64_t>> list = sizesOf(rank, values, name);
  if (!t.isValid() || !list)
    return -1;
  return idOf(graph, op(t, *list));
}

} // namespace

extern "C" {

int kfuse_c_api_version(void) { return KFUSE_C_API_VERSION; }

const char *kfuse_version(void) { return kfuse::version(); }

const char *kfuse_last_error(void) { return lastError.c_str(); }

void kfuse_free_string(char *text) { std::free(text); }

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

kfuse_graph kfuse_graph_create(const char *name) {
  return new kfuse_graph_t{Graph(name ? name : "graph"), {}, {}};
}

kfuse_status kfuse_graph_from_mlir(const char *text, kfuse_graph *out) {
  if (!text || !out)
    return fail("kfuse_graph_from_mlir: text and out must not be NULL");
  Expected<Graph> graph = Graph::fromMLIR(text);
  if (!graph)
    return fail(graph.error());
  *out = new kfuse_graph_t{graph.take(), {}, {}};
  return KFUSE_OK;
}

void kfuse_graph_destroy(kfuse_graph graph) { delete graph; }

kfuse_status kfuse_graph_status(kfuse_graph graph) {
  if (!graph)
    return fail("kfuse_graph_status: the graph is NULL");
  return finish(graph->graph.status());
}

kfuse_status kfuse_graph_to_mlir(kfuse_graph graph, char **text) {
  if (!graph || !text)
    return fail("kfuse_graph_to_mlir: graph and text must not be NULL");
  Expected<std::string> mlir = graph->graph.toMLIR();
  if (!mlir)
    return fail(mlir.error());
  *text = copyString(*mlir);
  return KFUSE_OK;
}

kfuse_tensor kfuse_input(kfuse_graph graph, const char *name, kfuse_dtype dtype,
                         int64_t rank, const int64_t *sizes,
                         const char *const *symbols) {
  std::optional<DType> type = dtypeOf(dtype);
  if (!graph || !name || !type) {
    fail("kfuse_input: needs a graph, a name and a dtype of kfuse_dtype");
    return -1;
  }
  if (rank < 0 || rank > Dims::kMaxRank || (rank > 0 && !sizes && !symbols)) {
    fail("kfuse_input '" + std::string(name) + "': rank " +
         std::to_string(rank) + " needs 0 to 8 sizes");
    return -1;
  }
  Shape shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (symbols && symbols[i] && *symbols[i])
      shape.push_back(Dim(std::string(symbols[i])));
    else
      shape.push_back(Dim(sizes ? sizes[i] : int64_t(0)));
  }
  return idOf(graph, graph->graph.input(name, *type, shape));
}

kfuse_tensor kfuse_constant(kfuse_graph graph, double value,
                            kfuse_dtype dtype) {
  std::optional<DType> type = dtypeOf(dtype);
  if (!graph || !type) {
    fail("kfuse_constant: needs a graph and a dtype of kfuse_dtype");
    return -1;
  }
  return idOf(graph, graph->graph.constant(value, *type));
}

kfuse_status kfuse_output(kfuse_graph graph, const char *name,
                          kfuse_tensor value) {
  if (!name)
    return fail("kfuse_output: the name is NULL");
  Tensor t = tensorOf(graph, value, "kfuse_output");
  if (!t.isValid())
    return KFUSE_INVALID_ARGUMENT;
  graph->graph.output(name, t);
  return finish(graph->graph.status());
}

int64_t kfuse_graph_num_values(kfuse_graph graph, int is_output) {
  if (!graph)
    return -1;
  std::vector<TensorInfo> &values = graph->values[is_output ? 1 : 0];
  values = is_output ? graph->graph.outputs() : graph->graph.inputs();
  return static_cast<int64_t>(values.size());
}

kfuse_status kfuse_graph_value(kfuse_graph graph, int is_output, int64_t index,
                               const char **name, kfuse_dtype *dtype,
                               int64_t *rank, int64_t *sizes,
                               int64_t capacity) {
  int64_t count = kfuse_graph_num_values(graph, is_output);
  if (index < 0 || index >= count)
    return fail("kfuse_graph_value: index " + std::to_string(index) + " of " +
                std::to_string(count < 0 ? 0 : count) +
                (is_output ? " outputs" : " inputs"));
  const TensorInfo &info = graph->values[is_output ? 1 : 0][index];
  if (name)
    *name = info.name.c_str();
  if (dtype)
    *dtype = cDtype(info.dtype);
  return writeShape(info.shape, rank, sizes, capacity);
}

kfuse_status kfuse_tensor_info(kfuse_graph graph, kfuse_tensor x,
                               kfuse_dtype *dtype, int64_t *rank,
                               int64_t *sizes, int64_t capacity) {
  Tensor t = tensorOf(graph, x, "kfuse_tensor_info");
  if (!t.isValid())
    return KFUSE_INVALID_ARGUMENT;
  if (dtype)
    *dtype = cDtype(t.dtype());
  return writeShape(t.shape(), rank, sizes, capacity);
}

kfuse_tensor kfuse_unary(kfuse_graph graph, const char *op, kfuse_tensor x) {
  auto it = op ? unaryOps().find(op) : unaryOps().end();
  if (it == unaryOps().end()) {
    fail("kfuse_unary: no unary op '" + std::string(op ? op : "") + "'");
    return -1;
  }
  Tensor t = tensorOf(graph, x, op);
  return t.isValid() ? idOf(graph, it->second(t)) : -1;
}

kfuse_tensor kfuse_binary(kfuse_graph graph, const char *op, kfuse_tensor a,
                          kfuse_tensor b) {
  auto it = op ? binaryOps().find(op) : binaryOps().end();
  if (it == binaryOps().end()) {
    fail("kfuse_binary: no binary op '" + std::string(op ? op : "") + "'");
    return -1;
  }
  Tensor ta = tensorOf(graph, a, op), tb = tensorOf(graph, b, op);
  if (!ta.isValid() || !tb.isValid())
    return -1;
  return idOf(graph, it->second(ta, tb));
}

kfuse_tensor kfuse_where(kfuse_graph graph, kfuse_tensor cond,
                         kfuse_tensor on_true, kfuse_tensor on_false) {
  Tensor c = tensorOf(graph, cond, "where"),
         t = tensorOf(graph, on_true, "where"),
         f = tensorOf(graph, on_false, "where");
  if (!c.isValid() || !t.isValid() || !f.isValid())
    return -1;
  return idOf(graph, where(c, t, f));
}

kfuse_tensor kfuse_cast(kfuse_graph graph, kfuse_tensor x, kfuse_dtype dtype) {
  Tensor t = tensorOf(graph, x, "cast");
  std::optional<DType> type = dtypeOf(dtype);
  if (!t.isValid() || !type) {
    if (t.isValid())
      fail("cast: " + std::to_string(dtype) + " is not a kfuse_dtype");
    return -1;
  }
  return idOf(graph, cast(t, *type));
}

kfuse_tensor kfuse_reshape(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                           const int64_t *sizes) {
  return shapeOp(graph, x, rank, sizes, "reshape",
                 [](Tensor t, const std::vector<int64_t> &shape) {
                   return reshape(t, Shape(shape.begin(), shape.end()));
                 });
}

kfuse_tensor kfuse_broadcast_to(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                                const int64_t *sizes) {
  return shapeOp(graph, x, rank, sizes, "broadcast_to",
                 [](Tensor t, const std::vector<int64_t> &shape) {
                   return broadcastTo(t, Shape(shape.begin(), shape.end()));
                 });
}

kfuse_tensor kfuse_transpose(kfuse_graph graph, kfuse_tensor x, int64_t rank,
                             const int64_t *perm) {
  return shapeOp(graph, x, rank, perm, "transpose",
                 [](Tensor t, const std::vector<int64_t> &order) {
                   return transpose(t, order);
                 });
}

kfuse_tensor kfuse_iota(kfuse_graph graph, int64_t rank, const int64_t *sizes,
                        int64_t dim, kfuse_dtype dtype) {
  std::optional<std::vector<int64_t>> shape = sizesOf(rank, sizes, "iota");
  std::optional<DType> type = dtypeOf(dtype);
  if (!graph || !shape || !type) {
    if (shape)
      fail("iota: needs a graph and a dtype of kfuse_dtype");
    return -1;
  }
  return idOf(graph, iota(graph->graph, Shape(shape->begin(), shape->end()),
                          dim, *type));
}

kfuse_tensor kfuse_reduce(kfuse_graph graph, const char *op, kfuse_tensor x,
                          int64_t num_axes, const int64_t *axes,
                          int keep_dims) {
  using ReduceFn = Tensor (*)(Tensor, std::vector<int64_t>, bool);
  static const std::map<std::string, ReduceFn> reductions = {
      {"sum", kfuse::reduceSum},
      {"max", kfuse::reduceMax},
      {"min", kfuse::reduceMin},
      {"mean", kfuse::reduceMean},
      {"logsumexp", kfuse::logsumexp}};
  auto it = op ? reductions.find(op) : reductions.end();
  if (it == reductions.end()) {
    fail("kfuse_reduce: no reduction '" + std::string(op ? op : "") + "'");
    return -1;
  }
  Tensor t = tensorOf(graph, x, op);
  std::optional<std::vector<int64_t>> dims = sizesOf(num_axes, axes, op);
  if (!t.isValid() || !dims)
    return -1;
  return idOf(graph, it->second(t, *dims, keep_dims != 0));
}

kfuse_tensor kfuse_softmax(kfuse_graph graph, kfuse_tensor x, int64_t axis) {
  Tensor t = tensorOf(graph, x, "softmax");
  return t.isValid() ? idOf(graph, softmax(t, axis)) : -1;
}

kfuse_tensor kfuse_matmul(kfuse_graph graph, kfuse_tensor a, kfuse_tensor b,
                          int transpose_a, int transpose_b, int result_dtype) {
  Tensor ta = tensorOf(graph, a, "matmul"), tb = tensorOf(graph, b, "matmul");
  if (!ta.isValid() || !tb.isValid())
    return -1;
  MatmulOptions options;
  options.transposeA = transpose_a != 0;
  options.transposeB = transpose_b != 0;
  if (result_dtype >= 0) {
    options.resultType = dtypeOf(result_dtype);
    if (!options.resultType) {
      fail("matmul: result dtype " + std::to_string(result_dtype) +
           " is not a kfuse_dtype");
      return -1;
    }
  }
  return idOf(graph, matmul(ta, tb, options));
}

kfuse_tensor kfuse_attention(kfuse_graph graph, kfuse_tensor q, kfuse_tensor k,
                             kfuse_tensor v, kfuse_tensor mask,
                             kfuse_tensor bias, int has_scale, double scale,
                             int causal, kfuse_tensor *lse) {
  Tensor tq = tensorOf(graph, q, "attention"),
         tk = tensorOf(graph, k, "attention"),
         tv = tensorOf(graph, v, "attention");
  if (!tq.isValid() || !tk.isValid() || !tv.isValid())
    return -1;
  AttentionOptions options;
  if (has_scale)
    options.scale = scale;
  options.causal = causal != 0;
  if (mask >= 0) {
    options.mask = tensorOf(graph, mask, "attention mask");
    if (!options.mask.isValid())
      return -1;
  }
  if (bias >= 0) {
    options.bias = tensorOf(graph, bias, "attention bias");
    if (!options.bias.isValid())
      return -1;
  }
  if (!lse)
    return idOf(graph, attention(tq, tk, tv, options));
  AttentionWithLse both = attentionWithLse(tq, tk, tv, options);
  kfuse_tensor out = idOf(graph, both.out);
  *lse = out < 0 ? -1 : idOf(graph, both.lse);
  return out;
}

} // extern "C"
