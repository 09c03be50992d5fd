"""What each torch function, tensor method and module becomes in kfuse,
with torch's semantics: its dtype promotion (0-d tensors, bools, integer
division), its defaults and its optional arguments. An argument kfuse
cannot honour raises Unsupported (the caller leaves that node to
PyTorch); none is ignored.
"""

import math
import operator

import torch
import torch.nn.functional as F

from . import dtypes, graph as kgraph, indexing as kindex
from .torch_promotion import Unsupported, _DTYPES, _TORCH_DTYPES, binary, \
    floor_divide, masked_fill, power, promoted, remainder, where


def _kfuse_dtype(torch_dtype, what):
    if torch_dtype not in _DTYPES:
        raise Unsupported(f"{what}: dtype {torch_dtype} (kfuse has float32, "
                          "float16, bfloat16, int32, int64, bool)")
    return _DTYPES[torch_dtype]


def _gelu(x, approximate="none"):
    """F.gelu; the tanh approximation written out, in float32 for a 16-bit
    x and rounded once (as torch computes it)."""
    if approximate == "tanh":
        def tanh_gelu(x):
            inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
            return x * 0.5 * (kgraph.tanh(inner) + 1.0)
        return _in_float32(tanh_gelu, x, ())
    if approximate != "none":
        raise Unsupported(f"gelu with approximate={approximate!r}")
    return kgraph.gelu(x)


def _in_float32(norm, x, params):
    """norm(x, *params) computed in float32 and rounded once to x's dtype
    where x is 16-bit, as torch computes normalisations (its parameters
    widened too)."""
    if x.dtype not in (dtypes.float16, dtypes.bfloat16):
        return norm(x, *params)
    wide = [p.to(dtypes.float32) if isinstance(p, kgraph.Tensor) else p
            for p in params]
    return norm(x.to(dtypes.float32), *wide).to(x.dtype)


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = tuple(range(-len(normalized_shape), 0))

    def norm(x, weight, bias):
        centered = x - x.mean(dims, keepdim=True)
        y = centered * kgraph.rsqrt(
            (centered * centered).mean(dims, keepdim=True) + eps)
        if weight is not None:
            y = y * weight
        return y + bias if bias is not None else y
    return _in_float32(norm, x, (weight, bias))


def _rms_norm(x, normalized_shape, weight=None, eps=None):
    """F.rms_norm: without an eps, torch's is x's dtype's machine epsilon."""
    dims = tuple(range(-len(normalized_shape), 0))
    if eps is None:
        eps = torch.finfo(_TORCH_DTYPES[x.dtype.name]).eps

    def norm(x, weight):
        y = x * kgraph.rsqrt((x * x).mean(dims, keepdim=True) + eps)
        return y * weight if weight is not None else y
    return _in_float32(norm, x, (weight,))


def _float_operands(what, *operands):
    """torch's products take floats of one dtype (integer ones only on the
    CPU, which kfuse does not compute exactly)."""
    kinds = {t.dtype for t in operands if isinstance(t, kgraph.Tensor)}
    if len(kinds) > 1 or not all(k.is_floating_point for k in kinds):
        raise Unsupported(f"{what} of {', '.join(sorted(k.name for k in kinds))}"
                          " operands (torch takes floats of one dtype)")


def _matmul(a, b):
    """torch.matmul, 1-D operands included: a vector on the left is a row
    ([n] as [1, n]), on the right a column, and that dim is dropped from
    the product."""
    if not isinstance(a, kgraph.Tensor) or not isinstance(b, kgraph.Tensor):
        raise Unsupported("matmul of a host value")
    _float_operands("matmul", a, b)
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


def _bmm(a, b):
    _float_operands("bmm", a, b)
    return kgraph.matmul(a, b)


def _linear(x, weight, bias=None):
    """F.linear: x @ weight.T (+ bias), x of any rank >= 1."""
    _float_operands("linear", x, weight, bias)
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


def _sizes(sizes, kw, *names):
    """Sizes given as arguments, as one sequence, or by a keyword of
    `names` (a keyword of none of them is refused)."""
    unknown = set(kw) - set(names)
    if unknown:
        raise Unsupported(f"keyword {sorted(unknown)[0]}")
    for name in names:
        if name in kw:
            return list(kw[name])
    if any(isinstance(s, torch.dtype) for s in sizes):
        raise Unsupported("a view as another dtype")
    return list(sizes[0] if len(sizes) == 1 and isinstance(
        sizes[0], (list, tuple, torch.Size)) else sizes)


