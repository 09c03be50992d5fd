"""Differential fuzzing of the PyTorch path: random torch programs, built
from ops kfuse.torch converts, run through kfuse and against PyTorch.

    python3 -m kfuse.torch_fuzz [--count N] [--seed S] [--mode MODE]
                                [--regressions DIR]

Modes: `reference` (CPU, no GPU: kfuse.torch.compile(reference=True), the
float64 evaluator on the converted graph; what CI runs), `kfuse`
(kfuse.torch.compile on CUDA tensors), `dynamo` (torch.compile(backend=
"kfuse") on CUDA tensors, PyTorch 2) and `dynamic` (the same with
dynamic=True: the backend gets symbolic dims). Each program's output is compared with
PyTorch run in float64 on the same inputs, by relative error (largest
difference over the largest magnitude, at least 0.1), allowed 8x
PyTorch's own error in the program's dtype plus 1e-4 (2e-2 for bf16): a
conversion that means something else than the op it converts shows as far
more. NaN never passes; a program whose float64
result is not finite is degenerate and skipped. A failure is shrunk (an
earlier value as the output, steps replaced by their operands) and written
as a standalone reproducer into --regressions.
"""

import argparse
import collections
import dataclasses
import math
import pathlib
import random
import re
import sys
import traceback

import torch
import torch.nn.functional as F

import kfuse.torch as ktorch

# (template, kind): {a} and {b} are values, {d} a dim, {k} keepdim.
UNARY = [
    "torch.tanh({a})", "torch.sigmoid({a})", "torch.relu({a})",
    "F.gelu({a})", "F.gelu({a}, approximate='tanh')", "F.silu({a})",
    "torch.exp(torch.tanh({a}))", "torch.log(torch.abs({a}) + 1.0)",
    "torch.sqrt(torch.abs({a}))", "torch.rsqrt(torch.abs({a}) + 1.0)",
    "torch.sin({a})", "torch.cos({a})", "-{a}", "torch.abs({a})",
    "{a} * 0.5 + 1.0", "torch.pow({a}, 2)", "{a} ** 3",
]
BINARY = [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (torch.abs({b}) + 1.0)",
    "torch.maximum({a}, {b})", "torch.minimum({a}, {b})",
    "torch.where({a} > {b}, {a}, {b})", "{a}.masked_fill({b} > 0.3141, -1.0)",
]
ALONG_DIM = [
    "{a}.sum(dim={d}, keepdim={k})", "{a}.mean(dim={d}, keepdim={k})",
    "torch.softmax({a}, dim={d})", "torch.cumsum({a}, dim={d})",
]


@dataclasses.dataclass
class Step:
    name: str
    expr: str
    shape: tuple
    uses: tuple  # the values the expression reads


@dataclasses.dataclass
class Program:
    inputs: list  # (name, shape, bound): an int64 index in [-bound, bound)
                  # where bound is set, else a float tensor
    steps: list
    outputs: list  # value names
    dtype: str = "float32"

    def shapes(self):
        known = {name: shape for name, shape, _ in self.inputs}
        known.update((s.name, s.shape) for s in self.steps)
        return known

    def source(self):
        args = ", ".join(name for name, _, _ in self.inputs)
        lines = [f"def program({args}):"]
        lines += [f"    {s.name} = {s.expr}" for s in self.steps]
        out = ", ".join(self.outputs)
        lines.append(f"    return {out}" + ("," if len(self.outputs) == 1
                                              else ""))
        return "\n".join(lines) + "\n"


def _broadcastable(small, big):
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(reversed(small), reversed(big)))


