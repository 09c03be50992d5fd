"""Indexing ops and the newer elementwise ones, with PyTorch's names:
x[1:5, ::2], kfuse.cat, kfuse.pad (torch's order of widths),
kfuse.index_select / embedding, kfuse.gather (torch.gather),
kfuse.index_add (their transpose),
kfuse.rand, kfuse.dropout, floor / round / remainder and logic;
kfuse.argmax / argmin and kfuse.cumsum along one dim.

Each is an index map that a fused kernel computes in its loads. Out-of-range
positions are errors (not clamped as Python's slices are); an out-of-range
gather index gives NaN for floats and 0 for integers.
"""

import numbers

from . import _capi, dtypes
from ._capi import fn
from .graph import Tensor, _dim, _int_arg, _tensor_arg, _unary_op, where


def _made(graph, tid):
    return Tensor(graph, _capi.check_tensor(tid, graph._handle))


def slice_(x, dim, start=0, stop=None, step=1):
    """x[start:stop:step] along `dim` (stop None: to the end), step >= 1."""
    dim, start, step = (_int_arg(v, f"slice_'s {name}") for v, name in
                        ((dim, "dim"), (start, "start"), (step, "step")))
    if stop is not None:
        stop = _int_arg(stop, "slice_'s stop")
    tid = fn["kfuse_slice"](x.graph._handle, x._id, dim, start,
                            int(stop is not None), stop or 0, step)
    return _made(x.graph, tid)


def _slice_by(x, dim, k):
    """x[k] along `dim` for a Python slice k: bounds past the ends clamped
    as Python, NumPy and PyTorch clamp them (where the size is static)."""
    size = x.shape[dim]
    if size is not None and (k.step or 1) > 0:
        start, stop, step = k.indices(size)
        return slice_(x, dim, start, max(stop, start), step)
    return slice_(x, dim, k.start or 0, k.stop, k.step or 1)


