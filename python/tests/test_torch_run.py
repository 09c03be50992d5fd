"""The bookkeeping of the call path that matters most for host time
(device.TorchRun: torch CUDA tensors, checked with a few attribute reads,
their pointers written as words of one C array), without a GPU: CPU
tensors stand in for CUDA ones with `is_cuda` and `get_device` patched,
and the C tensors are read back as kfuse_run would read them. The GPU
tests run the same path on real tensors. Skips, saying so, without
torch."""

import ctypes

import pytest

import kfuse
from kfuse import _capi, device

torch = pytest.importorskip("torch", reason="no torch here")


@pytest.fixture
def as_if_on_gpu(monkeypatch):
    """CPU tensors that say they are on cuda:0 (and the stream reader
    torch builds for it)."""
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda s: True))
    monkeypatch.setattr(torch.Tensor, "get_device",
                        lambda s: device.DEVICE_INDEX)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream",
                        lambda index: 4096 + index, raising=False)


def graph_signature():
    inputs = [("x", kfuse.float32, (4, 8)), ("y", kfuse.bfloat16, (8,))]
    outputs = [("z", kfuse.float32, (4, 8))]
    return inputs, outputs


def c_tensors(run):
    """What kfuse_run reads: (data, dtype code, shape, bytes) a tensor."""
    read = []
    for pointer, count in ((run.inputs, run.num_inputs),
                           (run.outputs, run.num_outputs)):
        for i in range(count):
            t = pointer[i]
            read.append((t.data, t.dtype,
                         tuple(t.sizes[d] for d in range(t.rank)), t.bytes))
    return read


def test_fill_writes_pointers_shapes_and_sizes(as_if_on_gpu):
    run = device.TorchRun(*graph_signature())
    x = torch.zeros(4, 8)
    y = torch.zeros(8, dtype=torch.bfloat16)
    z = torch.zeros(4, 8)
    assert run.fill((x, y, z))
    assert c_tensors(run) == [
        (x.data_ptr(), kfuse.float32.code, (4, 8), 128),
        (y.data_ptr(), kfuse.bfloat16.code, (8,), 16),
        (z.data_ptr(), kfuse.float32.code, (4, 8), 128)]
    assert run.stream() == 4096 + device.DEVICE_INDEX
    # Another shape rewrites the sizes and bytes; another tensor of the
    # same shape only the pointer.
    x2, z2 = torch.zeros(2, 3, 8), torch.zeros(4, 8)
    assert run.fill((x2, y, z2))
    assert c_tensors(run)[0] == (x2.data_ptr(), kfuse.float32.code,
                                 (2, 3, 8), 192)
    assert c_tensors(run)[2] == (z2.data_ptr(), kfuse.float32.code, (4, 8),
                                 128)


def test_rebind_writes_only_pointers(as_if_on_gpu):
    run = device.TorchRun(*graph_signature())
    x, z = torch.zeros(4, 8), torch.zeros(4, 8)
    y = torch.zeros(8, dtype=torch.bfloat16)
    assert run.fill((x, y, z))
    x2, y2, z2 = torch.ones(4, 8), torch.ones(8, dtype=torch.bfloat16), \
        torch.ones(4, 8)
    run.rebind((x2, y2))
    run.rebind((z2,), run.num_inputs)
    assert [t[0] for t in c_tensors(run)] == [x2.data_ptr(), y2.data_ptr(),
                                              z2.data_ptr()]
    assert [t[2] for t in c_tensors(run)] == [(4, 8), (8,), (4, 8)]


@pytest.mark.parametrize("case", ["dtype", "strided", "count", "numpy",
                                  "device"])
def test_fill_refuses_what_the_general_path_must_name(as_if_on_gpu,
                                                      monkeypatch, case):
    run = device.TorchRun(*graph_signature())
    x, z = torch.zeros(4, 8), torch.zeros(4, 8)
    y = torch.zeros(8, dtype=torch.bfloat16)
    tensors = {"dtype": (x, y.float(), z),
               "strided": (torch.zeros(8, 4).t(), y, z),
               "count": (x, y),
               "numpy": (x.numpy(), y, z),
               "device": (x, y, z)}[case]
    if case == "device":
        monkeypatch.setattr(torch.Tensor, "get_device",
                            lambda s: device.DEVICE_INDEX + 1)
    assert not run.fill(tensors)


def test_executable_call_takes_the_short_path(as_if_on_gpu, monkeypatch):
    """exe(x, y, out=z) on (seemingly) CUDA tensors reaches kfuse_run once,
    through TorchRun's array, on torch's stream, and returns `out`."""
    g = kfuse.Graph("add")
    x = g.input("x", kfuse.float32, (4, 8))
    y = g.input("y", kfuse.float32, (4, 8))
    g.output("z", x + y)
    exe = kfuse.compile(g)
    calls = []

    def fake_run(handle, inputs, num_inputs, outputs, num_outputs, stream):
        calls.append((handle, ctypes.addressof(inputs.contents), num_inputs,
                      ctypes.addressof(outputs.contents), num_outputs,
                      stream))
        return 0

    monkeypatch.setitem(_capi.fn, "kfuse_run", fake_run)
    a, b, out = torch.zeros(4, 8), torch.zeros(4, 8), torch.zeros(4, 8)
    assert exe(a, b, out=out) is out
    assert exe(a, b, out=[out]) is out
    assert len(calls) == 2
    handle, ins, n_in, outs, n_out, stream = calls[0]
    size = ctypes.sizeof(_capi.DeviceTensor)
    assert (handle, n_in, n_out, outs - ins, stream) == \
        (exe._handle, 2, 1, 2 * size, 4096 + device.DEVICE_INDEX)
    assert c_tensors(exe._torch_run)[2][0] == out.data_ptr()
