"""Run a student's function guarded: bounded in time and memory, no reference reachable, kernel intact.

`run_guarded` calls the function on the calling thread (a notebook's kernel thread, or a
test's) and always comes back with an `Outcome`, whatever the function does:

- **time limit** (`TIME_LIMIT`, read at each call, so tests can shorten it): a watchdog thread
  raises `TimeLimit` inside the function once its time is up (again every quarter second if
  the function catches it); on the main thread a signal also wakes a blocking call such as
  `time.sleep(100)`. A function blocked inside one long C call (a huge matmul) is stopped when
  that call returns.
- **memory limit** (`MEMORY_LIMIT` bytes above what the process held when the call began):
  the watchdog raises `MemoryLimit` when the resident memory passes it, and on Linux the
  data segment is limited for the call, so one huge allocation fails at once instead of
  filling the machine.
- **any exception**, `SystemExit` and `KeyboardInterrupt` included, becomes the outcome's
  `error`; a real interrupt (Ctrl-C, the notebook's stop button) is raised again after cleanup.
- **refused calls**: while the function runs, a profile hook refuses every call into the
  package's own code (any `d2lmini` module except the exercise machinery), into a copy of it
  (a function whose code is the package's, compiled anywhere), into the instructors'
  solutions, into torch's gradient clipping and into what an exercise bans (`Ban`: torch's
  RNN, its cross-entropy); also `os._exit`, `os.kill`, starting a thread and removing the hook.
- **the kernel left as it was**: torch's functions, the package's own functions (the
  checker's included), gradient mode, the default dtype and torch's thread count are put
  back, and the outcome names what the function changed; threads it started are stopped.
- **output capped**: what the function prints is kept up to `OUTPUT_LIMIT` characters.

What cannot be prevented in the student's own process: a function can still reach the
interpreter's internals (`ctypes`, a builtin called from C such as `map(os._exit, [0])`,
`gc` and frames), end the kernel, or undo the guard. So nothing the self-check holds during
the call pays (expected values are not kept, see `coding`), and a grade rests on the grader,
which judges in a separate process. Introduced with the coding exercises of notebook 01.
"""

import importlib._bootstrap
import io
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from d2lmini.exercises.kernel_state import (
    put_back_settings,
    raise_in,
    restore,
    settings,
    snapshot,
    stop_threads,
)
from d2lmini.exercises.refusals import CLIPPING, PACKAGE, Ban, Refuser

__all__ = ["PACKAGE", "Ban", "CappedText", "Outcome", "run_guarded"]

TIME_LIMIT = 5.0  # seconds one call of a student's function may take (read at each call)
MEMORY_LIMIT = 2**30  # bytes a call may add to the process's memory (read at each call)
OUTPUT_LIMIT = 2000  # characters of a student's printing that are shown


class TimeLimit(BaseException):
    """Raised inside a student's function that runs past its time limit."""


class MemoryLimit(BaseException):
    """Raised inside a student's function whose memory grows past its limit."""


@dataclass
class Outcome:
    """What a guarded call did: its value, or the exception it raised, and what it broke.

    `refused` names what it tried to call, `refusal` says why that is refused; `replaced` the
    functions it replaced and `changed` the settings it changed (all put back); `threads` how
    many threads it left running (stopped); `timed_out`, `out_of_memory` whether it ran past a
    limit, and `seconds`, `memory` those limits.
    """

    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    out_of_memory: bool = False
    refused: str | None = None
    refusal: str | None = None
    replaced: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    threads: int = 0
    seconds: float = TIME_LIMIT
    memory: int = MEMORY_LIMIT


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


# --- what is refused -----------------------------------------------------------------------------


IMPORT_GRACE = 60.0  # seconds of importing (torch._dynamo's first import) the time limit does not count


def _importing() -> bool:
    """True while a module is being imported: a limit raised then would leave it half-imported,
    breaking every later use of it in the kernel, so the watchdog lets the import finish first."""
    return bool(importlib._bootstrap._module_locks)


def _resident_bytes() -> int | None:
    """The process's resident memory now (Linux: /proc; elsewhere psutil if installed), or None."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import psutil  # optional: macOS and Windows
        return psutil.Process().memory_info().rss
    except Exception:  # not installed, or not allowed: no memory watch
        return None


class _Watchdog:
    """Raise `TimeLimit` in `thread_id` after `seconds`, or `MemoryLimit` once memory grows by `memory`
    bytes, repeatedly, until `stop()` is called. On the main thread a SIGALRM wakes blocking calls."""

    POLL = 0.05  # seconds between two looks at the memory

    def __init__(self, thread_id: int, seconds: float, memory: int):
        self.thread_id, self.seconds, self.memory = thread_id, seconds, memory
        self.done, self.lock = threading.Event(), threading.Lock()
        self.fired = self.out_of_memory = False
        self.pending: type[BaseException] | None = None
        self.base = _resident_bytes()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        on_main = threading.current_thread() is threading.main_thread()
        self.signalled = on_main and hasattr(signal, "pthread_kill")
        self.previous = signal.signal(signal.SIGALRM, self._on_signal) if self.signalled else None

    def _on_signal(self, signum, frame) -> None:
        if self.pending is not None and not self.done.is_set():
            raise self.pending

    def _raise(self, exception: type[BaseException]) -> None:
        with self.lock:
            if self.done.is_set():
                return
            self.pending = exception
            raise_in(self.thread_id, exception)
            if self.signalled:  # wakes time.sleep and other calls that wait on the main thread
                signal.pthread_kill(self.thread_id, signal.SIGALRM)

    def _over_memory(self) -> bool:
        now = _resident_bytes()
        return self.base is not None and now is not None and now - self.base > self.memory

    def _watch(self) -> None:
        deadline, retries = self.seconds, 0
        elapsed = 0.0
        while retries < 40:  # ten seconds of retries, then leave a function that catches everything
            wait = min(self.POLL, max(deadline - elapsed, 0.0))
            if self.done.wait(wait):
                return
            elapsed += wait
            if _importing() and elapsed < self.seconds + IMPORT_GRACE:
                deadline = max(deadline, elapsed) + wait  # time spent importing does not count
            if self._over_memory():
                self.out_of_memory = True
                self._raise(MemoryLimit)
            elif elapsed >= deadline:
                self.fired = True
                self._raise(TimeLimit)
            else:
                continue
            retries += 1
            deadline = elapsed + 0.25

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Stop watching (nothing is raised after this returns) and put the SIGALRM handler back."""
        with self.lock:
            self.done.set()
        self.thread.join()
        if self.signalled:
            signal.signal(signal.SIGALRM, self.previous if self.previous is not None else signal.SIG_DFL)
            self.signalled = False


