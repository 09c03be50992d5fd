//===- KFOps.td - the kf graph dialect ---------------------*- tablegen -*-===//
//
// The kf dialect is kfuse's graph-level IR: a func.func over ranked tensors
// of f32, f16, bf16, i32, i64 and i1 whose dims may be symbolic (`?`). Every op
// has value semantics. Shape rules live in ShapeInference.cpp and are shared
// by the verifiers, the C++ frontend and kf-specialize, so the three always
// agree on what a legal graph is.
//
//===----------------------------------------------------------------------===//

#ifndef KF_OPS
#define KF_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

include "KFAttrs.td"

class KF_Op<string mnemonic, list<Trait> traits = []>
    : Op<KF_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types and attributes
//===----------------------------------------------------------------------===//

def KF_ElementType : AnyTypeOf<[F32, F16, BF16, I32, I64, I1],
                                "f32, f16, bf16, i32, i64 or i1">;
def KF_Tensor : RankedTensorOf<[F32, F16, BF16, I32, I64, I1]>;

def KF_ReduceKindAttr : I32EnumAttr<"ReduceKind", "reduction combiner", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"mean", 3>]> {
  let cppNamespace = "::kfuse::kf";
}

def KF_ComparePredicateAttr : I32EnumAttr<"ComparePredicate", "comparison", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::kfuse::kf";
}

def KF_KernelKindAttr : I32EnumAttr<"KernelKind", "fused kernel template", [
    I32EnumAttrCase<"pointwise", 0>, I32EnumAttrCase<"reduction", 1>,
    I32EnumAttrCase<"normalization", 2>, I32EnumAttrCase<"matmul", 3>,
    I32EnumAttrCase<"attention", 4>, I32EnumAttrCase<"attention_grad", 5>]> {
  let cppNamespace = "::kfuse::kf";
}

// Verifier traits implemented in KFTraits.h: they print the offending
// operands' types in their messages.
def KF_SameOperandsAndResult : NativeOpTrait<"kf::SameOperandsAndResult">;
def KF_FloatOperands : NativeOpTrait<"kf::FloatOperands">;
def KF_NumericOperands : NativeOpTrait<"kf::NumericOperands">;
def KF_BoolOperands : NativeOpTrait<"kf::BoolOperands">;
// Marks ops computed element by element (fusion reads it). Unlike upstream's
// Elementwise it verifies nothing: our own traits give better messages.
def KF_Elementwise : NativeOpTrait<"kf::Elementwise">;

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class KF_UnaryOp<string mnemonic, list<Trait> traits = []>
    : KF_Op<mnemonic, !listconcat(traits,
          [Pure, KF_Elementwise, KF_SameOperandsAndResult])> {
  let arguments = (ins KF_Tensor:$input);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` custom<ElementwiseTypes>(type($input), type($result))
  }];
}

class KF_FloatUnaryOp<string mnemonic, string formula>
    : KF_UnaryOp<mnemonic, [KF_FloatOperands]> {
  let summary = "elementwise " # formula;
}
class KF_NumericUnaryOp<string mnemonic, string formula>
    : KF_UnaryOp<mnemonic, [KF_NumericOperands]> {
  let summary = "elementwise " # formula;
}

def KF_NegOp : KF_NumericUnaryOp<"neg", "-x">;
def KF_AbsOp : KF_NumericUnaryOp<"abs", "|x|">;
def KF_ReluOp : KF_NumericUnaryOp<"relu", "max(x, 0)">;
def KF_ExpOp : KF_FloatUnaryOp<"exp", "e^x">;
def KF_LogOp : KF_FloatUnaryOp<"log", "natural logarithm">;
def KF_SqrtOp : KF_FloatUnaryOp<"sqrt", "square root">;
def KF_RsqrtOp : KF_FloatUnaryOp<"rsqrt", "1 / sqrt(x)">;
def KF_SinOp : KF_FloatUnaryOp<"sin", "sine">;
def KF_CosOp : KF_FloatUnaryOp<"cos", "cosine">;
def KF_TanhOp : KF_FloatUnaryOp<"tanh", "hyperbolic tangent">;
def KF_SigmoidOp : KF_FloatUnaryOp<"sigmoid", "1 / (1 + e^-x)">;
def KF_ErfOp : KF_FloatUnaryOp<"erf", "error function">;
def KF_GeluOp : KF_FloatUnaryOp<"gelu", "x * Phi(x), the exact (erf) GELU">;
def KF_SiluOp : KF_FloatUnaryOp<"silu", "x * sigmoid(x)">;
def KF_ReciprocalOp : KF_FloatUnaryOp<"reciprocal", "1 / x">;
def KF_FloorOp : KF_FloatUnaryOp<"floor", "the largest integer <= x">;
def KF_RoundOp : KF_FloatUnaryOp<"round",
    "x rounded to the nearest integer, ties to even (as torch.round)">;

def KF_NotOp : KF_UnaryOp<"not", [KF_BoolOperands]> {
  let summary = "elementwise logical not of i1";
}

def KF_StopGradientOp : KF_UnaryOp<"stop_gradient"> {
  let summary = "its input, through which no gradient flows";
  let description = [{
    The identity wherever it is evaluated; reverse-mode differentiation
    (`kfuse::grad`, `kfuse::splitVJP`) sends no cotangent through it, as
    JAX's `stop_gradient` and PyTorch's `detach` do. Canonicalisation folds
    it away, so no kernel holds one. Its use is a value whose exact
    gradient is zero but whose computed one is not: the max a logsumexp
    subtracts for range. Differentiated through, that max costs the
    backward a row sum of the softmax and a comparison against the saved
    max, only to add their rounding error.
  }];
  let hasFolder = 1;
}

class KF_BinaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : KF_Op<mnemonic, !listconcat(traits,
          [Pure, KF_Elementwise, KF_SameOperandsAndResult])> {
  let summary = "elementwise " # formula;
  let arguments = (ins KF_Tensor:$lhs, KF_Tensor:$rhs);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:`
      custom<ElementwiseTypes>(type($lhs), type($rhs), type($result))
  }];
}

