"""The time and memory limits of a guarded call (`d2lmini.exercises.guard`).

A `Watchdog` thread raises `TimeLimit` or `MemoryLimit` inside the student's function (and,
on the main thread, a SIGALRM wakes a blocking call); `DataLimit` caps the data segment on
Linux so one huge allocation fails at once.
"""

import importlib._bootstrap
import os
import signal
import sys
import threading

from d2lmini.exercises.guard.kernel_state import raise_in


class TimeLimit(BaseException):
    """Raised inside a student's function that runs past its time limit."""


class MemoryLimit(BaseException):
    """Raised inside a student's function whose memory grows past its limit."""


class RanPastItsLimit(Exception):
    """Raised by a `TimedElsewhere` function whose call ran past its time limit where it ran."""


class TimedElsewhere:
    """A function that runs in another process and keeps its time limit there (the grader's callers).

    Waiting for its reply is not its running time: on a loaded machine the other process may wait
    for a CPU before and after the call. So the guard gives it the limit to keep and waits for it
    longer (`timed_there`); it raises `RanPastItsLimit` when it ran past the limit there.
    """

    def timed_there(self, seconds: float) -> tuple:
        """(a callable that runs this function under a `seconds` limit there, the seconds to wait here)."""
        raise NotImplementedError


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


class Watchdog:
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
        if self.thread.is_alive():  # not yet started (a ■ as it started): it ends once it sees `done`
            self.thread.join()
        if self.signalled:
            signal.signal(signal.SIGALRM, self.previous if self.previous is not None else signal.SIG_DFL)
            self.signalled = False


class DataLimit:
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


def stop_watchdog(watchdog: Watchdog) -> None:
    """Stop the watchdog, and take delivery here of a limit it sent that is still pending.

    (Cancelling a pending one with PyThreadState_SetAsyncExc(id, NULL) is not an option: on
    CPython 3.11, when none is pending, that leaves a profiled thread spinning.)
    """
    while True:
        try:
            watchdog.stop()
            for _jump in range(64):  # each backward jump lets a pending exception arrive
                pass
            return
        except (TimeLimit, MemoryLimit):
            continue
