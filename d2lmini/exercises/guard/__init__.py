"""Run a student's function guarded: bounded in time and memory, no reference reachable, kernel intact.

`run_guarded` calls the function on the calling thread (a notebook's kernel thread, or a
test's) and always comes back with an `Outcome`, whatever the function does:

- **time limit** (`TIME_LIMIT`, read at each call, so tests can shorten it): a watchdog thread
  raises `TimeLimit` inside the function once its time is up (again every quarter second if
  the function catches it); on the main thread a signal also wakes a blocking call such as
  `time.sleep(100)`. A function blocked inside one long C call (a huge matmul) is stopped when
  that call returns.
  A function that runs in another process (`TimedElsewhere`, the grader's) keeps the limit
  there, around the call itself: on a loaded machine the round trip (the other process
  reading the arguments, waking, answering) can take longer than a small function's limit,
  so here the guard only waits longer for its reply.
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
  checker's included) and every process-wide setting (`d2lmini.kernel_settings`: gradient
  and inference mode, default dtype and device, deterministic mode, threads, anomaly mode,
  the SIGINT handler) are put back, and the outcome names what the function changed and
  whether it could be put back; threads it started are stopped, and so are processes
  (`children`; on a platform where they cannot be listed, `children_unknown` says so).

The pieces: `limits` (time and memory), `refusals` (what may not be called),
`kernel_state` (torch's and the package's functions, threads), `children` (processes),
`overrides` (a torch mode or `torch.library` kernel left on, under which no check judges).
- **output capped**: what the function prints is kept up to `OUTPUT_LIMIT` characters.

What cannot be prevented in the student's own process: a function can still reach the
interpreter's internals (`ctypes`, a builtin called from C such as `map(os._exit, [0])`,
`gc` and frames), end the kernel, or undo the guard. So nothing the self-check holds during
the call pays (expected values are not kept, see `coding`), and a grade rests on the grader,
which judges in a separate process. Introduced with the coding exercises of notebook 01.
"""

import io
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from d2lmini import kernel_settings
from d2lmini.exercises.guard import children
from d2lmini.exercises.guard.kernel_state import restore, snapshot, stop_threads
from d2lmini.exercises.guard.limits import (
    DataLimit,
    RanPastItsLimit,
    TimedElsewhere,
    Watchdog,
    is_memory_error,
    stop_watchdog,
)
from d2lmini.exercises.guard.overrides import leave_modes_above, mode_depths
from d2lmini.exercises.guard.refusals import CLIPPING, PACKAGE, Ban, Refuser
from d2lmini.i18n import _

__all__ = ["PACKAGE", "Ban", "CappedText", "Outcome", "RanPastItsLimit", "TimedElsewhere", "is_memory_error",
           "run_guarded"]

TIME_LIMIT = 5.0  # seconds one call of a student's function may take (read at each call)
MEMORY_LIMIT = 2**30  # bytes a call may add to the process's memory (read at each call)
OUTPUT_LIMIT = 2000  # characters of a student's printing that are shown


@dataclass
class Outcome:
    """What a guarded call did: its value, or the exception it raised, and what it broke.

    `refused` names what it tried to call, `refusal` says why that is refused; `replaced` the
    functions it replaced (put back) and `changed` the settings it changed (each
    `kernel_settings.Change` says whether it was put back); `threads` how many threads it left
    running (stopped), `processes` the processes it left running (ended; `processes_unknown`
    where they cannot be listed); `timed_out`, `out_of_memory` whether it ran past a limit,
    and `seconds`, `memory` those limits; `route` whether what it refused is a route the exercise
    forbids (the package's code or a copy of it, the solutions, a built-in the exercise bans), not a
    danger to the kernel or the guard switched off.
    """

    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    out_of_memory: bool = False
    refused: str | None = None
    refusal: str | None = None
    replaced: list[str] = field(default_factory=list)
    changed: list[kernel_settings.Change] = field(default_factory=list)
    threads: int = 0
    processes: list[str] = field(default_factory=list)
    processes_unknown: bool = False
    seconds: float = TIME_LIMIT
    memory: int = MEMORY_LIMIT
    route: bool = False


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
        if not self.dropped:
            return "".join(self.parts)
        # TRANSLATORS: {kept} is what the function printed, cut; {count} how many characters more it printed.
        note = _("{kept}\n... ({count:,} more characters printed, not shown)\n")
        return note.format(kept="".join(self.parts), count=self.dropped)


# --- the kernel left as it was ----------------------------------------------------------------------


