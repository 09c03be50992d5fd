"""Splitting an fx graph into the parts kfuse runs and the rest PyTorch runs.

torch.compile hands a backend whole graphs; one op kfuse has no conversion
for (a sort, an in-place update, a dtype kfuse lacks) must not send the
whole graph back to eager. The converter judges every node (an unconverted
node's result stands in as a graph input, so the nodes after it are still
judged); the converted nodes are grouped by how many crossings between
kfuse and PyTorch any path from the inputs makes to reach them, which
gives maximal parts with no cycle through PyTorch's nodes in one linear
walk (torch.fx's CapabilityBasedPartitioner took minutes on GPT-2's 680
nodes); torch.fx's split_module cuts the graph there; each part kfuse takes
becomes a submodule it compiles, and what stayed in PyTorch is reported
with the reason.
"""

import operator

import torch
from torch.fx.passes.split_module import split_module

# Ops that only re-view their input: a part made of these alone is left to
# PyTorch, where they cost nothing (kfuse would copy).
_VIEW_METHODS = {"view", "reshape", "permute", "transpose", "contiguous",
                 "unsqueeze", "squeeze", "size", "dim", "split", "chunk",
                 "expand", "flatten"}
_VIEW_FUNCTIONS = {torch.reshape, torch.transpose, torch.permute,
                   torch.unsqueeze, torch.squeeze, torch.split, torch.chunk,
                   torch.flatten, operator.getitem}


def is_view(node):
    if node.op == "call_method":
        return node.target in _VIEW_METHODS
    return node.op == "call_function" and node.target in _VIEW_FUNCTIONS


# What makes a new tensor of its own: the only values an in-place update
# may be made out of place on (an update of anything else may show through
# another name: a view, a no-op cast or dropout, an input).
_FRESH_FUNCTIONS = {operator.add, operator.sub, operator.mul,
                    operator.truediv, operator.floordiv, operator.pow,
                    operator.neg, operator.matmul, torch.add, torch.sub,
                    torch.mul, torch.div, torch.matmul, torch.bmm, torch.exp,
                    torch.log, torch.tanh, torch.sigmoid, torch.sqrt,
                    torch.rsqrt, torch.cat, torch.ones, torch.zeros,
                    torch.full, torch.ones_like, torch.zeros_like,
                    torch.full_like, torch.clone, torch.nn.functional.linear}
_FRESH_METHODS = {"add", "sub", "mul", "div", "matmul", "pow", "exp", "log",
                  "tanh", "sigmoid", "sqrt", "rsqrt", "neg", "clone"}


# What may return its input itself, or a view of it, rather than a new
# tensor (`x.to(x.dtype)`, a contiguous `x.contiguous()`, dropout in eval).
_ALIASING_METHODS = {"to", "float", "half", "bfloat16", "long", "int", "bool",
                     "type_as", "detach", "expand_as", "view_as", "contiguous",
                     "narrow", "t", "select", "unflatten", "diagonal"}
_ALIASING_FUNCTIONS = {torch.detach, torch.narrow, torch.t, torch.select,
                       torch.diagonal, torch.nn.functional.dropout}


def may_alias(node):
    """Whether `node`'s result may share memory with one of its inputs."""
    return (is_view(node) or mutates(node)
            or node.op == "call_method" and node.target in _ALIASING_METHODS
            or node.op == "call_function"
            and node.target in _ALIASING_FUNCTIONS
            or node.op == "call_module")


def is_fresh(node):
    """Whether `node` makes a tensor that shares memory with no other."""
    return (node.op == "call_function" and node.target in _FRESH_FUNCTIONS
            or node.op == "call_method" and node.target in _FRESH_METHODS)


def _global_state_targets():
    """What Dynamo leaves in a graph to switch grad mode or autocast."""
    targets = {torch._C._set_grad_enabled}
    amp = getattr(torch, "amp", None)
    for name in ("_enter_autocast", "_exit_autocast"):
        if hasattr(amp, name):
            targets.add(getattr(amp, name))
    return targets


def is_global_state(node):
    return node.op == "call_function" and node.target in _GLOBAL_STATE


_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul,
                       operator.itruediv, operator.ifloordiv, operator.imod,
                       operator.ipow, operator.iand, operator.ior,
                       operator.ixor, operator.ilshift, operator.irshift,
                       operator.imatmul, operator.setitem}


