"""PyTorch code through kfuse: an fx graph converted into a kfuse graph.

    compiled = kfuse.torch.compile(model, (x,))   # torch.fx.symbolic_trace
    y = compiled(x)                               # CUDA tensors, zero-copy
    kfuse.torch.explain(model, x)                 # what converts, what not

With PyTorch 2, `torch.compile(model, backend="kfuse")` hands kfuse the
graphs Dynamo captures; a graph with an op kfuse cannot take runs in
PyTorch instead, and `kfuse.torch.explain` says which op and why.

Parameters and buffers become graph inputs, passed at each call without a
copy. Each new set of input shapes is converted and compiled once (kfuse's
own caches make a recompile of a known shape cheap).
"""

import copy
import math
import operator

import torch
from torch.fx.passes.shape_prop import ShapeProp

from . import dtypes, graph as kgraph, indexing as kindex
from . import partition as kpartition, torch_autograd as kautograd
from .executable import BoundRun as _BoundRun, compile as _compile, \
    evaluate as _evaluate
# What each torch call becomes; Unsupported is this module's error too.
from .torch_ops import Unsupported, _TORCH_DTYPES, _kfuse_dtype, \
    _FUNCTIONS, _METHODS, _MODULES


def _holds_tensors(value):
    """Whether a (nested) tuple or list holds a kfuse tensor."""
    return isinstance(value, (tuple, list)) and any(
        isinstance(v, kgraph.Tensor) or _holds_tensors(v) for v in value)


# What torch.ones, zeros and full fill with (full: its argument).
_FILLED = {torch.ones: 1, torch.zeros: 0, torch.full: None}
# In-place operators on tensors, and the operator each is out of place.
_IN_PLACE = {operator.iadd: operator.add, operator.isub: operator.sub,
             operator.imul: operator.mul, operator.itruediv: operator.truediv}


def _name(node):
    return node.name.replace(".", "_")


class _Opaque:
    """The result of a node PyTorch computes that kfuse cannot take (its
    shape unknown, or no elements): any kfuse op given it fails, so its
    users stay in PyTorch too. `why` says so for them."""

    def __init__(self, node, what="whose shape is unknown"):
        self.node = node
        name = node.name if node is not None else "a value"
        self.why = f"it reads {name}, {what}"