class _InterruptWatch:
    """On the main thread, tell a real Ctrl-C (SIGINT) from a `KeyboardInterrupt` the code raised.

    A ■ is raised at once only between `arm()` and `holding`: before (while the guard sets up) and
    after (while it puts the kernel back) it is held and raised once the kernel is as it was, so
    no moment of a ■ leaves a limit, a handler or a hook behind.
    """

    def __init__(self):
        self.interrupted, self.installed, self.previous = False, False, None
        self.armed = False  # set as the guarded call starts: a ■ before it waits for `arm()`
        self.holding = False  # set once the function has returned: the cleanup must not be cut
        self.replaced = False  # whether the function replaced the SIGINT handler (put back on exit)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
            self.installed = True
        return self

    def _handle(self, signum, frame):
        self.interrupted = True
        if self.armed and not self.holding:
            raise KeyboardInterrupt

    def arm(self) -> None:
        """From now on a ■ is raised at once; one that came while the guard set up is raised now."""
        self.armed = True
        if self.interrupted and not self.holding:
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        self.replaced = self.installed and signal.getsignal(signal.SIGINT) != self._handle
        if self.installed:  # a handler set outside Python reads as None: put the default back then
            previous = self.previous if self.previous is not None else signal.default_int_handler
            signal.signal(signal.SIGINT, previous)


def _put_back_settings(before: kernel_settings.KernelSettings) -> list[kernel_settings.Change]:
    """Put back every process-wide setting but the SIGINT handler (`_InterruptWatch`'s); return the
    changes to name. A thread count set and left is put back without blame (setting it is
    harmless, keeping it is not)."""
    return [change for change in kernel_settings.restore(before, ignore=("sigint",))
            if change.setting not in ("threads", "interop_threads") or not change.put_back]


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
    wait = seconds
    if isinstance(fn, TimedElsewhere):
        fn, wait = fn.timed_there(seconds)
    before, state, threads = snapshot(), kernel_settings.snapshot(), set(sys._current_frames())
    modes = mode_depths()
    processes = children.descendants()
    refuser, stream = Refuser(allowed, (CLIPPING, *bans)), output if output is not None else CappedText()
    saved = sys.stdout, sys.stderr, sys.getprofile(), threading.getprofile()
    hook = refuser
    with _InterruptWatch() as interrupt, DataLimit(memory):
        watchdog = Watchdog(threading.get_ident(), wait, memory)
        try:
            try:
                interrupt.arm()
                sys.stdout = sys.stderr = stream
                watchdog.start()
                threading.setprofile(refuser)  # threads a library starts for the function are watched too
                sys.setprofile(refuser)
                value = fn(*args)
                outcome.value = value if convert is None or value is None else convert(value)
            finally:
                interrupt.holding = True  # a real ■ from now on is raised after the cleanup
                stop_watchdog(watchdog)
                hook = sys.getprofile()
                sys.setprofile(saved[2])
                threading.setprofile(saved[3])
        except BaseException as error:  # the student's code may end in any way: report it
            outcome.error = error
        finally:
            interrupt.holding = True
            stop_watchdog(watchdog)
            leave_modes_above(modes)  # a mode the function entered, or whose exit a limit cut, is left
            if sys.getprofile() is refuser:  # a ■ cut the inner cleanup short
                sys.setprofile(saved[2])
            threading.setprofile(saved[3])
            sys.stdout, sys.stderr = saved[0], saved[1]
            outcome.timed_out = watchdog.fired or isinstance(outcome.error, RanPastItsLimit)
            outcome.out_of_memory = watchdog.out_of_memory
            spared = {watchdog.thread.ident, *(t.ident for t in refuser.library_threads if t is not None)}
            outcome.threads = stop_threads(threads, spared)
            outcome.processes, outcome.processes_unknown = children.end_new(processes), processes is None
            outcome.changed = _put_back_settings(state)  # first: the default dtype rebinds torch.Storage
            outcome.replaced = restore(before)
    if interrupt.replaced:  # put back by `_InterruptWatch` as the block ended
        outcome.changed.append(kernel_settings.Change("sigint", kernel_settings.SAID["sigint"](None), True))
    outcome.refused, outcome.refusal, outcome.route = refuser.refused, refuser.refusal, refuser.route
    limited = outcome.timed_out or outcome.out_of_memory  # a limit raised inside the hook removes it too
    if outcome.refused is None and hook is not refuser and not limited:
        outcome.refused = _("the checker's guard")
        outcome.refusal = _("Your function switched off the checker's guard (its profile hook); that is "
                            "refused here.")
    if interrupt.interrupted:
        raise KeyboardInterrupt
    return outcome
