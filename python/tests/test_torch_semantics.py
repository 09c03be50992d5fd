"""kfuse.torch against PyTorch where torch's semantics are easy to miss:
type promotion (0-d tensors, bools, integer division), defaults and
keyword spellings. Each module runs converted (the float64 reference
evaluator, no GPU) and in PyTorch on the CPU; dtypes, shapes and values
must agree. Skips, saying so, without torch."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="no torch here")
nn = torch.nn
F = torch.nn.functional
import kfuse.torch as ktorch  # noqa: E402


class Call(nn.Module):
    """forward(*inputs) = fn(self, *inputs); tensors in `buffers` are
    buffers (0-d ones among them)."""

    def __init__(self, fn, **buffers):
        super().__init__()
        self.fn = fn
        for name, value in buffers.items():
            self.register_buffer(name, value)


# torch.fx traces a forward of named parameters only (not *inputs).
class Call1(Call):
    def forward(self, a):
        return self.fn(self, a)


class Call2(Call):
    def forward(self, a, b):
        return self.fn(self, a, b)


class Call3(Call):
    def forward(self, a, b, c):
        return self.fn(self, a, b, c)


def call(fn, inputs, **buffers):
    return (Call1, Call2, Call3)[len(inputs) - 1](fn, **buffers)


def flat(value):
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flat(v)]
    return [value]


def assert_matches(fn, *inputs, **buffers):
    module = call(fn, inputs, **buffers)
    want = module(*inputs)
    got = ktorch.compile(module, inputs, reference=True)(*inputs)
    assert type(got) is type(want)
    got, want = flat(got), flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        g, w = g.double().numpy(), w.double().numpy()
        assert not np.isnan(g).any()
        assert np.abs(g - w).max() <= 1e-5 * max(np.abs(w).max(), 1), (g, w)


ints = torch.tensor([[-7, 5, 9], [3, -4, 0]])
positive = torch.tensor([[2, -3, 4], [5, 7, -2]])
floats = torch.tensor([[-2.5, 1.25, 3.0], [0.5, -1.75, 2.0]])
mask = torch.tensor([[True, False, True], [False, False, True]])

CASES = {
    # Integer true division is a float quotient; floor division rounds down
    # (integers exactly, a negative quotient too), of floats as well.
    "int_truediv": (lambda s, a, b: (a / b, 1 / b, torch.div(a, b)),
                    ints, positive),
    "floor_div": (lambda s, a, b, x: (
        torch.div(a, b, rounding_mode="floor"), a // b,
        torch.div(x, 0.75, rounding_mode="floor")), ints, positive, floats),
    # floor and round of integers are the integers.
    "int_floor_round": (lambda s, a: (torch.floor(a), torch.round(a)), ints),
    # Integer powers stay integers; a number's power of a tensor works.
    "powers": (lambda s, a, x: (a ** 2, a.pow(3), a ** 0, 2 ** x), ints,
               floats),
    # Sums of bools and integers are int64.
    "int_sums": (lambda s, m, a: (m.sum(-1), a.sum(), torch.sum(a, axis=1)),
                 mask, ints.int()),
    # A 0-d tensor of the same category takes the other's dtype.
    "zero_dim_promotion": (lambda s, x, a: (
        x * s.scale, a + s.offset, torch.where(x > 0, x, s.scale)),
        floats.half(), ints.int()),
    # Bools: + is or, * is and; with a number they are int64.
    "bool_arithmetic": (lambda s, m, n: (m + 1, m * n, m + n), mask,
                        ~mask),
    # masked_fill casts its value to the tensor's dtype (0.7 -> 0).
    "masked_fill_int": (lambda s, a, m: a.masked_fill(m, 0.7), ints, mask),
    # where of two ints is int64, of an int tensor and a float float32.
    "where_numbers": (lambda s, m, a: (torch.where(m, 1, 0),
                                       torch.where(m, a, 0.5)), mask, ints),
    # cumsum casts to its dtype before summing.
    "cumsum_dtype": (lambda s, x, a: (
        x.cumsum(1, dtype=torch.int64), a.cumsum(0, dtype=torch.int32),
        a.cumsum(1)), floats * 3, ints),
    # argmax over all elements with keepdim keeps a 1 per dim.
    "argmax_keepdim": (lambda s, x: (torch.argmax(x, keepdim=True),
                                     x.argmin(keepdim=True)), floats),
    # A difference of bools is their xor.
    "diff_bool": (lambda s, m: torch.diff(m, dim=1), mask),
    # A split returned as it is: a tuple among the outputs.
    "split_output": (lambda s, x: (x.sum(), x.split(2, 1)), floats),
    # Slice bounds past the ends are clamped, as Python's are.
    "slices_past_the_end": (lambda s, x: (x[:, :100], x[:, -100:2],
                                          x[1:7], x[-5:, 1::5]), floats),
    # A list returned is a list; sizes computed on the host (// and **).
    "list_output_and_host_sizes": (lambda s, x: [
        x.view(x.size(0), x.size(1) // 3, 3) * x.size(-1) ** -0.5,
        x.view(size=(6, 8))], torch.randn(4, 12)),
    # Keyword spellings and a narrow counted from the end.
    "keywords": (lambda s, x: (
        torch.permute(x, dims=(1, 0)), torch.reshape(x, shape=(3, 2)),
        x.narrow(1, -2, 2), x.split(split_size=1, dim=0)[1]), floats),
    # Comparisons in the promoted dtype: a mask is never 2, always != -1.
    "bool_compared_with_ints": (lambda s, m: (m == 2, m != -1, m == 1,
                                              m != 0), mask),
    # % and remainder promote as arithmetic does (a mask % 2 is int64; an
    # int32 % a 0-d int64 buffer int32), a number on the left included.
    "remainder_promotion": (lambda s, m, a: (
        m % 2, a % s.offset, torch.remainder(a, -3), 5 % a), mask,
        ints.int() + 10),
    # addmm with alpha 0 reads neither factor (an inf in b stays out),
    # with beta 0 not the bias.
    "addmm_alpha_zero": (lambda s, c, a, b: (
        torch.addmm(c, a, b, beta=0.5, alpha=0),
        torch.addmm(c, a, b, beta=0, alpha=0)),
        torch.ones(2, 3), floats,
        torch.tensor([[float("inf"), 1.0, 2.0], [0.5, -1.0, 3.0],
                      [2.0, 2.0, 2.0]])),
    # new_ones takes its size as a keyword too.
    "new_ones_size": (lambda s, x: x.new_ones(size=(2, 3)), floats),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch(name):
    fn, *inputs = CASES[name]
    buffers = {"scale": torch.tensor(1.5), "offset": torch.tensor(3)} \
        if name in ("zero_dim_promotion", "remainder_promotion") else {}
    assert_matches(fn, *inputs, **buffers)


def test_addmm_without_its_bias_ignores_the_bias():
    bias = torch.full((2, 2), float("inf"))
    assert_matches(lambda s, a, b: torch.addmm(s.bias, a, b, beta=0),
                   floats, floats.t().contiguous(), bias=bias)


def test_cross_entropy_of_bf16_logits_is_bf16():
    logits = torch.randn(4, 10).bfloat16()
    labels = torch.tensor([1, 9, 0, 3])
    module = Call2(lambda s, x, y: F.cross_entropy(x, y))
    got = ktorch.compile(module, (logits, labels), reference=True)(
        logits, labels)
    want = module(logits, labels)
    assert got.dtype == want.dtype == torch.bfloat16
    assert abs(got.item() - want.item()) <= 0.02 * abs(want.item())


def test_torch_where_of_a_condition_alone_is_refused():
    module = Call1(lambda s, x: torch.where(x > 0))
    with pytest.raises(ktorch.Unsupported, match=r"where\(cond\)"):
        ktorch.compile(module, (floats,), reference=True)


def test_16_bit_norms_round_once_from_float32():
    # torch computes a bf16 layer_norm in float32 and rounds the result
    # once (on the GPU; its CPU kernel rounds along the way): so does the
    # converted graph, within half a bf16 step of the float32 result.
    torch.manual_seed(4)
    x = (torch.randn(64, 48) * 3 + 1).bfloat16()
    w, b = torch.randn(48).bfloat16(), torch.randn(48).bfloat16()
    module = Call1(lambda s, a: F.layer_norm(a, (48,), s.w, s.b), w=w, b=b)
    got = ktorch.compile(module, (x,), reference=True)(x)
    assert got.dtype == torch.bfloat16
    want = F.layer_norm(x.float(), (48,), w.float(), b.float())
    step = 2.0 ** (torch.floor(torch.log2(want.abs())) - 7)
    assert ((got.float() - want).abs() <= step / 2 + 1e-6).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_16_bit_tensor_and_a_number_compute_in_float32(dtype):
    # torch (on the GPU, and torch.compile) computes x * 1.01 for a 16-bit
    # x in float32 with the number unrounded, and rounds once; rounding
    # 1.01 to the tensor's dtype first gives another result for most x.
    torch.manual_seed(5)
    x = (torch.randn(4096) * 8).to(dtype)
    module = Call1(lambda s, a: (a * 1.01, a + 0.3, 2.7 - a, a / 3.3))
    got = ktorch.compile(module, (x,), reference=True)(x)
    # The numbers as float32 constants, the results rounded once from
    # float64 (as the reference evaluator computes). torch converts a
    # float64 to 16 bits through float32, which differs at near-ties by a
    # unit in the last place: a few such are allowed.
    wide = x.double()
    c = [torch.tensor(v).double() for v in (1.01, 0.3, 2.7, 3.3)]
    wants = [v.to(dtype) for v in (wide * c[0], wide + c[1], c[2] - wide,
                                   wide / c[3])]
    rounded_first = x * torch.tensor(1.01, dtype=dtype)
    assert (rounded_first != wants[0]).float().mean() > 0.2
    bits = 8 if dtype == torch.bfloat16 else 11
    for g, want in zip(got, wants):
        assert g.dtype == dtype
        assert (g != want).float().mean() < 0.02
        ulp = 2.0 ** (torch.floor(torch.log2(want.double().abs())) - bits + 1)
        assert ((g.double() - want.double()).abs() <= ulp).all()


def test_arange_keywords_as_torch_takes_them():
    # Dynamo's graphs call arange with a size as a bound (torch.fx of this
    # torch cannot trace that): built by hand, as Dynamo gives them.
    import torch.fx as fx

    def arange_of(args, kwargs):
        g = fx.Graph()
        x = g.placeholder("x")
        n = g.call_method("size", (x, 1))
        put = lambda v: n if v == "N" else v  # noqa: E731
        g.output(g.call_function(torch.arange, tuple(map(put, args)),
                                 {k: put(v) for k, v in kwargs.items()}))
        return fx.GraphModule(nn.Module(), g)

    x = torch.randn(2, 7)
    for args, kwargs in [((0, "N"), {"step": 2}), ((1,), {"end": "N"}),
                         (("N",), {}), ((), {"end": "N", "start": 2}),
                         ((0.5, "N"), {})]:
        module = arange_of(args, kwargs)
        got = ktorch.compile(module, (x,), reference=True)(x)
        want = module(x)
        assert got.dtype == want.dtype and torch.equal(got, want), (args,
                                                                    kwargs)
    # An integer arange of floating bounds: torch rounds them its own way.
    with pytest.raises(ktorch.Unsupported, match="integer dtype"):
        ktorch.compile(arange_of((0.5, "N"), {"dtype": torch.int64}), (x,),
                       reference=True)


@pytest.mark.parametrize("fn, inputs, match", [
    (lambda s, m: m & 1, (mask,), "bitwise and"),
    (lambda s, a, b: a @ b, (ints, positive.t()), "matmul of int64"),
    (lambda s, x, y: torch.bmm(x, y), (torch.randn(2, 3, 4).half(),
                                       torch.randn(2, 4, 5)), "bmm of"),
    (lambda s, x: x[True], (floats,), "bool index"),
])
def test_what_torch_computes_otherwise_is_left_to_it(fn, inputs, match):
    # A mask & an int is an integer; integer products are exact in torch
    # (on the CPU), mixed dtypes an error; x[True] adds a dim.
    with pytest.raises(ktorch.Unsupported, match=match):
        ktorch.compile(call(fn, inputs), inputs, reference=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_tanh_gelu_of_16_bits_rounds_once_from_float32(dtype):
    torch.manual_seed(6)
    x = (torch.randn(4096) * 3).to(dtype)
    module = Call1(lambda s, a: F.gelu(a, approximate="tanh"))
    got = ktorch.compile(module, (x,), reference=True)(x)
    # torch (on the GPU) computes it in float32 and rounds once: the same
    # but for a rare rounding tie (the evaluator rounds from float64).
    # Below -3, 1 + tanh cancels: float32's result there is off by more
    # than the tiny value itself, so only its size is checked.
    want = F.gelu(x.float(), approximate="tanh").to(dtype)
    tail = x < -3
    assert (got != want)[~tail].float().mean() < 0.02
    bits = 8 if dtype == torch.bfloat16 else 11
    ulp = 2.0 ** (torch.floor(torch.log2(want.double().abs().clamp_min(
        2.0 ** -14))) - bits + 1)
    assert ((got.double() - want.double()).abs() <= ulp)[~tail].all()
    assert (got.double().abs() < 2e-2)[tail].all()


def test_logsumexp_of_infinite_rows_is_that_infinity():
    # inf - inf at the max made these rows NaN.
    inf = float("inf")
    x = torch.tensor([[-inf, -inf, -inf], [inf, 1.0, 2.0], [-inf, 0.0, 1.0],
                      [inf, -inf, 0.0], [1.0, 2.0, 3.0]])
    module = Call1(lambda s, a: torch.logsumexp(a, -1))
    got = ktorch.compile(module, (x,), reference=True)(x)
    assert torch.allclose(got, module(x), rtol=1e-6, equal_nan=False)