class Converter:
    """One fx graph, for one set of input shapes, as a kfuse graph whose
    inputs are the fx placeholders, then the parameters and buffers the
    graph reads (in `param_names` order)."""

    def __init__(self, gm, example_inputs):
        self.gm, self.example = gm, list(example_inputs)
        self.graph = kgraph.Graph(type(gm).__name__)
        self.env, self.param_names, self.params = {}, [], {}

    def convert(self):
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.example):
            raise Unsupported(f"{len(placeholders)} inputs in the graph, "
                              f"{len(self.example)} given")
        for node, value in zip(placeholders, self.example):
            self.env[node] = self._input(_name(node), value, node)
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                return self._outputs(node.args[0])
            try:
                self.env[node] = self._node(node)
            except Unsupported as e:
                raise Unsupported(f"{node.format_node()}: {e}") from None
            except kgraph._capi.errors.Error as e:
                raise Unsupported(f"{node.format_node()}: {e}") from None
        raise Unsupported("the graph has no output")

    tensor_type = kgraph.Tensor

    @staticmethod
    def name_of(node):
        return _name(node)

    def _input(self, name, value, node=None):
        """The graph input for `value`; a tensor without elements (which
        kfuse does not take) is opaque, so that its users stay in PyTorch."""
        if not isinstance(value, torch.Tensor):
            return value
        if 0 in value.shape:
            return _Opaque(node, "a tensor without elements")
        return self.graph.input(name, _kfuse_dtype(value.dtype, name),
                                tuple(value.shape))

    def stand_in(self, node, example):
        """A graph input standing for the result of a node kfuse leaves to
        PyTorch (`example`: its shape and dtype), so that the nodes after
        it can be judged; a value no op accepts when there is none (or a
        tensor without elements: Phi-3's empty pass-through half of its
        rotary dims)."""
        try:
            shape, dtype = example
            if 0 in shape:
                return _Opaque(node, "a tensor without elements")
            return self.graph.input("standin_" + _name(node),
                                    _kfuse_dtype(dtype, _name(node)), shape)
        except (TypeError, Unsupported):
            return _Opaque(node)

    def param_value(self, qualified):
        """The tensor of a parameter, a buffer or a constant fx folded (a
        plain tensor attribute such as `_tensor_constant0`)."""
        value = self.gm
        for atom in qualified.split("."):
            value = getattr(value, atom)
        return value

    def param(self, qualified):
        """The graph input of parameter or buffer `qualified`."""
        if qualified not in self.params:
            value = self.param_value(qualified)
            self.params[qualified] = self._input("p_" + qualified.replace(
                ".", "_"), value)
            self.param_names.append(qualified)
        return self.params[qualified]

    def _arg(self, a):
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self._arg(x) for x in a)
        return a

    def _node(self, node):
        example = kpartition.example_of(node)
        if example is not None and 0 in example[0]:
            # Refused before it is built: a build error would stay with the
            # graph (kfuse compiles no tensor without elements).
            raise Unsupported(f"a tensor with a zero-size dim, "
                              f"{list(example[0])}")
        args = [self._arg(a) for a in node.args]
        kwargs = {k: self._arg(v) for k, v in node.kwargs.items()}
        if node.op == "get_attr":
            return self.param(node.target)
        if node.op == "call_module":
            module = self.gm.get_submodule(node.target)
            convert = _MODULES.get(type(module))
            if convert is None:
                raise Unsupported(f"module {type(module).__name__}")

            def p(attr):
                if getattr(module, attr, None) is None:
                    return None
                return self.param(f"{node.target}.{attr}")
            return convert(module, p, *args, **kwargs)
        if node.op == "call_function":
            if node.target is torch.arange:
                return self._arange(*args, **kwargs)
            if node.target in _FILLED:
                return self._filled(node.target, *args, **kwargs)
            if node.target in _IN_PLACE:
                return self._in_place(node, *args, **kwargs)
            if node.target is operator.getitem and isinstance(
                    args[0], (tuple, list, torch.Size)):
                return args[0][args[1]]
            convert = _FUNCTIONS.get(node.target)
            if convert is None:
                raise Unsupported(f"function {getattr(node.target, '__name__', node.target)}")
            return convert(*args, **kwargs)
        if node.op == "call_method":
            convert = _METHODS.get(node.target)
            if convert is None:
                raise Unsupported(f"method Tensor.{node.target}")
            return convert(*args, **kwargs)
        raise Unsupported(f"fx op {node.op}")

    def _filled(self, target, *args, dtype=None, size=None, fill_value=None,
                **_):
        """torch.ones, zeros and full: a constant expanded to the size (its
        dtype torch's: the default float dtype for ones and zeros, else the
        fill's kind)."""
        if target is torch.full:
            given = dict(zip(("size", "fill_value"), args))
            size = given.get("size", size)
            fill = given.get("fill_value", fill_value)
        else:
            size, fill = (args if size is None else size), _FILLED[target]
        if size is None or not isinstance(fill, (bool, int, float)):
            raise Unsupported(f"torch.{target.__name__} without a size and "
                              "a number to fill with")
        if len(size) == 1 and isinstance(size[0], (list, tuple, torch.Size)):
            size = size[0]
        if dtype is not None:
            dt = _kfuse_dtype(dtype, target.__name__)
        elif isinstance(fill, bool):
            dt = dtypes.bool_
        elif isinstance(fill, int) and target is torch.full:
            dt = dtypes.int64
        else:
            dt = _kfuse_dtype(torch.get_default_dtype(), target.__name__)
        return self.graph.constant(fill, dt).expand(tuple(size))

    def _in_place(self, node, target, other):
        """`a += b` (and -=, *=, /=) on a fresh value nothing else reads:
        the out-of-place op, in a's dtype and shape as torch keeps them.
        Where anything else reads `a`, or `a` may share memory with another
        value (an input, a view, a method that may return its input), the
        update is left to PyTorch; so are the updates torch refuses (a float
        result into an integer tensor, a broadcast that grows `a`)."""
        first = node.args[0]
        if (not isinstance(first, torch.fx.Node) or len(first.users) != 1
                or not kpartition.is_fresh(first)):
            raise Unsupported("an in-place update of a value read elsewhere "
                              "or that may share memory with another")
        if not isinstance(target, self.tensor_type):
            raise Unsupported("an in-place update of a host value")
        result = _FUNCTIONS[_IN_PLACE[node.target]](target, other)
        if tuple(result.shape) != tuple(target.shape):
            raise Unsupported(f"an in-place update that would grow "
                              f"{list(target.shape)} to {list(result.shape)}")
        if result.dtype != target.dtype:
            if not target.dtype.is_floating_point:
                raise Unsupported(f"an in-place update of a {target.dtype} "
                                  f"tensor by a {result.dtype} result")
            result = result.to(target.dtype)
        return result

    def _arange(self, *bounds, start=None, end=None, step=None,
                dtype=None, **_):
        """torch.arange as an iota: int64 unless a bound is floating (then
        float32), or `dtype`. Under Dynamo's symbolic sizes a bound is a
        SymInt, which is integral too. Bounds come as torch takes them:
        arange(end), arange(start, end[, step]), or by keyword."""
        given = dict(zip(("start", "end", "step"), bounds)) \
            if len(bounds) != 1 or end is not None else {"end": bounds[0]}
        for name, value in (("start", start), ("end", end), ("step", step)):
            if value is not None:
                if name in given:
                    raise Unsupported(f"arange with {name} given twice")
                given[name] = value
        if "end" not in given:
            raise Unsupported("arange without an end")
        start, end, step = given.get("start", 0), given["end"], \
            given.get("step", 1)
        floating = (float, getattr(torch, "SymFloat", float))
        integral = not any(isinstance(b, floating) for b in (start, end, step))
        dt = _kfuse_dtype(dtype, "arange") if dtype is not None else (
            dtypes.int64 if integral else dtypes.float32)
        if not integral and not dt.is_floating_point:
            raise Unsupported("arange of an integer dtype with floating "
                              "bounds (torch rounds them its own way)")
        if step == 0:
            raise Unsupported("arange with step 0")
        count = max(0, math.ceil((end - start) / step))
        values = self.graph.iota((count,), 0, dt)
        if step != 1:
            values = values * step
        return values + start if start else values

    def _outputs(self, result):
        """The fx outputs as graph outputs; returns how to give them back:
        (one value rather than a tuple, the layout: None for the next graph
        output, a _Group for a tuple of them (a split's parts), else a host
        value (a size) known once the shapes are)."""
        single = not isinstance(result, (tuple, list))
        values = [result] if single else list(result)
        layout = _Group.of(type(result) if not single else tuple, (
            self._layout(self._arg(v), i) for i, v in enumerate(values)))
        if not self.graph.outputs:
            raise Unsupported("the graph computes no tensor")
        return single, layout

    def _layout(self, value, i):
        if isinstance(value, kgraph.Tensor):
            self.graph.output(f"out{len(self.graph.outputs)}", value)
            return None
        if _holds_tensors(value):
            return _Group.of(type(value), (self._layout(v, i) for v in value))
        if isinstance(value, (int, float, bool, tuple, torch.Size)):
            return value
        raise Unsupported(f"output {i} is not a tensor")


