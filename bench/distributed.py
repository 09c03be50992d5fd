"""kfuse inside torch.distributed (issue 33): a data-parallel training step
of a pre-norm transformer block, a tensor-parallel MLP (Megatron's column-
then row-parallel linears with an all-reduce between), and one disk cache
shared by the ranks.

    torchrun --nproc_per_node=2 bench/distributed.py         # GPUs: NCCL, kfuse's kernels
    python3 bench/distributed.py --cpu --world 2             # CPUs: gloo, kfuse's float64
                                                             # reference evaluator (CI)

Each check compares the distributed result with the same model run whole
in one process by eager PyTorch: the data-parallel gradients after DDP's
all-reduce against the gradients of the global batch, the tensor-parallel
MLP's output against the unsplit MLP's. On GPUs kfuse compiles the block
and the two halves of the MLP (the bias and GELU before the collective,
the bias and residual after it) with one cache directory for all ranks;
the table gives the step times of 1 and `world` ranks, the scaling
efficiency and each rank's cache counters (run it twice: the second run
loads every kernel from disk). On CPUs kfuse's parts run in its reference
evaluator (kfuse.torch.compile(reference=True)), which tests the
conversion, the backward through kfuse and the distributed plumbing, not
the kernels or the times. NCCL_NVLS_ENABLE=0 (NVLink multicast off) as the
device notes require.
"""

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kfuse  # noqa: E402
import kfuse.torch as ktorch  # noqa: E402


