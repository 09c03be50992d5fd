//===- Recipe.h - random graphs for differential fuzzing --------*- C++ -*-===//
//
// A Recipe is a graph written as data: a pool of dims and a list of nodes
// that refer to earlier nodes and to dims by index. Generation picks nodes
// whose operands fit by construction (shapes are pool indices, so equal dims
// stay equal); building turns a recipe into a kfuse::Graph; shrinking edits
// the recipe (drop a node, shrink a dim) and rebuilds. Keeping the recipe,
// not the Graph, is what makes a failing graph shrinkable.
//
// Ops whose domain is not all reals are built guarded (log(|x| + 1),
// exp(min(x, 4)), a / (|b| + 1), ...), so random graphs stay finite and a
// mismatch is a compiler bug, not an overflow.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_TESTS_FUZZ_RECIPE_H
#define KFUSE_TESTS_FUZZ_RECIPE_H

#include "kfuse/Evaluator.h"
#include "kfuse/Graph.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kfuse::fuzz {

enum class NodeKind {
  Input,     ///< dtype, dims
  Scalar,    ///< dtype, value: a rank-0 constant
  Iota,      ///< dtype, dims, axes[0] = the counting dim
  Unary,     ///< op indexes kUnaryOps
  Binary,    ///< op indexes kBinaryOps
  Select,    ///< where(operand0 <op> operand1, operand2, operand3); op: kCompareBits..
  Cast,      ///< dtype
  Broadcast, ///< dims: the new shape (a suffix of it is the operand's)
  Transpose, ///< axes: the permutation
  Reshape,   ///< axes[0]: merge this dim with the next
  Reduce,    ///< op indexes kReduceOps; axes; flag = keepDims
  Matmul,    ///< flag = transposeB; op & kTransposeA
  Softmax,   ///< axes[0]
  /// q, k, v, then a mask if op & kMask, a bias if op & kBias; flag =
  /// causal; value = the scale if op & kScale. Spelled as the op.
  Attention,
  AttentionPrimitives, ///< q, k, v; flag = causal; softmax(q kT * s) v
  Slice,  ///< axes = {axis, start, step}; dims: the result (its axis dim
          ///< gives the stop)
  Pad,    ///< axes = {axis, low, high}; value
  Concat, ///< the operands along axes[0]
  /// input, indices; axes[0]; op 0 gather, 1 take_along_axis, their
  /// indices taken mod the dim, so every one is in range; op 2 index_add
  /// into axes[1] rows, by the indices as drawn.
  Gather,
  /// Along axes[0]: op 0 cumsum, 1 argmax, 2 argmin (keepDims = flag; the
  /// position cast to i32, a dtype every node takes).
  Line,
  /// op 0: rand(operands[0], dims, dtype) with operands[0] a rank-0 i32
  /// seed; op 1: dropout(operands[0], operands[1], p = value).
  Random,
  /// Cross-entropy from primitives, as a language model's loss is written:
  /// logsumexp of operands[0] along its last dim minus the logit at
  /// operands[1] (labels mod the dim); the mean over rows if flag.
  Loss,
  /// [..., S, N] reshaped to [..., S, H, N / H] and moved to
  /// [..., H, S, N / H], H = axes[0]: a projection split into heads.
  Heads,
};

/// Node::op of a Select: the compare in the low bits, then an optional
/// second compare of operands[0] with operands[4] joined by and, or or
/// xor, then not.
enum : int {
  kCompareBits = 7,
  kLogicShift = 3,     ///< 0 none, 1 and, 2 or, 3 xor
  kSecondCompareShift = 5,
  kNegateMask = 1 << 8
};