class _DataLimit:
    """On Linux, limit the data segment to what it is now plus `memory` for the call (if unlimited now).

    One huge allocation then fails at once ("can't allocate memory") instead of filling the
    machine before the watchdog can see it.
    """

    def __init__(self, memory: int):
        self.memory, self.previous = memory, None

    def __enter__(self):
        try:
            import resource
            soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
            with open("/proc/self/status", encoding="ascii") as status:
                data = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmData:"))
            if soft == resource.RLIM_INFINITY and sys.platform.startswith("linux"):
                limit = data + self.memory
                resource.setrlimit(resource.RLIMIT_DATA, (limit if hard == resource.RLIM_INFINITY else
                                                          min(limit, hard), hard))
                self.previous = (soft, hard)
        except Exception:  # not Linux, no /proc, not permitted: the watchdog alone watches memory
            self.previous = None
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            import resource
            resource.setrlimit(resource.RLIMIT_DATA, self.previous)


def is_memory_error(error: BaseException | None) -> bool:
    """True for an allocation that failed (Python's MemoryError, torch's "can't allocate memory")."""
    if isinstance(error, MemoryError | MemoryLimit):
        return True
    text = str(error) if isinstance(error, RuntimeError) else ""
    return "allocate" in text and "memory" in text


# --- the kernel left as it was ----------------------------------------------------------------------


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
                seconds: float | None = None, memory: int | None = None,
                bans: tuple[Ban, ...] = ()) -> Outcome:
    """Call `fn(*args)` (then `convert` on its result, e.g. to read a generator) under the guard.

    Returns an `Outcome`; never raises, except a real KeyboardInterrupt, after cleanup.
    What `fn` prints goes to `output` (kept up to its limit). `allowed` names package files
    `fn` may call (a model's own methods); `bans` adds to `CLIPPING`, always refused.
    `seconds` and `memory` default to `TIME_LIMIT` and `MEMORY_LIMIT` as they are at the call.
    """
    seconds = TIME_LIMIT if seconds is None else seconds
    memory = MEMORY_LIMIT if memory is None else memory
    outcome = Outcome(seconds=seconds, memory=memory)
    before, state, threads = snapshot(), settings(), set(sys._current_frames())
    refuser, stream = Refuser(allowed, (CLIPPING, *bans)), output if output is not None else CappedText()
    saved = sys.stdout, sys.stderr, sys.getprofile(), threading.getprofile()
    hook = refuser
    with _InterruptWatch() as interrupt, _DataLimit(memory):
        watchdog = _Watchdog(threading.get_ident(), seconds, memory)
        try:
            try:
                sys.stdout = sys.stderr = stream
                watchdog.start()
                threading.setprofile(refuser)  # threads a library starts for the function are watched too
                sys.setprofile(refuser)
                value = fn(*args)
                outcome.value = value if convert is None or value is None else convert(value)
            finally:
                _stop(watchdog)
                hook = sys.getprofile()
                sys.setprofile(saved[2])
                threading.setprofile(saved[3])
        except BaseException as error:  # the student's code may end in any way: report it
            outcome.error = error
        finally:
            _stop(watchdog)
            sys.stdout, sys.stderr = saved[0], saved[1]
            outcome.timed_out, outcome.out_of_memory = watchdog.fired, watchdog.out_of_memory
            spared = {watchdog.thread.ident, *(t.ident for t in refuser.library_threads if t is not None)}
            outcome.threads = stop_threads(threads, spared)
            outcome.changed = put_back_settings(state)
            outcome.replaced = restore(before)
    outcome.refused, outcome.refusal = refuser.refused, refuser.refusal
    limited = outcome.timed_out or outcome.out_of_memory  # a limit raised inside the hook removes it too
    if outcome.refused is None and hook is not refuser and not limited:
        outcome.refused = "the checker's guard"
        outcome.refusal = ("Your function switched off the checker's guard (its profile hook); "
                           "that is refused here.")
    if interrupt.interrupted:
        raise KeyboardInterrupt
    return outcome


def _stop(watchdog: _Watchdog) -> None:
    """Stop the watchdog, and take delivery here of a limit it sent that is still pending.

    (Cancelling a pending one with PyThreadState_SetAsyncExc(id, NULL) is not an option: on
    CPython 3.11, when none is pending, that leaves a profiled thread spinning.)
    """
    while True:
        try:
            watchdog.stop()
            for _ in range(64):  # each backward jump lets a pending exception arrive
                pass
            return
        except (TimeLimit, MemoryLimit):
            continue
