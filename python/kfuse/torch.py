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

import math
import operator

import torch
import torch.nn.functional as F

from . import dtypes, graph as kgraph, indexing as kindex
from .executable import compile as _compile


class Unsupported(Exception):
    """An fx node kfuse has no conversion for; the message says which."""


_DTYPES = {torch.float32: dtypes.float32, torch.float16: dtypes.float16,
           torch.bfloat16: dtypes.bfloat16, torch.int32: dtypes.int32,
           torch.int64: dtypes.int64, torch.bool: dtypes.bool_}


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
    dims = tuple(range(-len(normalized_shape), 0))
    eps = 1e-6 if eps is None else eps
    y = x * kgraph.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y


def _linear(x, weight, bias=None):
    y = kgraph.matmul(x, weight, transpose_b=True)
    return y + bias if bias is not None else y


def _softmax(x, dim=None, dtype=None, **_):
    if dtype is not None:
        x = x.to(_kfuse_dtype(dtype, "softmax"))
    return x.softmax(-1 if dim is None else dim)


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


def _to(x, *args, **kwargs):
    target = kwargs.get("dtype")
    for a in args:
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


def _cross_entropy(x, target, weight=None, size_average=None,
                   ignore_index=-100, reduce=None, reduction="mean",
                   label_smoothing=0.0):
    """F.cross_entropy over [N, C] logits and [N] class indices, written
    from primitives kfuse fuses into one row kernel."""
    if weight is not None or x.ndim != 2 or target.ndim != 1:
        raise Unsupported("cross_entropy other than [N, C] logits with [N] "
                          "class indices and no class weights")
    x = x.to(dtypes.float32)
    m = x.amax(1, keepdim=True)
    lse = kgraph.log(kgraph.exp(x - m).sum(1, keepdim=True)) + m
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
    operator.add: lambda a, b: a + b, torch.add: lambda a, b: a + b,
    operator.sub: lambda a, b: a - b, torch.sub: lambda a, b: a - b,
    operator.mul: lambda a, b: a * b, torch.mul: lambda a, b: a * b,
    operator.truediv: lambda a, b: a / b, torch.div: lambda a, b: a / b,
    operator.neg: lambda a: -a, torch.neg: lambda a: -a,
    operator.matmul: kgraph.matmul, torch.matmul: kgraph.matmul,
    torch.bmm: kgraph.matmul,
    operator.pow: kgraph.pow, torch.pow: kgraph.pow,
    torch.exp: kgraph.exp, torch.log: kgraph.log, torch.tanh: kgraph.tanh,
    torch.sigmoid: kgraph.sigmoid, torch.rsqrt: kgraph.rsqrt,
    torch.sqrt: kgraph.sqrt, torch.relu: kgraph.relu, F.relu: kgraph.relu,
    torch.abs: kgraph.abs, torch.where: kgraph.where,
    torch.maximum: kgraph.maximum, torch.minimum: kgraph.minimum,
    F.silu: kgraph.silu, F.gelu: _gelu, F.linear: _linear,
    F.layer_norm: _layer_norm, torch.softmax: _softmax,
    F.softmax: _softmax, torch.reshape: _reshape,
    torch.transpose: _transpose, torch.permute: lambda x, *d: x.permute(*d),
    torch.mean: _reduce("mean"), torch.sum: _reduce("sum"),
    F.dropout: _dropout,
    torch.cat: kindex.cat, torch.concat: kindex.cat, F.pad: _pad,
    F.embedding: lambda input, weight, *a, **k: kindex.embedding(
        input, weight),
    torch.index_select: kindex.index_select, torch.gather: kindex.gather,
    torch.narrow: lambda x, dim, start, length: kindex.slice_(
        x, dim, start, start + length),
    torch.floor: kindex.floor, torch.round: _round,
    torch.remainder: kindex.remainder, operator.mod: kindex.remainder,
    torch.logical_and: kindex.logical_and,
    torch.logical_or: kindex.logical_or,
    torch.logical_xor: kindex.logical_xor,
    torch.logical_not: kindex.logical_not,
    operator.and_: kindex.logical_and, operator.or_: kindex.logical_or,
    operator.xor: kindex.logical_xor, operator.invert: kindex.logical_not,
    operator.getitem: lambda x, key: x[key],
    torch.unsqueeze: _unsqueeze, torch.squeeze: _squeeze,
    torch.split: _split, torch.chunk: _chunk,
    F.cross_entropy: _cross_entropy,
    torch.argmax: kindex.argmax, torch.argmin: kindex.argmin,
    torch.cumsum: _cumsum,
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
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b,
    "size": lambda x, dim=None: x.shape if dim is None else x.shape[dim],
    "floor": kindex.floor, "round": _round, "remainder": kindex.remainder,
    "gather": kindex.gather, "index_select": kindex.index_select,
    "narrow": lambda x, dim, start, length: kindex.slice_(
        x, dim, start, start + length),
    "unsqueeze": _unsqueeze, "squeeze": _squeeze, "split": _split,
    "chunk": _chunk, "logical_not": kindex.logical_not,
    "logical_and": kindex.logical_and, "logical_or": kindex.logical_or,
    "dim": lambda x: x.ndim, "argmax": kindex.argmax,
    "argmin": kindex.argmin, "cumsum": _cumsum,
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
    torch.nn.Softmax: lambda m, p, x: x.softmax(m.dim),
    torch.nn.Dropout: lambda m, p, x: _dropout(x, m.p, m.training),
    torch.nn.Embedding: lambda m, p, x: kindex.embedding(x, p("weight")),
    torch.nn.Identity: lambda m, p, x: x,
}
if hasattr(torch.nn, "RMSNorm"):
    _MODULES[torch.nn.RMSNorm] = lambda m, p, x: _rms_norm(
        x, m.normalized_shape, p("weight"), m.eps)


