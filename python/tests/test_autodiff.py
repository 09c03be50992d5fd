"""kfuse.grad and kfuse.vjp: the joint graph's gradients, by the float64
reference evaluator, against gradients written out in NumPy and against
PyTorch's autograd on the CPU (skipped, saying so, without torch)."""

import numpy as np
import pytest

import kfuse

rng = np.random.default_rng()


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def rel(actual, expected):
    assert not np.isnan(actual).any()
    return np.abs(actual - expected).max() / np.abs(expected).max()


def test_grad_of_a_loss_matches_numpy():
    g = kfuse.Graph("mlp")
    x = g.input("x", kfuse.float32, ("B", 8))
    w = g.input("w", kfuse.float32, (8, 5))
    c = g.input("c", kfuse.float32, (5,))
    g.output("loss", ((x @ w).tanh() * c).sum())
    joint = kfuse.grad(g, "loss", wrt=["w", "c"])
    assert [n for n, *_ in joint.outputs] == ["loss", "grad_w", "grad_c"]
    xv, wv, cv = randn(6, 8), randn(8, 5), randn(5)
    loss, dw, dc = kfuse.evaluate(joint, xv, wv, cv)
    h = np.tanh(xv.astype(np.float64) @ wv)
    assert rel(loss, (h * cv).sum()) < 1e-6
    assert rel(dw, xv.T.astype(np.float64) @ ((1 - h * h) * cv)) < 1e-6
    assert rel(dc, h.sum(0)) < 1e-6


def test_vjp_takes_a_cotangent_per_output():
    g = kfuse.Graph("two")
    x = g.input("x", kfuse.float32, (4, 3))
    g.output("y", x.exp())
    g.output("z", x * x)
    joint = kfuse.vjp(g, wrt="x")
    assert [n for n, *_ in joint.inputs] == ["x", "grad_y", "grad_z"]
    xv, gy, gz = randn(4, 3), randn(4, 3), randn(4, 3)
    *_, dx = kfuse.evaluate(joint, xv, gy, gz)
    expected = gy * np.exp(xv.astype(np.float64)) + gz * 2 * xv
    assert rel(dx, expected) < 1e-6


@pytest.mark.parametrize("call, message", [
    (lambda g: kfuse.grad(g, "y"), "grad: the loss 'y' is 4x3; grad() takes"
                                   " a rank-0 output"),
    (lambda g: kfuse.vjp(g, outputs=["nope"]),
     "vjp: the graph has no output named 'nope'"),
    (lambda g: kfuse.vjp(g, wrt=["i"]),
     "vjp: input 'i' is i32; only floats have gradients"),
])
def test_bad_requests_raise_naming_the_problem(call, message):
    g = kfuse.Graph("bad")
    x = g.input("x", kfuse.float32, (4, 3))
    g.input("i", kfuse.int32, (2,))
    g.output("y", x * 2.0)
    with pytest.raises(kfuse.InvalidArgumentError) as info:
        call(g)
    assert message in str(info.value)