class _Group(tuple):
    """A tuple or list of outputs among the outputs (torch.split's parts),
    by their layout."""

    @staticmethod
    def of(kind, layout):
        group = _Group(layout)
        group.kind = list if issubclass(kind, list) else tuple
        return group


def _rebuild(layout, results):
    """The outputs as the fx graph gave them: `results` (an iterator over
    the graph's outputs) put where `layout` has None."""
    values = (next(results) if v is None else
              _rebuild(v, results) if isinstance(v, _Group) else v
              for v in layout)
    return layout.kind(values) if isinstance(layout, _Group) else \
        tuple(values)


class _Reference:
    """A kfuse graph run by the float64 reference evaluator on CPU tensors,
    results in the graph's dtypes: kfuse.torch's parts checked in a test
    with no GPU."""

    def __init__(self, graph):
        self.graph = graph

    def __call__(self, *tensors):
        arrays = [t.detach().float().numpy() if t.dtype == torch.bfloat16
                  else t.detach().numpy() for t in tensors]
        results = [torch.from_numpy(a).to(_TORCH_DTYPES[d.name]) for a, (
            _, d, _) in zip(_evaluate(self.graph, *arrays), self.graph.outputs)]
        return results[0] if len(results) == 1 else tuple(results)


class _Entry:
    """One set of input shapes: the graph, how it runs, the parameters it
    reads, how its outputs are given back, and its backwards by the inputs
    they differentiate."""

    def __init__(self, graph, run, params, single, layout):
        self.graph, self.run, self.params = graph, run, params
        self.single, self.layout, self.backwards = single, layout, {}


