"""kfuse's element types, and their NumPy forms.

NumPy has no bfloat16: a bf16 graph input takes float32 (or bfloat16
bits as uint16), rounded to nearest even; a bf16 result comes back as
float32, exactly.
"""

import numpy as np


class dtype:
    """An element type of kfuse tensors (kfuse.float32, ...)."""

    def __init__(self, name, code, numpy_dtype):
        self.name, self.code, self.numpy = name, code, numpy_dtype

    def __repr__(self):
        return "kfuse." + self.name

    @property
    def is_floating_point(self):
        return self.name in ("float32", "float16", "bfloat16")


float32 = dtype("float32", 0, np.dtype(np.float32))
float16 = dtype("float16", 1, np.dtype(np.float16))
bfloat16 = dtype("bfloat16", 2, np.dtype(np.uint16))
int32 = dtype("int32", 3, np.dtype(np.int32))
bool_ = dtype("bool", 4, np.dtype(np.bool_))
int64 = dtype("int64", 5, np.dtype(np.int64))

_BY_CODE = {d.code: d for d in (float32, float16, bfloat16, int32, bool_,
                                int64)}
_ALIASES = {"f32": float32, "float32": float32, "f16": float16,
            "float16": float16, "half": float16, "bf16": bfloat16,
            "bfloat16": bfloat16, "i32": int32, "int32": int32,
            "i1": bool_, "bool": bool_, "i64": int64, "int64": int64,
            "long": int64}


def of_code(code):
    return _BY_CODE[code]


def as_dtype(value):
    """A kfuse dtype from a kfuse dtype, its name, a NumPy dtype or a torch
    dtype."""
    if isinstance(value, dtype):
        return value
    name = str(value).replace("torch.", "")
    if name in _ALIASES:
        return _ALIASES[name]
    try:
        np_type = np.dtype(value)
    except TypeError:
        np_type = None
    for d in (float32, float16, int32, bool_, int64):
        if np_type == d.numpy:
            return d
    raise TypeError(f"kfuse: {value!r} is not a dtype kfuse has "
                    "(float32, float16, bfloat16, int32, int64, bool)")


def to_bfloat16_bits(array):
    """float32 values as bf16 bits (uint16), rounded to nearest even."""
    array = np.asarray(array, dtype=np.float32)
    # (ascontiguousarray makes a 0-d array 1-d: the shape is put back.)
    bits = np.ascontiguousarray(array).view(np.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    out = ((bits + rounding) >> 16).astype(np.uint16)
    out[np.isnan(bits.view(np.float32))] = 0x7FC0
    return out.reshape(array.shape)


def from_bfloat16_bits(bits):
    """bf16 bits (uint16) as float32, exactly."""
    bits = np.asarray(bits, dtype=np.uint16)
    # Flat first: a 0-d array's shift gives a NumPy scalar, whose view
    # cannot change its dtype.
    wide = bits.reshape(-1).astype(np.uint32) << 16
    return wide.view(np.float32).reshape(bits.shape)