/// Bits of Node::op for matmul and attention.
/// kPositionMask: and a mask of positions, key <= query + axes[0] (as
/// HuggingFace builds a causal one); kRepeatKV: keys and values repeated
/// per query head (repeat_kv). Both have canonical forms in the compiler.
/// kRotateQ: q rotated by RoPE written from primitives (rotate-half by
/// slice, neg and concat) with [Sq, D] tables, the last two operands: a
/// prologue the attention kernel computes into its Q tile.
enum : int {
  kTransposeA = 1,
  kMask = 1,
  kBias = 2,
  kScale = 4,
  kPositionMask = 8,
  kRepeatKV = 16,
  kRotateQ = 32
};

struct Node {
  NodeKind kind = NodeKind::Input;
  std::vector<int> operands;
  int op = 0;
  DType dtype = DType::f32;
  std::vector<int> dims; ///< indices into Recipe::dims
  std::vector<int64_t> axes;
  bool flag = false;
  double value = 0;
};

/// A dim of the pool: a size, or the product of two earlier dims (what a
/// reshape that merges dims produces).
struct PoolDim {
  int64_t size = 1;
  int factorA = -1, factorB = -1;
};

struct Recipe {
  uint64_t seed = 0;
  std::vector<PoolDim> dims;
  std::vector<Node> nodes;
  std::vector<int> outputs; ///< node indices
  /// Inputs declare their dims (other than 1) as symbols, one per pool dim,
  /// bound at run time: the per-shape specialisation path.
  bool symbolic = false;

  int64_t dimSize(int dim) const;
  /// One line per node, for logs.
  std::string str() const;
};

struct GenerateOptions {
  int maxNodes = 14;
  /// No tensor of the graph has more elements than this.
  int64_t maxElements = int64_t(1) << 20;
  /// Multiply-adds per matmul or attention, to keep the float64 evaluator
  /// quick.
  int64_t maxMacs = int64_t(1) << 24;
};

Recipe generate(uint64_t seed, const GenerateOptions &options = {});

/// A recipe built into a graph, with what the checks need to know.
struct BuiltGraph {
  Graph graph;
  /// The longest reduction (sum, softmax row, matmul K, attention keys),
  /// for the comparison's tolerance.
  int64_t reductionLength = 1;
  int64_t maxElements = 0;
  /// Some discrete decision is taken on computed floats: a float-to-int
  /// cast or a comparison. A value within an ulp of the boundary may fall
  /// the other way in f32 or f16 than in float64, so a few elements may
  /// differ by a lot.
  bool discrete = false;
  /// A value that depends on such a decision is added up with others (a
  /// matmul, a reduction, a softmax row): one flip moves every element of
  /// a result row, which the comparison by elements cannot tell from a
  /// wrong kernel.
  bool discreteSpreads = false;
  /// The least precise float dtype anywhere in the graph: a fused or an
  /// unfused kernel may round intermediates to it (the evaluator rounds
  /// only at casts and outputs), so outputs are compared at its tolerance.
  DType leastPrecise = DType::f32;
  /// The inputs' sizes (the graph's own, or the symbols' bindings).
  std::vector<std::vector<int64_t>> inputShapes;
  /// Each node's dtype and shape.
  std::vector<DType> nodeDTypes;
  std::vector<std::vector<int64_t>> nodeShapes;
};

/// Builds the graph; an error means the recipe does not describe a valid
/// graph (shrinking produces such candidates and skips them).
Expected<BuiltGraph> build(const Recipe &recipe);

/// Fresh random inputs of the graph's input shapes.
std::vector<HostTensor> randomInputs(const BuiltGraph &built, uint64_t seed);

/// Shrinks `recipe` while `stillFails` holds: fewer outputs, fewer nodes
/// (a node replaced by an operand of its shape or by a new input), smaller
/// dims. Greedy, to a fixed point or `maxAttempts` candidates.
Recipe shrink(Recipe recipe, const std::function<bool(const Recipe &)> &stillFails,
              int maxAttempts = 400);

} // namespace kfuse::fuzz

#endif // KFUSE_TESTS_FUZZ_RECIPE_H