class CompiledModule:
    """A traced module or fx graph, run by kfuse: converted and compiled
    once per set of input shapes and dtypes (with reference=True, run by
    the float64 evaluator on CPU tensors instead). Where an input or a
    parameter requires grad (and grad mode is on), the call is recorded for
    autograd and the backward runs through kfuse too (torch_autograd.py)."""

    def __init__(self, gm, compile_options, reference=False, static=False):
        self.gm, self.options, self._by_signature = gm, compile_options, {}
        self.reference = reference
        # Set for graphs Dynamo compiled with static shapes: its guards
        # hold every call to the first one's shapes, dtypes, strides,
        # devices and grad mode, so calls after it run bound (_Bound).
        self.static, self._bound = static, None

    def _runner(self, graph):
        return _Reference(graph) if self.reference else _compile(
            graph, **self.options)

    def _build(self, args):
        converter = Converter(self.gm, args)
        single, layout = converter.convert()
        params = [converter.param_value(n) for n in converter.param_names]
        return _Entry(converter.graph, self._runner(converter.graph), params,
                      single, layout)

    def __call__(self, *args):
        if self._bound is not None:
            return self._bound(args)
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor)
                    else a for a in args)
        entry = self._by_signature.get(key)
        if entry is None:
            entry = self._by_signature[key] = self._build(args)
        inputs = [a for a in args if isinstance(a, torch.Tensor)]
        if kautograd.wants_gradients(inputs + entry.params):
            result = kautograd.run(entry.backwards, entry.graph,
                                   self._runner, inputs + entry.params)
        else:  # the inference path, kept short: parameters detached only
            result = entry.run(*inputs, *[p.detach() for p in entry.params])
            if self.static and not self.reference and all(
                    t.is_cuda for t in inputs + entry.params):
                self._bound = _Bound(entry, args, result)
        values = _rebuild(entry.layout, iter(
            result if isinstance(result, tuple) else (result,)))
        return values[0] if entry.single else values


class _Bound:
    """The calls of a CompiledModule after its first, where Dynamo's
    guards hold them to the first's shapes, dtypes, strides and devices:
    outputs allocated as the first's, the run bound (executable.BoundRun)."""

    def __init__(self, entry, args, result):
        self.entry = entry
        self.positions = [i for i, a in enumerate(args)
                          if isinstance(a, torch.Tensor)]
        outputs = list(result) if isinstance(result, tuple) else [result]
        self.outputs = [(o.shape, o.dtype, o.device) for o in outputs]
        self.run = _BoundRun(entry.run, self._tensors(args), outputs)

    def _tensors(self, args):
        return [args[i] for i in self.positions] + self.entry.params

    def __call__(self, args):
        out = [torch.empty(shape, dtype=dtype, device=device)
               for shape, dtype, device in self.outputs]
        values = _rebuild(self.entry.layout,
                          iter(self.run(self._tensors(args), out)))
        return values[0] if self.entry.single else values


class _Part(torch.nn.Module):
    """A part of a partitioned graph, as the submodule its call names."""

    def __init__(self, gm, compile_options, reference, static=False):
        super().__init__()
        self.modes = _take_grad_modes(gm)
        self.compiled = CompiledModule(gm, compile_options, reference, static)

    def forward(self, *args):
        for enabled in self.modes:
            torch._C._set_grad_enabled(enabled)
        return self.compiled(*args)


