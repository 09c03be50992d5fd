"""Training through kfuse: a converted graph as a torch.autograd.Function.

kfuse.split_vjp cuts the graph's vector-Jacobian product into a forward
that also returns what the backward needs (matmul and attention results,
reduction statistics) and a backward that recomputes the cheap
element-by-element values from them inside its own fused kernels. The
Function's forward runs the first and saves its extra results; its
backward runs the second on them and the output cotangents.
"""

import torch

from .autodiff import split_vjp

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


class Backward:
    """The training pair of one graph for one set of inputs differentiated,
    compiled (or evaluated) once."""

    def __init__(self, graph, wrt, make_runner):
        self.differentiated = [i for i, (_, dtype, _) in enumerate(
            graph.outputs) if dtype.is_floating_point]
        forward, backward, plan = split_vjp(
            graph, outputs=[graph.outputs[i][0] for i in self.differentiated],
            wrt=[graph.inputs[i][0] for i in wrt])
        self.wrt, self.num_outputs = wrt, len(graph.outputs)
        self.forward, self.backward = make_runner(forward), make_runner(
            backward)
        self.sources, self.decisions = plan["backward_inputs"], plan[
            "decisions"]

    def run_forward(self, inputs):
        """The graph's outputs and the values saved for the backward."""
        results = self.forward(*inputs)
        results = results if isinstance(results, tuple) else (results,)
        return results[:self.num_outputs], results[self.num_outputs:]

    def __call__(self, inputs, outputs, saved, cotangents):
        """The gradients of the inputs in `wrt` (in their dtypes)."""
        seeds = []
        for i in self.differentiated:
            g = cotangents[i]
            seeds.append(torch.zeros_like(outputs[i]) if g is None else
                         g.to(outputs[i].dtype).contiguous())
        pick = {"input": inputs, "output": outputs, "saved": saved,
                "cotangent": seeds}
        grads = self.backward(*[pick[source][index]
                                for source, index in self.sources])
        return grads if isinstance(grads, tuple) else (grads,)


class _Function(torch.autograd.Function):
    """apply(backward, *tensors): the graph's outputs, differentiable."""

    @staticmethod
    def forward(ctx, backward, *tensors):
        outputs, saved = backward.run_forward([t.detach() for t in tensors])
        ctx.backward = backward
        ctx.counts = (len(tensors), len(outputs))
        ctx.save_for_backward(*tensors, *outputs, *saved)
        ctx.mark_non_differentiable(*[o for o in outputs
                                      if o.dtype not in _FLOATS])
        return outputs

    @staticmethod
    def backward(ctx, *cotangents):
        inputs_n, outputs_n = ctx.counts
        values = [t.detach() for t in ctx.saved_tensors]
        inputs, outputs = values[:inputs_n], values[
            inputs_n:inputs_n + outputs_n]
        grads = ctx.backward(inputs, outputs, values[inputs_n + outputs_n:],
                             cotangents)
        result = [None] * inputs_n
        for i, g in zip(ctx.backward.wrt, grads):
            result[i] = g
        return (None, *result)


def wants_gradients(tensors):
    return torch.is_grad_enabled() and any(
        t.requires_grad and t.dtype in _FLOATS for t in tensors)


def run(backwards, graph, make_runner, tensors):
    """The graph's outputs for `tensors`, recorded for autograd: the
    training pair for the inputs that require grad is built once per set
    (`backwards`, a dict kept by the caller)."""
    wrt = tuple(i for i, t in enumerate(tensors)
                if t.requires_grad and t.dtype in _FLOATS)
    if wrt not in backwards:
        backwards[wrt] = Backward(graph, wrt, make_runner)
    outputs = _Function.apply(backwards[wrt], *tensors)
    return outputs[0] if len(outputs) == 1 else outputs
