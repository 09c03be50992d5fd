"""kfuse.Graph and kfuse.Tensor: build a graph of tensor ops, as in the C++
frontend (include/kfuse/Graph.h), with PyTorch's names where they differ.

    g = kfuse.Graph("mlp")
    x = g.input("x", kfuse.bfloat16, ("M", 768))   # "M": a symbolic dim
    w = g.input("w", kfuse.bfloat16, (768, 3072))
    g.output("y", kfuse.gelu(x @ w))

Ops broadcast as NumPy does and promote dtypes as kfuse's frontend does;
a shape or dtype error raises kfuse.InvalidGraphError naming the op.
"""

import ctypes
import numbers
import operator

from . import _capi, dtypes
from ._capi import fn

_MAX_RANK = 8


def _text(value, what):
    """A str argument as the C API's bytes (TypeError naming `what`)."""
    if isinstance(value, bytes):
        value = value.decode()
    if not isinstance(value, str):
        raise TypeError(f"kfuse: {what} must be a str, got {value!r}")
    return value.encode()


def _size(dim, i, name):
    """Dim `i` of input `name`: a size (an int, >= 0) or a symbol's name."""
    if isinstance(dim, str) and dim:
        return dim
    try:
        size = _int_arg(dim, "a size")  # not 2.5 (it would truncate)
    except TypeError:
        size = None
    if size is not None and 0 <= size < 2 ** 62:
        return size
    raise _capi.errors.InvalidArgumentError(
        f"kfuse: input '{name}' dim {i} is {dim!r}: a size is an int >= 0 "
        "or a symbol's name")


class Graph:
    """A graph under construction: inputs, ops and named outputs."""

    def __init__(self, name="graph", *, _handle=None):
        self._handle = _handle or fn["kfuse_graph_create"](
            _text(name, "a graph's name"))
        self.name = name

    @classmethod
    def from_mlir(cls, text):
        """A graph from kf-dialect MLIR text (its function's arguments and
        results are the inputs and outputs)."""
        handle = _capi.c_graph()
        _capi.check(fn["kfuse_graph_from_mlir"](_text(text, "MLIR text"),
                                                ctypes.byref(handle)))
        return cls("mlir", _handle=handle.value)

    def __del__(self):
        if getattr(self, "_handle", None):
            fn["kfuse_graph_destroy"](self._handle)
            self._handle = None

    def input(self, name, dtype, shape):
        """An input; a dim given as a string is symbolic (bound per call)."""
        encoded = _text(name, "an input's name")
        dtype = dtypes.as_dtype(dtype)
        shape = tuple(_size(d, i, name) for i, d in enumerate(shape))
        if len(shape) > _MAX_RANK:
            raise _capi.errors.InvalidArgumentError(
                f"kfuse: input '{name}' has rank {len(shape)}; at most 8")
        sizes, rank = _capi.int64_array(
            0 if isinstance(d, str) else int(d) for d in shape)
        symbols = (ctypes.c_char_p * max(rank, 1))(
            *[d.encode() if isinstance(d, str) else None for d in shape])
        tid = fn["kfuse_input"](self._handle, encoded, dtype.code,
                                rank, sizes, symbols)
        return Tensor(self, _capi.check_tensor(tid, self._handle))

    def constant(self, value, dtype=dtypes.float32):
        """A scalar constant (it broadcasts against any shape). An integer
        or bool constant must hold `value` exactly."""
        dtype = dtypes.as_dtype(dtype)
        _check_exact(value, dtype)
        tid = fn["kfuse_constant"](self._handle, float(value), dtype.code)
        return Tensor(self, _capi.check_tensor(tid, self._handle))

    def output(self, name, value):
        _capi.check(fn["kfuse_output"](self._handle,
                                       _text(name, "an output's name"),
                                       self._id(value)))

    def iota(self, shape, dim, dtype=dtypes.int32):
        """Elements equal to their index along `dim`."""
        sizes, rank = _capi.int64_array(shape)
        tid = fn["kfuse_iota"](self._handle, rank, sizes, dim,
                               dtypes.as_dtype(dtype).code)
        return Tensor(self, _capi.check_tensor(tid, self._handle))

    def check(self):
        """Raises the graph's first build error, if it has one."""
        _capi.check(fn["kfuse_graph_status"](self._handle))

    def to_mlir(self):
        return _capi.take_string(fn["kfuse_graph_to_mlir"], self._handle)

    def explain_fusion(self, *, fusion="fused", json=False):
        """How kf-fuse partitions the graph: each edge's decision and
        reason (and the attention rewrites), as text or a JSON string."""
        return _capi.take_string(fn["kfuse_explain_fusion"], self._handle,
                                 int(fusion == "unfused"), int(json))

    @property
    def inputs(self):
        """(name, dtype, shape) of each input; symbolic dims are None."""
        return self._values(0)

    @property
    def outputs(self):
        return self._values(1)

    def _values(self, is_output):
        count = fn["kfuse_graph_num_values"](self._handle, is_output)
        values = []
        for i in range(count):
            name = ctypes.c_char_p()
            code = ctypes.c_int()
            rank = ctypes.c_int64()
            sizes = (ctypes.c_int64 * _MAX_RANK)()
            _capi.check(fn["kfuse_graph_value"](
                self._handle, is_output, i, ctypes.byref(name),
                ctypes.byref(code), ctypes.byref(rank), sizes, _MAX_RANK))
            shape = tuple(None if s < 0 else s for s in sizes[:rank.value])
            values.append((name.value.decode(), dtypes.of_code(code.value),
                           shape))
        return values

    def _id(self, value):
        if not isinstance(value, Tensor) or value.graph is not self:
            raise _capi.errors.InvalidArgumentError(
                f"kfuse: {value!r} is not a tensor of graph '{self.name}'")
        return value._id

    def _scalar(self, value, like):
        """A Python number as a constant of `like`'s dtype (f32 for a float
        against an integer tensor)."""
        dtype = like.dtype
        if isinstance(value, bool):
            dtype = dtypes.bool_
        elif isinstance(value, float) and not dtype.is_floating_point:
            dtype = dtypes.float32
        return self.constant(value, dtype)


