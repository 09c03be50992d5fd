"""The Python package on a machine without a GPU: building graphs, the
reference evaluator against NumPy, compiling and dumping, bad input."""

import numpy as np
import pytest

import kfuse

rng = np.random.default_rng()


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def relative_error(actual, expected):
    expected = np.asarray(expected, dtype=np.float64)
    assert not np.isnan(actual).any(), "NaN in the result"
    return np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-30)


def test_building_reports_shapes_dtypes_and_symbols():
    g = kfuse.Graph("mlp")
    x = g.input("x", kfuse.bfloat16, ("M", 64))
    w = g.input("w", "bf16", (64, 32))
    y = kfuse.gelu(x @ w)
    g.output("y", y)
    assert y.shape == (None, 32) and y.dtype is kfuse.bfloat16
    assert g.inputs == [("x", kfuse.bfloat16, (None, 64)),
                        ("w", kfuse.bfloat16, (64, 32))]
    assert g.outputs == [("y", kfuse.bfloat16, (None, 32))]
    text = g.to_mlir()
    assert 'kf.dim_symbols = ["M", ""]' in text and "kf.gelu" in text


def test_elementwise_and_broadcasting_match_numpy():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (8, 16))
    b = g.input("b", kfuse.float32, (16,))
    y = kfuse.tanh((x + b) * 0.5 - 1.0) / (1.0 + x.abs()) + kfuse.maximum(
        x, b)
    g.output("y", y)
    xv, bv = randn(8, 16), randn(16)
    (out,) = kfuse.evaluate(g, xv, bv)
    expected = np.tanh((xv + bv) * 0.5 - 1.0) / (1.0 + np.abs(xv)) + \
        np.maximum(xv, bv)
    assert out.shape == (8, 16) and out.dtype == np.float32
    assert relative_error(out, expected) < 1e-6


def test_reductions_softmax_and_where():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (4, 32))
    g.output("mean", x.mean(1, keepdim=True))
    g.output("max", x.amax(0))
    g.output("p", x.softmax(-1))
    g.output("relu", kfuse.where(x > 0, x, 0.0))
    xv = randn(4, 32)
    mean, mx, p, relu = kfuse.evaluate(g, xv)
    e = np.exp(xv - xv.max(-1, keepdims=True))
    assert mean.shape == (4, 1)
    assert relative_error(mean, xv.mean(1, keepdims=True)) < 1e-6
    assert relative_error(mx, xv.max(0)) == 0
    assert relative_error(p, e / e.sum(-1, keepdims=True)) < 1e-6
    assert relative_error(relu, np.where(xv > 0, xv, 0)) == 0


def test_matmul_transposes_and_casts():
    g = kfuse.Graph()
    a = g.input("a", kfuse.float32, (3, 5, 7))
    b = g.input("b", kfuse.float32, (6, 7))
    g.output("c", kfuse.matmul(a, b, transpose_b=True))
    g.output("h", (a.transpose(1, 2) @ a).to(kfuse.float16))
    av, bv = randn(3, 5, 7), randn(6, 7)
    c, h = kfuse.evaluate(g, av, bv)
    assert relative_error(c, av @ bv.T) < 1e-6
    assert h.dtype == np.float16
    assert relative_error(h, np.swapaxes(av, 1, 2) @ av) < 1e-3


def test_bfloat16_inputs_round_and_results_widen():
    g = kfuse.Graph()
    x = g.input("x", kfuse.bfloat16, (64,))
    g.output("y", x * 1.0)
    xv = randn(64)
    (y,) = kfuse.evaluate(g, xv)
    assert y.dtype == np.float32
    # bf16 keeps 8 bits of mantissa: within 2^-8 relative, and exactly a
    # bf16 value (its low 16 bits zero).
    assert np.all(np.abs(y - xv) <= np.abs(xv) * 2.0**-8)
    assert np.all(y.view(np.uint32) & 0xFFFF == 0)


def test_bfloat16_scalars_keep_their_rank():
    # A loss's scalar bf16 cotangent (kfuse.torch's training path): NumPy
    # made 0-d bf16 arrays rank 1 on the way in and refused them on the way
    # out.
    g = kfuse.Graph()
    s = g.input("s", kfuse.bfloat16, ())
    g.output("t", s * 3.0)
    (t,) = kfuse.evaluate(g, np.float32(1.5))
    assert t.shape == () and t.dtype == np.float32 and float(t) == 4.5
    (n,) = kfuse.evaluate(g, np.float32("nan"))
    assert np.isnan(n)