def _take_grad_modes(gm):
    """The grad-mode switches split_module repeats at the start of a part
    after one (PyTorch 2), taken out of the part's graph to be made before
    it runs, as they would have been. An autocast switch there (of a region
    with autocast off: kfuse takes no node where it is on) only says that
    dtypes are as written, which kfuse's are."""
    modes = []
    for node in list(gm.graph.nodes):
        if not kpartition.is_global_state(node):
            continue
        if node.target is torch._C._set_grad_enabled:
            modes.append(bool(node.args[0]))
        elif kpartition.autocast_enabled(node):
            raise Unsupported(f"{node.format_node()}: autocast on in a part "
                              "kfuse runs")
    # Last first: an autocast exit reads its enter.
    for node in reversed(list(gm.graph.nodes)):
        if kpartition.is_global_state(node):
            gm.graph.erase_node(node)
    gm.recompile()
    return modes


def _seeded_dropout(x, seed, p):
    """Training-mode dropout with the seed kfuse's Philox draws its mask
    from. Where PyTorch runs it (a part left to it), torch's own dropout:
    the seed is unused, each runs forward and backward with its own mask."""
    return torch.nn.functional.dropout(x, p, True)


def _dropout_seed(device):
    """A fresh seed for one call's dropout mask, from torch's generator
    (torch.manual_seed makes a run repeatable)."""
    return torch.randint(-2**31, 2**31 - 1, (), dtype=torch.int32,
                         device=device)


_FUNCTIONS[_seeded_dropout] = lambda x, seed, p: kindex.dropout(x, seed, p)


def _training_dropout(gm, node):
    """The p of a training-mode dropout node (F.dropout, or a training
    nn.Dropout), or None."""
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        # In place, its input changes too: left to PyTorch.
        if isinstance(module, torch.nn.Dropout) and module.training and \
                not module.inplace:
            return module.p or None
        return None
    if node.op != "call_function" or node.target is not \
            torch.nn.functional.dropout:
        return None
    given = dict(zip(("input", "p", "training", "inplace"), node.args),
                 **node.kwargs)
    if not given.get("training", True) or given.get("inplace"):
        return None
    return given.get("p", 0.5) or None


def _seed_dropouts(gm, example_inputs):
    """Each training-mode dropout of `gm` drawn from a seed of its own, made
    by a PyTorch node with no inputs (a source: it splits no part), so that
    kfuse can fuse the dropout (Philox from the seed, the same mask in the
    backward) where it would have left it to PyTorch. Masks differ from
    eager PyTorch's, as inductor's do. The seeds are made first, before any
    part runs (split_module keeps the graph's order where it must)."""
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    default = tensors[0].device if tensors else "cpu"
    last = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            last = node
    for node in list(gm.graph.nodes):
        p = _training_dropout(gm, node)
        if p is None:
            continue
        x = node.args[0] if node.args else node.kwargs["input"]
        example = x.meta.get("example_value", x.meta.get("val"))
        device = getattr(example, "device", None) or default
        inserting = (gm.graph.inserting_after(last) if last is not None
                     else gm.graph.inserting_before(next(iter(gm.graph.nodes))))
        with inserting:
            seed = last = gm.graph.call_function(_dropout_seed, (str(device),))
        with gm.graph.inserting_before(node):
            dropped = gm.graph.call_function(_seeded_dropout, (x, seed, p))
        seed.meta["kfuse_seed"] = True
        seed.meta["example_value"] = torch.zeros((), dtype=torch.int32)
        dropped.meta = dict(node.meta)
        node.replace_all_uses_with(dropped)
        gm.graph.erase_node(node)
    gm.recompile()


def _trace(module):
    if isinstance(module, torch.fx.GraphModule):
        return module
    return torch.fx.symbolic_trace(module)