def mutates(node, gm=None):
    """Whether `node` may change a tensor in place: an augmented operator,
    a method such as add_, an op or module told inplace=True."""
    if node.kwargs.get("inplace") is True:
        return True
    if node.op == "call_function":
        return node.target in _IN_PLACE_OPERATORS
    if node.op == "call_method":
        return node.target.endswith("_") and not node.target.startswith("_")
    if node.op == "call_module" and gm is not None:
        return getattr(gm.get_submodule(node.target), "inplace", False) is True
    return False


def is_wall(node, converted, gm=None):
    """A node no kfuse part may span: a grad-mode or autocast switch, or an
    in-place update left to PyTorch."""
    return is_global_state(node) or (node not in converted
                                     and mutates(node, gm))


def autocast_enabled(node):
    """Whether `node` enters an autocast region that casts (Dynamo's
    _enter_autocast(device, dtype, enabled, cache))."""
    if not is_global_state(node) or node.target is torch._C._set_grad_enabled:
        return False
    if not node.target.__name__.startswith("_enter"):
        return False
    given = dict(zip(("device_type", "dtype", "enabled", "cache_enabled"),
                     node.args), **node.kwargs)
    return bool(given.get("enabled", True))


def _autocast_regions(gm):
    """The nodes inside an autocast region that is on: PyTorch's ops cast
    their operands there as it decides, which a kfuse graph does not."""
    inside, depth = set(), []
    for node in gm.graph.nodes:
        if is_global_state(node) and node.target is not \
                torch._C._set_grad_enabled:
            if node.target.__name__.startswith("_enter"):
                depth.append(autocast_enabled(node))
            elif depth:
                depth.pop()
            continue
        if depth and depth[-1]:
            inside.add(node)
    return inside


_GLOBAL_STATE = _global_state_targets()


def example_of(node):
    """The (shape, torch dtype) of a node's tensor result as Dynamo or
    shape propagation recorded it, or None."""
    value = node.meta.get("example_value", node.meta.get("val"))
    if value is None:  # torch.fx.passes.shape_prop's record
        value = node.meta.get("tensor_meta")
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        return None
    try:
        return tuple(int(s) for s in value.shape), value.dtype
    except (TypeError, RuntimeError):  # a size kept symbolic
        return None


def judge(converter):
    """({node converted}, {converted node whose value is a tensor},
    {node: why not}) for the converter's fx graph."""
    gm = converter.gm
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, converter.example):
        converter.env[node] = converter._input(converter.name_of(node), value,
                                               node)
    converted, tensors, reasons = set(), set(), {}
    autocast = _autocast_regions(gm)
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node in autocast:
            reasons[node] = f"{node.format_node()}: runs under autocast"
            converter.env[node] = converter.stand_in(node, example_of(node))
            continue
        try:
            value = converter._node(node)
        except Exception as e:  # any failure leaves the node to PyTorch
            opaque = [getattr(converter.env.get(n), "why", None)
                      for n in node.all_input_nodes]
            why = next((w for w in opaque if isinstance(w, str)), str(e))
            reasons[node] = f"{node.format_node()}: {why}"
            converter.env[node] = converter.stand_in(node, example_of(node))
            continue
        converter.env[node] = value
        converted.add(node)  # a size, too: known once the shapes are
        if isinstance(value, converter.tensor_type):
            tensors.add(node)
    return converted, tensors, reasons


def _levels(gm, converted):
    """Each node's level: the most crossings between kfuse's nodes and
    PyTorch's (or host values) on a path from the inputs. A path that leaves
    kfuse's nodes of one level and comes back lands on a higher level, so
    grouping kfuse's nodes by level makes parts with no cycle between them
    and PyTorch; placeholders and parameters cross nothing.

    A grad-mode or autocast switch (Llama's rotary tables are computed
    under no_grad) is a wall: it and every node after it lie above every
    node before it, so that no part runs on both sides of it (each part
    runs in one mode: split_module repeats the switch at the start of the
    parts after it, and wants the switches' parts in increasing order).
    So is an in-place update left to PyTorch: what reads the memory it
    changes must run after it, and what comes before, before."""
    level, wall, highest = {}, 0, 0
    for node in gm.graph.nodes:
        if is_wall(node, converted, gm):
            wall = highest + 1
            level[node] = highest = wall
            continue
        inside = node in converted
        here = 0 if node.op in ("placeholder", "get_attr") else wall
        for p in node.all_input_nodes:
            # A PyTorch node with no inputs (a dropout's seed) can run
            # first: reading it crosses nothing.
            free = p.op in ("placeholder", "get_attr") or (
                p not in converted and not p.all_input_nodes)
            crossing = not free and (p in converted) != inside
            here = max(here, level[p] + crossing)
        level[node] = here
        highest = max(highest, here)
    return level


