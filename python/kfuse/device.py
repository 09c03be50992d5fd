"""GPU tensors of other frameworks, zero-copy: torch CUDA tensors through
their own API (DLPack's __cuda_array_interface__ has no bfloat16), other
objects through __cuda_array_interface__ (CuPy, Numba, JAX on GPU)."""

import ctypes

from . import _capi, dtypes

_TYPESTRS = {"<f4": dtypes.float32, "<f2": dtypes.float16,
             "<i4": dtypes.int32, "<i8": dtypes.int64, "|b1": dtypes.bool_}


# DLPack's C structs (dlpack.h, version 0.8+), read through ctypes.
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DL_CUDA = 2
# (type code, bits) -> dtype: kDLInt 0, kDLFloat 2, kDLBfloat 4, kDLBool 6.
_DL_DTYPES = {(2, 32): dtypes.float32, (2, 16): dtypes.float16,
              (4, 16): dtypes.bfloat16, (0, 32): dtypes.int32,
              (0, 64): dtypes.int64, (6, 8): dtypes.bool_,
              (1, 8): dtypes.bool_}
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


# kfuse runs on the CUDA driver's first visible device (runtime/
# CudaDriver.cpp): a tensor on another one is refused by name, where its
# pointer would otherwise be read as if it were that device's memory.
DEVICE_INDEX = 0


def _describe_dlpack(x, name, what, stream):
    """A tensor of any framework through its __dlpack__ capsule, borrowed
    for the call (the capsule keeps its name, so its producer frees it).
    The producer orders its pending work before `stream` (the protocol's
    stream argument; 1 is the default stream)."""
    err = _capi.errors.InvalidArgumentError
    capsule = x.__dlpack__(stream=stream or 1)
    tensor = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    if tensor.device.device_type != _DL_CUDA:
        raise err(f"kfuse: {what} '{name}' is not on a CUDA device "
                  f"(DLPack device type {tensor.device.device_type})")
    if tensor.device.device_id != DEVICE_INDEX:
        raise err(f"kfuse: {what} '{name}' is on CUDA device "
                  f"{tensor.device.device_id}; kfuse runs on device "
                  f"{DEVICE_INDEX}")
    dtype = _DL_DTYPES.get((tensor.dtype.code, tensor.dtype.bits))
    if dtype is None or tensor.dtype.lanes != 1:
        raise err(f"kfuse: {what} '{name}' has DLPack dtype code "
                  f"{tensor.dtype.code}, {tensor.dtype.bits} bits, which "
                  "kfuse has no dtype for")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides and tuple(tensor.strides[i] for i in range(
            tensor.ndim)) != _dense_strides(shape, dtype, elements=True):
        raise err(f"kfuse: {what} '{name}' is not contiguous")
    count = 1
    for d in shape:
        count *= d
    return Described(tensor.data + tensor.byte_offset, dtype, shape,
                     count * dtype.numpy.itemsize), capsule


class Described:
    """What kfuse_run needs of one tensor."""

    def __init__(self, pointer, dtype, shape, nbytes):
        self.pointer, self.dtype, self.shape, self.nbytes = \
            pointer, dtype, tuple(shape), nbytes


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def is_device_tensor(x):
    if _is_torch(x):
        return x.is_cuda
    if hasattr(x, "__dlpack_device__"):
        return x.__dlpack_device__()[0] == _DL_CUDA
    return hasattr(x, "__cuda_array_interface__")


_TORCH_DTYPES = {}


def _torch_dtype(torch_dtype):
    found = _TORCH_DTYPES.get(torch_dtype)
    if found is None:
        found = _TORCH_DTYPES[torch_dtype] = dtypes.as_dtype(torch_dtype)
    return found


