"""Differential fuzzing of the PyTorch path (kfuse.torch_fuzz): random
torch programs of the ops kfuse.torch converts, through kfuse against
PyTorch in float64. Without a GPU through the float64 evaluator (what the
converter makes of each op); with one, compiled, and through
torch.compile(backend="kfuse") where PyTorch has it."""

import pytest

torch = pytest.importorskip("torch", reason="no torch here")
import kfuse.graph as kgraph  # noqa: E402
import kfuse.torch as ktorch  # noqa: E402
from kfuse import torch_fuzz  # noqa: E402


@pytest.mark.parametrize("dtype, count, seed", [
    ("float32", 400, 1), ("bfloat16", 200, 100000)])
def test_random_programs_match_pytorch(dtype, count, seed, capsys):
    status = torch_fuzz.main(["--count", str(count), "--seed", str(seed),
                              "--dtype", dtype, "--max-steps", "12"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"{count} passed" in out or "degenerate" in out, out


def test_a_wrong_conversion_is_found_and_shrunk(monkeypatch, tmp_path,
                                                capsys):
    """The fuzzer can fail: sigmoid converted as tanh is caught, and the
    reproducer written is a small standalone program that uses it."""
    monkeypatch.setitem(ktorch._FUNCTIONS, torch.sigmoid, kgraph.tanh)
    status = torch_fuzz.main(["--count", "150", "--seed", "1",
                              "--regressions", str(tmp_path)])
    assert status == 1
    assert "failed" in capsys.readouterr().out
    reproducers = sorted(tmp_path.glob("torch_fuzz_*.py"))
    assert reproducers
    namespace = {}
    source = reproducers[0].read_text()
    exec(source, namespace)  # noqa: S102 (the fuzzer's own output)
    assert callable(namespace["program"]) and namespace["INPUTS"]
    assert "torch.sigmoid" in source
    assert source.count("\n    v") <= 4, source  # shrunk to a few steps


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU here")
@pytest.mark.parametrize("mode, dtype", [
    ("kfuse", "float32"), ("dynamo", "float32"), ("kfuse", "bfloat16"),
    ("dynamic", "float32")])
def test_random_programs_on_the_gpu_match_pytorch(mode, dtype, capsys):
    if mode in ("dynamo", "dynamic") and not hasattr(torch, "compile"):
        pytest.skip("this PyTorch has no torch.compile")
    symbolic = ktorch.backend_report["symbolic"]
    status = torch_fuzz.main(["--count", "60", "--seed", "7", "--mode", mode,
                              "--dtype", dtype])
    assert status == 0, capsys.readouterr().out
    if mode == "dynamic":  # the backend did see symbolic sizes
        assert ktorch.backend_report["symbolic"] > symbolic
