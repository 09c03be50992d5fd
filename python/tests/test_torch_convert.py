"""kfuse.torch's fx converter on small modules, without a GPU: the kfuse
graph of each, run by the float64 reference evaluator, against the module
in PyTorch on the CPU. Skips, saying so, without torch."""

import inspect
import math
import operator
import warnings

import numpy as np
import pytest

import kfuse

torch = pytest.importorskip("torch", reason="no torch here")
nn = torch.nn
F = torch.nn.functional
import kfuse.torch as ktorch  # noqa: E402


def evaluate_converted(module, *inputs):
    """The module's kfuse graph, evaluated on `inputs` and its parameters."""
    converter = ktorch.Converter(torch.fx.symbolic_trace(module), inputs)
    converter.convert()
    params = [converter.param_value(n) for n in converter.param_names]
    arrays = [t.detach().numpy() for t in (*inputs, *params)]
    return kfuse.evaluate(converter.graph, *arrays)


def relative_error(actual, expected):
    expected = expected.detach().double().numpy()
    assert not np.isnan(actual).any()
    return np.abs(actual - expected).max() / np.abs(expected).max()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(32, 64), nn.Linear(64, 32)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x):
        return x + self.down(self.act(self.up(x)))


class Block(nn.Module):
    """A pre-norm transformer block: attention written from primitives
    (which kf-online-softmax turns into one attention op), then an MLP."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.k, self.v = (nn.Linear(dim, dim) for _ in range(3))
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(),
                                 nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def split(self, t, b, s):
        return t.view(b, s, self.heads, -1).transpose(1, 2)

    def forward(self, x):
        b, s, d = x.size(0), x.size(1), self.dim
        h = self.norm1(x)
        q = self.split(self.q(h), b, s)
        k = self.split(self.k(h), b, s)
        v = self.split(self.v(h), b, s)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        o = torch.matmul(torch.softmax(scores, dim=-1), v)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.norm2(x))


@pytest.mark.parametrize("make,shape", [
    (MLP, (4, 8, 32)),
    (Block, (2, 16, 32)),
    (lambda: nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16), nn.SiLU(),
                           nn.Softmax(dim=-1)), (5, 16)),
], ids=["mlp", "transformer_block", "norm_silu_softmax"])
def test_module_matches_pytorch(make, shape):
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randn(*shape)
    (y,) = evaluate_converted(module, x)
    assert relative_error(y, module(x)) < 1e-5


def test_unsupported_ops_are_named():
    module = nn.Sequential(nn.Conv1d(4, 4, 3)).eval()
    report = ktorch.explain(module, torch.zeros(2, 4, 9))
    assert not report["supported"] and "Conv1d" in report["reason"]
    with pytest.raises(ktorch.Unsupported, match="Conv1d"):
        ktorch.compile(module, (torch.zeros(2, 4, 9),))


class BitwiseAnd(nn.Module):
    def forward(self, n):
        return n & 6


def test_bitwise_ops_of_integers_are_refused_not_made_logical():
    with pytest.raises(ktorch.Unsupported, match="bitwise and of kfuse.int64"):
        ktorch.compile(BitwiseAnd(), (torch.arange(4),))


def test_training_dropout_is_refused_not_skipped():
    module = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    with pytest.raises(ktorch.Unsupported, match="dropout in training"):
        ktorch.compile(module, (torch.randn(2, 4),))


class EmbedRope(nn.Module):
    """Token and position embeddings, RoPE on heads by rotate-half (slices,
    a negation and a cat), and a cross-entropy loss against labels."""

    def __init__(self, vocab=50, dim=16, heads=2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(64, dim)
        self.head, self.heads = nn.Linear(dim, vocab), heads

    def forward(self, ids, positions, labels, cos, sin):
        b, s = ids.size(0), ids.size(1)
        x = self.tok(ids) + self.pos(positions)
        h = x.view(b, s, self.heads, -1).transpose(1, 2)
        rotated = torch.cat([-h[..., 4:], h[..., :4]], dim=-1)
        h = (h * cos + rotated * sin).transpose(1, 2).reshape(b, s, -1)
        logits = self.head(h)
        loss = F.cross_entropy(logits.view(b * s, -1), labels.view(-1),
                               ignore_index=0, label_smoothing=0.1)
        return logits[:, -1], loss


def test_explain_reports_the_fusion():
    module = MLP().eval()
    report = ktorch.explain(module, torch.randn(2, 32))
    assert report["supported"] and "fused" in report["fusion"]


def test_embeddings_rope_and_cross_entropy_match_pytorch():
    torch.manual_seed(0)
    module = EmbedRope().eval()
    ids = torch.randint(0, 50, (3, 10))
    labels = torch.randint(0, 50, (3, 10))
    positions = torch.arange(10)
    cos, sin = torch.randn(10, 8).cos(), torch.randn(10, 8).sin()
    inputs = (ids, positions, labels, cos, sin)
    converter = ktorch.Converter(torch.fx.symbolic_trace(module), inputs)
    converter.convert()
    params = [dict(module.named_parameters())[n]
              for n in converter.param_names]
    arrays = [t.detach().numpy() for t in (*inputs, *params)]
    last, loss = kfuse.evaluate(converter.graph, *arrays)
    want_last, want_loss = module(*inputs)
    assert relative_error(last, want_last) < 1e-5
    assert abs(float(loss) - float(want_loss)) < 1e-5 * abs(float(want_loss))


class Sampling(nn.Module):
    """Greedy picks, their running count and a cumulative distribution."""

    def forward(self, logits, mask):
        picks = torch.argmax(logits, dim=-1)
        worst = logits.argmin(-1, keepdim=True)
        cdf = torch.cumsum(torch.softmax(logits, -1), dim=-1)
        counts = mask.cumsum(1)
        return picks, worst, cdf, counts


def test_argmax_and_cumsum_match_pytorch():
    torch.manual_seed(0)
    logits = torch.randn(4, 6, 50)
    mask = torch.randint(0, 3, (4, 6), dtype=torch.int32)
    converter = ktorch.Converter(torch.fx.symbolic_trace(Sampling()),
                                 (logits, mask))
    converter.convert()
    got = kfuse.evaluate(converter.graph, logits.numpy(), mask.numpy())
    want = Sampling()(logits, mask)
    np.testing.assert_array_equal(got[0], want[0].numpy())
    np.testing.assert_array_equal(got[1], want[1].numpy())
    assert relative_error(got[2], want[2]) < 1e-5
    assert got[3].dtype == np.int64  # torch's cumsum of ints is int64
    np.testing.assert_array_equal(got[3], want[3].numpy())


class FlipInTheMiddle(nn.Module):
    """An MLP with an op kfuse has no conversion for between its layers."""

    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x):
        h = torch.flip(F.gelu(self.up(x)), [-1])
        return x + self.down(F.silu(h) * 2.0)


def test_a_graph_with_an_unsupported_op_runs_in_parts():
    torch.manual_seed(0)
    module = FlipInTheMiddle().eval()
    x = torch.randn(4, 16)
    report = ktorch.explain(module, x)
    assert not report["supported"] and "flip" in report["reason"]
    assert report["parts"] == 2
    assert len(report["fallbacks"]) == 1 and "flip" in report["fallbacks"][0]
    compiled = ktorch.compile(module, (x,), fallback=True, reference=True)
    kfuse_parts = [m for m in compiled.children()
                   if isinstance(m, ktorch._Part)]
    assert len(kfuse_parts) == 2
    # Fresh inputs: the parts were judged on x, they run on y.
    y = torch.randn(4, 16)
    got = compiled(y)
    assert relative_error(got.detach().double().numpy(), module(y)) < 1e-6


def test_parts_made_of_views_alone_stay_in_pytorch():
    class ViewsAroundFlip(nn.Module):
        def forward(self, x):
            return torch.flip(x.view(2, 8).transpose(0, 1), [0]).reshape(16)

    report = ktorch.explain(ViewsAroundFlip(), torch.randn(16))
    assert report["parts"] == 0 and "flip" in report["reason"]


def test_fallback_needs_example_inputs():
    with pytest.raises(ValueError, match="example inputs"):
        ktorch.compile(MLP().eval(), fallback=True)


class Gpt2Style(nn.Module):
    """The spellings HuggingFace's GPT-2 and Llama use: Conv1D's addmm over
    a flattened view, expand for repeated KV heads, masked_fill, type_as."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(16, 48) / 4)
        self.bias = nn.Parameter(torch.randn(48))

    def forward(self, x, mask):
        h = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        h = h.view(x.size(0), x.size(1), 48)
        kv = h[:, None, :, :16].expand(-1, 2, -1, -1).reshape(-1, 16)
        scores = (kv @ kv.t()).masked_fill(mask, -1e4).softmax(-1)
        return scores.type_as(x).cos() + torch.sin(scores).t()


