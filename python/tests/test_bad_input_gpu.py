"""Bad input through Python (issue 32): each bad call raises a kfuse error
that names the problem, launches nothing, and leaves the executable usable:
the correct call right after it runs and matches the float64 evaluator.
Skips, saying why, without torch or without a GPU."""

import numpy as np
import pytest

import kfuse

torch = pytest.importorskip("torch", reason="no torch here")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU here", allow_module_level=True)


def residual_graph():
    g = kfuse.Graph("residual")
    x = g.input("x", kfuse.float32, ("M", 256))
    w = g.input("w", kfuse.float32, (256,))
    g.output("y", kfuse.gelu(x * w) + x)
    return g


GRAPH = residual_graph()
EXE = kfuse.compile(GRAPH)


def good_inputs(rows=64):
    return (torch.randn(rows, 256, device="cuda"),
            torch.randn(256, device="cuda"))


def assert_still_correct(x=None, w=None):
    """The correct call right after a bad one, its output poisoned first."""
    if x is None:
        x, w = good_inputs()
    out = torch.full(tuple(x.shape), float("nan"), device="cuda")
    EXE(x, w, out=out)
    torch.cuda.synchronize()
    (expected,) = kfuse.evaluate(GRAPH, x.cpu().numpy(), w.cpu().numpy())
    got = out.cpu().numpy()
    assert not np.isnan(got).any()
    assert np.abs(got - expected).max() / np.abs(expected).max() < 1e-5


class Misaligned:
    """A float32 [64, 256] array 2 bytes into a CUDA buffer, seen through
    __cuda_array_interface__ (torch cannot make such a view)."""

    def __init__(self):
        self.raw = torch.empty(64 * 256 * 4 + 2, dtype=torch.uint8,
                               device="cuda")
        self.__cuda_array_interface__ = {
            "shape": (64, 256), "typestr": "<f4", "strides": None,
            "data": (self.raw.data_ptr() + 2, False), "version": 3}


def huge_temporary():
    # Unfused, the [2^20, 2^20] product is a 4 TiB temporary between its
    # kernels: more than any GPU holds.
    g = kfuse.Graph("huge")
    a = g.input("a", kfuse.float32, ("M", 1))
    b = g.input("b", kfuse.float32, (1, "N"))
    g.output("s", (a * b).sum(-1))
    exe = kfuse.compile(g, fusion="unfused", disk_cache=False)
    n = 1 << 20
    return lambda: exe(torch.randn(n, 1, device="cuda"),
                       torch.randn(1, n, device="cuda"))


def call(*args, **kwargs):
    return lambda: EXE(*args, **kwargs)


def bad_calls():
    """name: (the bad call, a pattern its message must match)."""
    x, w = good_inputs()
    return {
        "host tensor": (call(x, w.cpu()), "'w' is a torch tensor on cpu"),
        "dtype": (call(x.half(), w),
                  "'x' is float32 in the graph, got a tensor of float16"),
        "rank": (call(x.reshape(-1), w), "'x' has shape 16384 "),
        "static dim": (call(x, torch.randn(255, device="cuda")),
                       "'w' has shape 255 "),
        "not contiguous": (call(torch.randn(256, 64, device="cuda").T, w),
                           "'x' is not contiguous"),
        "misaligned": (call(Misaligned(), w,
                            out=torch.empty(64, 256, device="cuda")),
                       "'x' is misaligned"),
        "zero rows": (call(torch.randn(0, 256, device="cuda"), w),
                      "'x' .*zero-size"),
        "too few": (call(x), "expected 2 inputs"),
        "too many": (call(x, w, w), "expected 2 inputs"),
        "output shape": (call(x, w, out=torch.empty(63, 256, device="cuda")),
                         "'y' has shape 63x256"),
        "host mixed with device": (call(x, w.cpu().numpy()),
                                   "'w' is a ndarray"),
        "huge temporary": (huge_temporary(), "(?i)memory"),
    }


NAMES = ["host tensor", "dtype", "rank", "static dim", "not contiguous",
         "misaligned", "zero rows", "too few", "too many", "output shape",
         "host mixed with device", "huge temporary"]


@pytest.mark.parametrize("name", NAMES)
def test_bad_call_raises_naming_it_then_a_good_call_runs(name):
    bad, message = bad_calls()[name]
    torch.cuda.synchronize()
    with pytest.raises(kfuse.Error, match=message):
        bad()
    torch.cuda.synchronize()
    assert_still_correct()


def test_a_freed_tensors_successor_is_read_afresh():
    # The caching allocator hands the freed block to the next tensor of its
    # size: the run must read the new values, whatever it kept of the old
    # call (a CUDA graph's nodes, a described slot).
    x, w = good_inputs(4096)
    assert_still_correct(x, w)
    address = x.data_ptr()
    del x
    successor = torch.randn(4096, 256, device="cuda") * 3
    if successor.data_ptr() != address:
        pytest.skip("the allocator placed the successor elsewhere")
    assert_still_correct(successor, w)


def test_a_tensor_on_another_gpu_is_refused():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs: this machine has one")
    x, w = good_inputs()
    with pytest.raises(kfuse.InvalidArgumentError, match="cuda:1"):
        EXE(x.to("cuda:1"), w)
    assert_still_correct()
