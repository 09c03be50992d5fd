"""HuggingFace transformer LMs through torch.compile(backend="kfuse") against
eager and backend="inductor", in one run on one GPU (issue 28's targets).

    python3 bench/hf_models.py [--only gpt2,llama] [--peers eager,inductor]
    python3 bench/hf_models.py --cold-processes [--only gpt2,llama]

Models are built from a config with random weights (nothing downloaded),
bf16, eval, no_grad. Per model and backend: the cold compile (first call),
the median time of a forward, the logits' relative error against eager,
and for kfuse how many parts it ran and what it left to PyTorch.

The cold figures of a combined run favour whichever backend comes later
in the process (inductor's compile workers, Triton's and inductor's
caches warmed by the model before). --cold-processes measures each model
and backend in a process of its own with empty kfuse, inductor and Triton
cache directories: the model built, one eager forward (CUDA and cuBLAS
set up alike for both), then the compiled model's first call, timed, and
split into Dynamo's part, kfuse's partitioning, building kfuse's parts and
their first runs. KFUSE_BENCH_PROFILE=PATH writes each child's cProfile of
that call to PATH.BACKEND.PID; --cold-dumps DIR each kfuse compile's
stages (a disk-cache miss in the warm process shows as a new directory).
"""

import argparse
import collections
import cProfile
import faulthandler
import os
import pathlib
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] /
                       "python"))
import kfuse  # noqa: E402
import kfuse.torch as ktorch  # noqa: E402
from kfuse import _capi as capi  # noqa: E402
from python_call import per_call_us  # noqa: E402 (beside this script)

MODELS = {
    # GPT-2 small at B8 S1024.
    "gpt2": dict(kind="gpt2", batch=8, seq=1024),
    # A Llama config: 2048 hidden, 32 query / 4 KV heads, 5632 MLP, 4 layers.
    "llama": dict(kind="llama", batch=4, seq=2048),
}


START = time.perf_counter()


def log(message):
    """Progress on stderr, with seconds since the start."""
    print(f"[{time.perf_counter() - START:7.1f} s] {message}", file=sys.stderr,
          flush=True)


# perf_counter stamps of the last call: the compiled graph entered and
# left, kfuse_run entered and left (--host-breakdown).
_stamps = {}


def _stamped(name, call):
    def stamped(*args, **kwargs):
        _stamps[name + "_in"] = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            _stamps[name + "_out"] = time.perf_counter()
    return stamped


def host_breakdown(fn, calls=20):
    """Medians of where a forward's host time goes, in us: before the
    compiled graph is entered (the model's Python, Dynamo's guards), in
    the graph before kfuse_run (the tensors described), kfuse_run (checks
    and launches), the graph after it, and after the graph. The GPU idles
    through the first two: its first kernel waits for kfuse_run."""
    parts = collections.defaultdict(list)
    for _ in range(calls):
        torch.cuda.synchronize()
        _stamps.clear()
        start = time.perf_counter()
        fn()
        end = time.perf_counter()
        marks = [start, _stamps.get("graph_in"), _stamps.get("run_in"),
                 _stamps.get("run_out"), _stamps.get("graph_out"), end]
        if None in marks:
            return "kfuse_run was not called once a forward"
        for name, a, b in zip(["before graph", "graph to run", "kfuse_run",
                               "run to return", "after graph"],
                              marks, marks[1:]):
            parts[name].append((b - a) * 1e6)
    return ", ".join(f"{name} {statistics.median(v):.0f}"
                     for name, v in parts.items())


def _traced_backend(gm, example_inputs):
    """kfuse's backend, saying what each graph Dynamo captured became."""
    nodes = len(gm.graph.nodes)
    log(f"Dynamo captured a graph of {nodes} nodes")
    before = ktorch.backend_report["compiled"]
    left = len(ktorch.backend_report["fallbacks"])
    forward = _stamped("graph", ktorch._dynamo_backend(gm, example_inputs))
    log(f"graph of {nodes} nodes: {ktorch.backend_report['compiled'] - before}"
        " kfuse parts")
    for reason in sorted(set(ktorch.backend_report["fallbacks"][left:]))[:8]:
        log(f"  left to PyTorch: {reason[:300]}")
    return forward


def _timed_build(build_part, dump):
    parts = iter(range(1 << 30))

    def timed(self, args):
        start = time.perf_counter()
        result = build_part(self, args)
        log(f"  part converted and compiled in "
            f"{time.perf_counter() - start:.2f} s")
        if dump:
            path = pathlib.Path(dump) / f"part-{next(parts)}.mlir"
            path.write_text(result.graph.to_mlir())
            log(f"  graph written to {path}")
        return result
    return timed


def build(kind):
    import transformers as tf
    if kind == "gpt2":
        config = tf.GPT2Config(n_embd=768, n_layer=12, n_head=12,
                               n_positions=1024, vocab_size=50257)
        model = tf.GPT2LMHeadModel(config)
    else:
        config = tf.LlamaConfig(hidden_size=2048, num_attention_heads=32,
                                num_key_value_heads=4,
                                intermediate_size=5632, num_hidden_layers=4,
                                vocab_size=32000,
                                max_position_embeddings=4096)
        model = tf.LlamaForCausalLM(config)
    config.use_cache = False
    return model.to("cuda", torch.bfloat16).eval()