def test_attention_matches_numpy():
    g = kfuse.Graph()
    q = g.input("q", kfuse.float32, (1, 2, 16, 8))
    k = g.input("k", kfuse.float32, (1, 2, 24, 8))
    v = g.input("v", kfuse.float32, (1, 2, 24, 4))
    out, lse = kfuse.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                  return_lse=True)
    g.output("o", out)
    g.output("lse", lse)
    qv, kv, vv = randn(1, 2, 16, 8), randn(1, 2, 24, 8), randn(1, 2, 24, 4)
    o, l = kfuse.evaluate(g, qv, kv, vv)
    s = qv @ np.swapaxes(kv, -1, -2) / np.sqrt(8)
    s = np.where(np.tril(np.ones((16, 24), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    assert relative_error(o, (p / p.sum(-1, keepdims=True)) @ vv) < 1e-5
    assert relative_error(l, (m + np.log(p.sum(-1, keepdims=True)))[..., 0]) \
        < 1e-5


def test_compile_dumps_every_stage_without_a_gpu():
    g = kfuse.Graph("layer")
    x = g.input("x", kfuse.float32, (64, 128))
    y = (x - x.mean(-1, keepdim=True)) * 2.0
    g.output("y", kfuse.silu(y))
    fused = kfuse.compile(g, disk_cache=False)
    for stage in ("graph", "fused", "gpu", "llvm"):
        assert len(fused.dump(stage)) > 0
    assert ".entry" in fused.dump("ptx")
    unfused = kfuse.compile(g, fusion="unfused", disk_cache=False)
    count = lambda exe: exe.dump("fused").count("kf.kernel ")
    assert count(fused) < count(unfused)
    assert "#kf.launch" in fused.dump("fused")


def test_split_keys_runs_a_decode_attention_over_chunks_of_keys():
    # One query row a head over 4096 keys: 32 blocks whole; split (the
    # default) 4 chunks of 1024 keys a head and a kernel combining them.
    g = kfuse.Graph("decode")
    q = g.input("q", kfuse.bfloat16, (1, 32, 1, 128))
    k = g.input("k", kfuse.bfloat16, (1, 8, 4096, 128))
    v = g.input("v", kfuse.bfloat16, (1, 8, 4096, 128))
    g.output("o", kfuse.attention(q, k, v))
    whole = kfuse.compile(g, split_keys=False, disk_cache=False).dump("fused")
    split = kfuse.compile(g, disk_cache=False).dump("fused")
    assert whole.count("kf.kernel ") == 1
    assert split.count("kf.kernel ") == 2
    assert "tensor<1x32x1024x128xbf16>" in split


def test_deterministic_false_lets_attention_backward_add_up_dq():
    # kf-atomic-dq: the backward kernel's key blocks add dq into an f32
    # buffer (dqAtomic) and a cast follows; deterministic (the default)
    # keeps dq's own blocks of query rows.
    f = kfuse.Graph("attention")
    q = f.input("q", kfuse.bfloat16, (1, 2, 200, 64))
    k = f.input("k", kfuse.bfloat16, (1, 2, 200, 64))
    v = f.input("v", kfuse.bfloat16, (1, 2, 200, 64))
    f.output("o", kfuse.attention(q, k, v, is_causal=True))
    joint = kfuse.vjp(f)
    ordered = kfuse.compile(joint, disk_cache=False).dump("fused")
    unordered = kfuse.compile(joint, deterministic=False,
                              disk_cache=False).dump("fused")
    assert "dqAtomic = false" in ordered and "dqAtomic = true" not in ordered
    assert "dqAtomic = true" in unordered
    assert "tensor<1x2x200x64xf32> -> tensor<1x2x200x64xbf16>" in unordered


def test_attention_grad_tma_warp_specialises_the_backward():
    # kf-promote-shared's grad-tma: a third warpgroup copies the tiles with
    # the TMA (block = 384) where q's length is a multiple of 4, by default,
    # into four stages at head dim 64; attention_grad_tma=False keeps every
    # thread copying.
    f = kfuse.Graph("attention")
    shape = (1, 2, 200, 64)
    q, k, v = (f.input(n, kfuse.bfloat16, shape) for n in "qkv")
    f.output("o", kfuse.attention(q, k, v, is_causal=True))
    joint = kfuse.vjp(f)
    tma = kfuse.compile(joint, disk_cache=False).dump("fused")
    cp_async = kfuse.compile(joint, attention_grad_tma=False,
                             disk_cache=False).dump("fused")
    assert "flash_grad_pipeline<stages = 4, tma = true>" in tma
    assert "flash_grad_pipeline<stages = 2>" in cp_async


def test_explain_fusion_names_each_edge():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (4, 4))
    g.output("y", (x * 2.0).exp())
    text = g.explain_fusion()
    assert "(kf.mul) -> " in text and "fused" in text
    assert '"producer"' in g.explain_fusion(json=True)


def test_graph_from_mlir_round_trips():
    g = kfuse.Graph("rt")
    x = g.input("x", kfuse.float32, (2, 3))
    g.output("y", x.exp())
    again = kfuse.Graph.from_mlir(g.to_mlir())
    xv = randn(2, 3)
    assert relative_error(kfuse.evaluate(again, xv)[0], np.exp(xv)) < 1e-6


def test_bad_graphs_raise_errors_that_name_the_problem():
    g = kfuse.Graph()
    a = g.input("a", kfuse.float32, (4, 8))
    b = g.input("b", kfuse.float32, (3, 8))
    with pytest.raises(kfuse.InvalidGraphError, match="add"):
        a + b
    with pytest.raises(kfuse.InvalidGraphError):
        g.check()
    with pytest.raises(kfuse.Error):
        kfuse.compile(g)
    other = kfuse.Graph("other").input("z", kfuse.float32, (4, 8))
    with pytest.raises(kfuse.InvalidArgumentError, match="not a tensor"):
        kfuse.Graph().output("y", other)
    with pytest.raises(TypeError, match="not a dtype"):
        kfuse.Graph().input("x", "float64", (2,))
    with pytest.raises(kfuse.InvalidGraphError):
        kfuse.Graph.from_mlir("func.func @f(")


def test_numbers_an_integer_tensor_cannot_hold_and_dims_out_of_range_raise():
    # A number takes the tensor's dtype: one it would wrap, truncate or
    # round (bool * 2, int32 + 3e9, int64 past 2^53) raised nothing and
    # gave another answer; a dim out of range was taken modulo the rank.
    g = kfuse.Graph()
    m = g.input("m", kfuse.bool_, (2,))
    i = g.input("i", kfuse.int32, (2,))
    w = g.input("w", kfuse.int64, (2,))
    x = g.input("x", kfuse.float32, (2, 3))
    for bad in (lambda: m * 2, lambda: i + 3000000000, lambda: i < 2 ** 31,
                lambda: w + (2 ** 53 + 1),
                lambda: g.constant(0.5, kfuse.bool_)):
        with pytest.raises(kfuse.InvalidArgumentError, match="is not a"):
            bad()
    assert (i + 7).dtype is kfuse.int32 and (w - 2 ** 53).dtype is kfuse.int64
    with pytest.raises(IndexError, match="dim 5 is out of range"):
        x.transpose(0, 5)
    with pytest.raises(IndexError, match="dim -3"):
        x.transpose(-3, 0)
    with pytest.raises(IndexError, match="index_add: dim 7"):
        kfuse.index_add(x, 7, g.input("j", kfuse.int32, (2,)), x)


def test_names_and_sizes_of_the_wrong_kind_raise_errors_naming_them():
    # They raised AttributeError ('encode') or were truncated (2.5) or
    # wrapped (2^64).
    g = kfuse.Graph()
    with pytest.raises(TypeError, match="graph's name must be a str"):
        kfuse.Graph(None)
    with pytest.raises(TypeError, match="input's name must be a str"):
        g.input(3, kfuse.float32, (2,))
    x = g.input("x", kfuse.float32, (2, 3))
    with pytest.raises(TypeError, match="output's name must be a str"):
        g.output(None, x)
    for size in (2.5, 2 ** 64, -1, "", None, True):
        with pytest.raises(kfuse.InvalidArgumentError,
                           match=r"input 'y' dim 0 is .*: a size is an int"):
            g.input("y", kfuse.float32, (size, 3))
    assert g.input("z", kfuse.float32, (np.int64(4), "N")).ndim == 2


def test_int64_narrowed_to_int32_wraps_as_the_kernels_do():
    # The evaluator saturated (2^31 -> 2^31 - 1) where the kernels'
    # truncation wraps, as NumPy and torch do.
    g = kfuse.Graph()
    x = g.input("x", kfuse.int64, (4,))
    g.output("y", x.to(kfuse.int32))
    values = np.array([2 ** 31, -2 ** 31 - 1, 2 ** 32 + 5, -7], np.int64)
    (y,) = kfuse.evaluate(g, values)
    assert y.dtype == np.int32
    assert (y == values.astype(np.int32)).all()


def test_arguments_of_the_wrong_kind_raise_errors_naming_them():
    # Each raised a ctypes ArgumentError or an AttributeError before.
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (2, 3))
    for call, match in [
            (lambda: x.softmax(None), "softmax's dim must be an int"),
            (lambda: kfuse.slice_(x, None, 0, 1), "slice_'s dim"),
            (lambda: kfuse.slice_(x, 0, 0, 1.5), "slice_'s stop"),
            (lambda: kfuse.where(True, x, 0.0), "where's condition"),
            (lambda: kfuse.cat([1.0, x]), "kfuse.cat's tensors"),
            (lambda: kfuse.rand(3, 3), "rand's seed"),
            (lambda: kfuse.evaluate(None), "kfuse.evaluate: needs a"),
            (lambda: kfuse.compile("g"), "kfuse.compile: needs a"),
            (lambda: kfuse.maximum(1.0, 2.0), "needs a kfuse Tensor")]:
        with pytest.raises(TypeError, match=match):
            call()
    # A number first works where the op is one of two tensors.
    g.output("y", kfuse.maximum(0.5, x))
    (y,) = kfuse.evaluate(g, np.array([[0.0, 1.0, -1.0]] * 2, np.float32))
    assert (y == np.maximum(0.5, [[0.0, 1.0, -1.0]] * 2)).all()


def test_bad_arguments_raise_before_anything_runs():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (4, 8))
    g.output("y", x.exp())
    with pytest.raises(kfuse.InvalidArgumentError, match="expected 1 inputs"):
        kfuse.evaluate(g)
    with pytest.raises(kfuse.InvalidArgumentError, match="float32"):
        kfuse.evaluate(g, np.zeros((4, 8), np.int32))
    with pytest.raises(kfuse.InvalidArgumentError, match="'x' dim 0 is 4"):
        kfuse.evaluate(g, np.zeros((3, 8), np.float32))
    exe = kfuse.compile(g, disk_cache=False)
    with pytest.raises(kfuse.InvalidArgumentError, match="'sass'"):
        exe.dump("sass")
    with pytest.raises(kfuse.InvalidArgumentError, match="fusion"):
        kfuse.compile(g, fusion="some")
    with pytest.raises(kfuse.InvalidArgumentError, match="launch is"):
        kfuse.compile(g, launch="graphs")


