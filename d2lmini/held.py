"""■ (SIGINT) held over work it must not cut in half: imports, putting settings back.

Python imports modules lazily, and a `KeyboardInterrupt` in the middle of an import leaves a
package half-imported for the rest of the process (sympy without `sympy.core`, numpy without
`numpy.subtract`; torch's compiled core cannot even be imported again). `interrupts_held()`
delivers ■ after the block instead; `import_whole` imports modules under it. No torch here:
`import d2lmini` uses it to import torch itself whole.
"""

import contextlib
import importlib
import signal
import threading


def handler_or_default(handler):
    """Return `handler`, or Python's own SIGINT handler when it was not set from Python (None)."""
    return signal.default_int_handler if handler is None else handler

@contextlib.contextmanager
def interrupts_held(deliver: bool = True):
    """Hold ■ (SIGINT, Ctrl-C) until the block ends, then deliver it as if it arrived then.

    For work an interrupt must not cut in half: Python imports modules lazily, and a
    `KeyboardInterrupt` in the middle of an import (the first optimizer of a process imports
    `torch._dynamo` and sympy) leaves packages half-imported for the rest of the process.
    Yields a list that holds the signal once one arrived; with `deliver=False` it is only
    recorded there (for work that has finished and must return what it did).
    Outside the main thread it does nothing: no signal reaches another thread.
    """
    arrived = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived
        return
    before = signal.signal(signal.SIGINT, lambda signum, frame: arrived.append(signum))
    try:
        yield arrived
    finally:
        signal.signal(signal.SIGINT, handler_or_default(before))
        if arrived and deliver:
            signal.raise_signal(signal.SIGINT)


def import_whole(*names: str) -> None:
    """Import the modules `names` with ■ held until all are imported (then it is delivered).

    The first optimizer of a process imports torch._dynamo and sympy, the first plot
    matplotlib.pyplot: imported whole here, no later cell imports them half.
    """
    with interrupts_held():
        for name in names:
            importlib.import_module(name)