def test_huggingface_spellings_match_pytorch():
    torch.manual_seed(0)
    module = Gpt2Style().eval()
    x = torch.randn(2, 3, 16)
    mask = torch.rand(12, 12) > 0.5
    (y,) = evaluate_converted(module, x, mask)
    assert relative_error(y, module(x, mask)) < 1e-6


class NormMLP(nn.Module):
    """LayerNorm, an MLP and a residual: the parameters' gradients flow
    through matmuls (both transposes), broadcasts and row reductions."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x):
        h = self.down(F.gelu(self.up(self.norm(x)), approximate="tanh"))
        return x + h, (h * h).mean()


def test_gradients_flow_through_kfuse_like_autograd():
    torch.manual_seed(0)
    module = NormMLP().double().float()
    x = torch.randn(4, 16, requires_grad=True)
    compiled = ktorch.compile(module, (x,), reference=True)
    y, loss = compiled(x)
    assert y.requires_grad and loss.requires_grad
    (loss + y.sum() * 0.1).backward()
    got = {"x": x.grad.clone(), **{n: p.grad.clone()
                                   for n, p in module.named_parameters()}}
    x.grad = None
    module.zero_grad()
    y, loss = module(x)
    (loss + y.sum() * 0.1).backward()
    want = {"x": x.grad, **dict((n, p.grad)
                                for n, p in module.named_parameters())}
    for name in want:
        assert relative_error(got[name].double().numpy(), want[name]) < 1e-5, \
            name


class EmbedScatter(nn.Module):
    """An embedding trained through kfuse (its gradient a sum over the ids
    naming each row) and torch.index_add in both spellings."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 6)

    def forward(self, ids, base, rows):
        h = torch.tanh(self.embed(ids))
        summed = torch.index_add(base, 0, ids[0], rows, alpha=2.0)
        return (h * h).sum(), summed.index_add(1, ids[1, 2:5], base[:, 3:])