def describe(x, name, expected, what="input", stream=None):
    """`x` as a Described, or an error naming the argument: not on the GPU,
    not contiguous, or of another dtype than the graph's. Torch tensors
    through torch, others through DLPack or __cuda_array_interface__."""
    err = _capi.errors.InvalidArgumentError
    if _is_torch(x):
        if not x.is_cuda:
            raise err(f"kfuse: {what} '{name}' is a torch tensor on "
                      f"{x.device}; a run takes CUDA tensors (or NumPy "
                      "arrays, copied)")
        if x.get_device() != DEVICE_INDEX:
            raise err(f"kfuse: {what} '{name}' is on {x.device}; kfuse runs "
                      f"on cuda:{DEVICE_INDEX}")
        if not x.is_contiguous():
            raise err(f"kfuse: {what} '{name}' is not contiguous (strides "
                      f"{tuple(x.stride())}); pass x.contiguous()")
        dtype = _torch_dtype(x.dtype)
        found = Described(x.data_ptr(), dtype, x.shape,
                          x.numel() * x.element_size())
    elif hasattr(x, "__dlpack__") and not hasattr(
            x, "__cuda_array_interface__"):
        # A host array (NumPy's) refuses a stream argument: it is named here,
        # before its capsule is asked for.
        if (hasattr(x, "__dlpack_device__")
                and x.__dlpack_device__()[0] != _DL_CUDA):
            raise err(f"kfuse: {what} '{name}' is a {type(x).__name__} on "
                      "the host; mix no host arrays with GPU tensors")
        found, _ = _describe_dlpack(x, name, what, stream)
    elif hasattr(x, "__cuda_array_interface__"):
        cai = x.__cuda_array_interface__
        dtype = _TYPESTRS.get(cai["typestr"])
        if dtype is None:
            raise err(f"kfuse: {what} '{name}' has elements of "
                      f"{cai['typestr']}, which kfuse has no dtype for")
        shape = tuple(cai["shape"])
        if cai.get("strides") not in (None, _dense_strides(shape, dtype)):
            raise err(f"kfuse: {what} '{name}' is not contiguous (strides "
                      f"{cai['strides']})")
        count = 1
        for d in shape:
            count *= d
        found = Described(cai["data"][0], dtype, shape,
                          count * dtype.numpy.itemsize)
    else:
        raise err(f"kfuse: {what} '{name}' is a {type(x).__name__}; mix no "
                  "host arrays with GPU tensors")
    if found.dtype is not expected:
        raise err(f"kfuse: {what} '{name}' is {expected.name} in the graph, "
                  f"got a tensor of {found.dtype.name}")
    return found


def _dense_strides(shape, dtype, elements=False):
    """Row-major strides of `shape`, in bytes (or in elements)."""
    strides, step = [], 1 if elements else dtype.numpy.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def all_torch(tensors):
    return all(type(x).__module__.startswith("torch") for x in tensors)


class Slots:
    """The C descriptions of one run's tensors, allocated once an
    executable and refilled each call (ctypes allocations cost more than
    the run's own host time)."""

    def __init__(self, count):
        self.tensors = (_capi.DeviceTensor * max(count, 1))()
        self.sizes = [(ctypes.c_int64 * 8)() for _ in range(count)]
        for tensor, sizes in zip(self.tensors, self.sizes):
            tensor.sizes = ctypes.cast(sizes, _capi.c_i64p)
        # Indexing a ctypes array makes a new proxy each time: kept once.
        self._views = list(self.tensors)[:count]

    def fill(self, i, d):
        tensor = self._views[i]
        tensor.data, tensor.dtype, tensor.bytes = d.pointer, d.dtype.code, \
            d.nbytes
        self._set_shape(i, d.shape)

    def _set_shape(self, i, shape):
        self._views[i].rank = len(shape)
        sizes = self.sizes[i]
        for k, size in enumerate(shape):
            sizes[k] = size


def current_stream(x):
    """The stream work on `x` is ordered by: torch's current stream on its
    device, else the default stream (0)."""
    if _is_torch(x):
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(x.device.index)
        return torch.cuda.current_stream(x.device).cuda_stream
    return 0


