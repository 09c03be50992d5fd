//===- kfuse/Graph.h - building expression graphs ---------------*- C++ -*-===//
//
// A Graph is a DAG of tensor ops with named inputs and outputs:
//
//   kfuse::Graph g("mlp");
//   kfuse::Tensor x = g.input("x", kfuse::DType::bf16, {"M", 768});
//   kfuse::Tensor w = g.input("w", kfuse::DType::bf16, {768, 3072});
//   g.output("y", kfuse::gelu(kfuse::matmul(x, w) + 1.0));
//   if (!g.status()) std::cerr << g.status().message();
//
// Errors. An op whose operands do not fit records an error naming the op
// and both shapes ("matmul: inner dimensions differ: a is 64x128, b is
// 256x32") and returns an invalid Tensor; ops on invalid tensors return
// invalid tensors without a new message, so the first error is the one
// reported by status(). Nothing throws and nothing aborts.
//
// Broadcasting follows NumPy: shapes align on their trailing dims and a dim
// of 1 stretches. Symbolic dims (named, e.g. "M") match only the same name.
//
// Dtype promotion, for binary ops and select: i1 < i32 < i64 < f16,
// bf16 < f32, and f16 with bf16 gives f32. A C++ scalar takes the tensor's
// dtype if the tensor is a float; an int scalar with an integer tensor
// keeps the tensor's dtype; a floating scalar with an integer or i1 tensor
// gives f32. Float-only math (exp, log, sin, ...) on integers or i1 first
// casts to f32.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_GRAPH_H
#define KFUSE_GRAPH_H

#include "kfuse/DType.h"
#include "kfuse/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kfuse {

/// A dim: a size, or a symbol bound to a size at run time.
class Dim {
public:
  Dim(int64_t size) : size_(size) {}
  Dim(int size) : size_(size) {}
  Dim(const char *symbol) : size_(-1), symbol_(symbol) {}
  Dim(std::string symbol) : size_(-1), symbol_(std::move(symbol)) {}

  bool isSymbolic() const { return !symbol_.empty(); }
  /// The size, or -1 for a symbolic dim.
  int64_t size() const { return size_; }
  const std::string &symbol() const { return symbol_; }
  std::string str() const { return isSymbolic() ? symbol_ : std::to_string(size_); }
  bool operator==(const Dim &o) const {
    return size_ == o.size_ && symbol_ == o.symbol_;
  }

private:
  int64_t size_;
  std::string symbol_;
};

using Shape = std::vector<Dim>;
std::string shapeString(const Shape &shape);

class Graph;
namespace detail {
struct GraphImpl;
}

/// A value in a Graph. Cheap to copy; valid while its Graph lives.
class Tensor {
public:
  Tensor() = default;
  bool isValid() const { return graph_ != nullptr && id_ >= 0; }
  DType dtype() const;
  Shape shape() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }

private:
  friend struct detail::GraphImpl;
  Tensor(detail::GraphImpl *graph, int id) : graph_(graph), id_(id) {}
  detail::GraphImpl *graph_ = nullptr;
  int id_ = -1;
};

/// A named input or output of a Graph.
struct TensorInfo {
  std::string name;
  DType dtype;
  Shape shape;
};

class Graph {
public:
  explicit Graph(std::string name = "graph");
  ~Graph();
  Graph(Graph &&) noexcept;
  Graph &operator=(Graph &&) noexcept;

  /// A new input. Names are unique; dims are sizes >= 0 or symbols.
  Tensor input(const std::string &name, DType dtype, const Shape &shape);
  /// A scalar (rank-0) constant; broadcast it with broadcastTo or use it in
  /// an op with a tensor operand.
  Tensor constant(double value, DType dtype);
  /// Marks `value` as an output. Names are unique.
  void output(const std::string &name, Tensor value);

  /// The first error while building, or ok.
  const Status &status() const;
  const std::string &name() const;
  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;

  /// The graph in the kf dialect, as MLIR text.
  Expected<std::string> toMLIR() const;
  /// Reads a graph from kf dialect text: one func.func whose arguments are
  /// the inputs and whose results are the outputs. Syntax and verifier
  /// errors come back as "bufferName:line:col: message".
  static Expected<Graph> fromMLIR(std::string_view text,
                                  std::string_view bufferName = "<input>");
  /// fromMLIR on a file's contents.
  static Expected<Graph> fromFile(const std::string &path);

  detail::GraphImpl &impl() const { return *impl_; }

private:
  std::unique_ptr<detail::GraphImpl> impl_;
};

