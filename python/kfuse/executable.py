"""Compiling a graph, running it, and the float64 reference evaluator, on
NumPy arrays (device tensors from PyTorch and other frameworks come with
kfuse.torch and DLPack)."""

import ctypes
import json
import threading

import numpy as np

from . import _capi, device, dtypes
from ._capi import fn
from .graph import Graph


def _host_tensors(arrays, expected):
    """C host tensors for `arrays` against the graph's (name, dtype, shape)
    list, and the arrays that own their memory (kept alive by the caller)."""
    if len(arrays) != len(expected):
        raise _capi.errors.InvalidArgumentError(
            f"kfuse: expected {len(expected)} inputs "
            f"({', '.join(e[0] for e in expected)}), got {len(arrays)}")
    keep, tensors = [], (_capi.HostTensor * max(len(arrays), 1))()
    for i, (array, (name, dtype, _)) in enumerate(zip(arrays, expected)):
        array = np.asarray(array)
        if dtype is dtypes.bfloat16:
            array = array if array.dtype == np.uint16 else \
                dtypes.to_bfloat16_bits(array)
        elif array.dtype != dtype.numpy:
            raise _capi.errors.InvalidArgumentError(
                f"kfuse: input '{name}' is {dtype.name}, got an array of "
                f"{array.dtype}")
        # (ascontiguousarray makes a rank-0 array rank 1.)
        array = np.ascontiguousarray(array).reshape(array.shape)
        sizes, rank = _capi.int64_array(array.shape)
        keep += [array, sizes]
        tensors[i] = _capi.HostTensor(array.ctypes.data, dtype.code, rank,
                                      sizes)
    return tensors, keep


def _arrays_of(tensors, count):
    """NumPy copies of kfuse-allocated host tensors, which are freed; bf16
    results as float32."""
    out = []
    for i in range(count):
        t = tensors[i]
        dtype = dtypes.of_code(t.dtype)
        shape = tuple(t.sizes[d] for d in range(t.rank))
        size = int(np.prod(shape, dtype=np.int64))
        buffer = (ctypes.c_char * (size * dtype.numpy.itemsize)).from_address(
            t.data) if size else b""
        array = np.frombuffer(buffer, dtype=dtype.numpy,
                              count=size).reshape(shape).copy()
        if dtype is dtypes.bfloat16:
            array = dtypes.from_bfloat16_bits(array)
        out.append(array)
        fn["kfuse_host_tensor_free"](ctypes.byref(t))
    return out


def _host_call(c_function, handle, inputs, expected, count):
    """`c_function` (kfuse_evaluate or kfuse_run_host) on NumPy inputs:
    the NumPy copies of its `count` outputs."""
    tensors, keep = _host_tensors(inputs, expected)
    outputs = (_capi.HostTensor * max(count, 1))()
    _capi.check(c_function(handle, tensors, len(inputs), outputs, count))
    del keep
    return _arrays_of(outputs, count)


def _graph_arg(graph, what):
    if not isinstance(graph, Graph):
        raise TypeError(f"{what}: needs a kfuse.Graph, got {graph!r}")


def evaluate(graph, *inputs):
    """The graph's outputs for NumPy `inputs`, by kfuse's float64 reference
    evaluator (the semantics every kernel is tested against)."""
    _graph_arg(graph, "kfuse.evaluate")
    return _host_call(fn["kfuse_evaluate"], graph._handle, inputs,
                      graph.inputs, len(graph.outputs))