def _getitem(x, key):
    """Basic indexing (ints, slices with positive steps, ... and None) and
    integer tensors on adjacent dims (see _advanced_getitem)."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("kfuse: an index can have only one ellipsis")
    named = sum(k is not None and k is not Ellipsis for k in key)
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (x.ndim - named) + key[at + 1:]
    if named > x.ndim:
        raise IndexError(f"kfuse: {named} indices for a tensor of rank "
                         f"{x.ndim}")
    if any(isinstance(k, Tensor) for k in key):
        return _advanced_getitem(x, key)
    out, dim, shape = x, 0, []
    for k in key:
        if k is None:
            shape.append(1)
            continue
        if isinstance(k, bool):
            raise IndexError("kfuse: a bool index (NumPy and torch read "
                             "x[True] as a new dim of 1) is not taken")
        if isinstance(k, numbers.Integral):
            out = slice_(out, dim, int(k), None if k == -1 else int(k) + 1)
        elif isinstance(k, slice):
            if k != slice(None):
                out = _slice_by(out, dim, k)
            shape.append(out.shape[dim])
        else:
            raise IndexError(f"kfuse: index {k!r} is not an int, a slice, "
                             "..., None or an integer tensor")
        dim += 1
    shape.extend(out.shape[dim:])
    return out if list(out.shape) == shape else out.reshape(shape)


def _advanced_getitem(x, key):
    """x[:, i, j] with integer tensors on adjacent dims and full slices on
    the others (NumPy's and PyTorch's advanced indexing of that form): the
    indices broadcast together, and their shape takes the place of the dims
    they index. Computed as one gather over those dims flattened, so that
    a fused kernel finds each element by its index. Negative indices count
    from the end; an index out of range on any of its dims picks what an
    out-of-range gather gives (NaN for floats, 0 for integers), never
    another element."""
    at = [n for n, k in enumerate(key) if isinstance(k, Tensor)]
    first, count = at[0], len(at)
    if at != list(range(first, first + count)) or any(
            k != slice(None) for n, k in enumerate(key) if n not in at):
        raise IndexError(
            "kfuse: tensor indices must index adjacent dims, with ':' for "
            f"the others (got {key!r})")
    sizes = x.shape[first:first + count]
    total = 1
    for size in sizes:
        total *= size
    indices = [key[n] for n in at]
    for index in indices:
        if index.dtype not in (dtypes.int32, dtypes.int64):
            raise IndexError(
                f"kfuse: a tensor index must be int32 or int64, got "
                f"{index.dtype} (a bool mask's result has a data-dependent "
                "shape)")
    wide = total >= 2**31 or any(i.dtype is dtypes.int64 for i in indices)
    linear = invalid = None
    for index, size in zip(indices, sizes):
        if wide and index.dtype is not dtypes.int64:
            index = index.to(dtypes.int64)
        index = where(index < 0, index + size, index)
        if count == 1:
            linear = index
            break
        outside = (index < 0) | (index >= size)
        invalid = outside if invalid is None else invalid | outside
        linear = index if linear is None else linear * size + index
    if count > 1:
        # Out of range of the flattened dims: the gather's own rule then
        # applies, as it does to one index.
        linear = where(invalid, total, linear)
        x = x.reshape(*x.shape[:first], total, *x.shape[first + count:])
    return index_select(x, first, linear)


def cat(tensors, dim=0):
    """The tensors joined along `dim` (torch.cat); dtypes promote."""
    tensors = [_tensor_arg(t, "each of kfuse.cat's tensors")
               for t in tensors]
    if not tensors:
        raise ValueError("kfuse.cat: needs at least one tensor")
    g = tensors[0].graph
    ids, count = _capi.int64_array(g._id(t) for t in tensors)
    return _made(g, fn["kfuse_concat"](g._handle, count, ids, dim))


def pad(x, pad, value=0.0):
    """Constant padding in torch.nn.functional.pad's order: (left, right)
    of the last dim first, then of the dim before, ..."""
    pad = list(pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"kfuse.pad: {len(pad)} widths for a tensor of "
                         f"rank {x.ndim}")
    widths = [0] * (2 * x.ndim)
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        widths[2 * d], widths[2 * d + 1] = pad[2 * i], pad[2 * i + 1]
    array, _ = _capi.int64_array(widths)
    return _made(x.graph, fn["kfuse_pad"](x.graph._handle, x._id, x.ndim,
                                          array, float(value)))


def index_select(x, dim, index):
    """torch.index_select, and NumPy's take for any index shape: the result
    is x.shape[:dim] + index.shape + x.shape[dim + 1:]."""
    return _made(x.graph, fn["kfuse_gather"](x.graph._handle, x._id,
                                             x.graph._id(index), dim))


def embedding(input, weight):
    """torch.nn.functional.embedding: rows of `weight` picked by `input`."""
    return index_select(weight, 0, input)


def gather(x, dim, index):
    """torch.gather (NumPy's take_along_axis): index has x's rank and its
    dims except `dim`; one element of x per index."""
    return _made(x.graph, fn["kfuse_take_along_axis"](
        x.graph._handle, x._id, x.graph._id(index), dim))


def take_along_dim(x, indices, dim):
    return gather(x, dim, indices)


def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add: `input` plus the slices of `source` added along
    `dim` at the positions `index` names (gather's transpose: an
    embedding's gradient). `index` may have any shape (its dims take the
    place of `dim` in `source`, as index_select's result has them);
    negative indices count from the end, and an index out of range adds
    nothing (torch raises). 16-bit sources are summed in float32; the sums
    are added in index order unless the compile is not deterministic."""
    dim = _dim(dim, input.ndim, "index_add")
    want = (*input.shape[:dim], *index.shape, *input.shape[dim + 1:])
    if tuple(source.shape) != want:
        raise ValueError(f"kfuse.index_add: source is {tuple(source.shape)} "
                         f"but must be {want} (input {tuple(input.shape)} "
                         f"with index {tuple(index.shape)} at dim {dim})")
    if input.shape[dim] is None:
        raise ValueError(f"kfuse.index_add: dim {dim} of the input is "
                         "symbolic: the sums need a static size")
    if alpha != 1:
        source = source * alpha
    g = input.graph
    tid = fn["kfuse_index_add"](g._handle, g._id(source), g._id(index), dim,
                                input.shape[dim])
    return input + _made(g, tid)


def rand(seed, *shape, dtype=dtypes.float32):
    """Uniform [0, 1) from counter-based Philox seeded by `seed`, a rank-0
    int32 graph input (a new seed needs no new compile)."""
    _tensor_arg(seed, "kfuse.rand's seed (a rank-0 int32 graph input)")
    shape = shape[0] if len(shape) == 1 and not isinstance(
        shape[0], numbers.Integral) else shape
    sizes, rank = _capi.int64_array(shape)
    return _made(seed.graph, fn["kfuse_rand"](seed.graph._handle, seed._id,
                                              rank, sizes,
                                              dtypes.as_dtype(dtype).code))


def dropout(x, seed, p=0.5):
    """Inverted dropout: x / (1 - p) where rand(seed) >= p, else 0."""
    return _made(x.graph, fn["kfuse_dropout"](x.graph._handle, x._id,
                                              x.graph._id(seed), float(p)))


def _flat(x):
    """x as one dim (torch's argmax without a dim)."""
    n = 1
    for size in x.shape:
        n *= size
    return x.reshape(n)


def _arg_reduce(kind, x, dim, keepdim):
    """argmax/argmin along `dim`; of all elements when dim is None, kept
    as x's rank of 1s with keepdim (as torch keeps it)."""
    if dim is not None:
        return _made(x.graph, fn["kfuse_arg_reduce"](
            x.graph._handle, kind, x._id, dim, int(keepdim)))
    out = _arg_reduce(kind, _flat(x), 0, False)
    return out.reshape((1,) * len(x.shape)) if keepdim else out


def argmax(x, dim=None, keepdim=False):
    """torch.argmax: the int64 position of the largest element along `dim`
    (of all elements when None), the first of equal ones; NaN wins."""
    return _arg_reduce(b"argmax", x, dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    """torch.argmin: as argmax, of the smallest element."""
    return _arg_reduce(b"argmin", x, dim, keepdim)


def cumsum(x, dim):
    """torch.cumsum: the inclusive running sum along `dim`, in x's dtype
    (floats or int32)."""
    return _made(x.graph, fn["kfuse_cumsum"](x.graph._handle, x._id, dim))


floor = _unary_op("floor", "the largest integer <= x")
round = _unary_op("round", "to the nearest integer, ties to even")
logical_not = _unary_op("logical_not", "not x (x != 0 for non-bool)")
stop_gradient = _unary_op("stop_gradient",
                          "x, through which no gradient flows (Tensor.detach)")


def logsumexp(x, dim=None, keepdim=False):
    """torch.logsumexp (Tensor.logsumexp)."""
    return x.logsumexp(dim, keepdim)


def remainder(a, b):
    """a mod b with the sign of b (Python's %, torch.remainder)."""
    return a._binary("mod", b)


def logical_and(a, b):
    return a._binary("logical_and", b)


def logical_or(a, b):
    return a._binary("logical_or", b)


def logical_xor(a, b):
    return a._binary("logical_xor", b)


# As methods and operators, as on torch tensors.
Tensor.__getitem__ = _getitem
Tensor.__mod__ = lambda self, o: self._binary("mod", o)
Tensor.__rmod__ = lambda self, o: self._binary("mod", o, True)
Tensor.__and__ = lambda self, o: self._binary("logical_and", o)
Tensor.__or__ = lambda self, o: self._binary("logical_or", o)
Tensor.__xor__ = lambda self, o: self._binary("logical_xor", o)
Tensor.__invert__ = lambda self: self._unary("logical_not")
for _op in (floor, round, logical_not):
    setattr(Tensor, _op.__name__, _op)
Tensor.remainder = remainder
Tensor.logical_and, Tensor.logical_or = logical_and, logical_or
Tensor.logical_xor = logical_xor
Tensor.index_select = index_select
Tensor.gather = gather
Tensor.argmax, Tensor.argmin, Tensor.cumsum = argmax, argmin, cumsum
