"""kfuse.torch's fx converter where a graph is not all kfuse's: filled
tensors and in-place updates, parts left to PyTorch and the order they run
in, grad-mode and autocast walls, training dropout. Each kfuse graph is run
by the float64 reference evaluator against the module in PyTorch on the
CPU, without a GPU. Skips, saying so, without torch."""

import inspect
import operator

import numpy as np
import pytest

import kfuse

torch = pytest.importorskip("torch", reason="no torch here")
nn = torch.nn
F = torch.nn.functional
import kfuse.torch as ktorch  # noqa: E402
from helpers import evaluate_converted, relative_error  # noqa: E402


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
