"""torch's type promotion for the converted arithmetic (kfuse.torch_ops).

kfuse's own binary ops give a number the other operand's dtype and widen
otherwise; torch decides by category (bool < integer < float) and by
priority (tensors with dims > 0-d tensors > Python numbers): the highest
category wins, and within it the operands of the highest priority decide,
a number alone giving its category's default (int64, float32). So a half
tensor times a 0-d float32 buffer stays half, a bool mask plus 1 is
int64, and an integer tensor over an integer is a float32 quotient.
"""

import numbers

import torch

from . import dtypes, graph as kgraph, indexing as kindex


class Unsupported(Exception):
    """An fx node kfuse has no conversion for; the message says which."""


_DTYPES = {torch.float32: dtypes.float32, torch.float16: dtypes.float16,
           torch.bfloat16: dtypes.bfloat16, torch.int32: dtypes.int32,
           torch.int64: dtypes.int64, torch.bool: dtypes.bool_}

_TORCH_DTYPES = {v.name: k for k, v in _DTYPES.items()}


def _is_tensor(v):
    return isinstance(v, kgraph.Tensor)


def _category(v):
    """0 bool, 1 integer, 2 float, of a tensor or a Python number."""
    if _is_tensor(v):
        dt = v.dtype
        return 2 if dt.is_floating_point else 0 if dt is dtypes.bool_ else 1
    integral = (numbers.Integral,) + ((torch.SymInt,) if hasattr(
        torch, "SymInt") else ())
    return 0 if isinstance(v, bool) else 1 if isinstance(v, integral) else 2


def _priority(v):
    return (2 if v.ndim else 1) if _is_tensor(v) else 0


_DEFAULTS = {0: dtypes.bool_, 1: dtypes.int64, 2: dtypes.float32}


def result_dtype(*operands):
    """The dtype torch.result_type gives `operands` (tensors, numbers)."""
    top = max(_category(v) for v in operands)
    best = max(_priority(v) for v in operands if _category(v) == top)
    if best == 0:
        return _DEFAULTS[top]
    found = None
    for v in operands:
        if _category(v) == top and _priority(v) == best:
            t = _TORCH_DTYPES[v.dtype.name]
            found = t if found is None else torch.promote_types(found, t)
    return _DTYPES[found]


def _as(v, dtype):
    """A tensor operand cast to `dtype`; a number as it is (kfuse gives it
    the other operand's dtype)."""
    return v.to(dtype) if _is_tensor(v) and v.dtype is not dtype else v


def _tensor_of(v, dtype, like):
    """`v` as a tensor of `dtype` in `like`'s graph."""
    return _as(v, dtype) if _is_tensor(v) else like.graph.constant(v, dtype)


def _graph_operand(*operands):
    return next(v for v in operands if _is_tensor(v))


def _bool_op(name, a, b):
    """torch's arithmetic on two bools stays bool: + is or, * is and."""
    logical = {"add": kindex.logical_or, "mul": kindex.logical_and,
               "maximum": kindex.logical_or, "minimum": kindex.logical_and}
    if name not in logical:
        raise Unsupported(f"{name} of bool tensors")
    like = _graph_operand(a, b)
    return logical[name](_tensor_of(a, dtypes.bool_, like),
                         _tensor_of(b, dtypes.bool_, like))


_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b, "truediv": lambda a, b: a / b,
        "maximum": kgraph.maximum, "minimum": kgraph.minimum}


def binary(name, a, b):
    """a <name> b in the dtype torch promotes them to (of two host
    numbers, Python's)."""
    if not _is_tensor(a) and not _is_tensor(b):
        return _OPS[name](a, b)
    dtype = result_dtype(a, b)
    if name == "truediv" and not dtype.is_floating_point:
        dtype = dtypes.float32  # integer true division is a float
    if dtype is dtypes.bool_:
        return _bool_op(name, a, b)
    if dtype in (dtypes.float16, dtypes.bfloat16) and not (
            _is_tensor(a) and _is_tensor(b)):
        # torch computes a 16-bit tensor with a number in float32, the
        # number unrounded (x * 1.01 is not x * bfloat16(1.01)), and rounds
        # the result once.
        wide = _OPS[name](_as(a, dtypes.float32), _as(b, dtypes.float32))
        return wide.to(dtype)
    return _OPS[name](_as(a, dtype), _as(b, dtype))


def floor_divide(a, b):
    """torch.div(rounding_mode="floor"): floats rounded down; integers
    exactly, as (a - a mod b) / b (mod with b's sign, as torch's). Of two
    host numbers (sizes), Python's //."""
    if not _is_tensor(a) and not _is_tensor(b):
        return a // b
    dtype = result_dtype(a, b)
    if dtype.is_floating_point:
        return kindex.floor(binary("truediv", a, b))
    if dtype is dtypes.bool_:
        raise Unsupported("floor division of bool tensors")
    a, b = _tensor_of(a, dtype, _graph_operand(a, b)), _as(b, dtype)
    return (a - kindex.remainder(a, b)) / b


def promoted(a, b):
    """a and b in the dtype torch promotes them to (a number as it is,
    which kfuse gives the other operand's dtype)."""
    dtype = result_dtype(a, b)
    return _as(a, dtype), _as(b, dtype)


def remainder(a, b):
    """torch.remainder / %: with the divisor's sign, in the promoted dtype
    (a 16-bit float with a number in float32, rounded once). Of two host
    numbers, Python's %."""
    if not _is_tensor(a) and not _is_tensor(b):
        return a % b
    dtype = result_dtype(a, b)
    if dtype is dtypes.bool_:
        raise Unsupported("remainder of bool tensors")
    compute = dtypes.float32 if dtype in (dtypes.float16,
                                          dtypes.bfloat16) else dtype
    like = _graph_operand(a, b)
    out = kindex.remainder(_tensor_of(a, compute, like), _as(b, compute))
    return out if compute is dtype else out.to(dtype)


def power(a, b):
    """torch.pow: integers raised to a small whole power by products (exact,
    and still integers); otherwise in the promoted float dtype. Of two
    host numbers (a size's power: d ** -0.5), Python's **."""
    if not _is_tensor(a) and not _is_tensor(b):
        return a ** b
    dtype = result_dtype(a, b)
    like = _graph_operand(a, b)
    if not dtype.is_floating_point:
        if _is_tensor(b) or not 0 <= b <= 8 or isinstance(b, bool):
            raise Unsupported("an integer power other than a whole number "
                              "in [0, 8]")
        base = _tensor_of(a, dtype, like)
        if b == 0:
            return base * 0 + 1
        out = base
        for _ in range(int(b) - 1):
            out = out * base
        return out
    return kgraph.pow(_tensor_of(a, dtype, like), _as(b, dtype))


def where(cond, on_true=None, on_false=None):
    """torch.where(cond, x, y): the branches promoted together (two ints
    are int64, an int and a float float32)."""
    if on_true is None or on_false is None:
        raise Unsupported("torch.where(cond) (the positions of true "
                          "elements: a shape known only at run time)")
    dtype = result_dtype(on_true, on_false)
    like = _graph_operand(cond, on_true, on_false)
    return kgraph.where(cond, _tensor_of(on_true, dtype, like),
                        _tensor_of(on_false, dtype, like))


def masked_fill(x, mask, value):
    """Tensor.masked_fill: the value in x's dtype (0.7 into an integer
    tensor is 0, as torch truncates it)."""
    if not _is_tensor(value):
        value = bool(value) if x.dtype is dtypes.bool_ else \
            value if x.dtype.is_floating_point else int(value)
    return kgraph.where(mask, _tensor_of(value, x.dtype, x), x)
