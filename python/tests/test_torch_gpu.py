"""torch tensors on the GPU: zero-copy runs on the caller's stream, `out=`,
and refused tensors. Skips, saying why, without torch or without a GPU."""

import os

import numpy as np
import pytest

import kfuse

torch = pytest.importorskip("torch", reason="no torch here")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU here", allow_module_level=True)


def layer_graph(dtype=kfuse.float32):
    g = kfuse.Graph("layer")
    x = g.input("x", dtype, ("M", 256))
    w = g.input("w", dtype, (256,))
    h = x * w
    g.output("y", kfuse.silu(h - h.mean(-1, keepdim=True)))
    return g


def reference(g, *tensors):
    arrays = [t.float().cpu().numpy() for t in tensors]
    return kfuse.evaluate(g, *arrays)[0]


def relative_error(actual, expected):
    actual = actual.float().cpu().numpy()
    assert not np.isnan(actual).any()
    return np.abs(actual - expected).max() / np.abs(expected).max()


@pytest.mark.parametrize("dtype,tol", [(kfuse.float32, 1e-5),
                                       (kfuse.bfloat16, 2e-2)])
def test_torch_in_torch_out(dtype, tol):
    g = layer_graph(dtype)
    exe = kfuse.compile(g)
    torch_dtype = torch.float32 if dtype is kfuse.float32 else torch.bfloat16
    x = torch.randn(300, 256, device="cuda", dtype=torch_dtype)
    w = torch.randn(256, device="cuda", dtype=torch_dtype)
    y = exe(x, w)
    assert isinstance(y, torch.Tensor) and y.device == x.device
    assert y.dtype == torch_dtype and tuple(y.shape) == (300, 256)
    assert relative_error(y, reference(g, x, w)) < tol