def test_runs_on_the_gpu_or_says_there_is_none():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, (256, 64))
    g.output("y", kfuse.softmax(x * 3.0, -1))
    exe = kfuse.compile(g, disk_cache=False)
    xv = randn(256, 64)
    try:
        y = exe(xv)
    except kfuse.NoDeviceError as e:
        pytest.skip(f"no GPU here: {e}")
    (expected,) = kfuse.evaluate(g, xv)
    assert relative_error(y, expected) < 1e-5


def test_output_shapes_follow_the_bound_symbols():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, ("M", 8))
    g.output("s", x.sum(-1, keepdim=True))
    g.output("t", x.T)
    exe = kfuse.compile(g, disk_cache=False)
    assert exe.output_shapes((5, 8)) == [(5, 1), (8, 5)]
    with pytest.raises(kfuse.InvalidArgumentError):
        exe.output_shapes((5, 9))


def test_cache_stats_count_compiles():
    before = kfuse.cache_stats()
    g = kfuse.Graph("counted")
    x = g.input("x", kfuse.float32, (3, 7))
    g.output("y", x.cos() * 1.5)
    kfuse.compile(g, disk_cache=False)
    after = kfuse.cache_stats()
    assert set(after) == {"compiles", "memory_hits", "disk_hits",
                          "disk_rejected"}
    assert after["compiles"] + after["memory_hits"] > \
        before["compiles"] + before["memory_hits"]