class Executable:
    """A compiled graph: run it on NumPy arrays (copied to and from the
    GPU), or print any stage of its compile."""

    def __init__(self, graph, handle):
        self.graph, self._handle = graph, handle
        # (name, dtype, shape) of the inputs and outputs, read once; the
        # output shapes of each input shape seen; the C tensors of a run.
        self._inputs, self._outputs = graph.inputs, graph.outputs
        self._shape_cache, self._slots, self._torch_run = {}, None, None
        self._lock = threading.Lock()

    def __del__(self):
        if getattr(self, "_handle", None):
            fn["kfuse_executable_destroy"](self._handle)
            self._handle = None

    def dump(self, stage="ptx"):
        """The text of a stage: graph, fused, gpu, llvm or ptx."""
        return _capi.take_string(fn["kfuse_executable_dump"], self._handle,
                                 stage.encode())

    def specializations(self):
        """The specialisations compiled so far, oldest first: dicts of
        shapes (a dynamic dim at its bucket), runtime_sizes (whether its
        kernels take the dynamic dims' sizes from each call) and reason
        (why a call compiled it)."""
        return json.loads(_capi.take_string(
            fn["kfuse_executable_specializations"], self._handle))

    def __call__(self, *inputs, out=None, stream=None):
        """Runs the graph. With GPU tensors (torch CUDA tensors, or objects
        with __cuda_array_interface__ such as CuPy arrays): zero-copy, on
        `stream` (a CUstream handle; default: torch's current stream for
        torch tensors, else the default stream), the outputs written into
        `out` or allocated by the inputs' framework. With NumPy arrays: copied
        to the GPU and back. One output is returned as is, several as a
        tuple."""
        if out is not None and stream is None:
            done = self._run_torch(inputs, out)  # the common call, short
            if done is not None:
                return done[0] if len(done) == 1 else done
        if any(device.is_device_tensor(x) for x in inputs):
            outputs = self._run_on_device(inputs, out, stream)
        elif out is not None:
            raise _capi.errors.InvalidArgumentError(
                "kfuse: out= takes GPU tensors; NumPy inputs run on copies")
        else:
            outputs = self._run_on_host(inputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _run_on_host(self, inputs):
        return _host_call(fn["kfuse_run_host"], self._handle, inputs,
                          self._inputs, len(self._outputs))

    def output_shapes(self, *shapes):
        """The output shapes for inputs of these shapes (none given: the
        graph's own)."""
        count = fn["kfuse_executable_num_outputs"](self._handle)
        ranks, pointers, keep = _capi.shape_arrays(shapes)
        out_ranks = (ctypes.c_int64 * max(count, 1))()
        out_sizes = (ctypes.c_int64 * (8 * max(count, 1)))()
        _capi.check(fn["kfuse_executable_output_shapes"](
            self._handle, ranks, pointers, len(shapes), out_ranks, out_sizes,
            count))
        return [tuple(out_sizes[8 * i:8 * i + out_ranks[i]])
                for i in range(count)]

    def profile(self, *inputs, out=None, repetitions=20):
        """Runs every kernel `repetitions` times on these GPU tensors and
        places it on the roofline: a list of dicts (name, ms, bytes, flops,
        gb_per_s, tflop_per_s, bound, roofline_fraction)."""
        ins = [device.describe(x, name, dtype)
               for x, (name, dtype, _) in zip(inputs, self._inputs)]
        if len(ins) != len(self._inputs) or not ins:
            raise _capi.errors.InvalidArgumentError(
                f"kfuse: profile takes the {len(self._inputs)} inputs as GPU "
                "tensors")
        if out is None:
            out = [device.empty_like_framework(inputs[0], shape, dtype)
                   for shape, (_, dtype, _) in zip(
                       self.output_shapes(*[d.shape for d in ins]),
                       self._outputs)]
        outs = [device.describe(x, name, dtype, what="output")
                for x, (name, dtype, _) in zip(out, self._outputs)]
        slots_in, slots_out = device.Slots(len(ins)), device.Slots(len(outs))
        for i, d in enumerate(ins):
            slots_in.fill(i, d)
        for i, d in enumerate(outs):
            slots_out.fill(i, d)
        return json.loads(_capi.take_string(
            fn["kfuse_profile"], self._handle, slots_in.tensors, len(ins),
            slots_out.tensors, len(outs), repetitions))

    def _run_torch(self, inputs, out):
        """The common call, kept short: torch CUDA tensors of the graph's
        dtypes, contiguous, `out=` given, on torch's current stream. Returns
        None where anything differs, for the general path to handle (and
        name the problem)."""
        tensors = inputs + (tuple(out) if type(out) in (list, tuple)
                            else (out,))
        with self._lock:
            run = self._torch_run
            if run is None:
                if not device.all_torch(tensors):
                    return None
                run = self._torch_run = device.TorchRun(self._inputs,
                                                        self._outputs)
            if not run.fill(tensors):
                return None
            status = fn["kfuse_run"](self._handle, run.inputs, run.num_inputs,
                                     run.outputs, run.num_outputs,
                                     run.stream())
        if status:
            _capi.check(status)
        return tensors[run.num_inputs:]

    def _run_on_device(self, inputs, out, stream):
        expected, results = self._inputs, self._outputs
        if len(inputs) != len(expected):
            raise _capi.errors.InvalidArgumentError(
                f"kfuse: expected {len(expected)} inputs "
                f"({', '.join(e[0] for e in expected)}), got {len(inputs)}")
        if stream is None:
            stream = device.current_stream(inputs[0])
        ins = [device.describe(x, name, dtype, stream=stream)
               for x, (name, dtype, _) in zip(inputs, expected)]
        if out is None:
            shapes = tuple(d.shape for d in ins)
            out_shapes = self._shape_cache.get(shapes)
            if out_shapes is None:
                out_shapes = self._shape_cache[shapes] = \
                    self.output_shapes(*shapes)
            out = [device.empty_like_framework(inputs[0], shape, dtype)
                   for shape, (_, dtype, _) in zip(out_shapes, results)]
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(out) != len(results):
            raise _capi.errors.InvalidArgumentError(
                f"kfuse: expected {len(results)} outputs in out=, got "
                f"{len(out)}")
        outs = [device.describe(x, name, dtype, what="output", stream=stream)
                for x, (name, dtype, _) in zip(out, results)]
        # ctypes lets other threads run during the call: one call at a time
        # fills and reads the executable's C tensors.
        with self._lock:
            if self._slots is None:
                self._slots = (device.Slots(len(ins)), device.Slots(len(outs)))
            slots_in, slots_out = self._slots
            for i, d in enumerate(ins):
                slots_in.fill(i, d)
            for i, d in enumerate(outs):
                slots_out.fill(i, d)
            _capi.check(fn["kfuse_run"](self._handle, slots_in.tensors,
                                        len(ins), slots_out.tensors,
                                        len(outs), ctypes.c_void_p(stream)))
        return out


class BoundRun:
    """Runs of one executable on torch CUDA tensors of the shapes, dtypes,
    strides and device of the first (what Dynamo's guards hold for a graph
    it compiled with static shapes): the first is checked and described
    as any call; later ones only write each tensor's data pointer. GPT-2
    through torch.compile on the H200: 118 us from entering the graph to
    kfuse_run, against 689 us describing each of its tensors anew, the GPU
    idle meanwhile. The caller keeps the promise; nothing here rechecks
    it."""

    def __init__(self, exe, inputs, out):
        self._exe = exe
        for tensors, values, what in ((inputs, exe._inputs, "input"),
                                      (out, exe._outputs, "output")):
            if len(tensors) != len(values) or not tensors or \
                    not device.all_torch(tensors):
                raise _capi.errors.InvalidArgumentError(
                    f"kfuse: a bound run takes {len(values)} torch CUDA "
                    f"tensors as {what}s, got {len(tensors)} values")
            for x, (name, dtype, _) in zip(tensors, values):
                device.describe(x, name, dtype, what=what)  # or raises
        self._run = device.TorchRun(exe._inputs, exe._outputs)
        if not self._run.fill((*inputs, *out)):
            raise _capi.errors.InvalidArgumentError(
                "kfuse: a bound run's tensors must be on the GPU kfuse runs on")

    def __call__(self, inputs, out):
        run, exe = self._run, self._exe
        with exe._lock:
            run.rebind(inputs)
            run.rebind(out, run.num_inputs)
            status = fn["kfuse_run"](exe._handle, run.inputs, run.num_inputs,
                                     run.outputs, run.num_outputs,
                                     run.stream())
        if status:
            _capi.check(status)
        return out


_LAUNCH_MODES = {"auto": 0, "kernels": 1, "graph": 2}


def compile(graph, *, arch=None, fusion="fused", pad_rows=True,
            allow_tf32=False, split_k=True, split_keys=True,
            deterministic=True, attention_grad_tma=True, disk_cache=True,
            cache_dir=None, launch="auto", dynamic=()):
    """Compiles `graph` (works without a GPU; running needs one).

    `launch` says how a call enqueues the kernels: "graph" as one CUDA
    graph per set of shapes, "kernels" one by one, "auto" a graph where the
    driver has them and the stream is not being captured.

    `split_keys` runs an attention whose query tiles leave most SMs idle
    (a decode step over a long KV cache) over chunks of its keys at once
    (flash-decoding; kfuse::CompileOptions::splitKeys).

    `deterministic=False` lets kernels add partial results with atomics
    in any order (FlashAttention's backward: dq), faster, the last bits of
    such results then varying from run to run.

    `attention_grad_tma` gives FlashAttention's deterministic backward a
    warpgroup that copies its tiles with the TMA where they fit it
    (kfuse::CompileOptions::attentionGradTma); False keeps cp.async by
    every thread.

    `dynamic` names symbolic dims whose sizes change from call to call (a
    KV cache's length): sizes share a compile per power of two (64 at
    least) where the kernels can take the size at run time, else each
    size compiles, as for other symbols (KFUSE_DEBUG=1 says why)."""
    if fusion not in ("fused", "unfused"):
        raise _capi.errors.InvalidArgumentError(
            f"kfuse: fusion is 'fused' or 'unfused', not {fusion!r}")
    if launch not in _LAUNCH_MODES:
        raise _capi.errors.InvalidArgumentError(
            f"kfuse: launch is 'auto', 'kernels' or 'graph', not {launch!r}")
    options = fn["kfuse_default_compile_options"]()
    options.arch = arch.encode() if arch else None
    options.unfused = int(fusion == "unfused")
    options.pad_rows = int(pad_rows)
    options.allow_tf32 = int(allow_tf32)
    options.split_k = int(split_k)
    options.split_keys = int(split_keys)
    options.deterministic = int(deterministic)
    options.attention_grad_tma = int(attention_grad_tma)
    options.disk_cache = int(disk_cache)
    options.cache_dir = cache_dir.encode() if cache_dir else None
    options.launch = _LAUNCH_MODES[launch]
    if isinstance(dynamic, str):
        dynamic = (dynamic,)
    for name in dynamic:
        if not isinstance(name, str) or not name or "," in name:
            raise _capi.errors.InvalidArgumentError(
                f"kfuse: dynamic takes names of symbolic dims, not {name!r}")
    options.dynamic_dims = ",".join(dynamic).encode() if dynamic else None
    handle = _capi.c_exe()
    _graph_arg(graph, "kfuse.compile")
    _capi.check(fn["kfuse_compile"](graph._handle, ctypes.byref(options),
                                    ctypes.byref(handle)))
    return Executable(graph, handle.value)


def cache_stats():
    """Process-wide counters: compiles, memory_hits, disk_hits,
    disk_rejected."""
    stats = fn["kfuse_get_cache_stats"]()
    return {name: getattr(stats, name) for name, _ in stats._fields_}
