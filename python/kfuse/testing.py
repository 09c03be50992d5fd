"""Regression-testing fusion from Python, as kfuse::testing::checkFusion:

    report = kfuse.testing.check_fusion(graph, shapes=[(4096, 1024)])
    assert report["passed"], report["summary"]

The graph is compiled fused and unfused, both run on the same fresh random
inputs (outputs poisoned first) and compared with the float64 reference
evaluator, and both timed; fused must match in values and not be slower.
Needs a GPU (kfuse.NoDeviceError without one).
"""

import json

from . import _capi
from ._capi import fn


def check_fusion(graph, shapes=(), *, seed=0, reduction_length=1024,
                 allow_tf32=False, time=True):
    """The report as a dict: passed, values_match, fused_not_slower, seed,
    fused_kernels, unfused_kernels, fused_ms, unfused_ms, outputs (name,
    dtype, fused_error, unfused_error, tolerance, passed), summary."""
    ranks, pointers, keep = _capi.shape_arrays(list(shapes))
    text = _capi.take_string(fn["kfuse_check_fusion"], graph._handle, ranks,
                             pointers, len(shapes), seed, reduction_length,
                             int(allow_tf32), int(time))
    del keep
    return json.loads(text)