def test_check_fusion_needs_a_gpu_or_reports():
    g = kfuse.Graph()
    x = g.input("x", kfuse.float32, ("M", 512))
    g.output("y", kfuse.softmax(x * 2.0, -1))
    try:
        report = kfuse.testing.check_fusion(g, [(1024, 512)])
    except kfuse.NoDeviceError as e:
        pytest.skip(f"no GPU here: {e}")
    assert report["values_match"], report["summary"]
    assert report["outputs"][0]["name"] == "y"
    assert report["fused_kernels"] <= report["unfused_kernels"]


def test_threads_compiling_at_once_compile_each_graph_once():
    """Eight Python threads compile three graphs at once (ctypes lets go
    of the GIL in the C call): each graph is compiled once, every thread
    of a graph gets the same PTX."""
    from helpers import run_threads

    def graph(n):
        g = kfuse.Graph(f"threads_{n}")
        x = g.input("x", kfuse.float32, (n, 33))
        g.output("y", kfuse.softmax(x * 0.25, -1).tanh())
        return g

    sizes = [17, 29, 41]
    before = kfuse.cache_stats()
    ptx = {}

    def work(i):
        n = sizes[i % len(sizes)]
        text = kfuse.compile(graph(n), disk_cache=False).dump("ptx")
        ptx.setdefault(n, set()).add(text)

    errors = run_threads(work, 8)
    assert not errors, errors
    after = kfuse.cache_stats()
    assert after["compiles"] - before["compiles"] == len(sizes)
    assert after["memory_hits"] - before["memory_hits"] == 8 - len(sizes)
    assert all(len(texts) == 1 for texts in ptx.values()), ptx.keys()