def test_embedding_gradient_and_index_add_match_pytorch():
    torch.manual_seed(2)
    module = EmbedScatter()
    # Repeated ids: their rows' gradients add up.
    ids = torch.tensor([[3, 7, 3, 19, 0, 3], [7, 7, 1, 2, 5, 5]])
    base, rows = torch.randn(20, 6), torch.randn(6, 6)
    compiled = ktorch.compile(module, (ids, base, rows), reference=True)
    loss, summed = compiled(ids, base, rows)
    loss.backward()
    got = module.embed.weight.grad.clone()
    module.zero_grad()
    want_loss, want_summed = module(ids, base, rows)
    want_loss.backward()
    assert relative_error(got.double().numpy(),
                          module.embed.weight.grad) < 1e-5
    assert relative_error(summed.detach().double().numpy(),
                          want_summed.detach()) < 1e-5


class PaddedEmbedding(nn.Module):
    """Embeddings whose padding row takes no gradient, in both spellings."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(12, 5, padding_idx=0)
        self.table = nn.Parameter(torch.randn(12, 5))

    def forward(self, ids):
        other = F.embedding(ids, self.table, padding_idx=-1)
        return (torch.tanh(self.embed(ids)) * other).sum()


def test_an_embeddings_padding_row_takes_no_gradient():
    torch.manual_seed(3)
    module = PaddedEmbedding()
    # Both padding rows (0, and 11 = -1) are looked up, more than once.
    ids = torch.tensor([[0, 4, 11, 0], [11, 2, 4, 0]])
    compiled = ktorch.compile(module, (ids,), reference=True)
    compiled(ids).backward()
    got = [module.embed.weight.grad.clone(), module.table.grad.clone()]
    assert got[0][0].abs().max() == 0 and got[1][11].abs().max() == 0
    module.zero_grad()
    module(ids).backward()
    for g, want in zip(got, (module.embed.weight.grad, module.table.grad)):
        assert relative_error(g.double().numpy(), want) < 1e-5


@pytest.mark.parametrize("kwargs", [{"max_norm": 1.0},
                                    {"scale_grad_by_freq": True}])
def test_embedding_options_kfuse_does_not_convert_are_refused(kwargs):
    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(8, 4, **kwargs)

        def forward(self, ids):
            return self.embed(ids)

    with pytest.raises(ktorch.Unsupported, match=next(iter(kwargs))):
        ktorch.compile(Embed(), (torch.tensor([1, 2]),), reference=True)


def test_to_another_tensor_takes_its_dtype():
    class To(nn.Module):
        def forward(self, x, y):
            return x.to(y) * 2, x.to(torch.float16), x.to(dtype=torch.int32)

    x, y = torch.randn(3) * 4, torch.zeros(3, dtype=torch.float16)
    compiled = ktorch.compile(To(), (x, y), reference=True)
    for got, want in zip(compiled(x, y), To()(x, y)):
        assert got.dtype == want.dtype
        assert relative_error(got.double().numpy(), want.double()) < 1e-3


def test_softmax_without_a_dim_takes_torchs_implicit_one():
    class Implicit(nn.Module):
        def __init__(self):
            super().__init__()
            self.softmax = nn.Softmax()

        def forward(self, x, y):
            return F.softmax(x), self.softmax(y)  # dims 0 and 1

    x, y = torch.randn(3, 4, 5), torch.randn(2, 3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own deprecation warning
        compiled = ktorch.compile(Implicit(), (x, y), reference=True)
        pairs = list(zip(compiled(x, y), Implicit()(x, y)))
    for got, want in pairs:
        assert relative_error(got.double().numpy(), want.double()) < 1e-5


@pytest.mark.skipif(not hasattr(torch.nn, "RMSNorm"),
                    reason="this torch has no nn.RMSNorm (PyTorch 2.4+)")
def test_rms_norm_without_an_eps_takes_the_dtypes_epsilon():
    # Rows of tiny values, where eps decides the result.
    norm = nn.RMSNorm(6)
    x = torch.randn(4, 6) * 1e-4
    compiled = ktorch.compile(norm, (x,), reference=True)
    with torch.no_grad():  # the weight is a parameter: outputs need grad
        got, want = compiled(x), norm(x)
    assert relative_error(got.double().numpy(), want.double()) < 1e-4


def test_add_sub_take_alpha_and_div_rounds_down():
    class Scaled(nn.Module):
        def forward(self, x, y):
            return (torch.add(x, y, alpha=2.5), x.sub(y, alpha=-3),
                    torch.div(x, y, rounding_mode="floor"), x.div(y))

    x, y = torch.randn(5, 4) * 8, torch.rand(5, 4) + 0.5
    compiled = ktorch.compile(Scaled(), (x, y), reference=True)
    for got, want in zip(compiled(x, y), Scaled()(x, y)):
        assert relative_error(got.double().numpy(), want.double()) < 1e-5


def test_only_the_inputs_that_require_grad_get_gradients():
    torch.manual_seed(1)
    module = NormMLP()
    for p in module.parameters():
        p.requires_grad_(False)
    module.up.weight.requires_grad_(True)
    x = torch.randn(3, 16)
    compiled = ktorch.compile(module, (x,), reference=True)
    _, loss = compiled(x)
    loss.backward()
    got = module.up.weight.grad.clone()
    module.up.weight.grad = None
    module(x)[1].backward()
    assert relative_error(got.double().numpy(), module.up.weight.grad) < 1e-5
    assert module.down.weight.grad is None
    with torch.no_grad():  # no autograd record: plain outputs
        assert not compiled(x)[1].requires_grad


def gradients(module, run, x, loss=lambda out: out.square().mean()):
    """[d loss / dx, d loss / d each parameter] through `run`."""
    x = x.detach().requires_grad_(True)
    module.zero_grad()
    loss(run(x)).backward()
    return [x.grad.clone()] + [p.grad.clone() for p in module.parameters()]


def test_gradients_cross_the_parts_left_to_pytorch():
    torch.manual_seed(4)
    module = FlipInTheMiddle()
    x = torch.randn(4, 16)
    compiled = ktorch.compile(module, (x,), fallback=True, reference=True)
    got = gradients(module, compiled, x)
    for g, w in zip(got, gradients(module, module, x)):
        assert relative_error(g.double().numpy(), w) < 1e-5


class LogsumexpAndDetach(nn.Module):
    """torch.logsumexp and detach, as functions and as methods."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(7))

    def forward(self, x):
        y = x * self.w
        return (torch.logsumexp(y, 1) + y.logsumexp(-1) * y.detach().sum(1)
                + torch.detach(y).mean(1))


