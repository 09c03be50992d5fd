"""What several tests share: work on several Python threads at once, the
environment of a child Python process that imports this kfuse, and a torch
module's kfuse graph evaluated against PyTorch."""

import os
import threading

import numpy as np

import kfuse


def run_threads(work, count):
    """Calls work(i) for i in range(count), each on its own thread, and
    returns what they raised (a thread's exception is otherwise lost)."""
    errors = []

    def guarded(i):
        try:
            work(i)
        except Exception as e:  # noqa: BLE001 - handed to the test
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,))
               for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def child_env():
    """os.environ with this source tree's package first on PYTHONPATH (the
    tests import it through conftest.py's sys.path; a child process would
    not)."""
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(kfuse.__file__))
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def evaluate_converted(module, *inputs):
    """The module's kfuse graph (kfuse.torch's converter on its fx trace),
    evaluated on `inputs` and its parameters by the reference evaluator."""
    import torch
    import kfuse.torch as ktorch

    converter = ktorch.Converter(torch.fx.symbolic_trace(module), inputs)
    converter.convert()
    params = [converter.param_value(n) for n in converter.param_names]
    arrays = [t.detach().numpy() for t in (*inputs, *params)]
    return kfuse.evaluate(converter.graph, *arrays)


def relative_error(actual, expected):
    """max |actual - expected| / max |expected|, expected a torch tensor;
    a NaN in `actual` fails."""
    expected = expected.detach().double().numpy()
    assert not np.isnan(actual).any()
    return np.abs(actual - expected).max() / np.abs(expected).max()

