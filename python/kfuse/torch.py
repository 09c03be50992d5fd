"""PyTorch code through kfuse: an fx graph converted into a kfuse graph.

    compiled = kfuse.torch.compile(model, (x,))   # torch.fx.symbolic_trace
    y = compiled(x)                               # CUDA tensors, zero-copy
    kfuse.torch.explain(model, x)                 # what converts, what not

With PyTorch 2, `torch.compile(model, backend="kfuse")` hands kfuse the
graphs Dynamo captures; a graph with an op kfuse cannot take runs in
PyTorch instead, and `kfuse.torch.explain` says which op and why.

Parameters and buffers become graph inputs, passed at each call without a
copy. Each new set of input shapes is converted and compiled once (kfuse's
own caches make a recompile of a known shape cheap).
"""

import copy
import math
import operator

import torch
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

from . import dtypes, graph as kgraph, indexing as kindex
from . import partition as kpartition, torch_autograd as kautograd
from .executable import BoundRun as _BoundRun, compile as _compile, \
    evaluate as _evaluate


class Unsupported(Exception):
    """An fx node kfuse has no conversion for; the message says which."""


_DTYPES = {torch.float32: dtypes.float32, torch.float16: dtypes.float16,
           torch.bfloat16: dtypes.bfloat16, torch.int32: dtypes.int32,
           torch.int64: dtypes.int64, torch.bool: dtypes.bool_}


_TORCH_DTYPES = {v.name: k for k, v in _DTYPES.items()}


def _kfuse_dtype(torch_dtype, what):
    if torch_dtype not in _DTYPES:
        raise Unsupported(f"{what}: dtype {torch_dtype} (kfuse has float32, "
                          "float16, bfloat16, int32, int64, bool)")
    return _DTYPES[torch_dtype]


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (kgraph.tanh(inner) + 1.0)
    return kgraph.gelu(x)


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = tuple(range(-len(normalized_shape), 0))
    centered = x - x.mean(dims, keepdim=True)
    y = centered * kgraph.rsqrt((centered * centered).mean(dims, keepdim=True)
                                + eps)
    if weight is not None:
        y = y * weight
    return y + bias if bias is not None else y


def _rms_norm(x, normalized_shape, weight=None, eps=None):
    """F.rms_norm: without an eps, torch's is its dtype's machine epsilon."""
    dims = tuple(range(-len(normalized_shape), 0))
    if eps is None:
        torch_dtype = next(t for t, k in _DTYPES.items() if k == x.dtype)
        eps = torch.finfo(torch_dtype).eps
    y = x * kgraph.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y


def _matmul(a, b):
    """torch.matmul, 1-D operands included: a vector on the left is a row
    ([n] as [1, n]), on the right a column, and that dim is dropped from
    the product."""
    if not isinstance(a, kgraph.Tensor) or not isinstance(b, kgraph.Tensor):
        raise Unsupported("matmul of a host value")
    if a.ndim >= 2 and b.ndim >= 2:
        return kgraph.matmul(a, b)
    row, column = a.ndim == 1, b.ndim == 1
    product = kgraph.matmul(a.reshape(1, *a.shape) if row else a,
                            b.reshape(*b.shape, 1) if column else b)
    shape = list(product.shape)
    if column:
        shape.pop(-1)
    if row:
        shape.pop(-2 if not column else -1)
    return product.reshape(*shape)


def _linear(x, weight, bias=None):
    """F.linear: x @ weight.T (+ bias), x of any rank >= 1."""
    flat = x.reshape(1, x.shape[0]) if x.ndim == 1 else x
    y = kgraph.matmul(flat, weight, transpose_b=True)
    if x.ndim == 1:
        y = y.reshape(y.shape[-1])
    return y + bias if bias is not None else y


def _softmax(x, dim=None, dtype=None, **_):
    if dtype is not None:
        x = x.to(_kfuse_dtype(dtype, "softmax"))
    if dim is None:  # torch's implicit dim (deprecated, but still taken)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return x.softmax(dim)


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
          scale=None, enable_gqa=False):
    if dropout_p:
        raise Unsupported("scaled_dot_product_attention with dropout")
    mask = bias = None
    if attn_mask is not None:
        if attn_mask.dtype is dtypes.bool_:
            mask = attn_mask
        else:
            bias = attn_mask
    return kgraph.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, bias=bias, is_causal=is_causal, scale=scale)