def test_logsumexp_and_detach_convert_with_pytorchs_gradients():
    torch.manual_seed(5)
    module = LogsumexpAndDetach()
    x = torch.randn(4, 7)
    compiled = ktorch.compile(module, (x,), reference=True)
    assert relative_error(compiled(x).detach().double().numpy(),
                          module(x).detach()) < 1e-6
    got = gradients(module, compiled, x)
    for g, w in zip(got, gradients(module, module, x)):
        assert relative_error(g.double().numpy(), w) < 1e-5


class MaskConstruction(nn.Module):
    """How HuggingFace builds its attention mask: aranges, comparisons,
    new_ones, torch.diff of the positions (packed-sequence detection) and
    the sequence ids indexed by batch and position."""

    def forward(self, x, positions):
        s = 6  # (fx cannot trace arange of a size; Dynamo makes it a constant)
        q, kv = torch.arange(s), torch.arange(0, s, 1)
        causal = kv[None, :] <= q[:, None]
        starts = torch.diff(positions, prepend=positions[:, :1] - 1, dim=-1)
        packed = (starts != 1).to(torch.float32)
        allowed = causal.new_ones((1, s), dtype=torch.bool) & causal
        # Positions of one packed sequence attend each other: its id looked
        # up per (batch, query) and (batch, key) by tensor indices.
        ids = (starts != 1).to(torch.int32).cumsum(-1)
        b = torch.arange(2)[:, None, None]
        same = ids[b, q[None, :, None]] == ids[b, kv[None, None, :]]
        allowed = allowed & same
        scores = x @ x.transpose(-1, -2)
        return scores.masked_fill(~allowed, -1e4) + packed[:, :, None], \
            (torch.arange(2.0, 5.0, 0.5) * 2).sum()


def test_mask_construction_converts():
    torch.manual_seed(6)
    x = torch.randn(2, 6, 4)
    positions = torch.tensor([[0, 1, 2, 0, 1, 2], [0, 1, 2, 3, 4, 5]])
    got = evaluate_converted(MaskConstruction(), x, positions)
    want = MaskConstruction()(x, positions)
    for g, w in zip(got, want):
        assert relative_error(g, w) < 1e-6


