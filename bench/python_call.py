"""Host time of a Python call of a cached kfuse executable with 3 torch
tensors (two inputs, `out=`), and of the same as a bound run, against the same call of a torch eager op
chain; medians of 5 batches of 2,000 calls, the GPU synchronised between
batches. Needs a CUDA GPU and torch."""

import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] /
                       "python"))
import kfuse  # noqa: E402


def per_call_us(fn, calls=2000, batches=5):
    times = []
    for _ in range(batches):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        times.append(elapsed / calls * 1e6)
    return statistics.median(times)


def main():
    g = kfuse.Graph("add_gelu")
    x = g.input("x", kfuse.float32, (1024,))
    y = g.input("y", kfuse.float32, (1024,))
    g.output("z", kfuse.gelu(x + y))
    exe = kfuse.compile(g)
    a = torch.randn(1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    out = torch.empty(1024, device="cuda")
    exe(a, b, out=out)
    kfuse_us = per_call_us(lambda: exe(a, b, out=out))
    eager_us = per_call_us(lambda: torch.nn.functional.gelu(a + b))
    # What torch.compile(backend="kfuse") runs after its first call.
    bound = kfuse.executable.BoundRun(exe, [a, b], [out])
    bound_us = per_call_us(lambda: bound([a, b], [out]))
    print(f"python call of a cached executable, 3 torch tensors: "
          f"{kfuse_us:.2f} us (target <= 10 us); bound run (Dynamo's calls "
          f"after the first) {bound_us:.2f} us; torch eager add+gelu "
          f"{eager_us:.2f} us")


if __name__ == "__main__":
    main()
