"""The peers of kfuse-bench's memory-bound workloads, timed in the same run.

PyTorch eager (one kernel per op) and torch.compile (Inductor + Triton) on
the same shapes and dtypes as `kfuse-bench memory`, against the same kind
of floor: bytes that must move / this run's device-to-device copy
bandwidth. Medians of CUDA-event timings after warm-up; random data larger
than L2. Run on the GPU machine:  python3 bench/peers.py [--json FILE]
"""

import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def timed_ms(fn, reps=30, warmup=5, batch=10):
    """Median over `reps` of `batch` back-to-back calls, per call: the GPU
    queue stays full, so Python's dispatch time is not counted."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / batch)
    return statistics.median(times)


def copy_gbs():
    x = torch.rand(1 << 28, device="cuda")
    y = torch.empty_like(x)
    ms = timed_ms(lambda: y.copy_(x))
    return 2 * x.numel() * 4 / (ms * 1e-3) / 1e9


def rand(*shape, dtype=torch.float32):
    return (torch.rand(*shape, device="cuda") * 2 - 1).to(dtype)


def rmsnorm(x, w):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    return y.to(x.dtype)


def chain10(x, row, col):
    y = x * row + col
    y = torch.tanh(y) * 0.5 - 1.0
    y = y.abs() + x
    y = torch.sigmoid(y) * y
    return torch.relu(y)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def indexing_workloads():
    """The indexing ops' workloads (bench/IndexingWorkloads.cpp)."""
    bf16 = torch.bfloat16
    m, n = 16384, 8192
    b, h, s, d = 8, 32, 2048, 128
    vocab, dim, seq, batch = 8192, 2048, 4096, 8
    out = [
        ("slice_stride2_bf16", lambda x: x[:, ::2] * 2.0, [rand(m, n, dtype=bf16)]),
        ("concat_bf16", lambda a, c: torch.cat([a, c], 1),
         [rand(m, n // 2, dtype=bf16), rand(m, n // 2, dtype=bf16)]),
        ("pad_f32", lambda x: F.pad(x, (1, 1, 1, 1)), [rand(m // 2 - 2, n - 2)]),
        ("rope_bf16", rope, [rand(b, h, s, d, dtype=bf16), rand(s, d, dtype=bf16),
                             rand(s, d, dtype=bf16)]),
        ("embedding_pos_bf16", lambda t, i, p: F.embedding(i, t) + p,
         [rand(vocab, dim, dtype=bf16), torch.randint(0, vocab, (batch, seq), device="cuda"),
          rand(seq, dim, dtype=bf16)]),
        ("dropout_bf16", lambda x: F.dropout(x, 0.1, training=True), [rand(m, n, dtype=bf16)]),
        ("argmax_rows_bf16", lambda x: torch.argmax(x, -1), [rand(8192, 32000, dtype=bf16)]),
        ("cumsum_cols_f32", lambda x: torch.cumsum(x, 0), [rand(4096, 16384)]),
        ("cumsum_rows_f32", lambda x: torch.cumsum(x, 1), [rand(16384, 4096)]),
    ]
    for rows, v in ((8192, 32000), (4096, 128256)):
        out.append((f"xent_{v // 1000}k_bf16", lambda x, y: F.cross_entropy(x, y),
                    [rand(rows, v, dtype=bf16), torch.randint(0, v, (rows,), device="cuda")]))
    return out


def workloads():
    n26 = 1 << 26
    bf16 = torch.bfloat16
    return [
        ("sin2_cos2_f32", lambda x: torch.sin(x) ** 2 + torch.cos(x) ** 2, [rand(n26)]),
        ("cos_cos_f32", lambda x: torch.cos(torch.cos(x)), [rand(n26)]),
        ("gelu_bf16", lambda x, w: F.gelu(x * w + 1.0), [rand(n26, dtype=bf16), rand(n26, dtype=bf16)]),
        ("softmax_f32", lambda x: torch.softmax(x, -1), [rand(8192, 8192)]),
        ("layernorm_f32", lambda x, g, b: F.layer_norm(x, (8192,), g, b, 1e-5),
         [rand(8192, 8192), rand(8192), rand(8192)]),
        ("rmsnorm_f32", rmsnorm, [rand(8192, 8192), rand(8192)]),
        ("row_sum_f32", lambda x: x.sum(1), [rand(8192, 8192)]),
        ("softmax_bf16", lambda x: torch.softmax(x, -1), [rand(16384, 4096, dtype=bf16)]),
        ("layernorm_bf16", lambda x, g, b: F.layer_norm(x, (4096,), g, b, 1e-5),
         [rand(16384, 4096, dtype=bf16), rand(4096, dtype=bf16), rand(4096, dtype=bf16)]),
        ("rmsnorm_bf16", rmsnorm, [rand(16384, 4096, dtype=bf16), rand(4096, dtype=bf16)]),
        ("column_sum_f32", lambda x: x.sum(0), [rand(8192, 8192)]),
        ("transpose_add_f32", lambda x, z: x.t() + z, [rand(8192, 8192), rand(8192, 8192)]),
        ("chain10_f32", chain10, [rand(8192, 8192), rand(8192), rand(8192, 1)]),
    ] + indexing_workloads()


def sdpa_ms(spec):
    """scaled_dot_product_attention on bf16 [B, H, S, D] (K/V heads
    repeated for grouped-query attention), spec "B,H,HKV,S,D,CAUSAL[,BIAS]":
    BIAS 1 adds a bf16 [B, H, S, S] bias to the scaled scores."""
    b, h, hkv, s, d, causal, *rest = (int(x) for x in spec.split(","))
    q = rand(b, h, s, d, dtype=torch.bfloat16)
    k = rand(b, hkv, s, d, dtype=torch.bfloat16)
    v = rand(b, hkv, s, d, dtype=torch.bfloat16)
    extra = {"enable_gqa": True} if hkv != h else {}
    if rest and rest[0]:
        extra["attn_mask"] = rand(b, h, s, s, dtype=torch.bfloat16)
    return timed_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), **extra),
                    reps=15, batch=5)


def sweep_line(line):
    """One line of kfuse-bench sweep's shapes, timed: "attn B,H,HKV,S,D,
    CAUSAL" gives SDPA's ms; "rows KIND,ROWS,COLS,DTYPE" (softmax,
    layernorm, rmsnorm, sum) eager's and torch.compile's; "mm M,N,K" a bf16
    torch.matmul's (cuBLAS), "mmt M,N,K" the same of x @ w.T with w [N, K].
    Two numbers a line, 0 where none."""
    kind, spec = line.split()
    if kind == "attn":
        return sdpa_ms(spec), 0.0
    if kind == "mm":
        m, n, k = (int(x) for x in spec.split(","))
        a, b = rand(m, k, dtype=torch.bfloat16), rand(k, n, dtype=torch.bfloat16)
        return timed_ms(lambda: a @ b, reps=15, batch=5), 0.0
    if kind == "mmt":
        m, n, k = (int(x) for x in spec.split(","))
        a, w = rand(m, k, dtype=torch.bfloat16), rand(n, k, dtype=torch.bfloat16)
        return timed_ms(lambda: a @ w.T, reps=15, batch=5), 0.0
    op, rows, cols, dtype = spec.split(",")
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(dtype, torch.float32)
    x = rand(int(rows), int(cols), dtype=dtype)
    weights = [rand(int(cols), dtype=dtype) for _ in range(2)]
    fn, args = {
        "softmax": (lambda x: torch.softmax(x, -1), [x]),
        "layernorm": (lambda x, g, b: F.layer_norm(x, (x.shape[-1],), g, b, 1e-5),
                      [x] + weights),
        "rmsnorm": (rmsnorm, [x, weights[0]]),
        "sum": (lambda x: x.sum(-1), [x]),
    }[op]
    eager = timed_ms(lambda: fn(*args), reps=15, batch=5)
    # A fresh compile for each shape: Dynamo's caches would otherwise make
    # later shapes dynamic, or fall back to eager past their limit.
    torch._dynamo.reset()
    compiled = torch.compile(fn, dynamic=False)
    return eager, timed_ms(lambda: compiled(*args), reps=15, batch=5)


def causal_attention(q, k, v, sdpa):
    """Causal attention over bf16 [B, H, S, D] (K/V heads repeated for
    grouped-query attention): SDPA, or written out as a model without it
    does (scores, mask, f32 softmax, values)."""
    if sdpa:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                              enable_gqa=k.shape[1] != q.shape[1])
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    s = q.shape[2]
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores.float(), -1).to(q.dtype) @ v


class PreNormBlock(torch.nn.Module):
    """bench/BlockGraphs.cpp's pre-norm block: LayerNorm, one QKV projection
    with bias, causal attention, output projection and residual, erf-GELU
    MLP and residual."""

    def __init__(self, d, heads, sdpa):
        super().__init__()
        nn = torch.nn
        self.heads, self.sdpa = heads, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(self.ln1(x)).split(d, -1))
        o = causal_attention(q, k, v, self.sdpa).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(o)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


