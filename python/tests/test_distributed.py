"""kfuse inside torch.distributed on CPUs (issue 33's harness; the GPUs'
run is `torchrun --nproc_per_node=2 bench/distributed.py`): two gloo ranks
of bench/distributed.py --cpu, kfuse's parts in its float64 reference
evaluator. DDP's all-reduced gradients through kfuse's backward must equal
the global batch's in one eager model, and the tensor-parallel MLP's output
the whole MLP's. Skipped, saying so, without torch or its gloo backend."""

import json
import pathlib
import socket
import subprocess
import sys

import pytest

from helpers import child_env

torch = pytest.importorskip("torch", reason="no torch here")
if not (torch.distributed.is_available() and
        torch.distributed.is_gloo_available()):
    pytest.skip("torch.distributed with gloo is not available here",
                allow_module_level=True)

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
    "distributed.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_match_one_eager_model(tmp_path):
    out = tmp_path / "distributed.json"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu", "--world", "2", "--port",
         str(free_port()), "--json", str(out)],
        env=child_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["passed"]
    assert [r["rank"] for r in report["rows"]] == [0, 1]
    for row in report["rows"]:
        # float64 evaluation against float32 eager: rounding only.
        assert row["ddp_grad_rel_err"] < 1e-5, row
        assert row["tp_mlp_rel_err"] < 1e-5, row