def _name(node):
    return node.name.replace(".", "_")


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

    def _input(self, name, value):
        if not isinstance(value, torch.Tensor):
            return value
        return self.graph.input(name, _kfuse_dtype(value.dtype, name),
                                tuple(value.shape))

    def param(self, qualified):
        """The graph input of parameter or buffer `qualified`."""
        if qualified not in self.params:
            value = self.gm.get_parameter(qualified) if qualified in dict(
                self.gm.named_parameters()) else self.gm.get_buffer(qualified)
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

    def _outputs(self, result):
        single = not isinstance(result, (tuple, list))
        values = [result] if single else list(result)
        for i, value in enumerate(values):
            tensor = self._arg(value)
            if not isinstance(tensor, kgraph.Tensor):
                raise Unsupported(f"output {i} is not a tensor")
            self.graph.output(f"out{i}", tensor)
        return single


class CompiledModule:
    """A traced module or fx graph, run by kfuse: converted and compiled
    once per set of input shapes and dtypes."""

    def __init__(self, gm, compile_options):
        self.gm, self.options, self._by_signature = gm, compile_options, {}

    def _build(self, args):
        converter = Converter(self.gm, args)
        single = converter.convert()
        exe = _compile(converter.graph, **self.options)
        params = [self.gm.get_parameter(n) if n in dict(
            self.gm.named_parameters()) else self.gm.get_buffer(n)
            for n in converter.param_names]
        return exe, params, single

    def __call__(self, *args):
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor)
                    else a for a in args)
        entry = self._by_signature.get(key)
        if entry is None:
            entry = self._by_signature[key] = self._build(args)
        exe, params, single = entry
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        result = exe(*tensors, *[p.detach() for p in params])
        if single:
            return result
        return result if isinstance(result, tuple) else (result,)


def _trace(module):
    if isinstance(module, torch.fx.GraphModule):
        return module
    return torch.fx.symbolic_trace(module)


def compile(module, example_inputs=None, **compile_options):
    """`module` (an nn.Module or fx.GraphModule, in eval mode: dropout is
    the identity) traced with torch.fx.symbolic_trace and run by kfuse.
    With example inputs the conversion is checked now, raising Unsupported
    naming the first op kfuse cannot take."""
    compiled = CompiledModule(_trace(module), compile_options)
    if example_inputs is not None:
        Converter(compiled.gm, example_inputs).convert()
    return compiled


def explain(module, *example_inputs):
    """What kfuse makes of `module` for these inputs: a dict with
    'supported' (bool), 'reason' (the first op kfuse cannot take, or
    None), and 'fusion' (kf-fuse's decisions, when supported)."""
    converter = Converter(_trace(module), example_inputs)
    try:
        converter.convert()
    except Unsupported as e:
        return {"supported": False, "reason": str(e), "fusion": None}
    return {"supported": True, "reason": None,
            "fusion": converter.graph.explain_fusion()}


# What torch.compile(backend="kfuse") did with the graphs Dynamo gave it:
# how many kfuse runs, and each one left to PyTorch with the reason.
backend_report = {"compiled": 0, "fallbacks": []}


def _dynamo_backend(gm, example_inputs):
    """torch.compile's backend: the graph through kfuse where it converts,
    else as PyTorch runs it (recorded in backend_report with the reason)."""
    try:
        Converter(gm, example_inputs).convert()
    except Unsupported as e:
        backend_report["fallbacks"].append(str(e))
        return gm.forward
    backend_report["compiled"] += 1
    return CompiledModule(gm, {})


def register_backend():
    """Registers `backend="kfuse"` with torch.compile (PyTorch 2)."""
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is None or not hasattr(dynamo, "register_backend"):
        return False
    if "kfuse" not in dynamo.list_backends(exclude_tags=()):
        dynamo.register_backend(name="kfuse")(_dynamo_backend)
    return True


register_backend()