// Elementwise math. Float-only ops cast i32/i1 operands to f32 first.
Tensor neg(Tensor x);
Tensor abs(Tensor x);
Tensor relu(Tensor x);
Tensor exp(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor rsqrt(Tensor x);
Tensor sin(Tensor x);
Tensor cos(Tensor x);
Tensor tanh(Tensor x);
Tensor sigmoid(Tensor x);
Tensor erf(Tensor x);
/// The exact GELU, x * Phi(x).
Tensor gelu(Tensor x);
Tensor silu(Tensor x);
Tensor reciprocal(Tensor x);
Tensor floor(Tensor x);
/// To the nearest integer, ties to even (torch.round).
Tensor round(Tensor x);

Tensor add(Tensor a, Tensor b);
Tensor sub(Tensor a, Tensor b);
Tensor mul(Tensor a, Tensor b);
Tensor div(Tensor a, Tensor b);
Tensor maximum(Tensor a, Tensor b);
Tensor minimum(Tensor a, Tensor b);
Tensor pow(Tensor a, Tensor b);
/// a mod b with the sign of b (Python's %, torch.remainder); for integers
/// a mod 0 is 0.
Tensor mod(Tensor a, Tensor b);
// Logic on i1; other operands are first compared with 0 (x != 0).
Tensor logicalAnd(Tensor a, Tensor b);
Tensor logicalOr(Tensor a, Tensor b);
Tensor logicalXor(Tensor a, Tensor b);
Tensor logicalNot(Tensor x);
/// x itself, through which no gradient flows (JAX's stop_gradient,
/// PyTorch's detach): kfuse::grad and splitVJP send it no cotangent.
Tensor stopGradient(Tensor x);

enum class Compare { eq, ne, lt, le, gt, ge };
/// An i1 tensor; operands broadcast and promote as for binary ops.
Tensor compare(Compare predicate, Tensor a, Tensor b);
/// cond ? onTrue : onFalse, with cond i1; all three broadcast.
Tensor where(Tensor cond, Tensor onTrue, Tensor onFalse);
Tensor cast(Tensor x, DType dtype);

Tensor operator-(Tensor x);
Tensor operator+(Tensor a, Tensor b);
Tensor operator-(Tensor a, Tensor b);
Tensor operator*(Tensor a, Tensor b);
Tensor operator/(Tensor a, Tensor b);
Tensor operator+(Tensor a, double b);
Tensor operator-(Tensor a, double b);
Tensor operator*(Tensor a, double b);
Tensor operator/(Tensor a, double b);
Tensor operator+(double a, Tensor b);
Tensor operator-(double a, Tensor b);
Tensor operator*(double a, Tensor b);
Tensor operator/(double a, Tensor b);
Tensor operator<(Tensor a, Tensor b);
Tensor operator<=(Tensor a, Tensor b);
Tensor operator>(Tensor a, Tensor b);
Tensor operator>=(Tensor a, Tensor b);
/// A scalar in the dtype of `like` (or as the promotion rules say).
Tensor scalarLike(Tensor like, double value);

// Shapes. Negative axes count from the end.
Tensor broadcastTo(Tensor x, const Shape &shape);
Tensor reshape(Tensor x, const Shape &shape);
Tensor transpose(Tensor x, const std::vector<int64_t> &perm);
/// Elements equal to their index along `dim`.
Tensor iota(Graph &graph, const Shape &shape, int64_t dim,
            DType dtype = DType::i32);

// Indexing. Each is an index map that fused kernels compute in their
// loads. Negative axes and positions count from the end; a position out of
// range is an error, not clamped as Python's slices are.

/// x[start:stop:step] along `axis`; no `stop` means the end of the dim.
/// step >= 1 (negative steps are not supported). The sliced dim must have
/// a known size.
Tensor slice(Tensor x, int64_t axis, int64_t start,
             std::optional<int64_t> stop = std::nullopt, int64_t step = 1);
/// The tensors joined along `axis` (torch.cat); dtypes promote.
Tensor concat(const std::vector<Tensor> &tensors, int64_t axis);
/// Constant padding, NumPy's order: one (before, after) pair per dim, from
/// the first; widths >= 0.
Tensor pad(Tensor x, const std::vector<std::pair<int64_t, int64_t>> &widths,
           double value = 0);
/// NumPy's take along `axis` (torch.index_select, an embedding lookup):
/// the result is x.shape[:axis] + indices.shape + x.shape[axis + 1:].
/// Indices are i32 or i64; an index outside [-n, n) gives NaN (floats) or
/// 0 (integers, i1).
Tensor gather(Tensor x, Tensor indices, int64_t axis);
/// gather's transpose (torch.index_add into zeros, an embedding's
/// gradient): `updates` are pre + indices.shape + post, the result
/// pre + [size] + post, each result row j the sum of the updates whose
/// index is j (negative indices from the end; one outside [-size, size)
/// adds nothing). The sum is in f32; 16-bit updates give a result of
/// their dtype, rounded once.
Tensor indexAdd(Tensor updates, Tensor indices, int64_t axis, int64_t size);
/// NumPy's take_along_axis (torch.gather): indices of x's rank that agree
/// with x except along `axis`; one element of x per index.
Tensor takeAlongAxis(Tensor x, Tensor indices, int64_t axis);

/// The position (i64) of the largest (argmax) or smallest (argmin) element
/// along `axis`, the first of equal ones; a NaN wins over any number, as
/// in torch.argmax. Floats or i32; keepDims keeps the axis as size 1.
Tensor argmax(Tensor x, int64_t axis, bool keepDims = false);
Tensor argmin(Tensor x, int64_t axis, bool keepDims = false);
/// The inclusive running sum along `axis` (torch.cumsum), in x's dtype
/// (floats or i32).
Tensor cumsum(Tensor x, int64_t axis);

/// Uniform numbers in [0, 1) from counter-based Philox4x32-10, seeded by
/// `seed` (a rank-0 i32 tensor, so a new seed needs no new compile). Each
/// call in a graph draws its own stream; the numbers are the same fused,
/// unfused and in the evaluator.
Tensor rand(Tensor seed, const Shape &shape, DType dtype = DType::f32);
/// Inverted dropout: x / (1 - p) where rand(seed) >= p, else 0.
Tensor dropout(Tensor x, Tensor seed, double p);

// Reductions over `axes` (all dims if empty).
Tensor reduceSum(Tensor x, std::vector<int64_t> axes = {},
                 bool keepDims = false);
Tensor reduceMax(Tensor x, std::vector<int64_t> axes = {},
                 bool keepDims = false);
Tensor reduceMin(Tensor x, std::vector<int64_t> axes = {},
                 bool keepDims = false);
Tensor reduceMean(Tensor x, std::vector<int64_t> axes = {},
                  bool keepDims = false);
/// log(sum(exp(x))) over `axes` (all dims if empty), computed as
/// m + log(sum(exp(x - m))) with m the max, taken through stopGradient
/// (its exact gradient is zero), so the gradient is softmax(x) times the
/// cotangent and nothing else. A float dtype; others are cast to f32.
Tensor logsumexp(Tensor x, std::vector<int64_t> axes = {},
                 bool keepDims = false);

struct MatmulOptions {
  bool transposeA = false;
  bool transposeB = false;
  /// Result dtype; unset means the operands' dtype. f32 keeps the
  /// accumulator unrounded.
  std::optional<DType> resultType;
};
/// [batch..., M, K] x [batch..., K, N] (b may be rank 2 and shared).
Tensor matmul(Tensor a, Tensor b, const MatmulOptions &options = {});

/// Softmax along `axis`; a row that is entirely -inf gives 0.
Tensor softmax(Tensor x, int64_t axis = -1);

struct AttentionOptions {
  /// Multiplies q k^T; unset means 1/sqrt(head_dim).
  std::optional<double> scale;
  /// Query i attends keys j <= i.
  bool causal = false;
  /// i1 [B, H, Sq, Sk] (broadcastable), true = attend.
  Tensor mask;
  /// Added to the scaled scores; [B, H, Sq, Sk] (broadcastable).
  Tensor bias;
};
/// softmax(scale * q k^T [+ bias] [masked]) v. q is [B, H, Sq, D], k and v
/// are [B, Hkv, Sk, D] and [B, Hkv, Sk, Dv], with H a multiple of Hkv.
Tensor attention(Tensor q, Tensor k, Tensor v,
                 const AttentionOptions &options = {});

struct AttentionWithLse {
  Tensor out;
  /// f32 [B, H, Sq]: the natural log of the sum of exp over each query
  /// row's scaled, biased and masked scores (-inf for a row with no key to
  /// attend), what a backward pass recomputes the probabilities from.
  Tensor lse;
};
/// attention() and its rows' log-sum-exp, from the same kernel.
AttentionWithLse attentionWithLse(Tensor q, Tensor k, Tensor v,
                                  const AttentionOptions &options = {});

} // namespace kfuse

#endif // KFUSE_GRAPH_H