def test_a_disk_cache_hit_reads_no_dumps_but_dump_still_answers(tmp_path):
    # The disk entry holds what runs (PTX, cubin, launches), not the text of
    # every stage; a process that loads it and asks for a stage compiles
    # again for it, and gets the same PTX that it loaded.
    import subprocess
    import sys
    script = f"""
import kfuse
g = kfuse.Graph("cached")
x = g.input("x", kfuse.float32, (64, 128))
g.output("y", kfuse.softmax(x * 2.0, -1))
exe = kfuse.compile(g, cache_dir={str(tmp_path)!r})
stats = kfuse.cache_stats()
ptx = exe.dump("ptx")
llvm = exe.dump("llvm")
print(stats["compiles"], stats["disk_hits"], len(llvm) > 100,
      "define" in llvm, hash(ptx) == hash(exe.dump("ptx")))
print(ptx.count(".entry"))
"""
    from helpers import child_env
    runs = [subprocess.run([sys.executable, "-c", script], check=True,
                           env=child_env(), capture_output=True,
                           text=True).stdout.split("\n")
            for _ in range(2)]
    assert runs[0][0] == "1 0 True True True", runs[0]
    assert runs[1][0] == "0 1 True True True", runs[1]
    assert runs[0][1] == runs[1][1] and int(runs[0][1]) >= 1
    entries = list(tmp_path.iterdir())
    assert len(entries) == 1
    assert b"define" not in entries[0].read_bytes()  # no LLVM IR on disk


def cache_attention_graph(name):
    g = kfuse.Graph(name)
    q = g.input("q", kfuse.bfloat16, (1, 8, 1, 128))
    k = g.input("k", kfuse.bfloat16, (1, 2, "L", 128))
    v = g.input("v", kfuse.bfloat16, (1, 2, "L", 128))
    g.output("o", kfuse.scaled_dot_product_attention(q, k, v))
    return g


def test_dynamic_dims_compile_once_a_bucket():
    exe = kfuse.compile(cache_attention_graph("py_dynamic_keys"),
                        disk_cache=False, dynamic=["L"])
    before = kfuse.cache_stats()["compiles"]
    for length in range(65, 129):
        assert exe.output_shapes((1, 8, 1, 128), (1, 2, length, 128),
                                 (1, 2, length, 128)) == [(1, 8, 1, 128)]
    assert kfuse.cache_stats()["compiles"] - before == 1
    (spec,) = exe.specializations()
    assert spec["runtime_sizes"] and spec["shapes"][1] == [1, 2, 128, 128]
    assert "L in 65..128" in spec["reason"]
    exact = kfuse.compile(cache_attention_graph("py_exact_keys"),
                          disk_cache=False)
    before = kfuse.cache_stats()["compiles"]
    for length in (65, 66):
        exact.output_shapes((1, 8, 1, 128), (1, 2, length, 128),
                            (1, 2, length, 128))
    assert kfuse.cache_stats()["compiles"] - before == 2


def test_dynamic_dims_must_name_symbols_of_the_inputs():
    g = cache_attention_graph("py_dynamic_bad")
    with pytest.raises(kfuse.InvalidArgumentError, match="'S'"):
        kfuse.compile(g, dynamic=["S"])
    with pytest.raises(kfuse.InvalidArgumentError, match="dynamic takes"):
        kfuse.compile(g, dynamic=["L,S"])


def test_an_unknown_op_from_mlir_is_refused_by_name():
    text = """
    func.func @f(%x: tensor<4xf32> {kf.name = "x"}) ->
        (tensor<4xf32> {kf.name = "y"}) {
      %0 = kf.frobnicate %x : tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with pytest.raises(kfuse.InvalidGraphError,
                       match=r"<input>:4:\d+: .*'kf.frobnicate' is unknown"):
        kfuse.Graph.from_mlir(text)
    g = kfuse.Graph.from_mlir(text.replace("kf.frobnicate", "kf.exp"))
    (y,) = kfuse.evaluate(g, np.zeros(4, np.float32))
    assert (y == 1).all()
