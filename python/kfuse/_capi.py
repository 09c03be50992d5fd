"""ctypes bindings of kfuse's C API (include/kfuse/kfuse_c.h).

ctypes rather than a compiled extension: libkfuse.so is the one binary,
and this package imports unchanged under any Python 3 (no build per
Python version). The prototypes below mirror kfuse_c.h; every call that
fails raises the kfuse.Error subclass of its status, with kfuse's message.
"""

import ctypes
import os
import pathlib

from . import errors

_HERE = pathlib.Path(__file__).resolve().parent


def _candidates():
    """Where libkfuse.so may be: $KFUSE_LIBRARY, beside the package, in
    the install prefix's lib/ (the package in lib/python/kfuse), the source
    tree's build directory, then the loader's search path."""
    if os.environ.get("KFUSE_LIBRARY"):
        yield os.environ["KFUSE_LIBRARY"]
    yield str(_HERE / "lib" / "libkfuse.so")
    yield str(_HERE.parent.parent / "libkfuse.so")
    root = _HERE.parent.parent
    yield str(root / "build" / "compiler" / "libkfuse.so")
    yield "libkfuse.so"


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "kfuse: cannot load libkfuse.so; set KFUSE_LIBRARY to its path. "
        "Tried: " + "; ".join(tried))


lib = _load()

c_tensor = ctypes.c_int64
c_graph = ctypes.c_void_p
c_exe = ctypes.c_void_p
c_i64p = ctypes.POINTER(ctypes.c_int64)


class HostTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int64), ("sizes", c_i64p)]


class DeviceTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int64), ("sizes", c_i64p),
                ("bytes", ctypes.c_size_t)]


class CompileOptions(ctypes.Structure):
    _fields_ = [("arch", ctypes.c_char_p), ("unfused", ctypes.c_int),
                ("pad_rows", ctypes.c_int), ("allow_tf32", ctypes.c_int),
                ("split_k", ctypes.c_int), ("disk_cache", ctypes.c_int),
                ("cache_dir", ctypes.c_char_p), ("launch", ctypes.c_int),
                ("dynamic_dims", ctypes.c_char_p), ("split_keys", ctypes.c_int),
                ("deterministic", ctypes.c_int),
                ("attention_grad_tma", ctypes.c_int)]


class CacheStats(ctypes.Structure):
    _fields_ = [("compiles", ctypes.c_uint64), ("memory_hits", ctypes.c_uint64),
                ("disk_hits", ctypes.c_uint64),
                ("disk_rejected", ctypes.c_uint64)]


def shape_arrays(shapes):
    """C ranks and size arrays for a list of shapes (kept alive by the
    returned tuple's last element)."""
    keep = [int64_array(s)[0] for s in shapes]
    ranks, _ = int64_array(len(s) for s in shapes)
    pointers = (c_i64p * max(len(shapes), 1))(
        *[ctypes.cast(k, c_i64p) for k in keep])
    return ranks, pointers, keep


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_status = ctypes.c_int
_charpp = ctypes.POINTER(ctypes.c_void_p)