def _reshape(x, *shape, **kw):
    shape = _sizes(shape, kw, "shape", "size")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = math.prod(x.shape) // max(known, 1)
    return x.reshape(shape)


def _permute(x, *dims, **kw):
    """torch.permute(x, dims) and Tensor.permute(*dims)."""
    return x.permute(*_sizes(dims, kw, "dims"))


def _narrow(x, dim, start, length):
    """torch.narrow: a start before 0 counts from the end."""
    start = start + x.shape[dim] if start < 0 else start
    return kindex.slice_(x, dim, start, start + length)


def _gather(x, dim, index, *, sparse_grad=False):
    if sparse_grad:
        raise Unsupported("gather with sparse_grad")
    return kindex.gather(x, dim, index)


def _transpose(x, dim0, dim1):
    return x.transpose(dim0, dim1)


def _t(x):
    return x if x.ndim < 2 else x.transpose(0, 1)


def _expand(x, *shape, **kw):
    shape = _sizes(shape, kw, "size")
    lead = len(shape) - x.ndim
    return x.expand([x.shape[i - lead] if s == -1 else s
                     for i, s in enumerate(shape)])


def _addmm(bias, a, b, beta=1, alpha=1):
    """torch.addmm / baddbmm: beta * bias + alpha * (a @ b); with beta 0
    the bias is not read (its NaNs do not come through), with alpha 0 the
    product, as in torch."""
    _float_operands("addmm", bias, a, b)
    if alpha == 0:  # nor is the product (its infinities do not come in)
        shape = tuple(a.shape[:-1]) + (b.shape[-1],)
        zero = a.graph.constant(0, a.dtype).expand(shape)
        return zero if beta == 0 else zero + (bias if beta == 1 else
                                              bias * beta)
    product = kgraph.matmul(a, b)
    product = product if alpha == 1 else product * alpha
    if beta == 0:
        return product
    return product + (bias if beta == 1 else bias * beta)


def _add(a, b, alpha=1):
    """torch.add: a + alpha * b."""
    return binary("add", a, b if alpha == 1 else binary("mul", b, alpha))


def _sub(a, b, alpha=1):
    """torch.sub: a - alpha * b."""
    return binary("sub", a, b if alpha == 1 else binary("mul", b, alpha))


def _div(a, b, rounding_mode=None):
    """torch.div: true division (a float, of integers too), or rounded
    down ("floor")."""
    if rounding_mode is None:
        return binary("truediv", a, b)
    if rounding_mode == "floor":
        return floor_divide(a, b)
    raise Unsupported(f"div with rounding_mode={rounding_mode!r}")


def _binary(name):
    return lambda a, b: binary(name, a, b)


def _compare(op):
    """A comparison of tensors or host values (either side a scalar)."""
    def compare(a, b):
        if not isinstance(a, kgraph.Tensor) and isinstance(b, kgraph.Tensor):
            flipped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
            return _compare(flipped.get(op, op))(b, a)
        if not isinstance(a, kgraph.Tensor):
            return getattr(operator, op)(a, b)
        # In the promoted dtype: a bool mask == 2 is false, not ~mask.
        a, b = promoted(a, b)
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
            if not isinstance(a, (kgraph.Tensor, bool)):
                raise Unsupported(f"bitwise {op} of a mask with {a!r} (an "
                                  "integer result)")
        return getattr(kindex, f"logical_{op}")(*args)
    return logic


def _new_ones(x, *size, dtype=None, **kwargs):
    if "size" in kwargs:
        if size:
            raise Unsupported("new_ones with sizes given twice")
        size = (kwargs["size"],)
    size = size[0] if len(size) == 1 and isinstance(
        size[0], (list, tuple, torch.Size)) else size
    dt = x.dtype if dtype is None else _kfuse_dtype(dtype, "new_ones")
    return x.graph.constant(1, dt).expand(tuple(size))


