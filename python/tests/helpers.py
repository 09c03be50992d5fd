"""What several tests share: work on several Python threads at once, and
the environment of a child Python process that imports this kfuse."""

import os
import threading

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
