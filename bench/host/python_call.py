"""The host time of bench/python_call.py's call without a GPU: CPU torch
tensors that say they are on cuda:0, and libcuda.so.1 a stand-in whose
every call returns at once (bench/host/measure.sh sets it up), so that
what is timed is the Python package, ctypes and kfuse's run(), not the
driver. Medians of 7 batches of 20,000 calls."""

import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] /
                       "python"))
import kfuse  # noqa: E402
from kfuse import executable  # noqa: E402


def per_call_us(fn, calls=20000, batches=7):
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main():
    torch.Tensor.is_cuda = property(lambda s: True)
    torch.Tensor.get_device = lambda s: 0
    torch._C._cuda_getCurrentRawStream = lambda index: 0
    if not hasattr(torch.Tensor, "nbytes"):  # torch 1.13
        torch.Tensor.nbytes = property(
            lambda s: s.numel() * s.element_size())
    g = kfuse.Graph("add_gelu")
    x = g.input("x", kfuse.float32, (1024,))
    y = g.input("y", kfuse.float32, (1024,))
    g.output("z", kfuse.gelu(x + y))
    exe = kfuse.compile(g, disk_cache=False)
    a, b, out = torch.randn(1024), torch.randn(1024), torch.empty(1024)
    assert exe(a, b, out=out) is out
    bound = executable.BoundRun(exe, [a, b], [out])
    print(f"python call, 3 tensors: {per_call_us(lambda: exe(a, b, out=out)):.3f} "
          f"us; bound run {per_call_us(lambda: bound([a, b], [out])):.3f} us "
          "(no driver time)")


if __name__ == "__main__":
    main()