_INTEGER_RANGES = {"bool": (0, 1), "int32": (-2**31, 2**31 - 1),
                   # Through a double in the C API: exact to 2^53.
                   "int64": (-2**53, 2**53)}


def _check_exact(value, dtype):
    """Raises where an integer or bool constant cannot hold `value` (it
    would wrap, truncate or round)."""
    bounds = _INTEGER_RANGES.get(dtype.name)
    if bounds is None:
        return
    if not isinstance(value, numbers.Number):
        value = _int_arg(value, "a constant")  # torch's SymInt: its hint
    exact = isinstance(value, (bool, numbers.Integral)) or (
        isinstance(value, float) and value.is_integer())
    if not exact or not bounds[0] <= value <= bounds[1]:
        raise _capi.errors.InvalidArgumentError(
            f"kfuse: the number {value!r} is not a {dtype.name} (a constant "
            f"of that dtype would not hold it; cast the tensor first)")


def _dim(dim, rank, what):
    """`dim` in [-rank, rank) as a dim of a tensor of `rank`."""
    dim = _int_arg(dim, f"{what}'s dim")
    if not -rank <= dim < rank:
        raise IndexError(f"kfuse: {what}: dim {dim!r} is out of range for "
                         f"a tensor of rank {rank}")
    return dim % rank