def _reshape(x, *shape):
    shape = list(shape[0] if len(shape) == 1 and isinstance(
        shape[0], (list, tuple, torch.Size)) else shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = math.prod(x.shape) // max(known, 1)
    return x.reshape(shape)


def _transpose(x, dim0, dim1):
    return x.transpose(dim0, dim1)


def _t(x):
    return x if x.ndim < 2 else x.transpose(0, 1)


def _expand(x, *shape):
    shape = list(shape[0] if len(shape) == 1 and isinstance(
        shape[0], (list, tuple, torch.Size)) else shape)
    lead = len(shape) - x.ndim
    return x.expand([x.shape[i - lead] if s == -1 else s
                     for i, s in enumerate(shape)])


def _addmm(bias, a, b, beta=1, alpha=1):
    """torch.addmm / baddbmm: beta * bias + alpha * (a @ b)."""
    product = kgraph.matmul(a, b)
    product = product if alpha == 1 else product * alpha
    return product + (bias if beta == 1 else bias * beta)


def _add(a, b, alpha=1):
    """torch.add: a + alpha * b."""
    return a + (b if alpha == 1 else b * alpha)


def _sub(a, b, alpha=1):
    """torch.sub: a - alpha * b."""
    return a - (b if alpha == 1 else b * alpha)


def _div(a, b, rounding_mode=None):
    """torch.div: true division, or rounded down ("floor")."""
    if rounding_mode is None:
        return a / b
    if rounding_mode == "floor":
        return kindex.floor(a / b)
    raise Unsupported(f"div with rounding_mode={rounding_mode!r}")


def _masked_fill(x, mask, value):
    return kgraph.where(mask, value, x)


def _compare(op):
    """A comparison of tensors or host values (either side a scalar)."""
    def compare(a, b):
        if not isinstance(a, kgraph.Tensor) and isinstance(b, kgraph.Tensor):
            flipped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
            return _compare(flipped.get(op, op))(b, a)
        if not isinstance(a, kgraph.Tensor):
            return getattr(operator, op)(a, b)
        return a.eq(b) if op == "eq" else a.ne(b) if op == "ne" else \
            getattr(operator, op)(a, b)
    return compare


def _logic(op):
    """&, |, ^ and ~ of bool tensors (as masks are built); of integers they
    are bitwise, which kfuse has no op for."""
    def logic(*args):
        for a in args:
            if isinstance(a, kgraph.Tensor) and a.dtype is not dtypes.bool_:
                raise Unsupported(f"bitwise {op} of {a.dtype} tensors (only "
                                  "bool ones are logical)")
        return getattr(kindex, f"logical_{op}")(*args)
    return logic


def _new_ones(x, *size, dtype=None, **_):
    size = size[0] if len(size) == 1 and isinstance(
        size[0], (list, tuple, torch.Size)) else size
    dt = x.dtype if dtype is None else _kfuse_dtype(dtype, "new_ones")
    return x.graph.constant(1, dt).expand(tuple(size))


def _diff(x, n=1, dim=-1, prepend=None, append=None):
    """torch.diff: x[i + 1] - x[i] along `dim`, after prepending and
    appending."""
    parts = [t for t in (prepend, x, append) if t is not None]
    x = kindex.cat(parts, dim) if len(parts) > 1 else x
    for _ in range(n):
        length = x.shape[dim]
        x = kindex.slice_(x, dim, 1, length) - kindex.slice_(
            x, dim, 0, length - 1)
    return x


def _to(x, *args, **kwargs):
    """Tensor.to: a dtype, or another tensor's (`x.to(y)`); devices and
    copy flags change nothing here."""
    target = kwargs.get("dtype")
    for a in list(args) + [kwargs.get("other")]:
        if isinstance(a, kgraph.Tensor):
            return x.to(a.dtype)
        if isinstance(a, torch.dtype):
            target = a
    return x if target is None else x.to(_kfuse_dtype(target, "to"))


def _dropout(x, p=0.5, training=True, inplace=False):
    # Training-mode dropout needs a seed input the fx graph does not have:
    # refused rather than silently skipped.
    if training and p > 0:
        raise Unsupported("dropout in training mode (build the graph with "
                          "kfuse.dropout and a seed input)")
    return x


def _pad(x, pad, mode="constant", value=None):
    if mode != "constant":
        raise Unsupported(f"pad mode '{mode}' (kfuse pads with a constant)")
    return kindex.pad(x, pad, 0.0 if value is None else value)


def _round(x, decimals=0):
    if decimals:
        raise Unsupported("round with decimals")
    return kindex.round(x)


def _unsqueeze(x, dim):
    dim = dim % (x.ndim + 1)
    return x.reshape(x.shape[:dim] + (1,) + x.shape[dim:])


def _squeeze(x, dim=None):
    dims = range(x.ndim) if dim is None else [d % x.ndim for d in (
        dim if isinstance(dim, (list, tuple)) else [dim])]
    shape = [s for d, s in enumerate(x.shape) if not (d in dims and s == 1)]
    return x.reshape(shape)


def _split(x, size, dim=0):
    n = x.shape[dim]
    sizes = size if isinstance(size, (list, tuple)) else \
        [min(size, n - i) for i in range(0, n, size)]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return tuple(kindex.slice_(x, dim, a, a + b) for a, b in zip(starts, sizes))


def _chunk(x, chunks, dim=0):
    return _split(x, -(-x.shape[dim] // chunks), dim)


def _embedding(input, weight, padding_idx=None, max_norm=None,
               norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """F.embedding: rows of `weight` picked by `input`. As in torch, the
    row `padding_idx` is read as it is but takes no gradient. max_norm
    (which renormalises the weight's rows in place), gradients scaled by
    frequency and sparse gradients are left to PyTorch."""
    if max_norm is not None:
        raise Unsupported("embedding with max_norm (it renormalises the "
                          "weight's rows in place)")
    if scale_grad_by_freq or sparse:
        raise Unsupported("embedding with scale_grad_by_freq or sparse "
                          "gradients")
    if padding_idx is not None:
        rows = weight.shape[0]
        if rows is None:
            raise Unsupported("embedding with padding_idx over a table of "
                              "symbolic rows")
        at = weight.graph.iota((rows, 1), 0, dtypes.int64).eq(
            padding_idx % rows)
        weight = kgraph.where(at, kindex.stop_gradient(weight), weight)
    return kindex.embedding(input, weight)


def _cross_entropy(x, target, weight=None, size_average=None,
                   ignore_index=-100, reduce=None, reduction="mean",
                   label_smoothing=0.0):
    """F.cross_entropy over [N, C] logits and [N] class indices, written
    from primitives kfuse fuses into one row kernel."""
    if weight is not None or x.ndim != 2 or target.ndim != 1:
        raise Unsupported("cross_entropy other than [N, C] logits with [N] "
                          "class indices and no class weights")
    if size_average is not None or reduce is not None:
        raise Unsupported("cross_entropy with the deprecated size_average or "
                          "reduce (use reduction=)")
    x = x.to(dtypes.float32)
    lse = x.logsumexp(1, keepdim=True)
    nll = lse - kindex.gather(x, 1, target.reshape(target.shape[0], 1))
    if label_smoothing:
        nll = nll * (1.0 - label_smoothing) + (lse - x.mean(
            1, keepdim=True)) * label_smoothing
    valid = target.reshape(target.shape[0], 1).ne(ignore_index)
    loss = kgraph.where(valid, nll, 0.0).reshape(target.shape[0])
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / valid.to(dtypes.float32).sum()


def _reduce(name):
    def reduce(x, dim=None, keepdim=False, dtype=None):
        if dtype is not None:
            x = x.to(_kfuse_dtype(dtype, name))
        return getattr(x, name)(dim, keepdim)
    return reduce


def _cumsum(x, dim, dtype=None):
    """torch.cumsum: integer sums come out int64 (here summed in int32 and
    widened, exact below 2^31)."""
    if dtype is not None and dtype != torch.int64:
        x = x.to(_kfuse_dtype(dtype, "cumsum"))
    integer = not x.dtype.is_floating_point
    if integer and x.dtype != dtypes.int32:
        x = x.to(dtypes.int32)
    out = kindex.cumsum(x, dim)
    return out.to(dtypes.int64) if integer or dtype == torch.int64 else out


# torch callables, and tensor method names, to their kfuse form.
_FUNCTIONS = {
    operator.add: lambda a, b: a + b, torch.add: _add,
    operator.sub: lambda a, b: a - b, torch.sub: _sub,
    operator.mul: lambda a, b: a * b, torch.mul: lambda a, b: a * b,
    operator.truediv: lambda a, b: a / b, torch.div: _div,
    operator.neg: lambda a: -a, torch.neg: lambda a: -a,
    operator.matmul: _matmul, torch.matmul: _matmul,
    torch.bmm: kgraph.matmul,
    operator.pow: kgraph.pow, torch.pow: kgraph.pow,
    torch.exp: kgraph.exp, torch.log: kgraph.log, torch.tanh: kgraph.tanh,
    torch.sigmoid: kgraph.sigmoid, torch.rsqrt: kgraph.rsqrt,
    torch.sqrt: kgraph.sqrt, torch.relu: kgraph.relu,
    F.relu: lambda x, inplace=False: kgraph.relu(x),
    torch.abs: kgraph.abs, torch.where: kgraph.where,
    torch.maximum: kgraph.maximum, torch.minimum: kgraph.minimum,
    F.silu: lambda x, inplace=False: kgraph.silu(x), F.gelu: _gelu, F.linear: _linear,
    F.layer_norm: _layer_norm, torch.softmax: _softmax,
    F.softmax: _softmax, torch.reshape: _reshape,
    torch.transpose: _transpose, torch.permute: lambda x, *d: x.permute(*d),
    torch.mean: _reduce("mean"), torch.sum: _reduce("sum"),
    F.dropout: _dropout,
    torch.cat: kindex.cat, torch.concat: kindex.cat, F.pad: _pad,
    F.embedding: _embedding,
    torch.index_select: kindex.index_select, torch.gather: kindex.gather,
    torch.index_add: kindex.index_add,
    torch.narrow: lambda x, dim, start, length: kindex.slice_(
        x, dim, start, start + length),
    torch.floor: kindex.floor, torch.round: _round,
    torch.remainder: kindex.remainder, operator.mod: kindex.remainder,
    torch.logical_and: kindex.logical_and,
    torch.logical_or: kindex.logical_or,
    torch.logical_xor: kindex.logical_xor,
    torch.logical_not: kindex.logical_not,
    operator.and_: _logic("and"), operator.or_: _logic("or"),
    operator.xor: _logic("xor"), operator.invert: _logic("not"),
    torch.bitwise_and: _logic("and"), torch.bitwise_or: _logic("or"),
    torch.bitwise_not: _logic("not"),
    operator.getitem: lambda x, key: x[key],
    # Dynamo's symbolic graphs build the sizes given to view and expand.
    torch.Size: lambda dims: tuple(dims),
    torch.unsqueeze: _unsqueeze, torch.squeeze: _squeeze,
    torch.split: _split, torch.chunk: _chunk,
    F.cross_entropy: _cross_entropy,
    torch.argmax: kindex.argmax, torch.argmin: kindex.argmin,
    torch.cumsum: _cumsum,
    torch.logsumexp: kindex.logsumexp, torch.detach: kindex.stop_gradient,
    torch.addmm: _addmm, torch.baddbmm: _addmm, torch.t: _t,
    torch.cos: kgraph.cos, torch.sin: kgraph.sin,
    torch.masked_fill: _masked_fill, torch.diff: _diff,
    operator.lt: _compare("lt"), operator.le: _compare("le"),
    operator.gt: _compare("gt"), operator.ge: _compare("ge"),
    operator.eq: _compare("eq"), operator.ne: _compare("ne"),
    torch.lt: _compare("lt"), torch.le: _compare("le"),
    torch.gt: _compare("gt"), torch.ge: _compare("ge"),
    torch.eq: _compare("eq"), torch.ne: _compare("ne"),
}
if hasattr(F, "scaled_dot_product_attention"):
    _FUNCTIONS[F.scaled_dot_product_attention] = _sdpa
if hasattr(F, "rms_norm"):
    _FUNCTIONS[F.rms_norm] = _rms_norm

_METHODS = {
    "view": _reshape, "reshape": _reshape, "permute": lambda x, *d:
    x.permute(*d), "transpose": _transpose, "contiguous": lambda x: x,
    "to": _to, "float": lambda x: x.to(dtypes.float32),
    "half": lambda x: x.to(dtypes.float16),
    "bfloat16": lambda x: x.to(dtypes.bfloat16), "mean": _reduce("mean"),
    "sum": _reduce("sum"), "softmax": _softmax, "exp": kgraph.exp,
    "tanh": kgraph.tanh, "sigmoid": kgraph.sigmoid, "rsqrt": kgraph.rsqrt,
    "pow": kgraph.pow, "relu": kgraph.relu,
    "add": _add, "mul": lambda a, b: a * b,
    "size": lambda x, dim=None: x.shape if dim is None else x.shape[dim],
    "floor": kindex.floor, "round": _round, "remainder": kindex.remainder,
    "gather": kindex.gather, "index_select": kindex.index_select,
    "index_add": kindex.index_add,
    "narrow": lambda x, dim, start, length: kindex.slice_(
        x, dim, start, start + length),
    "unsqueeze": _unsqueeze, "squeeze": _squeeze, "split": _split,
    "chunk": _chunk, "logical_not": kindex.logical_not,
    "logical_and": kindex.logical_and, "logical_or": kindex.logical_or,
    "dim": lambda x: x.ndim, "argmax": kindex.argmax,
    "argmin": kindex.argmin, "cumsum": _cumsum,
    "logsumexp": kindex.logsumexp, "detach": kindex.stop_gradient,
    "t": _t, "expand": _expand, "cos": kgraph.cos, "sin": kgraph.sin,
    "log": kgraph.log, "sqrt": kgraph.sqrt, "abs": kgraph.abs,
    "neg": lambda x: -x, "sub": _sub,
    "div": _div, "clone": lambda x, **_: x,
    "type_as": lambda x, other: x.to(other.dtype),
    "masked_fill": _masked_fill, "matmul": _matmul,
    "new_ones": _new_ones, "__eq__": _compare("eq"), "__ne__": _compare("ne"),
    "__and__": _logic("and"), "__or__": _logic("or"),
    "__xor__": _logic("xor"), "__invert__": _logic("not"),
    "bitwise_and": _logic("and"), "bitwise_or": _logic("or"),
    "bitwise_not": _logic("not"),
    "eq": _compare("eq"), "ne": _compare("ne"), "lt": _compare("lt"),
    "le": _compare("le"), "gt": _compare("gt"), "ge": _compare("ge"),
}

# Modules by type: each takes the module, its parameters as kfuse tensors
# (p("weight"), None where the module has none) and the input.
_MODULES = {
    torch.nn.Linear: lambda m, p, x: _linear(x, p("weight"), p("bias")),
    torch.nn.LayerNorm: lambda m, p, x: _layer_norm(
        x, m.normalized_shape, p("weight"), p("bias"), m.eps),
    torch.nn.GELU: lambda m, p, x: _gelu(x, m.approximate),
    torch.nn.SiLU: lambda m, p, x: kgraph.silu(x),
    torch.nn.ReLU: lambda m, p, x: kgraph.relu(x),
    torch.nn.Tanh: lambda m, p, x: kgraph.tanh(x),
    torch.nn.Sigmoid: lambda m, p, x: kgraph.sigmoid(x),
    torch.nn.Softmax: lambda m, p, x: _softmax(x, m.dim),
    torch.nn.Dropout: lambda m, p, x: _dropout(x, m.p, m.training),
    torch.nn.Embedding: lambda m, p, x: _embedding(
        x, p("weight"), m.padding_idx, m.max_norm, m.norm_type,
        m.scale_grad_by_freq, m.sparse),
    torch.nn.Identity: lambda m, p, x: x,
}
if hasattr(torch.nn, "RMSNorm"):
    _MODULES[torch.nn.RMSNorm] = lambda m, p, x: _rms_norm(
        x, m.normalized_shape, p("weight"), m.eps)


def _name(node):
    return node.name.replace(".", "_")


class _Opaque:
    """The result of a node PyTorch computes whose shape is unknown: any
    kfuse op given it fails, so its users stay in PyTorch too."""

    def __init__(self, node):
        self.node = node


class Converter:
    """One fx graph, for one set of input shapes, as a kfuse graph whose
    inputs are the fx placeholders, then the parameters and buffers the
    graph reads (in `param_names` order)."""

    def __init__(self, gm, example_inputs):
        self.gm, self.example = gm, list(example_inputs)
        self.graph = kgraph.Graph(type(gm).__name__)
        self.env, self.param_names, self.params = {}, [], {}

    def convert(self):
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.example):
            raise Unsupported(f"{len(placeholders)} inputs in the graph, "
                              f"{len(self.example)} given")
        for node, value in zip(placeholders, self.example):
            self.env[node] = self._input(_name(node), value)
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                return self._outputs(node.args[0])
            try:
                self.env[node] = self._node(node)
            except Unsupported as e:
                raise Unsupported(f"{node.format_node()}: {e}") from None
            except kgraph._capi.errors.Error as e:
                raise Unsupported(f"{node.format_node()}: {e}") from None
        raise Unsupported("the graph has no output")

    tensor_type = kgraph.Tensor

    @staticmethod
    def name_of(node):
        return _name(node)

    def _input(self, name, value):
        if not isinstance(value, torch.Tensor):
            return value
        return self.graph.input(name, _kfuse_dtype(value.dtype, name),
                                tuple(value.shape))

    def stand_in(self, node, example):
        """A graph input standing for the result of a node kfuse leaves to
        PyTorch (`example`: its shape and dtype), so that the nodes after
        it can be judged; a value no op accepts when there is none."""
        try:
            shape, dtype = example
            return self.graph.input("standin_" + _name(node),
                                    _kfuse_dtype(dtype, _name(node)), shape)
        except (TypeError, Unsupported):
            return _Opaque(node)

    def param_value(self, qualified):
        """The tensor of a parameter, a buffer or a constant fx folded (a
        plain tensor attribute such as `_tensor_constant0`)."""
        value = self.gm
        for atom in qualified.split("."):
            value = getattr(value, atom)
        return value

    def param(self, qualified):
        """The graph input of parameter or buffer `qualified`."""
        if qualified not in self.params:
            value = self.param_value(qualified)
            self.params[qualified] = self._input("p_" + qualified.replace(
                ".", "_"), value)
            self.param_names.append(qualified)
        return self.params[qualified]

    def _arg(self, a):
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self._arg(x) for x in a)
        return a

    def _node(self, node):
        args = [self._arg(a) for a in node.args]
        kwargs = {k: self._arg(v) for k, v in node.kwargs.items()}
        if node.op == "get_attr":
            return self.param(node.target)
        if node.op == "call_module":
            module = self.gm.get_submodule(node.target)
            convert = _MODULES.get(type(module))
            if convert is None:
                raise Unsupported(f"module {type(module).__name__}")

            def p(attr):
                if getattr(module, attr, None) is None:
                    return None
                return self.param(f"{node.target}.{attr}")
            return convert(module, p, *args, **kwargs)
        if node.op == "call_function":
            if node.target is torch.arange:
                return self._arange(*args, **kwargs)
            if node.target is operator.getitem and isinstance(
                    args[0], (tuple, list, torch.Size)):
                return args[0][args[1]]
            convert = _FUNCTIONS.get(node.target)
            if convert is None:
                raise Unsupported(f"function {getattr(node.target, '__name__', node.target)}")
            return convert(*args, **kwargs)
        if node.op == "call_method":
            convert = _METHODS.get(node.target)
            if convert is None:
                raise Unsupported(f"method Tensor.{node.target}")
            return convert(*args, **kwargs)
        raise Unsupported(f"fx op {node.op}")

    def _arange(self, *bounds, dtype=None, **_):
        """torch.arange as an iota: int64 unless a bound is floating (then
        float32), or `dtype`. Under Dynamo's symbolic sizes a bound is a
        SymInt, which is integral too."""
        start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (
            bounds[0], bounds[1], bounds[2] if len(bounds) > 2 else 1)
        floating = (float, getattr(torch, "SymFloat", float))
        integral = not any(isinstance(b, floating) for b in (start, end, step))
        dt = _kfuse_dtype(dtype, "arange") if dtype is not None else (
            dtypes.int64 if integral else dtypes.float32)
        count = max(0, math.ceil((end - start) / step))
        values = self.graph.iota((count,), 0, dt)
        if step != 1:
            values = values * step
        return values + start if start else values

    def _outputs(self, result):
        """The fx outputs as graph outputs; returns how to give them back:
        (one value rather than a tuple, [None for the next graph output or
        a host value (a size) known once the shapes are)])."""
        single = not isinstance(result, (tuple, list))
        values = [result] if single else list(result)
        layout = []
        for i, value in enumerate(self._arg(v) for v in values):
            if isinstance(value, kgraph.Tensor):
                self.graph.output(f"out{len(self.graph.outputs)}", value)
                layout.append(None)
            elif isinstance(value, (int, float, bool, tuple, torch.Size)):
                layout.append(value)
            else:
                raise Unsupported(f"output {i} is not a tensor")
        if all(v is not None for v in layout):
            raise Unsupported("the graph computes no tensor")
        return single, layout


class _Reference:
    """A kfuse graph run by the float64 reference evaluator on CPU tensors,
    results in the graph's dtypes: kfuse.torch's parts checked in a test
    with no GPU."""

    def __init__(self, graph):
        self.graph = graph

    def __call__(self, *tensors):
        arrays = [t.detach().float().numpy() if t.dtype == torch.bfloat16
                  else t.detach().numpy() for t in tensors]
        results = [torch.from_numpy(a).to(_TORCH_DTYPES[d.name]) for a, (
            _, d, _) in zip(_evaluate(self.graph, *arrays), self.graph.outputs)]
        return results[0] if len(results) == 1 else tuple(results)


class _Entry:
    """One set of input shapes: the graph, how it runs, the parameters it
    reads, how its outputs are given back, and its backwards by the inputs
    they differentiate."""

    def __init__(self, graph, run, params, single, layout):
        self.graph, self.run, self.params = graph, run, params
        self.single, self.layout, self.backwards = single, layout, {}


class CompiledModule:
    """A traced module or fx graph, run by kfuse: converted and compiled
    once per set of input shapes and dtypes (with reference=True, run by
    the float64 evaluator on CPU tensors instead). Where an input or a
    parameter requires grad (and grad mode is on), the call is recorded for
    autograd and the backward runs through kfuse too (torch_autograd.py)."""

    def __init__(self, gm, compile_options, reference=False, static=False):
        self.gm, self.options, self._by_signature = gm, compile_options, {}
        self.reference = reference
        # Set for graphs Dynamo compiled with static shapes: its guards
        # hold every call to the first one's shapes, dtypes, strides,
        # devices and grad mode, so calls after it run bound (_Bound).
        self.static, self._bound = static, None

    def _runner(self, graph):
        return _Reference(graph) if self.reference else _compile(
            graph, **self.options)

    def _build(self, args):
        converter = Converter(self.gm, args)
        single, layout = converter.convert()
        params = [converter.param_value(n) for n in converter.param_names]
        return _Entry(converter.graph, self._runner(converter.graph), params,
                      single, layout)

    def __call__(self, *args):
        if self._bound is not None:
            return self._bound(args)
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor)
                    else a for a in args)
        entry = self._by_signature.get(key)
        if entry is None:
            entry = self._by_signature[key] = self._build(args)
        inputs = [a for a in args if isinstance(a, torch.Tensor)]
        if kautograd.wants_gradients(inputs + entry.params):
            result = kautograd.run(entry.backwards, entry.graph,
                                   self._runner, inputs + entry.params)
        else:  # the inference path, kept short: parameters detached only
            result = entry.run(*inputs, *[p.detach() for p in entry.params])
            if self.static and not self.reference and all(
                    t.is_cuda for t in inputs + entry.params):
                self._bound = _Bound(entry, args, result)
        result = iter(result if isinstance(result, tuple) else (result,))
        values = tuple(next(result) if v is None else v
                       for v in entry.layout)
        return values[0] if entry.single else values