def partition(gm, converter):
    """`gm` split into submodules in order: PyTorch's nodes in
    submod_<2l>, kfuse's of level l in submod_<2l+1> (parts made of views
    alone stay with PyTorch); returns (the new GraphModule, the names of
    kfuse's submodules, [why for each node left to PyTorch that computes
    something]). Sizes go with the part that computes them: kfuse knows
    them once it knows the shapes."""
    where, parts, why = assign(gm, converter)
    # Where the numbers never decrease in graph order (as walls make them),
    # the parts run in that order, or the parts after a grad-mode switch
    # may run before the ones it follows; elsewhere in split_module's
    # topological order (a part can start before a lower one it reads).
    numbers = [where[n] for n in gm.graph.nodes if n in where]
    in_order = numbers == sorted(numbers)
    return (split_module(gm, gm, where.__getitem__,
                         keep_original_order=in_order), parts, why)


def _increasing(where):
    """Part numbers that never decrease in graph order, as split_module
    wants of every node once a graph has grad-mode or autocast switches: a
    node below the highest number so far moves up to the first number of
    its kind (even: PyTorch's, odd: kfuse's). Defs come before their uses,
    so no edge runs downwards and no cycle appears; a moved kfuse node may
    start a part of its own."""
    highest = 0
    for node, number in where.items():  # in graph order
        if number < highest:
            number = highest + (number - highest) % 2
        where[node] = highest = number


def _views_alone_to_pytorch(where, tensors):
    """A kfuse part that _increasing left without a tensor op that is not
    a view (a moved view, a size) runs in PyTorch: one number up, an even
    one, which keeps the numbers increasing. Any converted node may: it is
    a torch call all the same."""
    computes = {number for node, number in where.items()
                if number % 2 and node in tensors and not is_view(node)}
    for node, number in where.items():
        if number % 2 and number not in computes:
            where[node] = number + 1


def _update_through_pytorch(gm, converted, tensors, reasons):
    """An in-place update left to PyTorch writes through its target to the
    tensor the target views: the views between (and any op that may return
    its input or a view of it) run in PyTorch too, on the tensor kfuse gave
    it, not on a copy kfuse made."""
    for node in gm.graph.nodes:
        if node in converted or not mutates(node, gm) or not node.args:
            continue
        target = node.args[0]
        while (isinstance(target, torch.fx.Node) and target in converted
               and may_alias(target)):
            converted.discard(target)
            tensors.discard(target)
            reasons[target] = (f"{target.format_node()}: an in-place update "
                               "left to PyTorch writes through it")
            target = target.args[0] if target.args else None


def assign(gm, converter):
    """partition's decisions before the split: ({node: its part's number},
    the names of kfuse's submodules, [why for each node left to PyTorch
    that computes something])."""
    converted, tensors, reasons = judge(converter)
    _update_through_pytorch(gm, converted, tensors, reasons)
    level = _levels(gm, converted)
    by_level = {}
    for node in converted:
        by_level.setdefault(level[node], []).append(node)
    kept = {n for nodes in by_level.values()
            if any(n in tensors and not is_view(n) for n in nodes)
            for n in nodes}
    where = {n: 2 * level[n] + (n in kept) for n in gm.graph.nodes
             if n.op not in ("placeholder", "get_attr", "output")}
    if any(is_wall(n, converted, gm) for n in where):
        _increasing(where)
        _views_alone_to_pytorch(where, tensors)
    parts = sorted({f"submod_{where[n]}" for n in where if where[n] % 2})
    why = [r for n, r in reasons.items() if not is_view(n)
           and not is_global_state(n) and not n.meta.get("kfuse_seed")]
    return where, parts, why
