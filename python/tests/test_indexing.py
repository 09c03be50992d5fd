"""The indexing ops from Python: the reference evaluator against NumPy's
own indexing (which defines what the ops mean), the errors bad indexing
gets, and, where a GPU is present, compiled kernels fused and unfused
against the evaluator."""

import re

import numpy as np
import pytest

import kfuse

rng = np.random.default_rng()


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_basic_indexing_matches_numpy():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (6, 8, 5))
    keys = [np.s_[1:5, ::3], np.s_[2], np.s_[..., None, 3], np.s_[-1, 2:, 1:4:2],
            np.s_[:, -3:-1], np.s_[::4, 7, ...]]
    for i, key in enumerate(keys):
        g.output(f"y{i}", x[key])
    xv = randn(6, 8, 5)
    for key, out in zip(keys, kfuse.evaluate(g, xv)):
        np.testing.assert_array_equal(out, xv[key])


def test_tensor_indices_match_numpy():
    """x[i, j] with broadcasting index tensors on adjacent dims, as
    HuggingFace's masks index a [batch, seq] tensor by a batch and a
    position arange, and with a full slice before them."""
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (4, 6, 5))
    b = g.input("b", kfuse.int64, (4, 1, 1))
    q = g.input("q", kfuse.int64, (1, 3, 1))
    i = g.input("i", kfuse.int32, (2, 3))
    j = g.input("j", kfuse.int32, (3,))
    g.output("bq", x[b, q])
    g.output("bqk", x[b, q, j])
    g.output("i", x[i])
    g.output("sliced", x[:, i, j])
    g.output("ellipsis", x[..., j])
    xv = randn(4, 6, 5)
    bv = np.arange(4).reshape(4, 1, 1)
    qv = np.array([0, 5, -6]).reshape(1, 3, 1)
    iv = rng.integers(-4, 4, (2, 3)).astype(np.int32)
    jv = np.array([4, -1, 0], np.int32)
    bq, bqk, by_i, sliced, ellipsis = kfuse.evaluate(g, xv, bv, qv, iv, jv)
    np.testing.assert_array_equal(bq, xv[bv, qv])
    np.testing.assert_array_equal(bqk, xv[bv, qv, jv])
    np.testing.assert_array_equal(by_i, xv[iv])
    np.testing.assert_array_equal(sliced, xv[:, iv, jv])
    np.testing.assert_array_equal(ellipsis, xv[..., jv])


def test_tensor_index_out_of_range_picks_no_other_element():
    """Flattened, (0, 7) of a 4x6 would be element (1, 1); it is NaN."""
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (4, 6))
    i = g.input("i", kfuse.int32, (3,))
    j = g.input("j", kfuse.int32, (3,))
    g.output("y", x[i, j])
    y, = kfuse.evaluate(g, randn(4, 6), np.array([0, 3, 4], np.int32),
                        np.array([7, -6, 0], np.int32))
    assert np.isnan(y[0]) and not np.isnan(y[1]) and np.isnan(y[2])


@pytest.mark.parametrize("key, message", [
    (lambda x, i: x[i, 1:], "tensor indices must index adjacent dims"),
    (lambda x, i: x[i, :, i], "tensor indices must index adjacent dims"),
    (lambda x, i: x[x > 0], "a tensor index must be int32 or int64"),
])
def test_unsupported_tensor_indices_are_refused(key, message):
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (6, 4, 3))
    i = g.input("i", kfuse.int32, (2,))
    with pytest.raises(IndexError, match=re.escape(message)):
        key(x, i)


def test_cat_pad_and_gathers_match_numpy():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (4, 7))
    ids = g.input("ids", kfuse.int64, (2, 3))
    labels = g.input("labels", kfuse.int32, (4, 1))
    g.output("cat", kfuse.cat([x, x[:, :2] * 2.0], dim=1))
    g.output("pad", kfuse.pad(x, (1, 2, 3, 0), value=-1.0))
    g.output("embed", kfuse.embedding(ids, x))
    g.output("take", kfuse.gather(x, 1, labels))
    xv = randn(4, 7)
    idv = np.array([[0, 3, -1], [2, 1, -4]])
    lv = rng.integers(0, 7, (4, 1)).astype(np.int32)
    cat, padded, embed, take = kfuse.evaluate(g, xv, idv, lv)
    np.testing.assert_array_equal(cat, np.concatenate([xv, xv[:, :2] * 2], 1))
    np.testing.assert_array_equal(
        padded, np.pad(xv, ((3, 0), (1, 2)), constant_values=-1.0))
    np.testing.assert_array_equal(embed, xv[idv])
    np.testing.assert_array_equal(take, np.take_along_axis(xv, lv, 1))


