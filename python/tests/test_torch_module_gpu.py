"""kfuse.torch on the GPU: modules compiled through fx and through
torch.compile(backend="kfuse"), against eager PyTorch. Skips, saying why,
without torch or without a GPU."""

import pytest

torch = pytest.importorskip("torch", reason="no torch here")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU here", allow_module_level=True)
F = torch.nn.functional

import kfuse.torch as ktorch  # noqa: E402
from test_torch_convert import (MLP, Block, FlipInTheMiddle,  # noqa: E402
                                NormMLP, gradients)


def relative_error(actual, expected):
    assert not torch.isnan(actual).any()
    return ((actual.double() - expected.double()).abs().max() /
            expected.double().abs().max()).item()


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4),
                                       (torch.bfloat16, 3e-2)])
def test_block_through_fx(dtype, tol):
    torch.manual_seed(0)
    module = Block().eval().to("cuda", dtype)
    x = torch.randn(4, 128, 32, device="cuda", dtype=dtype)
    compiled = ktorch.compile(module, (x,))
    with torch.no_grad():
        expected = module(x)
        got = compiled(x)
        again = compiled(torch.randn(2, 64, 32, device="cuda", dtype=dtype))
    assert got.dtype == dtype and got.shape == expected.shape
    assert relative_error(got, expected) < tol
    assert again.shape == (2, 64, 32)


def test_sdpa_through_fx():
    class Attn(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    q, k, v = (torch.randn(2, 4, 256, 64, device="cuda",
                           dtype=torch.bfloat16) for _ in range(3))
    compiled = ktorch.compile(Attn(), (q, k, v))
    got = compiled(q, k, v)
    expected = Attn()(q, k, v)
    assert relative_error(got, expected) < 3e-2


def test_torch_compile_backend():
    torch.manual_seed(1)
    module = MLP().eval().to("cuda")
    x = torch.randn(8, 32, device="cuda")
    before = ktorch.backend_report["compiled"]
    compiled = torch.compile(module, backend="kfuse")
    with torch.no_grad():
        got = compiled(x)
        expected = module(x)
    assert relative_error(got, expected) < 1e-4
    # kfuse ran the graph; PyTorch did not run it instead.
    assert ktorch.backend_report["compiled"] == before + 1, \
        ktorch.backend_report["fallbacks"]


def test_torch_compile_calls_after_the_first_run_bound(monkeypatch):
    """Dynamo's later calls pass only data pointers (executable.BoundRun):
    each must read the tensors of its own call, also after a parameter's
    storage is replaced, into outputs of its own."""
    from kfuse import executable
    bound_calls = []
    run = executable.BoundRun.__call__

    def counted(self, inputs, out):
        bound_calls.append(len(inputs))
        return run(self, inputs, out)

    monkeypatch.setattr(executable.BoundRun, "__call__", counted)
    torch.manual_seed(3)
    module = MLP().eval().to("cuda")
    compiled = torch.compile(module, backend="kfuse", dynamic=False)
    with torch.no_grad():
        outputs = []
        for step in range(4):
            if step == 2:  # new storage for a parameter, same shape
                first = next(module.parameters())
                first.data = torch.randn_like(first)
            x = torch.randn(8, 32, device="cuda")
            got = compiled(x)
            assert relative_error(got, module(x)) < 1e-4, f"call {step}"
            outputs.append(got)
    assert bound_calls, "no call after the first ran bound"
    assert len({o.data_ptr() for o in outputs}) == len(outputs)


def _norm_mlp_loss(outputs):
    y, loss = outputs
    return loss + y.float().sum() * 0.1


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4),
                                       (torch.bfloat16, 5e-2)])
def test_training_step_through_kfuse(dtype, tol):
    torch.manual_seed(2)
    module = NormMLP().to("cuda", dtype)
    x = torch.randn(64, 16, device="cuda", dtype=dtype)
    compiled = ktorch.compile(module, (x,))
    got = gradients(module, compiled, x, _norm_mlp_loss)
    want = gradients(module, module, x, _norm_mlp_loss)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and relative_error(g, w) < tol


def test_training_through_parts_and_pytorch():
    torch.manual_seed(3)
    module = FlipInTheMiddle().to("cuda")
    x = torch.randn(8, 16, device="cuda")
    compiled = ktorch.compile(module, (x,), fallback=True)
    got = gradients(module, compiled, x)
    for g, w in zip(got, gradients(module, module, x)):
        assert relative_error(g, w) < 1e-4


def test_torch_compile_backend_trains():
    torch.manual_seed(5)
    module = NormMLP().to("cuda")
    x = torch.randn(32, 16, device="cuda")
    before = ktorch.backend_report["compiled"]
    got = gradients(module, torch.compile(module, backend="kfuse"), x,
                    _norm_mlp_loss)
    assert ktorch.backend_report["compiled"] > before
    want = gradients(module, module, x, _norm_mlp_loss)
    for g, w in zip(got, want):
        assert relative_error(g, w) < 1e-4