_PROTOTYPES = {
    "kfuse_c_api_version": (ctypes.c_int,),
    "kfuse_version": (ctypes.c_char_p,),
    "kfuse_last_error": (ctypes.c_char_p,),
    "kfuse_free_string": (None, ctypes.c_void_p),
    "kfuse_graph_create": (c_graph, ctypes.c_char_p),
    "kfuse_graph_from_mlir": (_status, ctypes.c_char_p,
                              ctypes.POINTER(c_graph)),
    "kfuse_graph_destroy": (None, c_graph),
    "kfuse_graph_vjp": (_status, c_graph, ctypes.POINTER(ctypes.c_char_p),
                        ctypes.c_int64, ctypes.POINTER(ctypes.c_char_p),
                        ctypes.c_int64, ctypes.POINTER(c_graph)),
    "kfuse_graph_split_vjp": (
        _status, c_graph, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int64,
        ctypes.POINTER(ctypes.c_char_p), ctypes.c_int64,
        ctypes.POINTER(c_graph), ctypes.POINTER(c_graph),
        ctypes.POINTER(ctypes.c_void_p)),
    "kfuse_graph_grad": (_status, c_graph, ctypes.c_char_p,
                         ctypes.POINTER(ctypes.c_char_p), ctypes.c_int64,
                         ctypes.POINTER(c_graph)),
    "kfuse_graph_status": (_status, c_graph),
    "kfuse_graph_to_mlir": (_status, c_graph, _charpp),
    "kfuse_input": (c_tensor, c_graph, ctypes.c_char_p, ctypes.c_int,
                    ctypes.c_int64, c_i64p,
                    ctypes.POINTER(ctypes.c_char_p)),
    "kfuse_constant": (c_tensor, c_graph, ctypes.c_double, ctypes.c_int),
    "kfuse_output": (_status, c_graph, ctypes.c_char_p, c_tensor),
    "kfuse_graph_num_values": (ctypes.c_int64, c_graph, ctypes.c_int),
    "kfuse_graph_value": (_status, c_graph, ctypes.c_int, ctypes.c_int64,
                          ctypes.POINTER(ctypes.c_char_p),
                          ctypes.POINTER(ctypes.c_int), c_i64p, c_i64p,
                          ctypes.c_int64),
    "kfuse_tensor_info": (_status, c_graph, c_tensor,
                          ctypes.POINTER(ctypes.c_int), c_i64p, c_i64p,
                          ctypes.c_int64),
    "kfuse_unary": (c_tensor, c_graph, ctypes.c_char_p, c_tensor),
    "kfuse_binary": (c_tensor, c_graph, ctypes.c_char_p, c_tensor, c_tensor),
    "kfuse_where": (c_tensor, c_graph, c_tensor, c_tensor, c_tensor),
    "kfuse_cast": (c_tensor, c_graph, c_tensor, ctypes.c_int),
    "kfuse_reshape": (c_tensor, c_graph, c_tensor, ctypes.c_int64, c_i64p),
    "kfuse_broadcast_to": (c_tensor, c_graph, c_tensor, ctypes.c_int64,
                           c_i64p),
    "kfuse_transpose": (c_tensor, c_graph, c_tensor, ctypes.c_int64, c_i64p),
    "kfuse_iota": (c_tensor, c_graph, ctypes.c_int64, c_i64p, ctypes.c_int64,
                   ctypes.c_int),
    "kfuse_slice": (c_tensor, c_graph, c_tensor, ctypes.c_int64,
                    ctypes.c_int64, ctypes.c_int, ctypes.c_int64,
                    ctypes.c_int64),
    "kfuse_concat": (c_tensor, c_graph, ctypes.c_int64, c_i64p,
                     ctypes.c_int64),
    "kfuse_pad": (c_tensor, c_graph, c_tensor, ctypes.c_int64, c_i64p,
                  ctypes.c_double),
    "kfuse_gather": (c_tensor, c_graph, c_tensor, c_tensor, ctypes.c_int64),
    "kfuse_index_add": (c_tensor, c_graph, c_tensor, c_tensor,
                        ctypes.c_int64, ctypes.c_int64),
    "kfuse_take_along_axis": (c_tensor, c_graph, c_tensor, c_tensor,
                              ctypes.c_int64),
    "kfuse_rand": (c_tensor, c_graph, c_tensor, ctypes.c_int64, c_i64p,
                   ctypes.c_int),
    "kfuse_dropout": (c_tensor, c_graph, c_tensor, c_tensor,
                      ctypes.c_double),
    "kfuse_reduce": (c_tensor, c_graph, ctypes.c_char_p, c_tensor,
                     ctypes.c_int64, c_i64p, ctypes.c_int),
    "kfuse_arg_reduce": (c_tensor, c_graph, ctypes.c_char_p, c_tensor,
                         ctypes.c_int64, ctypes.c_int),
    "kfuse_cumsum": (c_tensor, c_graph, c_tensor, ctypes.c_int64),
    "kfuse_softmax": (c_tensor, c_graph, c_tensor, ctypes.c_int64),
    "kfuse_matmul": (c_tensor, c_graph, c_tensor, c_tensor, ctypes.c_int,
                     ctypes.c_int, ctypes.c_int),
    "kfuse_attention": (c_tensor, c_graph, c_tensor, c_tensor, c_tensor,
                        c_tensor, c_tensor, ctypes.c_int, ctypes.c_double,
                        ctypes.c_int, ctypes.POINTER(c_tensor)),
    "kfuse_evaluate": (_status, c_graph, ctypes.POINTER(HostTensor),
                       ctypes.c_int64, ctypes.POINTER(HostTensor),
                       ctypes.c_int64),
    "kfuse_host_tensor_free": (None, ctypes.POINTER(HostTensor)),
    "kfuse_default_compile_options": (CompileOptions,),
    "kfuse_compile": (_status, c_graph, ctypes.POINTER(CompileOptions),
                      ctypes.POINTER(c_exe)),
    "kfuse_executable_destroy": (None, c_exe),
    "kfuse_executable_num_inputs": (ctypes.c_int64, c_exe),
    "kfuse_executable_num_outputs": (ctypes.c_int64, c_exe),
    "kfuse_executable_dump": (_status, c_exe, ctypes.c_char_p, _charpp),
    "kfuse_executable_specializations": (_status, c_exe, _charpp),
    "kfuse_executable_output_shapes": (_status, c_exe, c_i64p,
                                       ctypes.POINTER(c_i64p), ctypes.c_int64,
                                       c_i64p, c_i64p, ctypes.c_int64),
    "kfuse_run": (_status, c_exe, ctypes.POINTER(DeviceTensor),
                  ctypes.c_int64, ctypes.POINTER(DeviceTensor),
                  ctypes.c_int64, ctypes.c_void_p),
    "kfuse_run_host": (_status, c_exe, ctypes.POINTER(HostTensor),
                       ctypes.c_int64, ctypes.POINTER(HostTensor),
                       ctypes.c_int64),
    "kfuse_explain_fusion": (_status, c_graph, ctypes.c_int, ctypes.c_int,
                             _charpp),
    "kfuse_profile": (_status, c_exe, ctypes.POINTER(DeviceTensor),
                      ctypes.c_int64, ctypes.POINTER(DeviceTensor),
                      ctypes.c_int64, ctypes.c_int, _charpp),
    "kfuse_check_fusion": (_status, c_graph, c_i64p, ctypes.POINTER(c_i64p),
                           ctypes.c_int64, ctypes.c_uint64, ctypes.c_int64,
                           ctypes.c_int, ctypes.c_int, _charpp),
    "kfuse_get_cache_stats": (CacheStats,),
}

fn = {name: _proto(name, proto[0], *proto[1:])
      for name, proto in _PROTOTYPES.items()}

if fn["kfuse_c_api_version"]() != 1:
    raise ImportError("kfuse: libkfuse.so's C API version is "
                      f"{fn['kfuse_c_api_version']()}, this package needs 1")


def last_error():
    return fn["kfuse_last_error"]().decode()


def check(status):
    """Raises the Error of a failed call's status, else returns None."""
    if status != 0:
        raise errors.from_status(status, last_error())


def check_tensor(tensor_id, graph=None):
    """`tensor_id`, or the error of the op that failed to make it: the
    graph's build error where it has one, else a bad argument."""
    if tensor_id >= 0:
        return tensor_id
    message = last_error()
    status = fn["kfuse_graph_status"](graph) if graph else 0
    raise errors.from_status(status or 2, message)


def take_string(call, *args):
    """Calls a C function that returns a string through its last argument,
    and frees it."""
    out = ctypes.c_void_p()
    check(call(*args, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode()
    finally:
        fn["kfuse_free_string"](out)


def int64_array(values):
    values = list(values)
    return (ctypes.c_int64 * max(len(values), 1))(*values), len(values)