def rope_f32(x, cos, sin):
    """x rotated in f32 by [S, D] tables, as the kf graph computes it."""
    return (x.float() * cos + rotate_half(x).float() * sin).to(x.dtype)


class LlamaBlock(torch.nn.Module):
    """bench/BlockGraphs.cpp's Llama-style block: RMSNorm, q/k/v projections,
    RoPE on q and k, causal grouped-query attention, output projection and
    residual, RMSNorm, SwiGLU and residual."""

    def __init__(self, d, heads, kv_heads, ffn, sdpa):
        super().__init__()
        nn = torch.nn
        dh = d // heads
        self.heads, self.kv_heads, self.sdpa = heads, kv_heads, sdpa
        self.ln1, self.ln2 = nn.Parameter(torch.ones(d)), nn.Parameter(torch.ones(d))
        self.wq, self.wo = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv_heads * dh, bias=False)
        self.wv = nn.Linear(d, kv_heads * dh, bias=False)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        h = rmsnorm(x, self.ln1)
        q = self.wq(h).view(b, s, self.heads, -1).transpose(1, 2)
        k = self.wk(h).view(b, s, self.kv_heads, -1).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, -1).transpose(1, 2)
        q, k = rope_f32(q, cos, sin), rope_f32(k, cos, sin)
        o = causal_attention(q, k, v, self.sdpa).transpose(1, 2).reshape(b, s, d)
        x = x + self.wo(o)
        h2 = rmsnorm(x, self.ln2)
        return x + self.down(F.silu(self.gate(h2)) * self.up(h2))