class _Bound:
    """The calls of a CompiledModule after its first, where Dynamo's
    guards hold them to the first's shapes, dtypes, strides and devices:
    outputs allocated as the first's, the run bound (executable.BoundRun)."""

    def __init__(self, entry, args, result):
        self.entry = entry
        self.positions = [i for i, a in enumerate(args)
                          if isinstance(a, torch.Tensor)]
        outputs = list(result) if isinstance(result, tuple) else [result]
        self.outputs = [(o.shape, o.dtype, o.device) for o in outputs]
        self.run = _BoundRun(entry.run, self._tensors(args), outputs)

    def _tensors(self, args):
        return [args[i] for i in self.positions] + self.entry.params

    def __call__(self, args):
        out = [torch.empty(shape, dtype=dtype, device=device)
               for shape, dtype, device in self.outputs]
        result = iter(self.run(self._tensors(args), out))
        values = tuple(next(result) if v is None else v
                       for v in self.entry.layout)
        return values[0] if self.entry.single else values


class _Part(torch.nn.Module):
    """A part of a partitioned graph, as the submodule its call names."""

    def __init__(self, gm, compile_options, reference, static=False):
        super().__init__()
        self.compiled = CompiledModule(gm, compile_options, reference, static)

    def forward(self, *args):
        return self.compiled(*args)


