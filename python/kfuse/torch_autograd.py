"""Training through kfuse: a converted graph as a torch.autograd.Function.

The forward runs the graph's executable. The backward runs the graph's
vector-Jacobian product (kfuse.vjp: one joint graph that computes the
forward again and then the cotangents, fused like any graph), so the
forward saves only its inputs: activation checkpointing of the whole
graph, memory-light but paying the forward twice. Choosing what to save
instead of recomputing (the min-cut of torch's AOTAutograd) is issue 29's
next step.
"""

import torch

from .autodiff import vjp

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


class Backward:
    """The backward of one graph for one set of inputs differentiated:
    the vjp graph compiled (or evaluated) once, run on the forward's inputs
    and the output cotangents."""

    def __init__(self, graph, wrt, make_runner):
        outputs = [name for name, dtype, _ in graph.outputs
                   if dtype.is_floating_point]
        self.joint = vjp(graph, outputs=outputs, wrt=[
            graph.inputs[i][0] for i in wrt])
        self.differentiated = [i for i, (_, dtype, _) in enumerate(
            graph.outputs) if dtype.is_floating_point]
        self.wrt, self.runner = wrt, make_runner(self.joint)
        self.num_outputs = len(graph.outputs)

    def __call__(self, inputs, outputs, cotangents):
        """The gradients of the inputs in `wrt` (in their dtypes), from the
        forward's inputs and outputs and the cotangents (None: zeros)."""
        seeds = []
        for i in self.differentiated:
            g = cotangents[i]
            seeds.append(torch.zeros_like(outputs[i]) if g is None else
                         g.to(outputs[i].dtype).contiguous())
        results = self.runner(*inputs, *seeds)
        results = results if isinstance(results, tuple) else (results,)
        return results[self.num_outputs:]


class _Function(torch.autograd.Function):
    """apply(entry, *tensors): the graph's outputs, differentiable."""

    @staticmethod
    def forward(ctx, entry, *tensors):
        forward, backward = entry
        result = forward(*[t.detach() for t in tensors])
        outputs = result if isinstance(result, tuple) else (result,)
        ctx.backward, ctx.num_inputs = backward, len(tensors)
        ctx.save_for_backward(*tensors, *outputs)
        ctx.mark_non_differentiable(*[o for o in outputs
                                      if o.dtype not in _FLOATS])
        return outputs

    @staticmethod
    def backward(ctx, *cotangents):
        saved = ctx.saved_tensors
        inputs, outputs = saved[:ctx.num_inputs], saved[ctx.num_inputs:]
        grads = ctx.backward([t.detach() for t in inputs], outputs,
                             cotangents)
        result = [None] * ctx.num_inputs
        for i, g in zip(ctx.backward.wrt, grads):
            result[i] = g
        return (None, *result)


def wants_gradients(tensors):
    return torch.is_grad_enabled() and any(
        t.requires_grad and t.dtype in _FLOATS for t in tensors)


def run(forward, backwards, graph, make_runner, tensors):
    """The graph's outputs for `tensors`, recorded for autograd: the
    backward for the inputs that require grad is built once per set
    (`backwards`, a dict kept by the caller)."""
    wrt = tuple(i for i, t in enumerate(tensors)
                if t.requires_grad and t.dtype in _FLOATS)
    if wrt not in backwards:
        backwards[wrt] = Backward(graph, wrt, make_runner)
    return _Function.apply((forward, backwards[wrt]), *tensors)