class Tensor:
    """A value of a Graph: an input, a constant or an op's result."""

    def __init__(self, graph, tensor_id):
        self.graph, self._id = graph, tensor_id

    @property
    def dtype(self):
        return self._info()[0]

    @property
    def shape(self):
        """The sizes; a symbolic dim is None."""
        return self._info()[1]

    @property
    def ndim(self):
        return len(self.shape)

    def _info(self):
        code = ctypes.c_int()
        rank = ctypes.c_int64()
        sizes = (ctypes.c_int64 * _MAX_RANK)()
        _capi.check(fn["kfuse_tensor_info"](self.graph._handle, self._id,
                                            ctypes.byref(code),
                                            ctypes.byref(rank), sizes,
                                            _MAX_RANK))
        return (dtypes.of_code(code.value),
                tuple(None if s < 0 else s for s in sizes[:rank.value]))

    def __repr__(self):
        return f"kfuse.Tensor(shape={self.shape}, dtype={self.dtype})"

    def _other(self, value):
        if isinstance(value, numbers.Number):
            return self.graph._scalar(value, self)
        self.graph._id(value)
        return value

    def _binary(self, op, other, reverse=False):
        other = self._other(other)
        a, b = (other, self) if reverse else (self, other)
        tid = fn["kfuse_binary"](self.graph._handle, op.encode(), a._id,
                                 b._id)
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))

    def _unary(self, op):
        tid = fn["kfuse_unary"](self.graph._handle, op.encode(), self._id)
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))

    __add__ = lambda self, o: self._binary("add", o)
    __radd__ = lambda self, o: self._binary("add", o, True)
    __sub__ = lambda self, o: self._binary("sub", o)
    __rsub__ = lambda self, o: self._binary("sub", o, True)
    __mul__ = lambda self, o: self._binary("mul", o)
    __rmul__ = lambda self, o: self._binary("mul", o, True)
    __truediv__ = lambda self, o: self._binary("div", o)
    __rtruediv__ = lambda self, o: self._binary("div", o, True)
    __pow__ = lambda self, o: self._binary("pow", o)
    __lt__ = lambda self, o: self._binary("lt", o)
    __le__ = lambda self, o: self._binary("le", o)
    __gt__ = lambda self, o: self._binary("gt", o)
    __ge__ = lambda self, o: self._binary("ge", o)
    __neg__ = lambda self: self._unary("neg")
    __abs__ = lambda self: self._unary("abs")

    def __matmul__(self, other):
        return matmul(self, other)

    def eq(self, other):
        return self._binary("eq", other)

    def ne(self, other):
        return self._binary("ne", other)

    def _reduce(self, op, dim, keepdim):
        axes = () if dim is None else (
            (dim,) if isinstance(dim, int) else tuple(dim))
        array, count = _capi.int64_array(axes)
        tid = fn["kfuse_reduce"](self.graph._handle, op.encode(), self._id,
                                 count, array, int(keepdim))
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))

    def sum(self, dim=None, keepdim=False):
        return self._reduce("sum", dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        return self._reduce("mean", dim, keepdim)

    def amax(self, dim=None, keepdim=False):
        return self._reduce("max", dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        return self._reduce("min", dim, keepdim)

    def logsumexp(self, dim=None, keepdim=False):
        """torch.logsumexp: max + log(sum(exp(x - max))), the max taken
        without a gradient (its exact gradient is zero)."""
        return self._reduce("logsumexp", dim, keepdim)

    def detach(self):
        """x itself, through which kfuse.grad sends no gradient (as
        torch's detach and JAX's stop_gradient)."""
        return self._unary("stop_gradient")

    def softmax(self, dim=-1):
        tid = fn["kfuse_softmax"](self.graph._handle, self._id,
                                  _int_arg(dim, "softmax's dim"))
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(
            shape[0], int) else shape
        sizes, rank = _capi.int64_array(shape)
        tid = fn["kfuse_reshape"](self.graph._handle, self._id, rank, sizes)
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))

    view = reshape

    def permute(self, *dims):
        dims = dims[0] if len(dims) == 1 and not isinstance(dims[0],
                                                            int) else dims
        perm, rank = _capi.int64_array(dims)
        tid = fn["kfuse_transpose"](self.graph._handle, self._id, rank, perm)
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))

    def transpose(self, dim0, dim1):
        """Swaps two dims, as torch.transpose."""
        rank = self.ndim
        dim0, dim1 = (_dim(d, rank, "transpose") for d in (dim0, dim1))
        perm = list(range(rank))
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        return self.permute(perm)

    @property
    def T(self):
        return self.permute(list(reversed(range(self.ndim))))

    def expand(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(
            shape[0], int) else shape
        sizes, rank = _capi.int64_array(shape)
        tid = fn["kfuse_broadcast_to"](self.graph._handle, self._id, rank,
                                       sizes)
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))

    def to(self, dtype):
        tid = fn["kfuse_cast"](self.graph._handle, self._id,
                               dtypes.as_dtype(dtype).code)
        return Tensor(self.graph, _capi.check_tensor(tid, self.graph._handle))


def _unary_op(name, doc):
    def op(x):
        return x._unary(name)
    op.__name__, op.__doc__ = name, doc
    return op