def test_arange_as_dynamo_captures_it():
    # fx's tracer folds arange of constants; Dynamo keeps the call.
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    ints = graph.call_function(torch.arange, (1, 7, 2))
    floats = graph.call_function(torch.arange, (3,), {"dtype": torch.float32})
    y = graph.call_function(operator.add, (x, ints))
    graph.output((y, graph.call_function(operator.mul, (floats, 0.5))))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    xv = torch.arange(3, dtype=torch.int64) * 10
    converter = ktorch.Converter(gm, (xv,))
    converter.convert()
    got = kfuse.evaluate(converter.graph, xv.numpy())
    assert got[0].tolist() == [1, 13, 25] and got[0].dtype == np.int64
    assert got[1].tolist() == [0.0, 0.5, 1.0]


def test_symbolic_sizes_as_dynamo_gives_them():
    # Under Dynamo's symbolic sizes a length reaches arange as a SymInt (an
    # integral value that is not an int: an int64 tensor, as in PyTorch)
    # and the sizes given to view as a torch.Size call.
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    length = graph.placeholder("s0")
    positions = graph.call_function(torch.arange, (length,))
    size = graph.call_function(torch.Size, ([2, length, 3],))
    viewed = graph.call_method("view", (x, size))
    graph.output((positions,
                  graph.call_function(operator.add, (viewed, 1.0))))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    xv = torch.randn(2, 15)
    converter = ktorch.Converter(gm, (xv, np.int64(5)))
    converter.convert()
    got = kfuse.evaluate(converter.graph, xv.numpy())
    assert got[0].tolist() == [0, 1, 2, 3, 4] and got[0].dtype == np.int64
    assert relative_error(got[1], xv.view(2, 5, 3) + 1.0) < 1e-6


class VectorProducts(nn.Module):
    def forward(self, v, m, w):
        return v @ m, m.t() @ v, torch.matmul(v, v), F.linear(v, w), \
            torch.matmul(m[None].expand(2, 5, 3), m.t()[:, :1].squeeze(1))


def test_matmul_and_linear_of_vectors_match_pytorch():
    torch.manual_seed(3)
    v, m, w = torch.randn(5), torch.randn(5, 3), torch.randn(4, 5)
    got = evaluate_converted(VectorProducts(), v, m, w)
    want = VectorProducts()(v, m, w)
    for g, w_ in zip(got, want):
        assert g.shape == tuple(w_.shape)
        assert relative_error(g, w_) < 1e-6


class FilledAndInPlace(nn.Module):
    """T5's and BERT's spellings: tensors filled by torch.ones / zeros /
    full and their _like forms, torch.min / max of two tensors, and an
    in-place += on a fresh value."""

    def forward(self, x):
        buckets = (x > 0).to(torch.long) * 8
        buckets += torch.where(x.abs() < 0.5, torch.zeros_like(buckets),
                               torch.full_like(buckets, 3))
        capped = torch.min(x, torch.full_like(x, 0.25)) + torch.max(
            x, torch.ones_like(x))
        bias = torch.zeros((2, 16)) + torch.ones(2, 16) * torch.full(
            (2, 16), 0.5)
        return capped + bias + buckets.to(torch.float32)


def test_filled_tensors_and_in_place_updates_convert():
    torch.manual_seed(6)
    module = FilledAndInPlace()
    x = torch.randn(2, 16)
    got = evaluate_converted(module, x)
    assert relative_error(got, module(x)) < 1e-6


def _in_place_graph(through_view):
    """y = x * 2; y += 1 (Dynamo's operator.iadd; torch.fx's tracer drops
    the update), on y itself or on a view of it; returns y."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(operator.mul, (x, 2))
    target = graph.call_method("view", (y, -1)) if through_view else y
    updated = graph.call_function(operator.iadd, (target, 1))
    graph.output(y if through_view else updated)
    return torch.fx.GraphModule(nn.Module(), graph)


def test_an_in_place_update_of_a_fresh_value_converts():
    x = torch.randn(4)
    converter = ktorch.Converter(_in_place_graph(False), [x])
    converter.convert()
    got = kfuse.evaluate(converter.graph, x.numpy())
    assert relative_error(got, 2 * x + 1) < 1e-12


def test_an_in_place_update_of_a_view_stays_in_pytorch():
    gm = _in_place_graph(True)
    with pytest.raises(ktorch.Unsupported, match="in-place"):
        ktorch.Converter(gm, [torch.randn(4)]).convert()


def _update_graph(make_target, other, dtype_of_y=None):
    """y = x * 2 (cast to `dtype_of_y` first if given); make_target(graph,
    y) += other; returns the update."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    if dtype_of_y is not None:
        x = graph.call_method("to", (x, dtype_of_y))
    y = graph.call_function(operator.mul, (x, 2))
    target = make_target(graph, y)
    graph.output(graph.call_function(operator.iadd, (target, other)))
    return torch.fx.GraphModule(nn.Module(), graph)