def _trace(module):
    if isinstance(module, torch.fx.GraphModule):
        return module
    return torch.fx.symbolic_trace(module)


def _partitioned(gm, example_inputs, compile_options, reference=False,
                 static=False):
    """`gm` with each part kfuse converts run by kfuse and the rest by
    PyTorch: (the GraphModule, the number of parts, why each node left to
    PyTorch was left). `static`: Dynamo guards every call's shapes to the
    first's (CompiledModule)."""
    if not any("example_value" in n.meta or "val" in n.meta
               for n in gm.graph.nodes):  # traced, not captured by Dynamo
        ShapeProp(gm).propagate(*example_inputs)
    fused, parts, why = kpartition.partition(gm, Converter(gm, example_inputs))
    for name in parts:
        setattr(fused, name, _Part(getattr(fused, name), compile_options,
                                   reference, static))
    return fused, len(parts), why


def compile(module, example_inputs=None, fallback=False, reference=False,
            **compile_options):
    """`module` (an nn.Module or fx.GraphModule, in eval mode: dropout is
    the identity) traced with torch.fx.symbolic_trace and run by kfuse.
    With example inputs the conversion is checked now, raising Unsupported
    naming the first op kfuse cannot take; with fallback=True (example
    inputs needed) such ops run in PyTorch and the parts between them in
    kfuse. reference=True runs kfuse's parts with the float64 reference
    evaluator on CPU tensors (a test without a GPU)."""
    gm = _trace(module)
    if fallback:
        if example_inputs is None:
            raise ValueError("kfuse.torch.compile(fallback=True) needs "
                             "example inputs to judge the graph's ops")
        return _partitioned(gm, example_inputs, compile_options,
                            reference)[0]
    compiled = CompiledModule(gm, compile_options, reference)
    if example_inputs is not None:
        Converter(compiled.gm, example_inputs).convert()
    return compiled


