"""Let Jupyter's interrupt button (■) stop a long computation started by a widget (notebook 07's lab).

The ■ button sends SIGINT to the kernel. IPython's kernel ignores SIGINT while it is idle and
turns it into `KeyboardInterrupt` only around the messages it handles itself: a widget
message that it hands on while a cell still holds the kernel (ipykernel 7 dispatches such
comm messages concurrently) runs with SIGINT still ignored, so training started by a button
cannot be interrupted. `interruptible()` turns SIGINT into `KeyboardInterrupt` for the
duration of a `with` block and restores whatever was there before.
"""

import contextlib
import signal
import threading


@contextlib.contextmanager
def interruptible():
    """Raise `KeyboardInterrupt` on SIGINT (the ■ button, Ctrl-C) inside the block; restore the handler after.

    Outside the main thread signals cannot be handled, and the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