def test_index_add_matches_torch_index_add():
    torch = pytest.importorskip("torch")
    g = kfuse.Graph()
    base = g.input("base", kfuse.float32, (6, 5))
    src = g.input("src", kfuse.float32, (6, 4))
    rows = g.input("rows", kfuse.float32, (4, 5))
    ids = g.input("ids", kfuse.int64, (4,))
    g.output("cols", kfuse.index_add(base, 1, ids, src, alpha=0.5))
    g.output("rows", kfuse.index_add(base, 0, ids, rows))
    bv, sv, rv = randn(6, 5), randn(6, 4), randn(4, 5)
    # Repeated and negative indices; -2 counts from the end.
    iv = np.array([4, 0, 4, -2])
    cols, summed = kfuse.evaluate(g, bv, sv, rv, iv)
    wrapped = torch.from_numpy(np.where(iv < 0, iv + 5, iv))
    expect = torch.from_numpy(bv).index_add(1, wrapped, torch.from_numpy(sv),
                                            alpha=0.5)
    np.testing.assert_allclose(cols, expect.numpy(), rtol=1e-6, atol=1e-6)
    wrapped = torch.from_numpy(np.where(iv < 0, iv + 6, iv))
    expect = torch.from_numpy(bv).index_add(0, wrapped, torch.from_numpy(rv))
    np.testing.assert_allclose(summed, expect.numpy(), rtol=1e-6, atol=1e-6)


def test_index_add_out_of_range_adds_nothing_and_bad_dims_raise():
    g = kfuse.Graph()
    base = g.input("base", kfuse.float32, (3,))
    src = g.input("src", kfuse.float32, (4,))
    ids = g.input("ids", kfuse.int32, (4,))
    g.output("y", kfuse.index_add(base, 0, ids, src))
    (y,) = kfuse.evaluate(g, np.zeros(3, np.float32),
                          np.array([1, 2, 4, 8], np.float32),
                          np.array([0, 3, -3, -4], np.int32))
    np.testing.assert_array_equal(y, [5, 0, 0])
    g = kfuse.Graph()
    base = g.input("base", kfuse.float32, (3, 2))
    src = g.input("src", kfuse.float32, (4, 3))
    ids = g.input("ids", kfuse.int32, (4,))
    with pytest.raises(ValueError, match=r"index_add: source is \(4, 3\) "
                       r"but must be \(4, 2\)"):
        kfuse.index_add(base, 0, ids, src)


def test_out_of_range_indices_give_nan_and_zero():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (3,))
    n = g.input("n", kfuse.int32, (3,))
    i = g.input("i", kfuse.int32, (4,))
    g.output("f", kfuse.index_select(x, 0, i))
    g.output("n", kfuse.index_select(n, 0, i))
    f, ints = kfuse.evaluate(g, np.array([1, 2, 3], np.float32),
                             np.array([4, 5, 6], np.int32),
                             np.array([0, 3, -3, -4], np.int32))
    assert f[0] == 1 and np.isnan(f[1]) and f[2] == 1 and np.isnan(f[3])
    assert list(ints) == [4, 0, 4, 0]


def test_remainder_floor_round_and_logic_match_numpy():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (50,))
    a = g.input("a", kfuse.int64, (50,))
    b = g.input("b", kfuse.int64, (50,))
    g.output("fmod", x % -0.75)
    g.output("imod", a % b)
    g.output("floor", x.floor())
    g.output("round", kfuse.round(x * 2.0))
    g.output("logic", (x > 0) & ~(a > b) | (x < -1))
    xv = randn(50) * 4
    av = rng.integers(-9, 9, 50)
    bv = rng.integers(1, 5, 50) * rng.choice([-1, 1], 50)
    fmod, imod, floor, rounded, logic = kfuse.evaluate(g, xv, av, bv)
    np.testing.assert_allclose(fmod, np.remainder(xv.astype(np.float64), -0.75),
                               atol=1e-6)
    np.testing.assert_array_equal(imod, np.remainder(av, bv))
    np.testing.assert_array_equal(floor, np.floor(xv))
    np.testing.assert_array_equal(rounded, np.round(xv.astype(np.float64) * 2))
    np.testing.assert_array_equal(logic, (xv > 0) & ~(av > bv) | (xv < -1))


def test_rand_is_uniform_and_seeded():
    g = kfuse.Graph()
    seed = g.input("seed", kfuse.int32, ())
    g.output("u", kfuse.rand(seed, 200, 100))
    g.output("v", kfuse.rand(seed, 200, 100))
    u1, v1 = kfuse.evaluate(g, np.array(7, np.int32))
    u2, _ = kfuse.evaluate(g, np.array(7, np.int32))
    u3, _ = kfuse.evaluate(g, np.array(8, np.int32))
    assert (u1 >= 0).all() and (u1 < 1).all()
    assert abs(u1.mean() - 0.5) < 0.01 and abs(u1.std() - 12 ** -0.5) < 0.01
    np.testing.assert_array_equal(u1, u2)
    assert not np.array_equal(u1, u3) and not np.array_equal(u1, v1)