def test_out_and_the_current_stream():
    g = layer_graph()
    exe = kfuse.compile(g)
    x = torch.randn(1024, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    out = torch.full((1024, 256), float("nan"), device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        result = exe(x, w, out=out)
    side.synchronize()
    assert result is out
    assert relative_error(out, reference(g, x, w)) < 1e-5


def test_two_streams_at_once():
    g = layer_graph()
    exe = kfuse.compile(g)
    xs = [torch.randn(2048, 256, device="cuda") for _ in range(2)]
    w = torch.randn(256, device="cuda")
    streams = [torch.cuda.Stream() for _ in range(2)]
    outs = []
    for s, x in zip(streams, xs):
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            outs.append(exe(x, w))
    torch.cuda.synchronize()
    for x, y in zip(xs, outs):
        assert relative_error(y, reference(g, x, w)) < 1e-5


@pytest.mark.parametrize("launch", ["graph", "kernels"])
def test_launch_modes_follow_new_tensors(launch):
    # Unfused: five kernels with temporaries between them; every call takes
    # new tensors, so a CUDA graph's nodes must follow their addresses.
    g = layer_graph()
    exe = kfuse.compile(g, fusion="unfused", launch=launch,
                        disk_cache=False)
    w = torch.randn(256, device="cuda")
    for rows in (512, 512, 512, 96, 512):
        x = torch.randn(rows, 256, device="cuda")
        y = exe(x, w)
        assert relative_error(y, reference(g, x, w)) < 1e-5


def test_captured_in_a_torch_cuda_graph():
    # A stream being captured gets kfuse's kernels as nodes of the caller's
    # graph; replays recompute from the captured tensors' new values.
    g = layer_graph()
    exe = kfuse.compile(g, fusion="unfused", disk_cache=False)
    x = torch.randn(1024, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    out = torch.empty(1024, 256, device="cuda")
    exe(x, w, out=out)  # compiles and loads outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        exe(x, w, out=out)
    for _ in range(2):
        x.copy_(torch.randn(1024, 256, device="cuda"))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert relative_error(out, reference(g, x, w)) < 1e-5


def test_bad_tensors_are_refused_before_any_launch():
    g = layer_graph()
    exe = kfuse.compile(g)
    x = torch.randn(64, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    with pytest.raises(kfuse.InvalidArgumentError, match="'w' is a torch "
                       "tensor on cpu"):
        exe(x, w.cpu())
    with pytest.raises(kfuse.InvalidArgumentError, match="not contiguous"):
        exe(torch.randn(256, 64, device="cuda").T, w)
    with pytest.raises(kfuse.InvalidArgumentError, match="'x' is float32 in "
                       "the graph, got a tensor of float16"):
        exe(x.half(), w)
    with pytest.raises(kfuse.Error, match="w"):
        exe(x, torch.randn(255, device="cuda"))


def test_cupy_arrays_run_zero_copy():
    cupy = pytest.importorskip("cupy", reason="no CuPy here")
    g = layer_graph()
    exe = kfuse.compile(g)
    x = cupy.random.standard_normal((128, 256), dtype=cupy.float32)
    w = cupy.random.standard_normal((256,), dtype=cupy.float32)
    y = exe(x, w)
    cupy.cuda.runtime.deviceSynchronize()
    expected = kfuse.evaluate(g, cupy.asnumpy(x), cupy.asnumpy(w))[0]
    got = cupy.asnumpy(y)
    assert np.abs(got - expected).max() / np.abs(expected).max() < 1e-5


def test_profile_places_each_kernel_on_the_roofline():
    g = layer_graph()
    exe = kfuse.compile(g)
    x = torch.randn(4096, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    kernels = exe.profile(x, w, repetitions=5)
    assert len(kernels) >= 1
    assert all(k["ms"] > 0 and k["bytes"] > 0 and k["bound"] for k in kernels)


class DLPackOnly:
    """A GPU tensor seen only through the DLPack protocol."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_dlpack_inputs_run_zero_copy():
    g = layer_graph(kfuse.bfloat16)
    exe = kfuse.compile(g)
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(256, device="cuda", dtype=torch.bfloat16)
    out = torch.full((64, 256), float("nan"), device="cuda",
                     dtype=torch.bfloat16)
    exe(DLPackOnly(x), DLPackOnly(w), out=out)
    torch.cuda.synchronize()
    assert relative_error(out, reference(g, x, w)) < 2e-2
    with pytest.raises(kfuse.InvalidArgumentError, match="not contiguous"):
        exe(DLPackOnly(torch.randn(256, 64, device="cuda",
                                   dtype=torch.bfloat16).T), DLPackOnly(w),
            out=out)


def test_jax_arrays_run_zero_copy():
    # JAX would otherwise take most of the GPU's memory for itself.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax", reason="no JAX here")
    jnp = pytest.importorskip("jax.numpy")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    g = layer_graph()
    exe = kfuse.compile(g)
    x = jnp.asarray(np.random.standard_normal((32, 256)), dtype=jnp.float32)
    w = jnp.asarray(np.random.standard_normal((256,)), dtype=jnp.float32)
    out = torch.empty(32, 256, device="cuda")
    exe(x, w, out=out)
    torch.cuda.synchronize()
    expected = kfuse.evaluate(g, np.asarray(x), np.asarray(w))[0]
    got = out.cpu().numpy()
    assert np.abs(got - expected).max() / np.abs(expected).max() < 1e-5


@pytest.mark.parametrize("launch", ["graph", "kernels"])
def test_a_growing_kv_cache_compiles_once_a_bucket(launch):
    # A generation loop's cache grows by one key a step: with the length
    # dynamic, one compile serves 65..128 keys; each step against float64.
    g = kfuse.Graph(f"py_growing_cache_{launch}")
    q = g.input("q", kfuse.bfloat16, (1, 8, 1, 128))
    k = g.input("k", kfuse.bfloat16, (1, 2, "L", 128))
    v = g.input("v", kfuse.bfloat16, (1, 2, "L", 128))
    g.output("o", kfuse.scaled_dot_product_attention(q, k, v))
    exe = kfuse.compile(g, disk_cache=False, launch=launch, dynamic="L")
    before = kfuse.cache_stats()["compiles"]
    qt = torch.randn(1, 8, 1, 128, device="cuda", dtype=torch.bfloat16)
    for length in (65, 66, 100, 127, 128, 70):
        kt = torch.randn(1, 2, length, 128, device="cuda", dtype=torch.bfloat16)
        vt = torch.randn(1, 2, length, 128, device="cuda", dtype=torch.bfloat16)
        out = exe(qt, kt, vt)
        assert relative_error(out, reference(g, qt, kt, vt)) < 2e-2, length
    assert kfuse.cache_stats()["compiles"] - before == 1