def explain(module, *example_inputs):
    """What kfuse makes of `module` for these inputs: a dict with
    'supported' (bool: kfuse takes the whole graph), 'reason' (the first op
    kfuse cannot take, or None), 'fallbacks' (every node PyTorch would run,
    with the reason), 'parts' (how many parts kfuse would run with the
    rest in PyTorch) and 'fusion' (kf-fuse's decisions, when supported)."""
    gm = _trace(module)
    converter = Converter(gm, example_inputs)
    try:
        converter.convert()
    except Unsupported as e:
        _, parts, why = _partitioned(torch.fx.GraphModule(
            gm, copy.deepcopy(gm.graph)), example_inputs, {})
        return {"supported": False, "reason": str(e), "fallbacks": why,
                "parts": parts, "fusion": None}
    return {"supported": True, "reason": None, "fallbacks": [], "parts": 1,
            "fusion": converter.graph.explain_fusion()}


# What torch.compile(backend="kfuse") did with the graphs Dynamo gave it:
# how many graphs it was given (how many of them with symbolic sizes), how
# many parts kfuse runs, and each node left to PyTorch with the reason.
backend_report = {"graphs": 0, "symbolic": 0, "compiled": 0,
                  "fallbacks": []}


def _static_shapes(example_inputs):
    """Whether Dynamo compiled for these sizes alone (none symbolic)."""
    symbolic = getattr(torch, "SymInt", ())
    return not any(
        isinstance(s, symbolic) for x in example_inputs
        for s in (x.shape if isinstance(x, torch.Tensor) else (x,)))


def _dynamo_backend(gm, example_inputs):
    """torch.compile's backend: the parts of the graph kfuse converts run
    by kfuse, the rest by PyTorch (recorded in backend_report with the
    reason)."""
    static = _static_shapes(example_inputs)
    fused, parts, why = _partitioned(gm, example_inputs, {}, static=static)
    backend_report["graphs"] += 1
    backend_report["symbolic"] += not static
    backend_report["compiled"] += parts
    backend_report["fallbacks"] += why
    return fused.forward


def register_backend():
    """Registers `backend="kfuse"` with torch.compile (PyTorch 2)."""
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is None or not hasattr(dynamo, "register_backend"):
        return False
    if "kfuse" not in dynamo.list_backends(exclude_tags=()):
        dynamo.register_backend(name="kfuse")(_dynamo_backend)
    return True


register_backend()