def test_argmax_argmin_cumsum_match_numpy():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (5, 9))
    n = g.input("n", kfuse.int32, (5, 9))
    g.output("argmax", kfuse.argmax(x, 1))
    g.output("argmin", x.argmin(0, keepdim=True))
    g.output("flat", kfuse.argmax(n))
    g.output("ties", kfuse.argmin(n, -1))
    g.output("cumsum", kfuse.cumsum(x, 0))
    g.output("icumsum", n.cumsum(1))
    xv = randn(5, 9)
    xv[3, 4] = np.nan  # NumPy: the first NaN is both the max and the min
    nv = rng.integers(-3, 3, (5, 9)).astype(np.int32)  # many ties
    amax, amin, flat, ties, csum, icsum = kfuse.evaluate(g, xv, nv)
    np.testing.assert_array_equal(amax, np.argmax(xv, 1))
    np.testing.assert_array_equal(amin, np.argmin(xv, 0)[None])
    assert amax.dtype == np.int64 and amax[3] == 4
    np.testing.assert_array_equal(flat, np.argmax(nv))
    np.testing.assert_array_equal(ties, np.argmin(nv, -1))
    # The evaluator sums in float64 and rounds once; NumPy's float32 cumsum
    # rounds each step, so compare with the float64 sums (a cancelled sum
    # near zero differs by an ulp of its terms, not of itself).
    np.testing.assert_allclose(csum, np.cumsum(xv.astype(np.float64), 0),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(icsum, np.cumsum(nv, 1, dtype=np.int32))


@pytest.mark.parametrize("build, message", [
    # x[2:9] is clamped as Python clamps it; the op itself is exact.
    (lambda x, i: kfuse.indexing.slice_(x, 0, 2, 9),
     "slice [2:9] of dim 0 of 6x4 needs"),
    (lambda x, i: x[::-1], "must be >= 1 (negative steps are not supported)"),
    (lambda x, i: kfuse.cat([x, x.T], 0), "operands differ in dim 1"),
    (lambda x, i: kfuse.index_select(x, 0, x), "indices must be i32 or i64"),
    (lambda x, i: kfuse.gather(x, 1, i), "indices need the input's rank"),
    (lambda x, i: kfuse.pad(x, (-1, 0)), "must be >= 0 (crop with slice)"),
    (lambda x, i: x[7], "slice [7:8] of dim 0 of 6x4 needs"),
    (lambda x, i: kfuse.argmax(x, 2), "axis 2 is out of range for rank 2"),
    (lambda x, i: kfuse.cumsum(x > 0, 0), "takes floats or i32, got i1 6x4"),
])
def test_bad_indexing_is_refused_with_its_shapes(build, message):
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (6, 4))
    i = g.input("i", kfuse.int32, (6,))
    with pytest.raises(kfuse.InvalidGraphError,
                       match=re.escape(message)) as info:
        g.output("y", build(x, i))
        g.check()
    assert any(what in str(info.value)
               for what in ("6x4", "i32", "f32", "rank 2"))


def _has_gpu():
    try:
        g = kfuse.Graph()
        g.output("y", g.input("x", kfuse.float32, (1,)) + 1.0)
        kfuse.compile(g)(np.ones(1, np.float32))
        return True
    except kfuse.NoDeviceError:
        return False


@pytest.mark.skipif(not _has_gpu(), reason="no GPU here")
@pytest.mark.parametrize("fusion", ["fused", "unfused"])
def test_compiled_indexing_matches_the_evaluator(fusion):
    g = kfuse.Graph()
    x = g.input("x", kfuse.bfloat16, (64, 96))
    ids = g.input("ids", kfuse.int64, (8, 16))
    seed = g.input("seed", kfuse.int32, ())
    half = x[:, 48:]
    rotated = kfuse.cat([-half, x[:, :48]], dim=1)
    g.output("rope", x * 0.5 + rotated)
    g.output("embed", kfuse.embedding(ids, x).to(kfuse.float32))
    g.output("drop", kfuse.dropout(x.to(kfuse.float32), seed, 0.1))
    g.output("argmax", kfuse.argmax(x, -1).to(kfuse.float32))
    g.output("cumsum", kfuse.cumsum(x.to(kfuse.float32), 0))
    xv = randn(64, 96)
    idv = rng.integers(-64, 64, (8, 16))
    sv = np.array(rng.integers(0, 1 << 30), np.int32)
    exe = kfuse.compile(g, fusion=fusion)
    for out, ref in zip(exe(xv, idv, sv), kfuse.evaluate(g, xv, idv, sv)):
        np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-2)