def test_transformer_pieces_match_torch_autograd():
    torch = pytest.importorskip("torch", reason="no torch here")
    F = torch.nn.functional
    B, S, H, D, V = 2, 5, 2, 4, 11
    g = kfuse.Graph("pieces")
    x = g.input("x", kfuse.float32, (B, S, H * D))
    w = g.input("w", kfuse.float32, (H * D, 3 * H * D))
    labels = g.input("labels", kfuse.int64, (B * S, 1))
    proj = g.input("proj", kfuse.float32, (H * D, V))
    mean = x.mean(-1, keepdim=True)
    xn = (x - mean) * ((x - mean) * (x - mean)).mean(-1, keepdim=True) \
        .__add__(1e-5).rsqrt()
    qkv = (xn @ w).reshape((B, S, 3, H, D)).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    o = kfuse.scaled_dot_product_attention(q, k, v, is_causal=True)
    logits = o.permute(0, 2, 1, 3).reshape((B * S, H * D)) @ proj
    logz = logits.exp().sum(-1, keepdim=True).log()
    g.output("loss", (logz - kfuse.take_along_dim(logits, labels, 1)).mean())
    joint = kfuse.grad(g, "loss", wrt=["x", "w", "proj"])

    xv, wv, pv = randn(B, S, H * D), randn(H * D, 3 * H * D) * 0.3, \
        randn(H * D, V) * 0.3
    lv = rng.integers(0, V, (B * S, 1))
    loss, dx, dw, dp = kfuse.evaluate(joint, xv, wv, lv, pv)

    tx, tw, tp = (torch.tensor(a, dtype=torch.float64, requires_grad=True)
                  for a in (xv, wv, pv))
    tn = F.layer_norm(tx, (H * D,), eps=1e-5)
    tq, tk, tv = (tn @ tw).reshape(B, S, 3, H, D).permute(2, 0, 3, 1, 4)
    # Written out: torch 1.13 (CI's) has no scaled_dot_product_attention.
    scores = tq @ tk.transpose(-1, -2) / D ** 0.5
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    to = scores.masked_fill(~causal, float("-inf")).softmax(-1) @ tv
    tlogits = to.permute(0, 2, 1, 3).reshape(B * S, H * D) @ tp
    tloss = F.cross_entropy(tlogits, torch.tensor(lv[:, 0]))
    tloss.backward()
    assert rel(loss, tloss.detach().numpy()) < 1e-5
    for ours, theirs in ((dx, tx), (dw, tw), (dp, tp)):
        assert rel(ours, theirs.grad.numpy()) < 1e-5


def test_logsumexp_and_detach_match_torch_autograd():
    torch = pytest.importorskip("torch", reason="no torch here")
    g = kfuse.Graph("lse")
    x = g.input("x", kfuse.float32, (5, 7))
    y = g.input("y", kfuse.float32, (5, 7))
    g.output("loss", (kfuse.logsumexp(x * 2.0, 1) * 3.0).sum()
             + (x * y.detach() * y).sum())
    joint = kfuse.grad(g, "loss", wrt=["x", "y"])
    # No max in the backward: no element compared with it (only each
    # row's max, for rows whose max is infinite).
    assert not [line for line in joint.to_mlir().splitlines()
                if "kf.compare" in line and "5x7" in line]
    xv, yv = randn(5, 7), randn(5, 7)
    loss, dx, dy = kfuse.evaluate(joint, xv, yv)
    tx, ty = (torch.tensor(a, dtype=torch.float64, requires_grad=True)
              for a in (xv, yv))
    tloss = (torch.logsumexp(tx * 2.0, 1) * 3.0).sum() + (
        tx * ty.detach() * ty).sum()
    tloss.backward()
    assert rel(loss, tloss.detach().numpy()) < 1e-6
    assert rel(dx, tx.grad.numpy()) < 1e-6
    assert rel(dy, ty.grad.numpy()) < 1e-6  # x * y: one y passes nothing


def test_split_vjp_saves_the_matmul_and_matches_the_joint_graph():
    g = kfuse.Graph("mlp")
    x = g.input("x", kfuse.float32, ("B", 8))
    w = g.input("w", kfuse.float32, (8, 5))
    g.output("y", kfuse.gelu(x @ w) * 2.0)
    forward, backward, plan = kfuse.split_vjp(g, wrt=["x", "w"])
    assert any("kf.matmul" in d and "saved" in d for d in plan["decisions"])
    assert [n for n, *_ in backward.outputs] == ["grad_x", "grad_w"]
    xv, wv, ct = randn(6, 8), randn(8, 5), randn(6, 5)
    results = kfuse.evaluate(forward, xv, wv)
    pick = {"input": [xv, wv], "output": results[:1], "saved": results[1:],
            "cotangent": [ct]}
    grads = kfuse.evaluate(backward, *[pick[s][i]
                                       for s, i in plan["backward_inputs"]])
    want = kfuse.evaluate(kfuse.vjp(g, wrt=["x", "w"]), xv, wv, ct)
    assert rel(results[0], want[0]) < 1e-6
    for got, expected in zip(grads, want[1:]):
        assert rel(got, expected) < 1e-6
