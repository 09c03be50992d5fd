"""Runs a test's work on several Python threads at once."""

import threading


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