def median_ms(fn, repeats=20):
    times = []
    for _ in range(repeats):
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def host_ms(fn, calls=3):
    """Host time to enqueue one forward (the GPU still busy with earlier
    ones: a figure near the forward's GPU time means the host keeps up)."""
    return per_call_us(fn, calls=calls, batches=1) / 1000


def relative_error(got, expected):
    got, expected = got.double(), expected.double()
    if torch.isnan(got).any():
        return float("nan")
    return ((got - expected).abs().max() / expected.abs().max()).item()


def kernel_table(fn, top, calls=3):
    """The `top` GPU kernels by time over `calls` forwards (torch.profiler:
    kfuse's kernels, launched through the driver API, are seen by CUPTI
    like PyTorch's own)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = collections.defaultdict(lambda: [0.0, 0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            entry = kernels[event.name[:70]]
            entry[0] += event.device_time / calls
            entry[1] += 1
    total = sum(us for us, _ in kernels.values())
    lines = [f"    {total / 1000:.3f} ms per forward in "
             f"{sum(n for _, n in kernels.values()) // calls} kernels"]
    for name, (us, n) in sorted(kernels.items(), key=lambda kv: -kv[1][0])[
            :top]:
        lines.append(f"    {us:9.1f} us {n // calls:4d}x  {name}")
    return "\n".join(lines)


def run(model, ids, backend, top=0, breakdown=False):
    torch._dynamo.reset()
    log(f"{backend}: first call")
    forward = model if backend == "eager" else torch.compile(
        model, backend=_traced_backend if backend == "kfuse" else backend)
    with torch.no_grad():
        start = time.perf_counter()
        logits = forward(ids, use_cache=False).logits
        torch.cuda.synchronize()
        cold = time.perf_counter() - start
        forward(ids, use_cache=False)
        ms = median_ms(lambda: forward(ids, use_cache=False))
        host = host_ms(lambda: forward(ids, use_cache=False))
        if top:
            print(f"{backend} kernels:\n" + kernel_table(
                lambda: forward(ids, use_cache=False), top), flush=True)
        if backend == "kfuse" and breakdown:
            print("kfuse host us: " + host_breakdown(
                lambda: forward(ids, use_cache=False)), flush=True)
    return logits, cold, ms, host


def cold_child(name, backend):
    """The first compiled call of `name` under `backend`, in this process
    (--cold-child). Its last line: the call's seconds, then of them those
    in kfuse's backend (partitioning the FX graph), in building kfuse's
    parts (conversion and compile) and in the parts' calls beyond their
    build (the first runs: module loads, launches); the rest is Dynamo's."""
    spec = MODELS[name]
    spent = collections.Counter()

    def timed(key, function):
        def wrapper(*args):
            start = time.perf_counter()
            try:
                return function(*args)
            finally:
                spent[key] += time.perf_counter() - start
        return wrapper
    ktorch.CompiledModule._build = timed("build",
                                         ktorch.CompiledModule._build)
    ktorch.CompiledModule.__call__ = timed("call",
                                           ktorch.CompiledModule.__call__)
    torch.manual_seed(0)
    model = build(spec["kind"])
    ids = torch.randint(0, model.config.vocab_size,
                        (spec["batch"], spec["seq"]), device="cuda")
    with torch.no_grad():
        model(ids, use_cache=False)
        torch.cuda.synchronize()
        forward = torch.compile(
            model, backend=timed("backend", ktorch._dynamo_backend)
            if backend == "kfuse" else backend)
        profile_to = os.environ.get("KFUSE_BENCH_PROFILE")
        profiler = cProfile.Profile() if profile_to else None
        start = time.perf_counter()
        if profiler:
            profiler.enable()
        forward(ids, use_cache=False)
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        if profiler:  # where the first call's time goes, by function
            profiler.disable()
            with open(profile_to + f".{backend}.{os.getpid()}", "w") as f:
                pstats.Stats(profiler, stream=f).sort_stats(
                    "cumulative").print_stats(60)
        stats = kfuse.cache_stats()
        print(f"{total:.3f} {spent['backend']:.3f} {spent['build']:.3f} "
              f"{spent['call'] - spent['build']:.3f} {stats['compiles']} "
              f"{stats['disk_hits']}")