@pytest.mark.parametrize("method,args", [("narrow", (0, 0, 2)), ("t", ()),
                                         ("contiguous", ()), ("float", ())])
def test_an_in_place_update_of_what_may_share_memory_stays_in_pytorch(
        method, args):
    gm = _update_graph(lambda g, y: g.call_method(method, (y,) + args), 1)
    with pytest.raises(ktorch.Unsupported, match="in-place"):
        ktorch.Converter(gm, [torch.randn(4, 4)]).convert()


def test_an_in_place_update_keeps_its_dtype_and_shape_as_torch_does():
    keep = lambda g, y: y  # noqa: E731
    x = torch.randn(4, 4)
    # float16 += float32: computed in float32, stored as float16.
    converter = ktorch.Converter(_update_graph(keep, 0.5, torch.float16), [x])
    converter.convert()
    assert converter.graph.outputs[0][1] == kfuse.dtypes.float16
    # Updates torch refuses are refused, not made out of place: a float
    # into integers, a broadcast that grows the target.
    gm = _update_graph(keep, 0.5, torch.int64)
    with pytest.raises(ktorch.Unsupported, match="in-place"):
        ktorch.Converter(gm, [x]).convert()
    graph = torch.fx.Graph()
    a, b = graph.placeholder("a"), graph.placeholder("b")
    doubled = graph.call_function(operator.mul, (a, 2))
    graph.output(graph.call_function(operator.iadd, (doubled, b)))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    with pytest.raises(ktorch.Unsupported, match="in-place"):
        ktorch.Converter(gm, [torch.randn(4), torch.randn(3, 4)]).convert()


def test_filled_tensors_take_their_arguments_by_keyword():
    class Filled(nn.Module):
        def forward(self, x):
            return (x + torch.zeros(size=(2, 3)) +
                    torch.full(size=(2, 3), fill_value=1.5) +
                    torch.full_like(x, fill_value=2.0))

    x = torch.randn(2, 3)
    got = evaluate_converted(Filled(), x)
    assert relative_error(got, Filled()(x)) < 1e-12


def _updating_graph(through_view):
    """h = x * 2; (a view of h, or the input x) += 100; then h + 1 and the
    updated value: reads before and after an update PyTorch makes."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    h = graph.call_function(operator.mul, (x, 2))
    target = graph.call_method("view", (h, -1)) if through_view else x
    updated = graph.call_function(operator.iadd, (target, 100))
    later = graph.call_function(operator.add, (h, 1))
    graph.output((later, updated))
    return torch.fx.GraphModule(nn.Module(), graph)


@pytest.mark.parametrize("through_view", [True, False])
def test_an_update_left_to_pytorch_keeps_the_graphs_order(through_view):
    # Through a view of h, the update changes h, which h + 1 then reads:
    # the view stays with PyTorch (a copy in kfuse would take the update)
    # and h + 1 runs after it. Of the input x, h read x before it.
    x = torch.randn(4)
    want = _updating_graph(through_view)(x.clone())
    compiled, _, _ = ktorch._partitioned(_updating_graph(through_view), [x],
                                         {}, reference=True)
    got = compiled(x.clone())
    for g, w in zip(got, want):
        assert relative_error(g.double().numpy(), w) < 1e-12


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2,
                    reason="PyTorch 1's split_module cannot make a part "
                           "without outputs (the item set)")
def test_an_item_set_by_pytorch_is_seen_by_later_reads():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    h = graph.call_function(operator.mul, (x, 2))
    graph.call_function(operator.setitem, (h, 0, 5.0))
    graph.output(graph.call_function(operator.add, (h, 1)))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    x = torch.randn(4)
    compiled, _, _ = ktorch._partitioned(gm, [x], {}, reference=True)
    want = x * 2 + 1
    want[0] = 6
    assert relative_error(compiled(x).double().numpy(), want) < 1e-12


def test_parts_run_after_the_parts_they_read():
    # Part 3 (x.flip() + 1, then + exp(x)) starts before part 1 (exp(x))
    # in graph order but reads it.
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    flipped = graph.call_function(torch.flip, (x, [0]))
    d = graph.call_function(operator.add, (flipped, 1))
    a = graph.call_function(torch.exp, (x,))
    graph.output(graph.call_function(operator.add, (d, a)))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    x = torch.randn(4)
    compiled, parts, _ = ktorch._partitioned(gm, [x], {}, reference=True)
    assert parts == 2
    want = x.flip(0) + 1 + x.exp()
    assert relative_error(compiled(x).double().numpy(), want) < 1e-12


def test_filled_tensors_take_the_default_dtype():
    class Ones(nn.Module):
        def forward(self, x):
            return x * torch.ones(3)

    gm = torch.fx.symbolic_trace(Ones())
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # which kfuse has not
    try:
        with pytest.raises(ktorch.Unsupported, match="float64"):
            ktorch.Converter(gm, [torch.randn(3)]).convert()
    finally:
        torch.set_default_dtype(previous)


def test_torch_min_as_a_reduction_is_left_to_pytorch():
    class RowMin(nn.Module):
        def forward(self, x):
            return torch.min(x, 1).values * 2

    report = ktorch.explain(RowMin(), torch.randn(3, 4))
    assert any("reduction" in why for why in report["fallbacks"])


def _grad_mode_graph():
    """x * 2, a flip of x left to PyTorch, then x + 1 under no_grad, then
    x * 2 + (x + 1): the graph Dynamo gives for a module that computes a
    table under torch.no_grad()."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    doubled = graph.call_function(operator.mul, (x, 2))
    # Left to PyTorch, after a kfuse node: its part number is lower.
    graph.call_function(torch.flip, (x, [0]))
    graph.call_function(torch._C._set_grad_enabled, (False,))
    shifted = graph.call_function(operator.add, (x, 1))
    graph.call_function(torch._C._set_grad_enabled, (True,))
    graph.output(graph.call_function(operator.add, (doubled, shifted)))
    return torch.fx.GraphModule(nn.Module(), graph)