def _filled_like(fill):
    """torch.zeros_like / ones_like (`fill`), or full_like (fill given): in
    the tensor's dtype unless one is asked for."""
    def like(x, *args, dtype=None, fill_value=None, **_):
        value = fill if fill is not None else (
            args[0] if args else fill_value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Unsupported(f"full_like with a fill of {type(value).__name__}")
        dt = x.dtype if dtype is None else _kfuse_dtype(dtype, "full_like")
        return x.graph.constant(value, dt).expand(x.shape)
    return like


def _extreme(name):
    """torch.min / max of two tensors: minimum and maximum. Their
    reductions (one tensor, or a dim) give values and positions, left to
    PyTorch."""
    def extreme(x, other=None, *rest, **kwargs):
        if not isinstance(other, kgraph.Tensor) or rest or kwargs:
            raise Unsupported(f"torch.{name[:3]} as a reduction (use "
                              f"amax/amin, or argmax for positions)")
        return _binary(name)(x, other)
    return extreme


def _getitem(x, key):
    """x[key]; an index kfuse does not read (a bool mask, a list) is left
    to PyTorch."""
    try:
        return x[key]
    except IndexError as e:
        raise Unsupported(str(e)) from e


def _diff(x, n=1, dim=-1, prepend=None, append=None):
    """torch.diff: x[i + 1] - x[i] along `dim`, after prepending and
    appending."""
    parts = [t for t in (prepend, x, append) if t is not None]
    x = kindex.cat(parts, dim) if len(parts) > 1 else x
    # Of bools torch's difference is their xor.
    minus = kindex.logical_xor if x.dtype is dtypes.bool_ else operator.sub
    for _ in range(n):
        length = x.shape[dim]
        x = minus(kindex.slice_(x, dim, 1, length),
                  kindex.slice_(x, dim, 0, length - 1))
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
    return kindex.round(x) if x.dtype.is_floating_point else x


def _floor(x):
    """torch.floor: integers are their own floor (and keep their dtype)."""
    return kindex.floor(x) if x.dtype.is_floating_point else x


def _unsqueeze(x, dim):
    dim = dim % (x.ndim + 1)
    return x.reshape(x.shape[:dim] + (1,) + x.shape[dim:])


def _squeeze(x, dim=None):
    dims = range(x.ndim) if dim is None else [d % x.ndim for d in (
        dim if isinstance(dim, (list, tuple)) else [dim])]
    shape = [s for d, s in enumerate(x.shape) if not (d in dims and s == 1)]
    return x.reshape(shape)


def _split(x, size=None, dim=0, split_size=None,
           split_size_or_sections=None):
    size = next(v for v in (size, split_size, split_size_or_sections)
                if v is not None)
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
    dtype, x = x.dtype, x.to(dtypes.float32)
    lse = x.logsumexp(1, keepdim=True)
    nll = lse - kindex.gather(x, 1, target.reshape(target.shape[0], 1))
    if label_smoothing:
        nll = nll * (1.0 - label_smoothing) + (lse - x.mean(
            1, keepdim=True)) * label_smoothing
    valid = target.reshape(target.shape[0], 1).ne(ignore_index)
    loss = kgraph.where(valid, nll, 0.0).reshape(target.shape[0])
    if reduction == "sum":
        loss = loss.sum()
    elif reduction != "none":
        loss = loss.sum() / valid.to(dtypes.float32).sum()
    return loss.to(dtype)  # in the logits' dtype, as torch gives it


def _reduce(name):
    """torch.sum / mean (`axis` is numpy's name for dim). A sum of bools or
    integers is int64 (summed in int32, exact below 2^31)."""
    def reduce(x, dim=None, keepdim=False, dtype=None, axis=None):
        dim = axis if dim is None else dim
        if dtype is not None:
            x = x.to(_kfuse_dtype(dtype, name))
        if name == "sum" and not x.dtype.is_floating_point:
            summed = x.to(dtypes.int32).sum(dim, keepdim)
            return summed if dtype == torch.int32 else summed.to(dtypes.int64)
        return getattr(x, name)(dim, keepdim)
    return reduce


def _cumsum(x, dim, dtype=None):
    """torch.cumsum: the input cast to `dtype` first where one is given,
    then summed. Integer sums are int64 unless int32 is asked for (kfuse
    sums integers in int32: exact below 2^31)."""
    target = None if dtype is None else _kfuse_dtype(dtype, "cumsum")
    if target is not None and target is not dtypes.int64:
        x = x.to(target)
    if target is dtypes.int64 or not x.dtype.is_floating_point:
        out = kindex.cumsum(x.to(dtypes.int32), dim)
        return out if target is dtypes.int32 else out.to(dtypes.int64)
    return kindex.cumsum(x, dim)


# torch callables, and tensor method names, to their kfuse form.
_FUNCTIONS = {
    operator.add: _binary("add"), torch.add: _add,
    operator.sub: _binary("sub"), torch.sub: _sub,
    operator.mul: _binary("mul"), torch.mul: _binary("mul"),
    operator.truediv: _binary("truediv"), torch.div: _div,
    operator.floordiv: floor_divide, torch.floor_divide: floor_divide,
    operator.neg: lambda a: -a, torch.neg: lambda a: -a,
    operator.matmul: _matmul, torch.matmul: _matmul,
    torch.bmm: _bmm,
    operator.pow: power, torch.pow: power,
    torch.exp: kgraph.exp, torch.log: kgraph.log, torch.tanh: kgraph.tanh,
    torch.sigmoid: kgraph.sigmoid, torch.rsqrt: kgraph.rsqrt,
    torch.sqrt: kgraph.sqrt, torch.relu: kgraph.relu,
    F.relu: lambda x, inplace=False: kgraph.relu(x),
    torch.abs: kgraph.abs, torch.where: where,
    torch.maximum: _binary("maximum"), torch.minimum: _binary("minimum"),
    torch.max: _extreme("maximum"), torch.min: _extreme("minimum"),
    torch.zeros_like: _filled_like(0), torch.ones_like: _filled_like(1),
    torch.full_like: _filled_like(None),
    # Dynamo records nn.Module's first use; nothing to compute.
    torch._C._log_api_usage_once: lambda *_: None,
    F.silu: lambda x, inplace=False: kgraph.silu(x), F.gelu: _gelu, F.linear: _linear,
    F.layer_norm: _layer_norm, torch.softmax: _softmax,
    F.softmax: _softmax, torch.reshape: _reshape,
    torch.transpose: _transpose, torch.permute: _permute,
    torch.mean: _reduce("mean"), torch.sum: _reduce("sum"),
    F.dropout: _dropout,
    torch.cat: kindex.cat, torch.concat: kindex.cat, F.pad: _pad,
    F.embedding: _embedding,
    torch.index_select: kindex.index_select, torch.gather: _gather,
    torch.index_add: kindex.index_add,
    torch.narrow: _narrow,
    torch.floor: _floor, torch.round: _round,
    torch.remainder: remainder, operator.mod: remainder,
    torch.logical_and: kindex.logical_and,
    torch.logical_or: kindex.logical_or,
    torch.logical_xor: kindex.logical_xor,
    torch.logical_not: kindex.logical_not,
    operator.and_: _logic("and"), operator.or_: _logic("or"),
    operator.xor: _logic("xor"), operator.invert: _logic("not"),
    torch.bitwise_and: _logic("and"), torch.bitwise_or: _logic("or"),
    torch.bitwise_not: _logic("not"),
    operator.getitem: _getitem,
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
    torch.masked_fill: masked_fill, torch.diff: _diff,
    operator.lt: _compare("lt"), operator.le: _compare("le"),
    operator.gt: _compare("gt"), operator.ge: _compare("ge"),
    operator.eq: _compare("eq"), operator.ne: _compare("ne"),
    torch.lt: _compare("lt"), torch.le: _compare("le"),
    torch.gt: _compare("gt"), torch.ge: _compare("ge"),
    torch.eq: _compare("eq"), torch.ne: _compare("ne"),
}
if hasattr(F, "scaled_dot_product_attention"):
    _FUNCTIONS[F.scaled_dot_product_attention] = _sdpa
# Dynamo records F.pad as the C function it calls (OPT's and T5's label
# shifts: pad with -100).
_FUNCTIONS[torch._C._nn.pad] = _pad
if hasattr(F, "rms_norm"):
    _FUNCTIONS[F.rms_norm] = _rms_norm

_METHODS = {
    "view": _reshape, "reshape": _reshape, "permute": _permute, "transpose": _transpose, "contiguous": lambda x, **_: x,
    "to": _to, "float": lambda x, **_: x.to(dtypes.float32),
    "half": lambda x, **_: x.to(dtypes.float16),
    "bfloat16": lambda x, **_: x.to(dtypes.bfloat16),
    "long": lambda x, **_: x.to(dtypes.int64),
    "int": lambda x, **_: x.to(dtypes.int32),
    "bool": lambda x, **_: x.to(dtypes.bool_), "mean": _reduce("mean"),
    "sum": _reduce("sum"), "softmax": _softmax, "exp": kgraph.exp,
    "tanh": kgraph.tanh, "sigmoid": kgraph.sigmoid, "rsqrt": kgraph.rsqrt,
    "pow": power, "relu": kgraph.relu,
    "add": _add, "mul": _binary("mul"),
    "size": lambda x, dim=None: x.shape if dim is None else x.shape[dim],
    "floor": _floor, "round": _round, "remainder": remainder,
    "gather": _gather, "index_select": kindex.index_select,
    "index_add": kindex.index_add,
    "narrow": _narrow,
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
    "masked_fill": masked_fill, "matmul": _matmul,
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
