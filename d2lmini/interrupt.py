"""Let Jupyter's interrupt button (■) stop a long computation started by a widget (notebook 07's lab).

The ■ button sends SIGINT to the kernel, and Python runs signal handlers in the main thread
only. Two things keep that from reaching a widget's callback:

- The IPython kernel ignores SIGINT while it is idle and turns it into `KeyboardInterrupt`
  only around the messages it handles itself; a widget message handled while a cell holds
  the kernel (ipykernel 7 dispatches those concurrently) runs with SIGINT still ignored.
- JupyterLab 4.6 sends widget messages to a kernel *subshell* (its "comms over subshells"
  setting): the callback runs in another thread, which no signal reaches.

`interruptible()` handles both. In the main thread it turns SIGINT into `KeyboardInterrupt`
for the duration of a `with` block. In another thread it asks the main thread's event loop
(remembered by `remember_main_loop`, called from a notebook cell) to install a SIGINT
handler that sets the `StopRequest` the block receives; the work checks it after every
minibatch (`should_stop`). Either way the previous handler is put back afterwards.
"""

import asyncio
import contextlib
import signal
import threading

_main_loop: asyncio.AbstractEventLoop | None = None


class StopRequest:
    """Set when ■ (SIGINT) arrives in an `interruptible()` block; `is_set` is the `should_stop` to pass."""

    def __init__(self):
        self._event = threading.Event()

    def set(self, *signal_args) -> None:
        """Ask the work to stop (also usable as a signal handler)."""
        self._event.set()

    def is_set(self) -> bool:
        """Return True once a stop has been asked for."""
        return self._event.is_set()


def remember_main_loop(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Remember the main thread's event loop (the kernel's), or `loop`; call it from the main thread.

    Outside a running loop (a plain script) there is nothing to remember and work in other
    threads cannot be interrupted by SIGINT.
    """
    global _main_loop  # noqa: PLW0603 - one kernel, one main loop
    if loop is None:
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
    _main_loop = loop


def _set_handler_in_main_thread(handler) -> object | None:
    """Install `handler` for SIGINT from another thread, through the main loop; return the previous one.

    Returns None when it could not be done within a second (no loop, or the main thread busy).
    """
    loop, installed, previous = _main_loop, threading.Event(), []
    if loop is None or loop.is_closed():
        return None

    def install():
        previous.append(signal.signal(signal.SIGINT, handler))
        installed.set()

    loop.call_soon_threadsafe(install)
    return previous[0] if installed.wait(timeout=1.0) else None


@contextlib.contextmanager
def interruptible():
    """Make ■ (SIGINT, Ctrl-C) stop the work inside the block; yield its `StopRequest`.

    In the main thread SIGINT raises `KeyboardInterrupt` at once (and also sets the request);
    in another thread it sets the request, which the work checks (`should_stop=request.is_set`).
    """
    request = StopRequest()
    if threading.current_thread() is threading.main_thread():
        remember_main_loop()

        def stop_now(signum, frame):
            request.set()
            raise KeyboardInterrupt

        before = signal.signal(signal.SIGINT, stop_now)
        try:
            yield request
        finally:
            signal.signal(signal.SIGINT, before)
        return
    before = _set_handler_in_main_thread(request.set)
    try:
        yield request
    finally:
        if before is not None and _main_loop is not None and not _main_loop.is_closed():
            _main_loop.call_soon_threadsafe(signal.signal, signal.SIGINT, before)
