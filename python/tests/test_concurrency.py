"""Concurrency through the Python package (issue 32): processes sharing one
disk cache while a vandal damages its entries (here and in CI: compiles
only; on a GPU every load also runs against the evaluator), and threads on
their own CUDA streams calling one executable while it compiles new shapes
(GPU only, skipped saying so)."""

import json
import os
import pathlib
import random
import subprocess
import sys
import time

import numpy as np
import pytest

import kfuse
from helpers import child_env, run_threads

CHILD = r"""
import json, sys
import numpy as np
import kfuse

cache_dir, seed = sys.argv[1], int(sys.argv[2])

def graph(n):
    g = kfuse.Graph(f"shared_{n}")
    x = g.input("x", kfuse.float32, (n, 96))
    g.output("y", kfuse.softmax(x * 0.5, -1).tanh() + x.mean(-1, keepdim=True))
    return g

wrong, runs, errors = 0, 0, []
for n in (8, 24, 40, 56):
    try:
        g = graph(n)
        exe = kfuse.compile(g, cache_dir=cache_dir)
        x = np.random.default_rng(seed).standard_normal((n, 96)).astype(
            np.float32)
        try:
            y = exe(x)
        except kfuse.NoDeviceError:
            continue
        (want,) = kfuse.evaluate(g, x)
        runs += 1
        wrong += not np.allclose(y, want, rtol=1e-4, atol=1e-5)
    except Exception as e:
        errors.append(repr(e))
print(json.dumps({"stats": kfuse.cache_stats(), "runs": runs,
                  "wrong": wrong, "errors": errors}))
"""


def vandalise(directory, rng):
    """Damages one entry: truncates it, flips a byte past its header, or
    writes garbage in its place."""
    entries = [p for p in pathlib.Path(directory).rglob("*.kfc")]
    if not entries:
        return
    victim = rng.choice(entries)
    try:
        data = bytearray(victim.read_bytes())
    except OSError:
        return  # replaced meanwhile
    how = rng.randrange(3)
    if how == 0 and data:
        data = data[:rng.randrange(len(data))]
    elif how == 1 and len(data) > 64:
        data[rng.randrange(64, len(data))] ^= 1 << rng.randrange(8)
    else:
        data = bytearray(rng.randbytes(rng.randrange(1, 512)))
    temporary = victim.with_suffix(".vandal")
    temporary.write_bytes(bytes(data))
    os.replace(temporary, victim)


def run_child(cache, seed):
    """One round of the four graphs in a new process; its report."""
    child = subprocess.run([sys.executable, "-c", CHILD, str(cache), str(seed)],
                           capture_output=True, text=True, env=child_env())
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout.strip().splitlines()[-1])


def assert_sound(report):
    assert not report["errors"], report["errors"]
    assert report["wrong"] == 0, report
    stats = report["stats"]
    assert stats["compiles"] + stats["disk_hits"] == 4, stats


def test_processes_share_a_disk_cache_while_a_vandal_damages_it(tmp_path):
    # Lanes of processes, each a round of four graphs through one cache
    # directory (a new process reads the disk, not its memory), while the
    # vandal damages an entry every few milliseconds. Whether a given entry
    # is read before or after the vandal reaches it is a race, so this part
    # asserts only what must hold either way: no errors, no wrong values,
    # each graph compiled or loaded once.
    cache = tmp_path / "cache"
    cache.mkdir()
    lanes, rounds = 4, 12
    started, running, reports = 0, [], []
    rng = random.Random(7)
    while started < rounds or running:
        while started < rounds and len(running) < lanes:
            running.append(subprocess.Popen(
                [sys.executable, "-c", CHILD, str(cache), str(started)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=child_env()))
            started += 1
        vandalise(cache, rng)
        time.sleep(0.005)
        for child in [c for c in running if c.poll() is not None]:
            running.remove(child)
            out, err = child.communicate()
            assert child.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
    assert len(reports) == rounds
    for report in reports:
        assert_sound(report)

    # Without the vandal, in order: a process mends what was damaged, the
    # next loads all four graphs from disk; then every entry is damaged and
    # a process refuses each one and compiles again.
    assert_sound(run_child(cache, rounds))
    loaded = run_child(cache, rounds + 1)
    assert_sound(loaded)
    assert loaded["stats"]["disk_hits"] == 4, loaded
    entries = list(cache.rglob("*.kfc"))
    assert entries
    for entry in entries:
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 0x40
        entry.write_bytes(bytes(data))
    damaged = run_child(cache, rounds + 2)
    assert_sound(damaged)
    assert damaged["stats"]["compiles"] == 4, damaged
    assert damaged["stats"]["disk_rejected"] >= 4, damaged


def test_threads_on_their_streams_share_one_executable():
    torch = pytest.importorskip("torch", reason="no torch here")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here")
    g = kfuse.Graph("threads_streams")
    x = g.input("x", kfuse.float32, ("M", 384))
    w = g.input("w", kfuse.float32, (384,))
    g.output("y", kfuse.gelu(x * w) - x.mean(-1, keepdim=True))
    exe = kfuse.compile(g, disk_cache=False)
    w_value = torch.randn(384, device="cuda")
    sizes = [64, 200, 1000, 4096]
    results = []

    def work(i):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for round_ in range(6):
                rows = sizes[(i + round_) % len(sizes)]
                x_value = torch.randn(rows, 384, device="cuda")
                out = torch.full((rows, 384), float("nan"), device="cuda")
                exe(x_value, w_value, out=out)
                results.append((x_value, out, stream))

    errors = run_threads(work, 8)
    torch.cuda.synchronize()
    assert not errors, errors
    assert len(results) == 8 * 6
    w_host = w_value.cpu().numpy()
    for x_value, out, _ in results:
        (want,) = kfuse.evaluate(g, x_value.cpu().numpy(), w_host)
        got = out.cpu().numpy()
        assert not np.isnan(got).any()
        assert np.abs(got - want).max() / np.abs(want).max() < 1e-5
    # One compile a shape, however many threads asked for it at once.
    shapes = [tuple(s["shapes"][0]) for s in exe.specializations()]
    assert sorted(shapes) == sorted({(r, 384) for r in sizes}), shapes