class Stack(torch.nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = torch.nn.ModuleList(blocks)

    def forward(self, x, *tables):
        for block in self.blocks:
            x = block(x, *tables)
        return x


def saved_bytes(forward):
    """Bytes of the distinct tensors autograd saves for the backward while
    `forward` runs (eager)."""
    seen = {}

    def pack(t):
        seen[(t.data_ptr(), tuple(t.shape), t.dtype)] = \
            t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(seen.values())


def held_bytes(forward):
    """Bytes of GPU memory `forward` leaves allocated beside its output:
    what it saves for the backward, compiled or not (saved-tensor hooks do
    not see inside a compiled graph). Call it after a warm-up."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = forward()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before
    return held - out.numel() * out.element_size()


def training_ms(arg):
    """Eager and torch.compile ms, eager's saved bytes and the bytes
    torch.compile's forward holds for the backward: for a workload
    name, its backward alone (torch.autograd.grad, the graph retained); for
    "prenorm,B,S,D,H", the block's forward + backward in bf16 with SDPA;
    for "attention,B,H,S,D,CAUSAL", SDPA's backward alone in bf16; for
    "embedding,VOCAB,DIM,B,S,PAD_EVERY", an embedding table's gradient."""
    torch.manual_seed(0)
    if arg.startswith("attention,"):
        b, h, s, d, causal = (int(v) for v in arg.split(",")[1:])
        q, k, v = (rand(b, h, s, d, dtype=torch.bfloat16).requires_grad_()
                   for _ in range(3))
        fn = lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, is_causal=bool(causal))
        times, compiled = [], torch.compile(fn)
        for f in (fn, compiled):
            out = f(q, k, v)
            grad = torch.randn_like(out)
            times.append(timed_ms(lambda: torch.autograd.grad(
                out, (q, k, v), grad, retain_graph=True)))
        return times + [saved_bytes(lambda: fn(q, k, v)),
                        held_bytes(lambda: compiled(q, k, v))]
    if arg.startswith("embedding,"):
        vocab, dim, b, s, pad_every = (int(v) for v in arg.split(",")[1:])
        table = rand(vocab, dim, dtype=torch.bfloat16).requires_grad_()
        ids = torch.randint(0, vocab, (b, s), device="cuda")
        if pad_every:
            ids.view(-1)[::pad_every] = 0
        times, compiled = [], torch.compile(F.embedding)
        for f in (F.embedding, compiled):
            out = f(ids, table)
            grad = torch.randn_like(out)
            times.append(timed_ms(lambda: torch.autograd.grad(
                out, table, grad, retain_graph=True)))
        return times + [saved_bytes(lambda: F.embedding(ids, table)),
                        held_bytes(lambda: compiled(ids, table))]
    if arg.startswith("prenorm,"):
        b, s, d, h = (int(v) for v in arg.split(",")[1:])
        model = PreNormBlock(d, h, True).cuda().to(torch.bfloat16)
        x = rand(b, s, d, dtype=torch.bfloat16).requires_grad_()
        grad = rand(b, s, d, dtype=torch.bfloat16)
        compiled = torch.compile(model)
        step = lambda m: torch.autograd.backward(m(x), grad)
        times = [timed_ms(lambda: step(m), reps=10, batch=3)
                 for m in (model, compiled)]
        return times + [saved_bytes(lambda: model(x)),
                        held_bytes(lambda: compiled(x))]
    for name, fn, inputs in workloads():
        if name != arg:
            continue
        inputs = [t.requires_grad_() if t.is_floating_point() else t
                  for t in inputs]
        floats = [t for t in inputs if t.requires_grad]
        times, compiled = [], torch.compile(fn)
        for f in (fn, compiled):
            out = f(*inputs)
            grad = torch.randn_like(out)
            times.append(timed_ms(lambda: torch.autograd.grad(
                out, floats, grad, retain_graph=True)))
        return times + [saved_bytes(lambda: fn(*inputs)),
                        held_bytes(lambda: compiled(*inputs))]
    raise SystemExit(f"no workload {arg}")