def _partitioned(gm, example_inputs, compile_options, reference=False,
                 static=False):
    """`gm` with each part kfuse converts run by kfuse and the rest by
    PyTorch: (the GraphModule, the number of parts, why each node left to
    PyTorch was left). `static`: Dynamo guards every call's shapes to the
    first's (CompiledModule)."""
    _seed_dropouts(gm, example_inputs)
    if not any("example_value" in n.meta or "val" in n.meta
               for n in gm.graph.nodes
               if not n.meta.get("kfuse_seed")):  # traced, not by Dynamo
        # On copies: a graph may update its inputs in place.
        ShapeProp(gm).propagate(*(t.clone() if isinstance(t, torch.Tensor)
                                  else t for t in example_inputs))
    fused, parts, why = kpartition.partition(gm, Converter(gm, example_inputs))
    for name in parts:
        setattr(fused, name, _Part(getattr(fused, name), compile_options,
                                   reference, static))
    return fused, len(parts), why


def compile(module, example_inputs=None, fallback=False, reference=False,
            **compile_options):
    """`module` (an nn.Module or fx.GraphModule, in eval mode: dropout is
    the identity) traced with torch.fx.symbolic_trace and run by kfuse.
    With example inputs the conversion is checked now, raising Unsupported
    naming the first op kfuse cannot take; with fallback=True (example
    inputs needed) such ops run in PyTorch and the parts between them in
    kfuse. reference=True runs kfuse's parts with the float64 reference
    evaluator on CPU tensors (a test without a GPU)."""
    gm = _trace(module)
    if fallback:
        if example_inputs is None:
            raise ValueError("kfuse.torch.compile(fallback=True) needs "
                             "example inputs to judge the graph's ops")
        return _partitioned(gm, example_inputs, compile_options,
                            reference)[0]
    compiled = CompiledModule(gm, compile_options, reference)
    if example_inputs is not None:
        Converter(compiled.gm, example_inputs).convert()
    return compiled


def explain(module, *example_inputs):
    """What kfuse makes of `module` for these inputs: a dict with
    'supported' (bool: kfuse takes the whole graph), 'reason' (the first op
    kfuse cannot take, or None), 'fallbacks' (every node PyTorch would run,
    with the reason), 'parts' (how many parts kfuse would run with the
    rest in PyTorch) and 'fusion' (kf-fuse's decisions, when supported)."""
    gm = _trace(module)
    converter = Converter(gm, example_inputs)
    try:
        converter.convert()
    except Unsupported as e:
        _, parts, why = _partitioned(torch.fx.GraphModule(
            gm, copy.deepcopy(gm.graph)), example_inputs, {})
        return {"supported": False, "reason": str(e), "fallbacks": why,
                "parts": parts, "fusion": None}
    return {"supported": True, "reason": None, "fallbacks": [], "parts": 1,
            "fusion": converter.graph.explain_fusion()}


# What torch.compile(backend="kfuse") did with the graphs Dynamo gave it:
# how many graphs it was given (how many of them with symbolic sizes), how
# many parts kfuse runs, and each node left to PyTorch with the reason.
backend_report = {"graphs": 0, "symbolic": 0, "compiled": 0,
                  "fallbacks": []}


def _static_shapes(example_inputs):
    """Whether Dynamo compiled for these sizes alone (none symbolic)."""
    symbolic = getattr(torch, "SymInt", ())
    return not any(
        isinstance(s, symbolic) for x in example_inputs
        for s in (x.shape if isinstance(x, torch.Tensor) else (x,)))


def _dynamo_backend(gm, example_inputs):
    """torch.compile's backend: the parts of the graph kfuse converts run
    by kfuse, the rest by PyTorch (recorded in backend_report with the
    reason)."""
    static = _static_shapes(example_inputs)
    fused, parts, why = _partitioned(gm, example_inputs, {}, static=static)
    backend_report["graphs"] += 1
    backend_report["symbolic"] += not static
    backend_report["compiled"] += parts
    backend_report["fallbacks"] += why
    return fused.forward


def register_backend():
    """Registers `backend="kfuse"` with torch.compile (PyTorch 2)."""
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is None or not hasattr(dynamo, "register_backend"):
        return False
    if "kfuse" not in dynamo.list_backends(exclude_tags=()):
        dynamo.register_backend(name="kfuse")(_dynamo_backend)
    return True


register_backend()
