"""kfuse: a kernel-fusing JIT compiler for tensor expressions on Hopper.

    import kfuse
    g = kfuse.Graph("softmax")
    x = g.input("x", kfuse.float32, ("M", 1024))
    g.output("y", x.softmax(-1))
    exe = kfuse.compile(g)
    print(exe.dump("fused"))

The package binds libkfuse.so's C API with ctypes (no compiled extension):
set KFUSE_LIBRARY to the library's path where it is not found beside the
package or in the source tree's build/.
"""

from . import _capi
from .dtypes import bfloat16, bool_, dtype, float16, float32, int32, int64
from .errors import (CacheIOError, CompileError, DeviceError, Error,
                     InvalidArgumentError, InvalidGraphError, NoDeviceError)
from . import testing
from .executable import Executable, cache_stats, compile, evaluate
from .autodiff import grad, split_vjp, vjp
from .graph import (Graph, Tensor, abs, attention, cos, erf, exp, gelu, log,
                    matmul, maximum, minimum, neg, pow, reciprocal, relu,
                    rsqrt, scaled_dot_product_attention, sigmoid, silu, sin,
                    softmax, sqrt, tanh, where)
from .indexing import (argmax, argmin, cat, cumsum, dropout, embedding, floor,
                       gather, index_add, index_select, logical_and,
                       logical_not,
                       logical_or, logical_xor, logsumexp, pad, rand,
                       remainder, round, slice_, stop_gradient,
                       take_along_dim)

bool = bool_
__version__ = _capi.fn["kfuse_version"]().decode()

__all__ = [
    "Graph", "Tensor", "Executable", "compile", "evaluate", "cache_stats",
    "testing", "dtype", "grad", "split_vjp", "vjp",
    "float32", "float16", "bfloat16", "int32", "int64", "bool", "Error",
    "InvalidGraphError", "InvalidArgumentError", "CompileError",
    "NoDeviceError", "DeviceError", "CacheIOError", "abs", "attention",
    "cos", "erf", "exp", "gelu", "log", "matmul", "maximum", "minimum",
    "neg", "pow", "reciprocal", "relu", "rsqrt",
    "scaled_dot_product_attention", "sigmoid", "silu", "sin", "softmax",
    "sqrt", "tanh", "where", "cat", "dropout", "embedding", "floor",
    "gather", "index_add", "index_select", "logical_and", "logical_not",
    "logical_or", "logical_xor", "pad", "rand", "remainder", "round", "slice_",
    "take_along_dim", "argmax", "argmin", "cumsum", "logsumexp",
    "stop_gradient",
]