def block_ms(spec):
    """Eager (attention written out), eager with SDPA, and torch.compile of
    the SDPA form, for "prenorm,B,S,D,H,LAYERS" or
    "llama,B,S,D,H,KV,FFN,LAYERS" in bf16 without gradients."""
    kind, *sizes = spec.split(",")
    sizes = [int(v) for v in sizes]
    b, s, d, h = sizes[:4]
    layers = sizes[-1]
    if kind == "prenorm":
        make = lambda sdpa: PreNormBlock(d, h, sdpa)
        tables = []
    else:
        kv, ffn = sizes[4:6]
        make = lambda sdpa: LlamaBlock(d, h, kv, ffn, sdpa)
        tables = [rand(s, d // h), rand(s, d // h)]
    torch.manual_seed(0)
    eager = Stack([make(False) for _ in range(layers)]).cuda().to(torch.bfloat16)
    sdpa = Stack([make(True) for _ in range(layers)]).cuda().to(torch.bfloat16)
    sdpa.load_state_dict(eager.state_dict())
    x = rand(b, s, d, dtype=torch.bfloat16)
    compiled = torch.compile(sdpa)
    with torch.no_grad():
        return [timed_ms(lambda: m(x, *tables), reps=15, batch=5)
                for m in (eager, sdpa, compiled)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--sdpa", help="time SDPA for B,H,HKV,S,D,CAUSAL and print ms")
    parser.add_argument("--only", help="a comma-separated list of workloads")
    parser.add_argument("--block", help="time a block (see block_ms) and print eager, sdpa and compiled ms")
    parser.add_argument("--workload-ms", help="time one workload and print eager and compiled ms")
    parser.add_argument("--sweep", help="a file of kfuse-bench sweep's shape lines: print each one's times")
    parser.add_argument("--training", help="a workload's backward, or prenorm,B,S,D,H forward + backward: "
                        "print eager ms, compiled ms, eager's saved bytes and the bytes the "
                        "compiled forward holds")
    args = parser.parse_args()
    if args.training:
        print(" ".join(f"{v:.5f}" for v in training_ms(args.training)))
        return
    if args.sweep:
        with open(args.sweep) as lines, torch.no_grad():
            for line in lines:
                try:
                    times = sweep_line(line)
                except Exception:  # the shape's peer cannot run: say 0
                    times = (0.0, 0.0)
                print(f"{times[0]:.5f} {times[1]:.5f}", flush=True)
        return
    if args.block:
        print(" ".join(f"{ms:.5f}" for ms in block_ms(args.block)))
        return
    if args.workload_ms:
        for name, fn, inputs in workloads():
            if name == args.workload_ms:
                compiled = torch.compile(fn)
                print(f"{timed_ms(lambda: fn(*inputs)):.5f} "
                      f"{timed_ms(lambda: compiled(*inputs)):.5f}")
                return
        raise SystemExit(f"no workload {args.workload_ms}")
    if args.sdpa:
        print(f"{sdpa_ms(args.sdpa):.5f}")
        return
    bandwidth = copy_gbs()
    print(f"copy ceiling: {bandwidth:.0f} GB/s (read + write), {torch.cuda.get_device_name()}")
    print(f"{'workload':18} {'floor_ms':>9} {'eager_ms':>9} {'compiled_ms':>11} {'eager/fl':>9} {'compiled/fl':>11}")
    rows = []
    for name, fn, inputs in workloads():
        if args.only and name not in args.only.split(","):
            continue
        out = fn(*inputs)
        moved = sum(t.numel() * t.element_size() for t in inputs) + out.numel() * out.element_size()
        floor = moved / (bandwidth * 1e9) * 1e3
        eager = timed_ms(lambda: fn(*inputs))
        compiled_fn = torch.compile(fn)
        compiled = timed_ms(lambda: compiled_fn(*inputs))
        rows.append({"name": name, "floor_ms": floor, "eager_ms": eager, "compiled_ms": compiled})
        print(f"{name:18} {floor:9.4f} {eager:9.4f} {compiled:11.4f} {eager / floor:9.3f} {compiled / floor:11.3f}",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_gbs": bandwidth, "workloads": rows}, f, indent=1)


if __name__ == "__main__":
    main()