class Block(torch.nn.Module):
    """A pre-norm transformer block with fixed sizes (so that fx traces it
    without shape arithmetic): causal attention written out (PyTorch 1.13
    has no scaled_dot_product_attention), a GELU MLP, two residuals."""

    def __init__(self, seq, dim, heads, device):
        super().__init__()
        self.seq, self.dim, self.heads = seq, dim, heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)
        # Not a buffer: DDP broadcasts buffers, and gloo takes no bool.
        self.causal = torch.ones(seq, seq, device=device).tril() == 0

    def forward(self, x):
        s, d, h = self.seq, self.dim, self.heads
        qkv = self.qkv(self.norm1(x)).split(d, -1)  # fx: no unpacking
        q, k, v = (qkv[i].reshape(-1, s, h, d // h).transpose(1, 2)
                   for i in range(3))
        scores = (q @ k.transpose(-1, -2)) * (d // h) ** -0.5
        p = scores.masked_fill(self.causal, float("-inf")).softmax(-1)
        o = (p @ v).transpose(1, 2).reshape(-1, s, d)
        x = x + self.proj(o)
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Compiled(torch.nn.Module):
    """`module` run by kfuse, its parameters still its own (DDP reads them
    and kfuse's backward fills their .grad)."""

    def __init__(self, module, examples, reference, cache_dir):
        super().__init__()
        self.module = module
        options = {} if reference else {"cache_dir": cache_dir}
        self.run = ktorch.compile(module, examples, reference=reference,
                                  **options)

    def forward(self, *args):
        return self.run(*args)


def relative_error(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def timed(step, device, repeats):
    """Median ms of `step` after a warm-up call."""
    step()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def data_parallel(args, rank, world, device, cache_dir):
    """DDP over `world` ranks, each a shard of the global batch: every
    rank's gradients after the all-reduce against those of the global batch
    in one eager model."""
    torch.manual_seed(0)
    block = Block(args.seq, args.dim, args.heads, device).to(device)
    whole = copy.deepcopy(block)
    xs = torch.randn(world * args.batch, args.seq, args.dim, device=device)
    mine = xs[rank * args.batch:(rank + 1) * args.batch]
    alone = Compiled(copy.deepcopy(block), (mine,), args.cpu, cache_dir)

    def step_alone():  # one rank's step without the all-reduce
        alone.zero_grad(set_to_none=True)
        alone(mine).square().mean().backward()

    single_ms = timed(step_alone, device, args.repeats)
    model = torch.nn.parallel.DistributedDataParallel(
        Compiled(block, (mine,), args.cpu, cache_dir),
        device_ids=None if args.cpu else [device.index])

    def step():
        model.zero_grad(set_to_none=True)
        model(mine).square().mean().backward()

    ms = timed(step, device, args.repeats)
    whole.zero_grad(set_to_none=True)
    whole(xs).square().mean().backward()
    worst = max(relative_error(p.grad, q.grad)
                for p, q in zip(block.parameters(), whole.parameters()))
    # Weak scaling: each rank's batch as one rank alone would run it.
    return {"ddp_step_ms": ms, "ddp_single_ms": single_ms,
            "ddp_efficiency": single_ms / ms, "ddp_grad_rel_err": worst}


class ColumnThenRow(torch.nn.Module):
    """One rank's half of the MLP before its all-reduce: its columns of
    the first linear (bias and GELU in the epilogue) times its rows of the
    second."""

    def __init__(self, up, down, rank, world):
        super().__init__()
        cols = up.out_features // world
        part = slice(rank * cols, (rank + 1) * cols)
        self.w1 = torch.nn.Parameter(up.weight[part].detach().clone())
        self.b1 = torch.nn.Parameter(up.bias[part].detach().clone())
        self.w2 = torch.nn.Parameter(down.weight[:, part].detach().clone())

    def forward(self, x):
        return F.linear(F.gelu(F.linear(x, self.w1, self.b1)), self.w2)


class BiasResidual(torch.nn.Module):
    """After the all-reduce: the second bias and the residual."""

    def __init__(self, bias):
        super().__init__()
        self.b2 = torch.nn.Parameter(bias.detach().clone())

    def forward(self, partial, x):
        return partial + self.b2 + x


class Mlp(torch.nn.Module):
    """The MLP whole, with its residual: what one rank would run."""

    def __init__(self, up, down):
        super().__init__()
        self.up, self.down = up, down

    def forward(self, x):
        return x + self.down(F.gelu(self.up(x)))


def tensor_parallel(args, rank, world, device, cache_dir):
    """The MLP split across ranks (Megatron's column- then row-parallel
    linears) against the whole MLP in eager PyTorch."""
    torch.manual_seed(1)
    d = args.dim
    up, down = (torch.nn.Linear(d, 4 * d).to(device),
                torch.nn.Linear(4 * d, d).to(device))
    x = torch.randn(args.batch * args.seq, d, device=device)
    with torch.no_grad():
        want = Mlp(up, down)(x)
        before = Compiled(ColumnThenRow(up, down, rank, world), (x,),
                          args.cpu, cache_dir)
        after = Compiled(BiasResidual(down.bias), (x, x), args.cpu,
                         cache_dir)

        def step():
            partial = before(x)
            dist.all_reduce(partial)
            return after(partial, x)

        got = step()
        ms = timed(step, device, args.repeats)
        # Strong scaling: the whole MLP on one rank.
        whole = Compiled(Mlp(up, down), (x,), args.cpu, cache_dir)
        single_ms = timed(lambda: whole(x), device, args.repeats)
    return {"tp_mlp_ms": ms, "tp_single_ms": single_ms,
            "tp_efficiency": single_ms / (ms * world),
            "tp_mlp_rel_err": relative_error(got, want)}


def rank_main(rank, world, args, cache_dir):
    device = torch.device("cpu") if args.cpu else torch.device("cuda", rank)
    if not args.cpu:
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = False
    dist.init_process_group("gloo" if args.cpu else "nccl", rank=rank,
                            world_size=world)
    try:
        row = {"rank": rank}
        row.update(data_parallel(args, rank, world, device, cache_dir))
        row.update(tensor_parallel(args, rank, world, device, cache_dir))
        if not args.cpu:
            row["cache"] = kfuse.cache_stats()
        rows = [None] * world
        dist.all_gather_object(rows, row)
        if rank == 0:
            report(rows, args)
    finally:
        dist.destroy_process_group()


def report(rows, args):
    tolerance = 1e-4 if args.cpu else 1e-3
    world = len(rows)
    print(f"{world} ranks ({'CPU, gloo, reference evaluator' if args.cpu else 'GPU, NCCL'}); "
          "efficiency: data-parallel t(1 rank, its batch) / t(DDP step); "
          f"tensor-parallel t(1 rank, whole MLP) / ({world} x t(split MLP))")
    print(f"{'rank':>4} {'ddp_1_ms':>9} {'ddp_ms':>9} {'ddp_eff':>7} "
          f"{'grad_err':>9} {'tp_1_ms':>8} {'tp_ms':>8} {'tp_eff':>7} "
          f"{'tp_err':>9}  cache")
    for r in rows:
        print(f"{r['rank']:>4} {r['ddp_single_ms']:9.3f} "
              f"{r['ddp_step_ms']:9.3f} {r['ddp_efficiency']:7.3f} "
              f"{r['ddp_grad_rel_err']:9.2e} {r['tp_single_ms']:8.3f} "
              f"{r['tp_mlp_ms']:8.3f} {r['tp_efficiency']:7.3f} "
              f"{r['tp_mlp_rel_err']:9.2e}  {json.dumps(r.get('cache', {}))}")
    ok = all(r["ddp_grad_rel_err"] <= tolerance and
             r["tp_mlp_rel_err"] <= tolerance for r in rows)
    print(f"checks (relative error <= {tolerance:g}): "
          f"{'passed' if ok else 'FAILED'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "passed": ok}, f, indent=1)
    if not ok:
        sys.exit(1)


def spawned(rank, world, args, cache_dir, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    rank_main(rank, world, args, cache_dir)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu", action="store_true",
                   help="gloo on CPUs, kfuse's reference evaluator")
    p.add_argument("--world", type=int, default=2,
                   help="ranks to spawn with --cpu (torchrun sets them "
                        "otherwise)")
    p.add_argument("--batch", type=int, default=2, help="per rank")
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cache-dir", default=None,
                   help="the ranks' shared kfuse disk cache")
    p.add_argument("--port", type=int, default=29533)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    cache_dir = args.cache_dir or os.path.join(tempfile.gettempdir(),
                                               "kfuse-distributed-cache")
    if "RANK" in os.environ:  # under torchrun
        rank_main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
                  args, cache_dir)
        return
    if not args.cpu:
        sys.exit("without --cpu, run under torchrun --nproc_per_node=N")
    torch.multiprocessing.spawn(spawned, (args.world, args, cache_dir,
                                          args.port), nprocs=args.world)


if __name__ == "__main__":
    main()
