"""Child processes a checked function starts: found, ended and named (`d2lmini.exercises.guard`).

A process a student's function starts (`subprocess.Popen`, `os.system` in the background)
would outlive the check and could change the notebook later. `descendants()` lists this
process's children and theirs: on Linux from /proc, elsewhere through psutil when it is
installed; where neither works it returns None and the guard says it could not look.
`end_new(before)` ends (SIGTERM, then SIGKILL) those that were not there `before`.
"""

import os
import signal
import sys
import threading
from pathlib import Path

from d2lmini.i18n import _

PROC = Path("/proc")
END_WAIT_SECONDS = 1.0  # how long a process has to end after SIGTERM before SIGKILL


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process /proc shows."""
    table = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended while we looked
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (command) ": state, ppid, ...
        table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def _children_files(pid: int) -> list[Path] | None:
    """/proc/PID/task/*/children (each thread's children), or None where the kernel does not offer them."""
    files = list((PROC / str(pid) / "task").glob("*/children"))
    return files or None


def _descendants_from_children_files() -> set[int] | None:
    """The fast way: read only this process's (and its descendants') children lists."""
    if _children_files(os.getpid()) is None:
        return None
    found, frontier = set(), [os.getpid()]
    while frontier:
        pid = frontier.pop()
        for path in _children_files(pid) or ():
            try:
                text = path.read_text()
            except OSError:  # the process ended while we looked
                continue
            for child in map(int, text.split()):
                if child not in found:
                    found.add(child)
                    frontier.append(child)
    return {pid for pid in found if _state(pid) not in ("Z", None)}


def _state(pid: int) -> str | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[0]


def _descendants_from_proc() -> set[int]:
    fast = _descendants_from_children_files()
    if fast is not None:
        return fast
    table, found, frontier = _proc_table(), set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, (parent, state) in table.items()
                    if parent in frontier and state != "Z" and pid not in found}
        found |= frontier
    return found


def _descendants_from_psutil() -> set[int] | None:
    try:
        import psutil  # optional: macOS and Windows
        return {child.pid for child in psutil.Process().children(recursive=True)
                if child.status() != psutil.STATUS_ZOMBIE}
    except Exception:  # not installed, or not allowed to look
        return None


def descendants() -> set[int] | None:
    """The pids of the living processes this process started, and theirs; None where it cannot look."""
    if sys.platform.startswith("linux") and PROC.is_dir():
        return _descendants_from_proc()
    return _descendants_from_psutil()


NAME_WAIT_SECONDS = 0.5  # how long to wait for the command line of a process that is just starting


def _command(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def name(pid: int) -> str:
    """'process 1234 (sleep 100)': the pid and, where it can be read, the command line.

    A process caught while it starts a program shows no command line for a moment (seen on a
    loaded machine right after `subprocess.Popen` returned): it is read again for a little while.
    """
    command, waited = _command(pid), 0.0
    while not command and waited < NAME_WAIT_SECONDS and _alive(pid):
        threading.Event().wait(0.01)
        waited += 0.01
        command = _command(pid)
    if command:
        # TRANSLATORS: a process, by its number and the start of its command line.
        return _("process {pid} ({command})").format(pid=pid, command=command[:60])
    return _("process {pid}").format(pid=pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return _state(pid) != "Z"  # a zombie has ended (None: no /proc to tell, so alive)


def _signal(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def end_new(before: set[int] | None) -> list[str]:
    """End every living process started since `before` (from `descendants()`); return their names.

    Returns [] where the processes cannot be listed (`before` is None).
    """
    now = descendants() if before is not None else None
    if now is None:
        return []
    new = now - before
    names = [name(pid) for pid in sorted(new)]
    _signal(new, signal.SIGTERM)
    waited = 0.0
    while waited < END_WAIT_SECONDS and any(_alive(pid) for pid in new):
        threading.Event().wait(0.02)
        waited += 0.02
    _signal({pid for pid in new if _alive(pid)}, getattr(signal, "SIGKILL", signal.SIGTERM))
    return names