def _torch_stream_reader():
    """A function of no arguments giving torch's current stream on
    DEVICE_INDEX, read as directly as this torch allows."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return lambda: raw(DEVICE_INDEX)
    return lambda: torch.cuda.current_stream(DEVICE_INDEX).cuda_stream


class TorchRun:
    """The C tensors of runs on torch CUDA tensors, the inputs then the
    outputs in one array, for the calls that matter most for host time
    (issue 28's target is 10 us a call): each is checked with a few
    attribute reads, its data pointer written as a word of the array (an
    index store, cheaper than a ctypes field), its shape only when it
    differs from the slot's last. Not thread-safe: the caller holds the
    executable's lock from fill() through the run."""

    def __init__(self, inputs, outputs):
        """`inputs` and `outputs`: the graph's (name, dtype, shape) lists."""
        import torch
        self._tensor_type = torch.Tensor
        by_name = {"float32": torch.float32, "float16": torch.float16,
                   "bfloat16": torch.bfloat16, "int32": torch.int32,
                   "int64": torch.int64, "bool": torch.bool}
        self.num_inputs, self.num_outputs = len(inputs), len(outputs)
        count = len(inputs) + len(outputs)
        self._dtypes = tuple(by_name[d.name] for _, d, _ in (*inputs,
                                                             *outputs))
        self._kfuse_dtypes = tuple(d for _, d, _ in (*inputs, *outputs))
        self._slots = Slots(count)
        size = ctypes.sizeof(_capi.DeviceTensor)
        base = ctypes.addressof(self._slots.tensors)
        pointer = ctypes.POINTER(_capi.DeviceTensor)
        self.inputs = ctypes.cast(base, pointer)
        self.outputs = ctypes.cast(base + len(inputs) * size, pointer)
        words = memoryview(self._slots.tensors).cast("B").cast("Q")
        self._words = words
        first = _capi.DeviceTensor.data.offset // 8
        self._data = tuple(first + i * size // 8 for i in range(count))
        self._shapes = [None] * count
        self.stream = _torch_stream_reader()

    def fill(self, tensors):
        """Writes `tensors` (the inputs then the outputs) if each is a
        contiguous torch tensor on the GPU kfuse runs on, of the graph's
        dtype; returns False without a word of why otherwise (the general
        path then names the problem)."""
        dtypes_, shapes = self._dtypes, self._shapes
        if len(tensors) != len(dtypes_):
            return False
        tensor_type, words, data = self._tensor_type, self._words, self._data
        for i, x in enumerate(tensors):
            if (not isinstance(x, tensor_type) or not x.is_cuda or
                    x.get_device() != DEVICE_INDEX or
                    x.dtype is not dtypes_[i] or not x.is_contiguous()):
                return False
            words[data[i]] = x.data_ptr()
            shape = x.shape
            if shapes[i] != shape:
                self._set_shape(i, x, shape)
        return True

    def rebind(self, tensors, first=0):
        """Writes only the data pointers of `tensors`, slots `first` on,
        which are those of the last fill() but for their data (the caller's
        promise)."""
        words, data = self._words, self._data
        for i, x in enumerate(tensors, first):
            words[data[i]] = x.data_ptr()

    def _set_shape(self, i, x, shape):
        dtype = self._kfuse_dtypes[i]
        self._slots.fill(i, Described(x.data_ptr(), dtype, shape,
                                      x.numel() * dtype.numpy.itemsize))
        self._shapes[i] = shape


def empty_like_framework(x, shape, dtype):
    """An uninitialised GPU tensor of `x`'s framework and device."""
    if _is_torch(x):
        import torch
        torch_dtype = {"float32": torch.float32, "float16": torch.float16,
                       "bfloat16": torch.bfloat16, "int32": torch.int32,
                       "int64": torch.int64, "bool": torch.bool}[dtype.name]
        return torch.empty(shape, dtype=torch_dtype, device=x.device)
    if type(x).__module__.startswith("cupy"):
        import cupy
        return cupy.empty(shape, dtype=dtype.numpy)
    raise _capi.errors.InvalidArgumentError(
        f"kfuse: cannot allocate outputs for a {type(x).__name__}; pass out=")
