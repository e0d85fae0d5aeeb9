"""Run a student's function guarded: a time limit, no calls into the package, torch left intact.

`run_guarded` calls the function on the calling thread (a notebook's kernel thread, or a
test's) and always comes back with an `Outcome`, whatever the function does:

- **time limit**: a watchdog thread raises `TimeLimit` inside the function once its time is up
  (again every quarter second if the function catches it), so a `while True` or an endless
  generator ends in a verdict. A function blocked inside one long C call (a huge matmul,
  `time.sleep`) is stopped when that call returns.
- **any exception**, `SystemExit` and `KeyboardInterrupt` included, becomes the outcome's
  `error`; a real interrupt (Ctrl-C, the notebook's stop button) is raised again after cleanup.
- **refused calls**: while the function runs, a profile hook refuses every call into the
  package's own code (any `d2lmini` module except the exercise machinery) and into torch's
  gradient-clipping helpers, so an exercise cannot be passed by calling the reference.
- **torch restored**: a function that replaced `torch.tanh`, a `torch.nn.functional` function
  or a `Tensor` method has it put back, and the outcome names it.
- **output capped**: what the function prints is kept up to `OUTPUT_LIMIT` characters.

Introduced with the coding exercises of notebook 01; every coding checker uses it.
"""

import ctypes
import io
import math
import os
import signal
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
import torch.nn.utils.clip_grad

TIME_LIMIT = 5.0  # seconds one call of a student's function may take
OUTPUT_LIMIT = 2000  # characters of a student's printing that are shown
PACKAGE = Path(__file__).parents[1]  # as the code objects name it: not resolved
# The exercise machinery the guarded call itself runs (converting a result, this hook).
MACHINERY = frozenset(str(PACKAGE / "exercises" / name) for name in ("__init__.py", "coding.py", "guard.py"))
# The grader's remote function (d2lmini.grading.remote) stands in for a student's function when grading.
MACHINERY |= {str(PACKAGE / "grading" / "remote.py")}
CLIPPING_HELPERS = torch.nn.utils.clip_grad.__file__
# Namespaces whose functions a student's code might replace; they are put back after each call.
GUARDED_NAMESPACES = (torch, F, torch.Tensor, torch.linalg, torch.special, torch.nn.init,
                      torch.nn.utils, torch.autograd, math)


class TimeLimit(BaseException):
    """Raised inside a student's function that runs past its time limit."""


class RefusedCall(Exception):
    """Raised inside a student's function that calls the package's reference code."""


@dataclass
class Outcome:
    """What a guarded call did: its value, or the exception it raised, and what it broke.

    `refused` names the package function it tried to call; `replaced` the torch functions it
    replaced (already restored); `timed_out` whether it ran past the limit.
    """

    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    refused: str | None = None
    replaced: list[str] = field(default_factory=list)


class CappedText(io.TextIOBase):
    """A text stream that keeps the first `limit` characters written to it and counts the rest."""

    def __init__(self, limit: int = OUTPUT_LIMIT):
        super().__init__()
        self.limit, self.parts, self.kept, self.dropped = limit, [], 0, 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        room = max(self.limit - self.kept, 0)
        self.parts.append(text[:room])
        self.kept += min(len(text), room)
        self.dropped += max(len(text) - room, 0)
        return len(text)

    def shown(self) -> str:
        """Return the kept text, with a note of how much more was printed and is not shown."""
        note = f"\n... ({self.dropped:,} more characters printed, not shown)\n" if self.dropped else ""
        return "".join(self.parts) + note


def _readable_name(code) -> str:
    """'d2lmini.batching.sequential_batches' for the code of a package function."""
    if code.co_filename == CLIPPING_HELPERS:
        return "torch's gradient clipping (torch.nn.utils.clip_grad_norm_ and its helpers)"
    module = Path(code.co_filename).relative_to(PACKAGE.parent).with_suffix("")
    return ".".join((*module.parts, code.co_qualname))


class _Refuser:
    """A profile hook that refuses calls into the package's code (except `allowed` files) and clipping."""

    def __init__(self, allowed: frozenset[str]):
        self.allowed = MACHINERY | allowed
        self.refused: str | None = None
        self.package = str(PACKAGE) + os.sep

    def __call__(self, frame, event, arg):
        if event != "call":
            return
        filename = frame.f_code.co_filename
        forbidden = filename == CLIPPING_HELPERS or (
            filename.startswith(self.package) and filename not in self.allowed)
        if forbidden and self.refused is None:
            self.refused = _readable_name(frame.f_code)
        if forbidden:  # raising here also removes the hook; `refused` keeps the verdict
            raise RefusedCall(f"{_readable_name(frame.f_code)} is refused here: write it yourself.")