class Generator:
    """Random programs: each step applies a random op to earlier values,
    adding inputs where an op needs an operand no value has the shape of."""

    def __init__(self, rng, dtype):
        self.rng, self.dtype = rng, dtype

    def program(self, max_steps):
        r = self.rng
        rank = r.randint(2, 4)
        shape = tuple(r.randint(1, 7) for _ in range(rank - 1)) + (
            r.choice([1, 4, 8, 16]),)
        p = Program([("x0", shape, None)], [], [], self.dtype)
        for _ in range(r.randint(1, max_steps)):
            self.step(p)
        # Every value nothing reads is an output (up to four, the last
        # always): no step is dead.
        used = {u for s in p.steps for u in s.uses}
        sinks = [s.name for s in p.steps[:-1] if s.name not in used]
        p.outputs = sinks[-3:] + [p.steps[-1].name]
        return p

    def value(self, p):
        names = [n for n, _, bound in p.inputs if bound is None] + [
            s.name for s in p.steps]
        # Recent values more often: deeper chains.
        return names[-1] if self.rng.random() < 0.5 else self.rng.choice(names)

    def operand_like(self, p, shape):
        """An existing value broadcastable to `shape`, or a new input."""
        r = self.rng
        floats = {n for n, _, bound in p.inputs if bound is not None}
        fits = [n for n, s in p.shapes().items()
                if _broadcastable(s, shape) and n not in floats]
        if fits and r.random() < 0.6:
            return r.choice(fits)
        small = tuple(d if r.random() < 0.6 else 1 for d in shape)
        if r.random() < 0.3:
            small = small[r.randint(1, len(small)):] or (shape[-1],)
        return self.new_input(p, small)

    def new_input(self, p, shape, bound=None):
        name = f"x{len(p.inputs)}"
        p.inputs.append((name, tuple(shape), bound))
        return name

    def step(self, p):
        r = self.rng
        a = self.value(p)
        shape = p.shapes()[a]
        kind = r.choice(["unary", "unary", "binary", "binary", "dim",
                         "shape", "shape", "matmul", "norm", "index",
                         "model"])
        name = f"v{len(p.steps)}"
        if kind == "unary":
            expr, out, uses = r.choice(UNARY).format(a=a), shape, (a,)
        elif kind == "binary":
            b = self.operand_like(p, shape)
            expr, out, uses = r.choice(BINARY).format(a=a, b=b), shape, (a, b)
        elif kind == "dim":
            d = r.randrange(len(shape))
            template = r.choice(ALONG_DIM)
            keep = r.random() < 0.5 or len(shape) == 1
            expr = template.format(a=a, d=d, k=keep)
            out = shape
            if template.startswith(("{a}.sum", "{a}.mean")):
                out = tuple(1 if i == d else s for i, s in enumerate(shape)) \
                    if keep else shape[:d] + shape[d + 1:]
            uses = (a,)
        elif kind == "norm" and shape[-1] > 1:  # (of one element: 0)
            expr = f"F.layer_norm({a}, ({shape[-1]},))"
            out, uses = shape, (a,)
        elif kind == "matmul":
            n = r.choice([1, 3, 8, 16])
            if r.random() < 0.5:
                w = self.new_input(p, (shape[-1], n))
                expr, uses = f"{a} @ {w}", (a, w)
            else:
                w = self.new_input(p, (n, shape[-1]))
                bias = self.new_input(p, (n,))
                expr, uses = f"F.linear({a}, {w}, {bias})", (a, w, bias)
            out = shape[:-1] + (n,)
        elif kind == "index":
            expr, out, uses = self.index_op(p, a, shape)
        elif kind == "model":
            expr, out, uses = self.model_op(p, a, shape)
        else:
            expr, out = self.shape_op(a, shape)
            uses = (a,)
        if len(out) == 0:  # keep every value a tensor of rank >= 1
            expr, out = f"({expr}).reshape(1)", (1,)
        p.steps.append(Step(name, expr, tuple(out), uses))

    def model_op(self, p, a, shape):
        """What models spell by hand: RMSNorm, padding, narrow and split,
        cross-entropy of [N, C] logits, an embedding lookup."""
        r = self.rng
        choice = r.choice(["pad", "narrow", "split", "xent", "embedding",
                           "rmsnorm"])
        if choice == "pad":
            lo, hi = r.randint(0, 2), r.randint(0, 2)
            return (f"F.pad({a}, ({lo}, {hi}))",
                    shape[:-1] + (shape[-1] + lo + hi,), (a,))
        d = r.randrange(len(shape))
        if choice == "narrow" and shape[d] > 1:
            start = r.randrange(shape[d])
            length = r.randint(1, shape[d] - start)
            out = shape[:d] + (length,) + shape[d + 1:]
            return f"torch.narrow({a}, {d}, {start}, {length})", out, (a,)
        if choice == "split" and shape[-1] > 1:
            size = r.randint(1, shape[-1] - 1)
            i = r.randrange(-(-shape[-1] // size))
            length = min(size, shape[-1] - i * size)
            return (f"{a}.split({size}, dim=-1)[{i}]",
                    shape[:-1] + (length,), (a,))
        if choice == "xent" and len(shape) == 2 and shape[1] > 1:
            labels = self.new_input(p, (shape[0],), bound=shape[1])
            return (f"F.cross_entropy({a}, {labels} % {shape[1]}).reshape(1)",
                    (1,), (a, labels))
        if choice == "embedding" and len(shape) == 2:
            ids_shape = (r.randint(1, 4), r.randint(1, 3))
            ids = self.new_input(p, ids_shape, bound=shape[0])
            return (f"F.embedding({ids} % {shape[0]}, {a})",
                    ids_shape + (shape[1],), (a, ids))
        return (f"{a} * torch.rsqrt({a}.pow(2).mean(-1, keepdim=True) + 1e-6)",
                shape, (a,))

    def index_op(self, p, a, shape):
        """Indexing by tensors: rows picked by an index tensor (negative
        indices count from the end), or one element per row by a pair of
        broadcasting index tensors (NumPy's advanced indexing)."""
        r = self.rng
        if len(shape) >= 2 and r.random() < 0.5:
            rows = self.new_input(p, (r.randint(1, 5), 1), bound=shape[0])
            cols = self.new_input(p, (r.randint(1, 5),), bound=shape[1])
            shapes = p.shapes()
            picked = torch.broadcast_shapes(shapes[rows], shapes[cols])
            out = tuple(picked) + shape[2:]
            return f"{a}[{rows}, {cols}]", out, (a, rows, cols)
        idx_shape = tuple(r.randint(1, 4) for _ in range(r.randint(1, 2)))
        idx = self.new_input(p, idx_shape, bound=shape[0])
        return f"{a}[{idx}]", idx_shape + shape[1:], (a, idx)

    def shape_op(self, a, shape):
        r = self.rng
        rank = len(shape)
        choice = r.choice(["transpose", "reshape", "slice", "cat",
                           "unsqueeze", "permute", "select", "chunk"])
        if choice == "permute" and rank >= 3:
            order = list(range(rank))
            r.shuffle(order)
            return (f"{a}.permute{tuple(order)}",
                    tuple(shape[d] for d in order))
        if choice == "select" and rank >= 2:
            d = r.randrange(rank)
            i = r.randrange(-shape[d], shape[d])
            key = ", ".join([":"] * d + [str(i)])
            return f"{a}[{key}]", shape[:d] + shape[d + 1:]
        if choice == "chunk" and shape[-1] % 2 == 0:
            return (f"torch.chunk({a}, 2, dim=-1)[{r.randrange(2)}]",
                    shape[:-1] + (shape[-1] // 2,))
        if choice == "transpose" and rank >= 2:
            d0, d1 = r.sample(range(rank), 2)
            out = list(shape)
            out[d0], out[d1] = out[d1], out[d0]
            return f"{a}.transpose({d0}, {d1})", tuple(out)
        if choice == "reshape" and rank >= 2:
            merged = shape[:-2] + (shape[-2] * shape[-1],)
            return f"{a}.reshape{merged}", merged
        if choice == "slice" and shape[-1] > 1:
            start = r.randrange(shape[-1] - 1)
            stop = r.randint(start + 1, shape[-1])
            return f"{a}[..., {start}:{stop}]", shape[:-1] + (stop - start,)
        if choice == "cat":
            d = r.randrange(rank)
            out = tuple(2 * s if i == d else s for i, s in enumerate(shape))
            return f"torch.cat([{a}, torch.tanh({a})], dim={d})", out
        if rank < 4:
            return f"{a}.unsqueeze(0)", (1,) + shape
        return f"{a}.transpose(0, 1)", (shape[1], shape[0]) + shape[2:]


def build(program):
    namespace = {"torch": torch, "F": F, "math": math}
    exec(program.source(), namespace)  # noqa: S102 (our own generated code)
    return namespace["program"]


def random_inputs(program, seed, device):
    gen = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, program.dtype)
    inputs = []
    for _, shape, bound in program.inputs:
        if bound is None:
            x = torch.randn(*shape, generator=gen).to(dtype)
        else:
            x = torch.randint(-bound, bound, shape, generator=gen)
        inputs.append(x.to(device))
    return inputs


def relative_error(got, want):
    got, want = got.detach().double().cpu(), want.detach().double().cpu()
    if got.shape != want.shape:
        return math.inf
    if torch.isnan(got).any():
        return math.nan
    # Values below 0.1 (of inputs near 1) are cancellations, such as the
    # sum of a normalised tensor, whose rounding error is that of the
    # terms (about 1): their error is measured against 0.1. (Against 1e-3,
    # an f32 sum of 128 normalised values, 1e-6 off, failed the GPU run.)
    scale = want.abs().max().item() if want.numel() else 0.0
    return (got - want).abs().max().item() / max(scale, 0.1) \
        if got.numel() else 0.0


def run_kfuse(fn, inputs, mode):
    if mode in ("dynamo", "dynamic"):
        # Each program is a new code object under one Dynamo frame: past
        # its recompile limit (8) Dynamo would run the rest eagerly and
        # they would pass unchecked. A fresh Dynamo per program, and the
        # backend must have been called.
        torch._dynamo.reset()
        graphs = ktorch.backend_report["graphs"]
        parts = ktorch.backend_report["compiled"]
        # `dynamic`: Dynamo traces every size it can as a symbol, so the
        # backend sees symbolic dims (sizes a program names stay fixed).
        got = torch.compile(fn, backend="kfuse",
                            dynamic=mode == "dynamic")(*inputs)
        if ktorch.backend_report["graphs"] == graphs:
            raise RuntimeError("Dynamo ran the program without calling the "
                               "kfuse backend")
        if ktorch.backend_report["compiled"] == parts:
            raise ktorch.Unsupported("the backend left every op to PyTorch")
        return got
    compiled = ktorch.compile(fn, inputs, reference=(mode == "reference"))
    return compiled(*inputs)


def check(program, seed, mode):
    """'passed', 'degenerate' or a message saying what failed."""
    fn = build(program)
    device = "cpu" if mode == "reference" else "cuda"
    inputs = random_inputs(program, seed, device)
    with torch.no_grad():
        want = fn(*[x.double() if x.is_floating_point() else x
                    for x in inputs])
        if not all(torch.isfinite(w).all() for w in want):
            return "degenerate"
        # PyTorch's own error, in the program's dtype: the yardstick (a
        # bf16 program compares with thresholds rounded to bf16, as
        # PyTorch does).
        try:
            own = fn(*inputs)
        except RuntimeError:  # an op without a kernel in this dtype here
            own = fn(*[x.float() if x.is_floating_point() else x
                       for x in inputs])
        try:
            got = run_kfuse(fn, inputs, mode)
        except ktorch.Unsupported as e:
            return f"unsupported: {e}"
        except Exception as e:  # a crash is a finding too
            return f"error: {type(e).__name__}: {e}"
    got = got if isinstance(got, tuple) else (got,)
    floor = 2e-2 if program.dtype == "bfloat16" else 1e-4
    for i, (g, w, o) in enumerate(zip(got, want, own)):
        error = relative_error(g, w)
        allowed = 8 * relative_error(o, w) + floor
        if not error <= allowed:  # NaN fails
            return (f"output {i} ({program.outputs[i]}): relative error "
                    f"{error:.3g} > {allowed:.3g}")
    return "passed"


def _without(program, step, replacement):
    """The program with `step` gone, its uses reading `replacement`."""
    pattern = re.compile(rf"\b{step.name}\b")
    steps = []
    for s in program.steps:
        if s is step:
            continue
        expr = pattern.sub(replacement, s.expr)
        uses = tuple(replacement if u == step.name else u for u in s.uses)
        steps.append(Step(s.name, expr, s.shape, uses))
    outputs = [replacement if o == step.name else o for o in program.outputs]
    return dataclasses.replace(program, steps=steps, outputs=outputs)


def _pruned(program):
    """Steps and inputs the outputs do not need, dropped."""
    needed = set(program.outputs)
    steps = []
    for s in reversed(program.steps):
        if s.name in needed:
            steps.append(s)
            needed.update(s.uses)
    inputs = [i for i in program.inputs if i[0] in needed]
    if not inputs:  # keep the signature non-empty
        inputs = program.inputs[:1]
    return dataclasses.replace(program, steps=list(reversed(steps)),
                               inputs=inputs)


def shrink(program, seed, mode):
    """A smaller program that still fails, in few tries: the first value
    that fails as the only output, then steps replaced by an operand of
    their shape."""
    def fails(p):
        try:
            return check(p, seed, mode) not in ("passed", "degenerate")
        except Exception:  # not a program PyTorch runs: not smaller
            return False
    for step in program.steps:
        candidate = _pruned(dataclasses.replace(program, outputs=[step.name]))
        if fails(candidate):
            program = candidate
            break
    changed = True
    while changed:
        changed = False
        shapes = program.shapes()
        indices = {n for n, _, bound in program.inputs if bound is not None}
        for step in list(program.steps):
            for operand in step.uses:
                if shapes.get(operand) != step.shape or operand in indices:
                    continue
                candidate = _pruned(_without(program, step, operand))
                if fails(candidate):
                    program, changed = candidate, True
                    break
            if changed:
                break
    return program


def reproducer(program, seed, mode, message):
    shapes = [(shape, bound) for _, shape, bound in program.inputs]
    return (f'"""torch-fuzz seed {seed} ({mode}): {message}"""\n\n'
            "import torch\nimport torch.nn.functional as F\n\n"
            f"DTYPE = torch.{program.dtype}\nSEED = {seed}\n"
            "# (shape, bound): an int64 index in [-bound, bound) where bound\n"
            "# is set, else a float tensor.\n"
            f"INPUTS = {shapes!r}\n\n\n" + program.source())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", default="reference",
                        choices=["reference", "kfuse", "dynamo", "dynamic"])
    parser.add_argument("--dtype", default="float32",
                        choices=["float32", "bfloat16"])
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--regressions", metavar="DIR")
    args = parser.parse_args(argv)
    counts = {"passed": 0, "degenerate": 0, "unsupported": 0, "failed": 0}
    calls = collections.Counter()
    for seed in range(args.seed, args.seed + args.count):
        program = Generator(random.Random(seed), args.dtype).program(
            args.max_steps)
        calls.update(re.findall(r"(?:torch|F)\.\w+|\.\w+(?=\()|\[",
                                program.source()))
        try:
            result = check(program, seed, args.mode)
        except Exception:  # the fuzzer's own bug: say so, keep going
            result = "error: " + traceback.format_exc(limit=2)
        key = result if result in counts else result.split(":")[0]
        if key == "unsupported":
            counts["unsupported"] += 1
            print(f"seed {seed}: {result[:200]}")
            continue
        if key in ("passed", "degenerate"):
            counts[key] += 1
            continue
        counts["failed"] += 1
        small = shrink(program, seed, args.mode)
        text = reproducer(small, seed, args.mode, result)
        print(f"seed {seed}: {result}\n{text}")
        if args.regressions:
            path = pathlib.Path(args.regressions) / f"torch_fuzz_{seed}.py"
            path.write_text(text)
    print(f"torch-fuzz ({args.mode}, {args.dtype}): {args.count} programs "
          f"from seed {args.seed}: " +
          ", ".join(f"{v} {k}" for k, v in counts.items()))
    if args.mode in ("dynamo", "dynamic"):
        print(f"kfuse backend: {ktorch.backend_report['graphs']} graphs, "
              f"{ktorch.backend_report['symbolic']} with symbolic sizes, "
              f"{ktorch.backend_report['compiled']} parts run by kfuse")
    print("calls: " + " ".join(f"{name}:{n}" for name, n in
                                sorted(calls.items())))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