def KF_AddOp : KF_BinaryOp<"add", "lhs + rhs", [KF_NumericOperands, Commutative]>;
def KF_SubOp : KF_BinaryOp<"sub", "lhs - rhs", [KF_NumericOperands]>;
def KF_MulOp : KF_BinaryOp<"mul", "lhs * rhs", [KF_NumericOperands, Commutative]>;
def KF_DivOp : KF_BinaryOp<"div",
    "lhs / rhs (i32: truncated toward zero, x / 0 = 0)", [KF_NumericOperands]>;
def KF_MaxOp : KF_BinaryOp<"max", "max(lhs, rhs), NaN if either is NaN",
                           [KF_NumericOperands, Commutative]>;
def KF_MinOp : KF_BinaryOp<"min", "min(lhs, rhs), NaN if either is NaN",
                           [KF_NumericOperands, Commutative]>;
def KF_PowOp : KF_BinaryOp<"pow", "lhs ^ rhs", [KF_FloatOperands]>;
def KF_ModOp : KF_BinaryOp<"mod",
    "lhs mod rhs with the sign of rhs, as Python's % and torch.remainder: "
    "fmod(lhs, rhs), plus rhs where the signs differ (integers: x mod 0 = 0)",
    [KF_NumericOperands]>;
def KF_AndOp : KF_BinaryOp<"and", "logical lhs and rhs of i1",
                           [KF_BoolOperands, Commutative]>;
def KF_OrOp : KF_BinaryOp<"or", "logical lhs or rhs of i1",
                          [KF_BoolOperands, Commutative]>;
def KF_XorOp : KF_BinaryOp<"xor", "logical lhs xor rhs of i1",
                           [KF_BoolOperands, Commutative]>;

def KF_CompareOp : KF_Op<"compare", [Pure, KF_Elementwise]> {
  let summary = "elementwise comparison giving i1";
  let description = [{
    Compares two tensors of one shape and dtype. An ordered comparison with
    a NaN operand is false; `ne` with a NaN operand is true.
  }];
  let arguments = (ins KF_ComparePredicateAttr:$predicate,
                       KF_Tensor:$lhs, KF_Tensor:$rhs);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
      `->` type($result)
  }];
  let hasVerifier = 1;
}