class _Watchdog:
    """Raise `TimeLimit` in `thread_id` after `seconds`, repeatedly, until `stop()` is called."""

    def __init__(self, thread_id: int, seconds: float):
        self.thread_id, self.seconds = thread_id, seconds
        self.done, self.lock, self.fired = threading.Event(), threading.Lock(), False
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _raise(self, exception) -> None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), exception)

    def _watch(self) -> None:
        wait = self.seconds
        for _ in range(40):  # ten seconds of retries, then leave a function that catches everything
            if self.done.wait(wait):
                return
            with self.lock:
                if self.done.is_set():
                    return
                self.fired = True
                self._raise(ctypes.py_object(TimeLimit))
            wait = 0.25

    def stop(self) -> None:
        """Stop watching (no `TimeLimit` is sent after this returns)."""
        with self.lock:
            self.done.set()
        self.thread.join()


def _snapshot() -> list[tuple[object, dict]]:
    return [(space, dict(vars(space))) for space in GUARDED_NAMESPACES]


def _restore(snapshot) -> list[str]:
    """Put back every attribute that changed since `snapshot`, remove new ones; return their names.

    A new attribute may shadow an inherited one (`torch.Tensor.tanh = ...`); new submodules,
    which torch imports lazily, stay.
    """
    replaced = []
    for space, before in snapshot:
        now = dict(vars(space))
        for name, value in now.items():
            if name not in before and not isinstance(value, types.ModuleType):
                delattr(space, name)
                replaced.append(f"{getattr(space, '__name__', space)}.{name}")
        for name, value in before.items():
            if now.get(name, _MISSING) is not value:
                setattr(space, name, value)
                replaced.append(f"{getattr(space, '__name__', space)}.{name}")
    return replaced


_MISSING = object()


class _InterruptWatch:
    """On the main thread, tell a real Ctrl-C (SIGINT) from a `KeyboardInterrupt` the code raised."""

    def __init__(self):
        self.interrupted, self.installed, self.previous = False, False, None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
            self.installed = True
        return self

    def _handle(self, signum, frame):
        self.interrupted = True
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.installed:  # a handler set outside Python reads as None: put the default back then
            previous = self.previous if self.previous is not None else signal.default_int_handler
            signal.signal(signal.SIGINT, previous)


def run_guarded(fn: Callable, args: tuple, convert: Callable | None = None,
                output: CappedText | None = None, allowed: frozenset[str] = frozenset(),
                seconds: float = TIME_LIMIT) -> Outcome:
    """Call `fn(*args)` (then `convert` on its result, e.g. to read a generator) under the guard.

    Returns an `Outcome`; never raises, except a real KeyboardInterrupt, after cleanup.
    What `fn` prints goes to `output` (kept up to its limit). `allowed` names package files
    `fn` may call (a model's own methods).
    """
    outcome, snapshot = Outcome(), _snapshot()
    refuser, stream = _Refuser(allowed), output if output is not None else CappedText()
    watchdog = _Watchdog(threading.get_ident(), seconds)
    saved = sys.stdout, sys.stderr, sys.getprofile()
    with _InterruptWatch() as interrupt:
        try:
            try:
                sys.stdout = sys.stderr = stream
                watchdog.thread.start()
                sys.setprofile(refuser)
                value = fn(*args)
                outcome.value = value if convert is None or value is None else convert(value)
            finally:
                sys.setprofile(saved[2])
                _stop(watchdog)
        except BaseException as error:  # the student's code may end in any way: report it
            outcome.error = error
        finally:
            sys.stdout, sys.stderr = saved[0], saved[1]
            outcome.timed_out = watchdog.fired
            outcome.replaced = _restore(snapshot)
    outcome.refused = refuser.refused
    if interrupt.interrupted:
        raise KeyboardInterrupt
    return outcome


def _stop(watchdog: _Watchdog) -> None:
    """Stop the watchdog, and take delivery here of a `TimeLimit` it sent that is still pending.

    (Cancelling a pending one with PyThreadState_SetAsyncExc(id, NULL) is not an option: on
    CPython 3.11, when none is pending, that leaves a profiled thread spinning.)
    """
    while True:
        try:
            watchdog.stop()
            for _ in range(64):  # each backward jump lets a pending exception arrive
                pass
            return
        except TimeLimit:
            continue