def test_a_grad_mode_switch_is_a_wall_no_part_crosses():
    from kfuse import partition as kpartition
    gm = _grad_mode_graph()
    x = torch.randn(4, 8)
    where, parts, why = kpartition.assign(gm, ktorch.Converter(gm, [x]))
    # The switches are not ops left behind; the flip is.
    assert len(why) == 1 and "flip" in why[0]
    # Each part lies between two switches: three kfuse parts.
    assert parts == ["submod_1", "submod_3", "submod_5"]
    # With switches in the graph, split_module wants part numbers that
    # never decrease in graph order.
    nodes = [n for n in gm.graph.nodes if n in where]
    assert [where[n] for n in nodes] == sorted(where[n] for n in nodes)
    # No kfuse part has nodes on both sides of a switch.
    switches = [i for i, n in enumerate(nodes) if kpartition.is_global_state(n)]
    for part in parts:
        at = [i for i, n in enumerate(nodes) if f"submod_{where[n]}" == part]
        assert all(max(at) < s or min(at) > s for s in switches), part
    source = inspect.getsource(torch.fx.passes.split_module.split_module)
    if "_set_grad_enabled" not in source:
        pytest.skip(f"this PyTorch ({torch.__version__}) splits no graph with "
                    "grad-mode switches (PyTorch 2 does)")
    compiled = ktorch._partitioned(gm, [x], {}, reference=True)[0]
    # float32 out, float64 reference: its rounding.
    assert relative_error(compiled(x).double().numpy(), 3 * x + 1) < 1e-6


def test_a_part_makes_the_grad_mode_switch_split_module_gave_it():
    # PyTorch 2's split_module starts each part after a switch with the
    # switch again; a kfuse part makes it before it runs, not in its graph.
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.call_function(torch._C._set_grad_enabled, (False,))
    graph.output(graph.call_function(operator.add, (x, 1)))
    part = ktorch._Part(torch.fx.GraphModule(nn.Module(), graph), {},
                        reference=True)
    assert part.modes == [False]
    assert not any(n.op == "call_function" and n.target is
                   torch._C._set_grad_enabled for n in part.compiled.gm.graph.nodes)
    x = torch.randn(3, requires_grad=True)
    try:
        y = part(x)
        assert not torch.is_grad_enabled()
    finally:
        torch._C._set_grad_enabled(True)
    assert not y.requires_grad
    assert relative_error(y.double().numpy(), (x + 1).detach()) < 1e-12


@pytest.mark.skipif(not hasattr(getattr(torch, "amp", None), "_enter_autocast"),
                    reason="this PyTorch has no torch.amp._enter_autocast "
                           "(Dynamo's autocast node)")
def test_nodes_under_autocast_are_left_to_pytorch():
    from kfuse import partition as kpartition
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    before = graph.call_function(operator.mul, (x, 2))
    on = graph.call_function(torch.amp._enter_autocast,
                             ("cpu", torch.bfloat16, True, True))
    inside = graph.call_function(torch.exp, (before,))
    graph.call_function(torch.amp._exit_autocast, (on,))
    off = graph.call_function(torch.amp._enter_autocast,
                              ("cpu", None, False, True))
    plain = graph.call_function(torch.exp, (inside,))
    graph.call_function(torch.amp._exit_autocast, (off,))
    graph.output(plain)
    gm = torch.fx.GraphModule(nn.Module(), graph)
    x = torch.randn(4)
    # As the backend does for a graph Dynamo did not trace: the shapes of
    # the nodes left to PyTorch, which the nodes after them read.
    from torch.fx.passes.shape_prop import ShapeProp
    ShapeProp(gm).propagate(x.clone())
    where, parts, why = kpartition.assign(gm, ktorch.Converter(gm, [x]))
    assert len(why) == 1 and "autocast" in why[0] and "exp" in why[0]
    assert where[inside] % 2 == 0  # PyTorch's
    assert where[before] % 2 == 1 and where[plain] % 2 == 1  # kfuse's