def KF_SelectOp : KF_Op<"select", [Pure, KF_Elementwise]> {
  let summary = "elementwise cond ? on_true : on_false";
  let description = [{
    Folds to its branch where both are one value (an embedding's padding
    row held out of the gradient by a stop_gradient on one branch becomes
    the table itself once stop_gradient folds).
  }];
  let arguments = (ins KF_Tensor:$cond, KF_Tensor:$on_true,
                       KF_Tensor:$on_false);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $cond `,` $on_true `,` $on_false attr-dict `:` type($cond) `,`
      custom<ElementwiseTypes>(type($on_true), type($on_false), type($result))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KF_CastOp : KF_Op<"cast", [Pure, KF_Elementwise]> {
  let summary = "elementwise dtype conversion";
  let description = [{
    Floats round to nearest even. Float to i32 truncates toward zero and
    saturates; NaN becomes 0. i64 to i32 wraps (keeps the low 32 bits).
    To i1 is `x != 0`; from i1 is 0 or 1.
  }];
  let arguments = (ins KF_Tensor:$input);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KF_ConstantOp : KF_Op<"constant", [Pure, ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def KF_IotaOp : KF_Op<"iota", [Pure]> {
  let summary = "a tensor whose elements are their index along `dim`";
  let arguments = (ins I64Attr:$dim, OptionalAttr<StrArrayAttr>:$dim_symbols);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def KF_BroadcastOp : KF_Op<"broadcast", [Pure]> {
  let summary = "NumPy broadcast to the result shape";
  let description = [{
    Operand dims align with the result's trailing dims; each is 1 or equal
    to the result dim. `dim_symbols` names the result's symbolic dims.
  }];
  let arguments = (ins KF_Tensor:$input,
                       OptionalAttr<StrArrayAttr>:$dim_symbols);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KF_ReshapeOp : KF_Op<"reshape", [Pure]> {
  let summary = "row-major reshape keeping the element count";
  let arguments = (ins KF_Tensor:$input,
                       OptionalAttr<StrArrayAttr>:$dim_symbols);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KF_TransposeOp : KF_Op<"transpose", [Pure]> {
  let summary = "permute dims: result dim i is input dim perm[i]";
  let arguments = (ins KF_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input $perm attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Indexing ops: each is an index map, computed in its consumer's loads
//===----------------------------------------------------------------------===//

def KF_SliceOp : KF_Op<"slice", [Pure]> {
  let summary = "elements start + i * step, below limit, of each dim";
  let description = [{
    Result dim d has ceil((limits[d] - starts[d]) / steps[d]) elements:
    element i is input element starts[d] + i * steps[d]. Per dim,
    0 <= start <= limit <= the input dim and step >= 1 (a negative step is
    refused). A limit of INT64_MAX means the end of the dim. A sliced dim
    must have a known size; a symbolic one is kept whole (start 0, limit
    INT64_MAX, step 1).
  }];
  let arguments = (ins KF_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$steps);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` $starts `limits` $limits `steps` $steps attr-dict `:`
      type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KF_ConcatOp : KF_Op<"concat", [Pure]> {
  let summary = "operands joined along `axis`";
  let description = [{
    Operands of one dtype and rank agree on every dim but `axis`, which
    must have a known size in each; the result's `axis` is their sum.
  }];
  let arguments = (ins Variadic<KF_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KF_PadOp : KF_Op<"pad", [Pure]> {
  let summary = "`low` and `high` elements of `value` around each dim";
  let description = [{
    Result dim d is low[d] + input dim + high[d]; element i is input
    element i - low[d] where that lies in the input, else `value` (rounded
    to the dtype). Widths are >= 0 (crop with kf.slice); a padded dim must
    have a known size.
  }];
  let arguments = (ins KF_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, F64Attr:$value);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input `low` $low `high` $high `value` $value attr-dict `:` type($input)
      `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KF_GatherOp : KF_Op<"gather", [Pure]> {
  let summary = "input elements picked along `axis` by an index tensor";
  let description = [{
    NumPy's take (torch.index_select, an embedding lookup): the result is
    input.shape[:axis] + indices.shape + input.shape[axis + 1:], and
    result[a, i, b] = input[a, indices[i], b]. Indices are i32 or i64; an
    index in [-n, 0) counts from the end (n = input dim `axis`); one
    outside [-n, n) gives NaN for float inputs, 0 for integers and false
    for i1: defined, never a read outside the input.
  }];
  let arguments = (ins KF_Tensor:$input, KF_Tensor:$indices, I64Attr:$axis);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` attr-dict `:` type($input) `,` type($indices)
      `->` type($result)
  }];
  let hasVerifier = 1;
}

def KF_IndexAddOp : KF_Op<"index_add", [Pure]> {
  let summary = "updates added into `size` zeros along `axis` by an index tensor";
  let description = [{
    The transpose of kf.gather (torch.index_add into zeros; an embedding's
    gradient): updates are pre + indices.shape + post, the result is
    pre + [size] + post, and result[a, j, b] is the sum of updates[a, i, b]
    over the index positions i with indices[i] = j. Indices are i32 or i64;
    one in [-size, 0) counts from the end, one outside [-size, size) adds
    nothing (the positions kf.gather gives NaN, whose gradient is zero).
    Updates and result are f32, the sum's accumulator: the frontend's
    indexAdd casts 16-bit updates to f32 and the sum back.
  }];
  let arguments = (ins KF_Tensor:$updates, KF_Tensor:$indices, I64Attr:$axis,
                       I64Attr:$size);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $updates `[` $indices `]` attr-dict `:` type($updates) `,` type($indices)
      `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The updates as [pre, count, post]: the dims before the axis, the
    /// indices' dims and the dims after them, each flattened (the result
    /// is [pre, size, post]).
    std::array<int64_t, 3> getScatterSpace();
    /// The tiles of `rows` result rows by `columns` of the dims after the
    /// axis that cover the result (an ordered index_add's blocks).
    int64_t getTileCount(int64_t rows, int64_t columns);
  }];
}

def KF_TakeAlongAxisOp : KF_Op<"take_along_axis", [Pure]> {
  let summary = "one input element per index, along `axis`";
  let description = [{
    NumPy's take_along_axis (torch.gather): indices have the input's rank
    and its dims except at `axis`; the result has the indices' shape, and
    result[a, i, b] = input[a, indices[a, i, b], b]. Indices and
    out-of-range indices as for kf.gather.
  }];
  let arguments = (ins KF_Tensor:$input, KF_Tensor:$indices, I64Attr:$axis);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` attr-dict `:` type($input) `,` type($indices)
      `->` type($result)
  }];
  let hasVerifier = 1;
}

def KF_RandomOp : KF_Op<"random", [Pure]> {
  let summary = "uniform [0, 1) numbers from Philox4x32-10, counter-based";
  let description = [{
    Element i (row-major) is word i mod 4, w, of Philox4x32-10 with key
    (seed, 0) and counter (b mod 2^32, b div 2^32, stream, 0), b = i div 4
    (four elements share an evaluation), as (w >> 8) * 2^-24, rounded to
    the result's float dtype. `seed` is a
    rank-0 i32 tensor, so a new seed needs no new compile; `stream` tells
    apart the random ops of one graph. The same seed gives the same
    numbers fused, unfused and in the evaluator.
  }];
  let arguments = (ins KF_Tensor:$seed, I64Attr:$stream,
                       OptionalAttr<StrArrayAttr>:$dim_symbols);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $seed attr-dict `:` type($seed) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and contractions
//===----------------------------------------------------------------------===//

def KF_ReduceOp : KF_Op<"reduce", [Pure]> {
  let summary = "sum, max, min or mean over axes";
  let description = [{
    Reduces `axes` (distinct, ascending). With `keep_dims` the reduced dims
    stay as size 1. bf16/f16 inputs accumulate in f32 or wider.
  }];
  let arguments = (ins KF_ReduceKindAttr:$kind, KF_Tensor:$input,
                       DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $kind $input $axes attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  // Over dims of size 1 only, a reduction is a reshape (the gradient of
  // take_along_axis sums a one-hot over its one-element axis): as a
  // reshape it is a view its consumers read in place, not a kernel root.
  let hasCanonicalizer = 1;
}

def KF_ArgReduceOp : KF_Op<"arg_reduce", [Pure]> {
  let summary = "position of the max or min along one axis";
  let description = [{
    The position (i64) along `axis` of the largest (`max`) or smallest
    (`min`) element, the first of several equal ones. A NaN wins over any
    number for both kinds (the first NaN's position), as in
    torch.argmax/argmin and NumPy. With `keep_dims` the axis stays as
    size 1. Takes floats and i32; an empty axis is refused.
  }];
  let arguments = (ins KF_ReduceKindAttr:$kind, KF_Tensor:$input,
                       I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $kind $input `[` $axis `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KF_CumsumOp : KF_Op<"cumsum", [Pure]> {
  let summary = "inclusive running sum along one axis";
  let description = [{
    result[..., i, ...] = input[..., 0, ...] + ... + input[..., i, ...],
    in the input's dtype: f16/bf16 sums run in f32 and each element is
    rounded once; i32 sums wrap modulo 2^32.
  }];
  let arguments = (ins KF_Tensor:$input, I64Attr:$axis);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $axis `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KF_MatmulOp : KF_Op<"matmul", [Pure]> {
  let summary = "batched matrix product, f32 accumulation";
  let description = [{
    a is [batch..., M, K] (or [..., K, M] with transpose_a), b is
    [batch..., K, N] (or [..., N, K] with transpose_b); b may also be rank 2
    and shared by every batch. The result is [batch..., M, N].

    With `k_chunk` (kernel IR: kf-split-k's split-K) the result is f32
    [S, batch..., M, N], S = ceil(K / k_chunk): partial s sums the products
    over k in [s k_chunk, min((s + 1) k_chunk, K)).
  }];
  let arguments = (ins KF_Tensor:$a, KF_Tensor:$b,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                       OptionalAttr<I64Attr>:$k_chunk);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def KF_SoftmaxOp : KF_Op<"softmax", [Pure]> {
  let summary = "softmax along one axis";
  let description = [{
    exp(x - max) / sum(exp(x - max)) along `axis`. A row that is all -inf
    (fully masked) gives 0, not NaN.
  }];
  let arguments = (ins KF_Tensor:$input, I64Attr:$axis);
  let results = (outs KF_Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` custom<ElementwiseTypes>(type($input), type($result))
  }];
  let hasVerifier = 1;
}

def KF_AttentionOp : KF_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "softmax(scale * q k^T [+ bias] [masked]) v in one op";
  let description = [{
    q is [B, H, Sq, D], k is [B, Hkv, Sk, D], v is [B, Hkv, Sk, Dv] with H a
    multiple of Hkv (grouped-query attention). The optional `mask` (i1,
    [B, H, Sq, Sk], true = attend) and `bias` ([B, H, Sq, Sk]) apply to the
    scaled scores. `causal` lets query i attend keys j <= i (top-left
    aligned, as PyTorch's scaled_dot_product_attention). A query row with no
    key to attend gives 0. The result is [B, H, Sq, Dv]. The optional `lse`
    result (f32 [B, H, Sq]) is each query row's log-sum-exp of its scaled,
    biased and masked scores, -inf for a row with no key to attend: the
    O(S) state a backward pass recomputes the probabilities from.
  }];
  let arguments = (ins KF_Tensor:$q, KF_Tensor:$k, KF_Tensor:$v,
                       Optional<KF_Tensor>:$mask, Optional<KF_Tensor>:$bias,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs KF_Tensor:$result, Optional<KF_Tensor>:$lse);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` $mask^ `:` type($mask))?
      (`bias` $bias^ `:` type($bias))? attr-dict `:` type($q) `,` type($k)
      `,` type($v) `->` type($result) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
  // A causal mask spelled as tensors becomes `causal`; keys and values
  // repeated per query head are read as their kv heads
  // (ir/AttentionPatterns.cpp).
  let hasCanonicalizer = 1;
}

def KF_AttentionGradOp : KF_Op<"attention_grad", [Pure]> {
  let summary = "attention's gradients of q, k and v (FlashAttention's backward)";
  let description = [{
    The vector-Jacobian product of a `kf.attention` without mask or bias at
    the cotangent `dout` of its result: q [B, H, Sq, D], k [B, Hkv, Sk, D]
    and v [B, Hkv, Sk, Dv] are the attention's operands, `lse` (f32
    [B, H, Sq]) its rows' log-sum-exp and `delta` (f32 [B, H, Sq]) each
    row's sum of dout * result. With P = exp(scale q k^T - lse) (0 where
    `causal` masks) and dS = P (dout v^T - delta):
      dq = scale dS k,   dk = scale dS^T q,   dv = P^T dout,
    dk and dv summed over the query heads that share a kv head. The
    results (float) have the shapes of q, k and v. The probabilities are
    recomputed a tile at a time and never stored: lse and delta are the
    O(S) state the backward needs.
  }];
  let arguments = (ins KF_Tensor:$q, KF_Tensor:$k, KF_Tensor:$v,
                       KF_Tensor:$dout, KF_Tensor:$lse, KF_Tensor:$delta,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs KF_Tensor:$dq, KF_Tensor:$dk, KF_Tensor:$dv);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $dout `,` $lse `,` $delta attr-dict `:` type($q) `,`
      type($k) `,` type($v) `,` type($dout) `,` type($lse) `,` type($delta)
      `->` type($dq) `,` type($dk) `,` type($dv)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused kernels
//===----------------------------------------------------------------------===//

def KF_KernelOp : KF_Op<"kernel", [IsolatedFromAbove, SingleBlock]> {
  let summary = "a fused region that becomes one GPU kernel";
  let description = [{
    kf-fuse wraps each partition of the graph in a kf.kernel whose `kind`
    names the kind of template that generates its code. The block takes
    the inputs as arguments and yields the results. kf-tile records the
    `launch` and the template's `tiling`, kf-promote-shared the
    shared-memory `pipeline` (KFAttrs.td); lowering reads them and decides
    nothing itself. kf-pad records in `padded_rows` the row stride of each
    result's buffer (0: dense; else at least the row's length, zeros past
    it), kf-runtime-extents in `runtime_extents` the (input, dim) pairs
    whose sizes the kernel takes at run time (its types hold the size the
    graph was compiled for), and kf-lower-to-gpu names the kernel's
    function in `gpu_func`.
  }];
  let arguments = (ins Variadic<KF_Tensor>:$inputs, KF_KernelKindAttr:$kind,
                       OptionalAttr<KF_LaunchAttr>:$launch,
                       OptionalAttr<KF_TilingAttr>:$tiling,
                       OptionalAttr<KF_PipelineAttr>:$pipeline,
                       OptionalAttr<DenseI64ArrayAttr>:$padded_rows,
                       OptionalAttr<DenseI64ArrayAttr>:$runtime_extents,
                       OptionalAttr<StrAttr>:$gpu_func);
  let results = (outs Variadic<KF_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind (`(` $inputs^ `:` type($inputs) `)`)? attr-dict-with-keyword
      $body `->` `(` type($results) `)`
  }];
  let hasVerifier = 1;
  let builders = [
    // A kernel of `kind` before any pass decided how to run it.
    OpBuilder<(ins "::mlir::TypeRange":$results, "::mlir::ValueRange":$inputs,
                   "KernelKind":$kind), [{
      build($_builder, $_state, results, inputs, kind, LaunchAttr(),
            ::mlir::Attribute(), ::mlir::Attribute(),
            ::mlir::DenseI64ArrayAttr(), ::mlir::DenseI64ArrayAttr(),
            ::mlir::StringAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The tiling as `T` (a KFAttrs.td tiling), or null.
    template <typename T> T getTilingAs() {
      return ::llvm::dyn_cast_or_null<T>(getTilingAttr());
    }
    /// The pipeline as `T` (a KFAttrs.td pipeline), or null.
    template <typename T> T getPipelineAs() {
      return ::llvm::dyn_cast_or_null<T>(getPipelineAttr());
    }
    /// Whether a warpgroup copies the operands with the TMA (the kernel
    /// then takes tensor maps after its buffers).
    bool copiesWithTma();
    /// Whether the kernel's template multiplies with Hopper's wgmma.
    bool usesWgmma();
    /// The index among `runtime_extents`' pairs of (input, dim), or -1.
    int64_t runtimeExtentIndex(unsigned input, int64_t dim);
    /// The results the kernel's blocks add into (atomics), which its
    /// launch zeroes first: FlashAttention backward's dq with dqAtomic.
    ::llvm::SmallVector<unsigned> resultsAddedInto();
  }];
}

def KF_YieldOp : KF_Op<"yield", [Pure, Terminator, HasParent<"KernelOp">]> {
  let summary = "the results of a kf.kernel";
  let arguments = (ins Variadic<KF_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // KF_OPS