def first_call(name, backend, env):
    """The seconds of the first call and its parts (cold_child's last
    line) in a child process with `env`; NaNs where it failed. Under
    KFUSE_DEBUG the child's log lines about compiles are printed."""
    done = subprocess.run(
        [sys.executable, __file__, "--cold-child", name, backend], env=env,
        capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(f"{name} {backend}: the child failed:\n{done.stderr[-2000:]}")
        return [float("nan")] * 6
    if env.get("KFUSE_DEBUG"):
        print("\n".join(line[:300] for line in done.stderr.splitlines()
                        if "specialised" in line or "disk cache" in line))
    return [float(x) for x in lines[-1].split()]


def cold_processes(names, peers, dumps=None):
    """Each model's cold compile under kfuse and inductor, each in a fresh
    process with empty caches; then kfuse's warm start, a new process on
    the disk cache the cold one filled. kfuse's seconds are split into
    Dynamo's (the rest), the backend's partitioning, building the parts
    and their first runs."""
    print("| model | start | kfuse s | dynamo | partition | build | "
          "first runs | compiles | disk hits | inductor s | "
          "kfuse / inductor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ,
                       KFUSE_CACHE_DIR=os.path.join(tmp, "kfuse"),
                       TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "ind"),
                       TRITON_CACHE_DIR=os.path.join(tmp, "triton"))
            if dumps:  # each compile's stages, by key (a miss shows)
                env["KFUSE_DUMP_DIR"] = os.path.join(dumps, name + "-cold")
            cold = first_call(name, "kfuse", env)
            if dumps:
                env["KFUSE_DUMP_DIR"] = os.path.join(dumps, name + "-warm")
            warm = first_call(name, "kfuse", env)
            env.pop("KFUSE_DUMP_DIR", None)
            inductor = (first_call(name, "inductor", env)[0]
                        if "inductor" in peers else float("nan"))
        for start, (total, backend, build_s, runs, compiles, hits) in (
                ("cold", cold), ("warm", warm)):
            ratio = (f"{total / inductor:.3f}" if start == "cold"
                     else "-")
            print(f"| {name} | {start} | {total:.3f} | "
                  f"{total - backend - build_s - runs:.3f} | {backend:.3f} | "
                  f"{build_s:.3f} | {runs:.3f} | {compiles:.0f} | {hits:.0f} | "
                  f"{inductor:.2f} | {ratio} |",
                  flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="gpt2,llama")
    parser.add_argument("--peers", default="eager,inductor")
    parser.add_argument("--kernels", type=int, default=0, metavar="N",
                        help="print each backend's N slowest kernels")
    parser.add_argument("--dump", metavar="DIR",
                        help="write each kfuse part's graph to DIR")
    parser.add_argument("--host-breakdown", action="store_true",
                        help="print where kfuse's host time goes")
    parser.add_argument("--stacks-every", type=float, default=0,
                        help="print every thread's stack this often (s)")
    parser.add_argument("--cold-processes", action="store_true",
                        help="only the cold compiles, each in a fresh "
                        "process with empty caches")
    parser.add_argument("--cold-dumps", metavar="DIR",
                        help="with --cold-processes: each compile's "
                        "stages under DIR/MODEL-cold and DIR/MODEL-warm")
    parser.add_argument("--cold-child", nargs=2, metavar=("MODEL", "BACKEND"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        return cold_child(*args.cold_child)
    if args.cold_processes:
        return cold_processes(args.only.split(","), args.peers,
                              args.cold_dumps)
    if args.stacks_every:
        faulthandler.dump_traceback_later(args.stacks_every, repeat=True)
    torch.manual_seed(0)
    if args.host_breakdown:
        capi.fn["kfuse_run"] = _stamped("run", capi.fn["kfuse_run"])
    ktorch.CompiledModule._build = _timed_build(ktorch.CompiledModule._build,
                                                args.dump)
    rows = []
    for name in args.only.split(","):
        spec = MODELS[name]
        model = build(spec["kind"])
        log(f"{name} built")
        ids = torch.randint(0, model.config.vocab_size,
                            (spec["batch"], spec["seq"]), device="cuda")
        reference, _, eager_ms, _ = run(model, ids, "eager", args.kernels)
        ktorch.backend_report.update(compiled=0, fallbacks=[])
        try:
            logits, cold, ms, host = run(model, ids, "kfuse", args.kernels,
                                         args.host_breakdown)
            error = relative_error(logits, reference)
        except Exception as e:  # the figure is missing, the reason printed
            print(f"{name}: kfuse failed: {type(e).__name__}: {e}")
            cold = ms = error = host = float("nan")
        report = dict(ktorch.backend_report)
        row = {"model": name, "eager_ms": eager_ms, "kfuse_ms": ms,
               "kfuse_cold_s": cold, "kfuse_rel_error": error,
               "kfuse_host_ms": host,
               "kfuse_parts": report["compiled"]}
        if "inductor" in args.peers:
            _, row["inductor_cold_s"], row["inductor_ms"], \
                row["inductor_host_ms"] = run(
                model, ids, "inductor", args.kernels)
        rows.append(row)
        reasons = collections.Counter(r.split(":", 1)[-1].strip()[:100]
                                      for r in report["fallbacks"])
        print(f"{name}: {report['compiled']} kfuse parts; left to PyTorch:")
        for reason, count in reasons.most_common(15):
            print(f"  {count:4d} x {reason}")
        del model
        torch.cuda.empty_cache()
    keys = ["model", "eager_ms", "kfuse_ms", "inductor_ms", "kfuse_host_ms",
            "inductor_host_ms", "kfuse_cold_s", "inductor_cold_s",
            "kfuse_rel_error", "kfuse_parts"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(
            f"{row[k]:.4g}" if isinstance(row.get(k), float) else
            str(row.get(k, "")) for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
