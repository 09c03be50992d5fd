"""kfuse.torch's fx converter on small modules, without a GPU: the kfuse
graph of each, run by the float64 reference evaluator, against the module
in PyTorch on the CPU. Skips, saying so, without torch."""

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
from helpers import evaluate_converted, relative_error  # noqa: E402


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
