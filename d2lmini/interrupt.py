"""Let Jupyter's interrupt button (■) stop a long computation started by a widget (notebook 08's lab).

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
minibatch (`should_stop`). Either way the previous handler is put back afterwards, and so is
every other process-wide setting (`d2lmini.kernel_settings`): ■ landing inside a
`torch.no_grad()` function would otherwise leave gradients off for the rest of the kernel.

`interrupts_held()` (`d2lmini.held`) holds ■ over work it must not cut in half.
"""

import asyncio
import contextlib
import signal
import threading
import warnings

from d2lmini.held import handler_or_default, interrupts_held
from d2lmini.i18n import _
from d2lmini.kernel_settings import describe, restore, snapshot

_main_loop: asyncio.AbstractEventLoop | None = None
# How long work in another thread waits for the main loop to install its SIGINT handler.
INSTALL_WAIT_SECONDS = 1.0


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


class _MainThreadHandler:
    """A SIGINT handler installed from another thread through the main loop, and taken away the same way.

    Both steps are callbacks on the main loop, which runs them in the order they were asked
    for: whenever `install` runs (even after `install_and_wait` gave up waiting), `remove`
    runs after it and puts the previous handler back.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, handler):
        self.loop, self.handler = loop, handler
        self.installed, self.previous = threading.Event(), None

    def _install(self) -> None:
        self.previous = signal.signal(signal.SIGINT, self.handler)
        self.installed.set()

    def _remove(self) -> None:
        if self.installed.is_set() and signal.getsignal(signal.SIGINT) is self.handler:
            signal.signal(signal.SIGINT, handler_or_default(self.previous))

    def install_and_wait(self) -> bool:
        """Ask the main loop to install the handler; return True if it did within `INSTALL_WAIT_SECONDS`."""
        self.loop.call_soon_threadsafe(self._install)
        return self.installed.wait(timeout=INSTALL_WAIT_SECONDS)

    def remove(self) -> None:
        """Ask the main loop to put the previous handler back (after the install, if that ever runs)."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._remove)


@contextlib.contextmanager
def interruptible():
    """Make ■ (SIGINT, Ctrl-C) stop the work inside the block; yield its `StopRequest`.

    In the main thread SIGINT raises `KeyboardInterrupt` at once (and also sets the request);
    in another thread it sets the request, which the work checks (`should_stop=request.is_set`).
    """
    request, settings = StopRequest(), snapshot()
    try:
        with _stop_on_sigint(request):
            yield request
    finally:
        with interrupts_held():  # a second ■ must not cut the putting back in half
            _put_back(settings)


def _put_back(settings) -> None:
    """Put back the settings the block changed (the SIGINT handler is `_stop_on_sigint`'s) and say so."""
    # TRANSLATORS: who changed a process-wide setting, the subject of "... switched gradients off"; ■ is
    # the interrupt button.
    message = describe(restore(settings, ignore=("sigint",)), _("The work that ■ could stop"))
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=4)


@contextlib.contextmanager
def _stop_on_sigint(request: StopRequest):
    """Make SIGINT set `request` inside the block (and raise KeyboardInterrupt in the main thread)."""
    if threading.current_thread() is threading.main_thread():
        remember_main_loop()

        def stop_now(signum, frame):
            request.set()
            raise KeyboardInterrupt

        before = signal.signal(signal.SIGINT, stop_now)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, handler_or_default(before))
        return
    loop = _main_loop
    if loop is None or loop.is_closed():
        yield
        return
    handler = _MainThreadHandler(loop, request.set)
    handler.install_and_wait()
    try:
        yield
    finally:
        handler.remove()