def test_a_tensor_without_elements_is_left_to_pytorch():
    # Phi-3's rotary dims are all the head: the pass-through slice is empty.
    class Rotary(nn.Module):
        def forward(self, x):
            rot, rest = x[..., :4], x[..., 4:]
            return torch.cat((rot * 2, rest), dim=-1) + 1, rest

    from kfuse import partition as kpartition
    from torch.fx.passes.shape_prop import ShapeProp
    x = torch.randn(2, 3, 4)
    gm = torch.fx.symbolic_trace(Rotary())
    ShapeProp(gm).propagate(x)
    _, _, reasons = kpartition.judge(ktorch.Converter(gm, [x]))
    assert any("zero-size" in reason for reason in reasons.values()), reasons
    # Nor does kfuse take it as an input: the cat reading it stays with
    # PyTorch (on the GPU, a part with an empty input failed to compile).
    cat = next(n for n in gm.graph.nodes if n.target is torch.cat)
    assert "without elements" in reasons.get(cat, ""), reasons
    compiled = ktorch.compile(Rotary(), (x,), fallback=True, reference=True)
    got, empty = compiled(x)
    assert empty.shape == (2, 3, 0)
    assert relative_error(got.double().numpy(), Rotary()(x)[0]) < 1e-12


def test_the_pad_dynamo_records_converts_on_integer_labels():
    # Dynamo gives F.pad as torch._C._nn.pad (shifting labels by one, -100
    # past the end, as OPT and T5 do).
    graph = torch.fx.Graph()
    labels = graph.placeholder("labels")
    graph.output(graph.call_function(torch._C._nn.pad,
                                     (labels, (0, 1), "constant", -100)))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    x = torch.randint(0, 50, (2, 6))
    converter = ktorch.Converter(gm, [x])
    converter.convert()
    got = kfuse.evaluate(converter.graph, x.numpy())[0]
    np.testing.assert_array_equal(got, F.pad(x, (0, 1), value=-100).numpy())


def test_a_part_moved_up_with_views_alone_runs_in_pytorch():
    # y = x * 2 (kfuse), a flip left to PyTorch, then a view of y and a
    # grad-mode switch: the view's number falls below the flip's and moves
    # up to a part of its own, a view alone: it runs in PyTorch.
    from kfuse import partition as kpartition
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    doubled = graph.call_function(operator.mul, (x, 2))
    flipped = graph.call_function(torch.flip, (x, [0]))
    viewed = graph.call_method("view", (doubled, -1))
    graph.call_function(torch._C._set_grad_enabled, (False,))
    graph.output((flipped, viewed))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    where, parts, _ = kpartition.assign(gm, ktorch.Converter(
        gm, [torch.randn(4, 8)]))
    numbers = [where[n] for n in gm.graph.nodes if n in where]
    assert numbers == sorted(numbers)
    assert where[viewed] % 2 == 0  # PyTorch's
    assert parts == [f"submod_{where[doubled]}"]


class DoubledDropout(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(x * 2) + F.dropout(x, 0.25, training=True) * 0


def test_an_in_place_training_dropout_stays_in_pytorch():
    # nn.Dropout(inplace=True) changes its input too, which h - y reads.
    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5, inplace=True)

        def forward(self, x):
            h = x * 2
            return h - self.drop(h)

    torch.manual_seed(8)
    x = torch.randn(32, 32)
    compiled = ktorch.compile(InPlace().train(), (x,), fallback=True,
                              reference=True)
    assert torch.count_nonzero(compiled(x)) == 0


def test_training_dropout_fuses_with_a_seed_and_its_mask_in_the_backward():
    # Each training-mode dropout (a module, F.dropout) draws from a seed of
    # its own that PyTorch makes: the graph stays one kfuse part, the mask
    # changes every call and the backward applies the forward's mask.
    torch.manual_seed(7)
    p, x = 0.5, torch.randn(64, 64)
    module = DoubledDropout(p).train()
    compiled, parts, why = ktorch._partitioned(
        torch.fx.symbolic_trace(module), [x], {}, reference=True)
    assert parts == 1 and not why
    xs = x.clone().requires_grad_(True)
    y = compiled(xs)
    y.sum().backward()
    kept = y != 0
    assert 0.4 < 1 - kept.double().mean().item() < 0.6
    expected = (2 * x / (1 - p)).double()
    assert relative_error(y[kept].detach().double().numpy(),
                          expected[kept]) < 1e-6
    grad = xs.grad.double()
    assert torch.equal(grad != 0, kept)
    assert torch.allclose(grad[kept], torch.full_like(grad[kept], 2 / (1 - p)))
    assert not torch.equal(compiled(x) != 0, kept)  # a new mask
