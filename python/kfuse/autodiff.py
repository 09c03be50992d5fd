"""Reverse-mode differentiation of kfuse graphs (kfuse/Autodiff.h).

    g = kfuse.Graph("mlp")
    x = g.input("x", kfuse.float32, ("B", 256))
    w = g.input("w", kfuse.float32, (256, 64))
    g.output("loss", kfuse.gelu(x @ w).mean())
    joint = kfuse.grad(g, "loss", wrt=["w"])   # outputs: loss, grad_w

The result is one graph computing the forward and the backward together,
which kfuse.compile fuses like any other. Cotangents flow in float32; each
grad_<x> has x's dtype.
"""

import ctypes
import json

from . import _capi
from ._capi import fn
from .graph import Graph


def _names(names, what):
    names = [] if names is None else [names] if isinstance(names, str) \
        else list(names)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"kfuse.{what}: names are strings, got {n!r}")
    array = (ctypes.c_char_p * max(len(names), 1))(
        *[n.encode() for n in names])
    return array, len(names)


def vjp(graph, outputs=None, wrt=None):
    """The vector-Jacobian product of `graph` as a new Graph: its inputs
    are graph's, then a cotangent "grad_<y>" per output differentiated
    (`outputs`, default every float output); its outputs are graph's, then
    "grad_<x>" per input in `wrt` (default every float input)."""
    ys, ny = _names(outputs, "vjp")
    xs, nx = _names(wrt, "vjp")
    handle = _capi.c_graph()
    _capi.check(fn["kfuse_graph_vjp"](graph._handle, ys, ny, xs, nx,
                                      ctypes.byref(handle)))
    return Graph(graph.name + "_vjp", _handle=handle.value)


def grad(graph, loss, wrt=None):
    """The gradient of the rank-0 output `loss` with respect to the inputs
    in `wrt` (default every float input), as a new Graph with graph's
    inputs and outputs and "grad_<x>" per input."""
    if not isinstance(loss, str):
        raise TypeError(f"kfuse.grad: loss is an output's name, got {loss!r}")
    xs, nx = _names(wrt, "grad")
    handle = _capi.c_graph()
    _capi.check(fn["kfuse_graph_grad"](graph._handle, loss.encode(), xs, nx,
                                       ctypes.byref(handle)))
    return Graph(graph.name + "_grad", _handle=handle.value)


def split_vjp(graph, outputs=None, wrt=None):
    """vjp() for training, as two graphs: (forward, backward, plan).
    `forward` computes graph's outputs, then "saved_<i>" for each value the
    backward reads and does not recompute (matmuls, attention and reductions
    are saved; element-by-element values are recomputed from the fewest
    saved bytes, a minimum cut). `backward` computes "grad_<x>" per input differentiated
    from the inputs plan["backward_inputs"] lists as (source, index):
    "input" (graph's input), "output" (graph's output), "saved"
    (forward's saved_<index>) or "cotangent" (of the index-th output
    differentiated). plan["decisions"] says what was saved or recomputed
    and why."""
    ys, ny = _names(outputs, "split_vjp")
    xs, nx = _names(wrt, "split_vjp")
    forward, backward = _capi.c_graph(), _capi.c_graph()
    text = ctypes.c_void_p()
    _capi.check(fn["kfuse_graph_split_vjp"](
        graph._handle, ys, ny, xs, nx, ctypes.byref(forward),
        ctypes.byref(backward), ctypes.byref(text)))
    try:
        plan = json.loads(ctypes.string_at(text.value).decode())
    finally:
        fn["kfuse_free_string"](text)
    return (Graph(graph.name + "_forward", _handle=forward.value),
            Graph(graph.name + "_backward", _handle=backward.value), plan)