neg = _unary_op("neg", "-x")
abs = _unary_op("abs", "|x|")
relu = _unary_op("relu", "max(x, 0)")
exp = _unary_op("exp", "e^x")
log = _unary_op("log", "the natural logarithm")
sqrt = _unary_op("sqrt", "the square root")
rsqrt = _unary_op("rsqrt", "1 / sqrt(x)")
sin = _unary_op("sin", "sine")
cos = _unary_op("cos", "cosine")
tanh = _unary_op("tanh", "hyperbolic tangent")
sigmoid = _unary_op("sigmoid", "1 / (1 + e^-x)")
erf = _unary_op("erf", "the error function")
gelu = _unary_op("gelu", "the exact GELU, x * Phi(x)")
silu = _unary_op("silu", "x * sigmoid(x)")
reciprocal = _unary_op("reciprocal", "1 / x")

# The same as methods: x.exp(), x.sigmoid(), ...
for _op in (neg, abs, relu, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid,
            erf, silu, reciprocal):
    setattr(Tensor, _op.__name__, _op)


def _tensor_arg(value, what):
    """`value`, which must be a kfuse Tensor (a TypeError naming `what`)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"kfuse: {what} must be a kfuse Tensor, got "
                        f"{value!r}")
    return value


def _int_arg(value, what):
    """`value`, which must be an integer (a TypeError naming `what`):
    Python's, NumPy's, or an object that converts to one, such as torch's
    SymInt (its size hint); never a float, bool or None."""
    if not isinstance(value, (bool, float, str)) and value is not None:
        try:
            return operator.index(value)
        except TypeError:
            try:
                return int(value)
            except (TypeError, ValueError):
                pass
    raise TypeError(f"kfuse: {what} must be an int, got {value!r}")


def _binary_of(name, a, b):
    """a <name> b with either operand a number (in the other's dtype)."""
    if isinstance(a, Tensor):
        return a._binary(name, b)
    if isinstance(b, Tensor) and isinstance(a, numbers.Number):
        return b.graph._scalar(a, b)._binary(name, b)
    raise TypeError(f"kfuse.{name}: needs a kfuse Tensor operand, got "
                    f"{a!r} and {b!r}")


def maximum(a, b):
    return _binary_of("maximum", a, b)


def minimum(a, b):
    return _binary_of("minimum", a, b)


def pow(a, b):
    return _binary_of("pow", a, b)


def where(cond, on_true, on_false):
    """cond ? on_true : on_false, cond of dtype bool; all three broadcast.
    A number takes the other branch's dtype."""
    g = _tensor_arg(cond, "kfuse.where's condition").graph

    def value(x, other):
        if not isinstance(x, numbers.Number):
            return x
        if isinstance(other, Tensor):
            return g._scalar(x, other)
        return g.constant(x)

    a, b = value(on_true, on_false), value(on_false, on_true)
    tid = fn["kfuse_where"](g._handle, cond._id, g._id(a), g._id(b))
    return Tensor(g, _capi.check_tensor(tid, g._handle))


def matmul(a, b, *, transpose_a=False, transpose_b=False, out_dtype=None):
    """[batch..., M, K] @ [batch..., K, N] (b may be rank 2, shared by
    every batch). out_dtype=kfuse.float32 keeps the accumulator unrounded."""
    code = -1 if out_dtype is None else dtypes.as_dtype(out_dtype).code
    tid = fn["kfuse_matmul"](a.graph._handle, a._id, a.graph._id(b),
                             int(transpose_a), int(transpose_b), code)
    return Tensor(a.graph, _capi.check_tensor(tid, a.graph._handle))


def softmax(x, dim=-1):
    return x.softmax(dim)


def scaled_dot_product_attention(q, k, v, attn_mask=None, bias=None,
                                 is_causal=False, scale=None,
                                 return_lse=False):
    """softmax(scale * q k^T [+ bias] [masked]) v, one FlashAttention kernel
    on Hopper. q [B, H, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv]; a
    bool attn_mask is True where a query attends (PyTorch's convention).
    With return_lse, also each query row's log-sum-exp (f32 [B, H, Sq])."""
    g = q.graph
    lse = _capi.c_tensor(-1)
    tid = fn["kfuse_attention"](
        g._handle, q._id, g._id(k), g._id(v),
        -1 if attn_mask is None else g._id(attn_mask),
        -1 if bias is None else g._id(bias), int(scale is not None),
        float(scale or 0.0), int(is_causal),
        ctypes.byref(lse) if return_lse else None)
    out = Tensor(g, _capi.check_tensor(tid, g._handle))
    return (out, Tensor(g, lse.value)) if return_lse else out


attention = scaled_dot_product_attention
