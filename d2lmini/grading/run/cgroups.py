"""A cgroup of its own for each sandbox, where this machine lets the grader make one.

A cgroup's memory limit counts what no rlimit does: the memory of all its processes together,
children included, the pages of the files they write in memory (a tmpfs: the sandbox's /tmp, its
scratch folder, /dev/shm) and shared memory; its pids limit counts all its processes and threads.
Each sandbox (`d2lmini.grading.run.sandbox.command`) then starts as `sh -c 'echo $$ > .../cgroup.procs;
exec ...'`: it joins its cgroup before it runs anything of the student's, and everything it starts
is born inside. Over the limit, the kernel's OOM killer ends a process of that cgroup alone.

`find` looks, once per grader process, for a place to make them:

- cgroup v1 (memory and pids hierarchies mounted and writable, as for a root grader on many
  servers): a child of the grader's own cgroup in each;
- cgroup v2 with the memory and pids controllers delegated to the grader's cgroup (a root grader
  at a hierarchy it may write; a user's `systemd-run --user --scope -p Delegate=yes ...`): the
  grader moves itself into a leaf of that cgroup, `d2lmini-grader`, so that the controllers can be
  turned on below it, and each sandbox gets a sibling of that leaf. This is done only where the
  grader is alone in its cgroup (a delegated scope of its own), never by moving anyone else.

Elsewhere (a container whose cgroups are read-only, as Gradescope's) it says why, in words the
grader's announcement of its isolation shows. `D2LMINI_CGROUP=none` switches cgroups off, for tests.
Each cgroup is removed once the sandbox's processes are gone (`Cgroup.remove`).
"""

import errno
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

from d2lmini.grading.run.reasons import Reason
from d2lmini.i18n import N_

CONTROLLERS = ("memory", "pids")
LEAF = "d2lmini-grader"  # v2: the grader's own cgroup, beside its sandboxes'
_numbers = itertools.count()


@dataclass(frozen=True)
class Place:
    """Where each sandbox's cgroup is made: one parent folder per v1 controller, or the v2 parent."""

    version: int
    parents: tuple[Path, ...]


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per controller ("" for v2's unified hierarchy)."""
    found = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """Each cgroup file system mounted here: (its root, where it is mounted, its type, its options)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        parts, kinds = fields.split(), tail.split()
        if len(parts) >= 5 and len(kinds) >= 3 and kinds[0] in ("cgroup", "cgroup2"):
            found.append((parts[3], parts[4].replace("\\040", " "), kinds[0], set(kinds[2].split(","))))
    return found


def _folder(root: str, mount: str, path: str) -> Path:
    """The folder of the cgroup `path` in a hierarchy whose `root` is mounted at `mount`."""
    relative = path[len(root):] if root != "/" and path.startswith(root) else path
    return Path(mount) / relative.lstrip("/")


def find() -> "Place | str":
    """Where to make each sandbox's cgroup, or why nowhere (a `Reason`, shown in words by the grader)."""
    if os.environ.get("D2LMINI_CGROUP") == "none":
        return Reason(N_("cgroups switched off (D2LMINI_CGROUP=none)"))
    try:
        own, mounts = _own_cgroups(), _mounts()
    except (OSError, ValueError):
        return Reason(N_("this system has no cgroups"))
    v1 = {c: _folder(root, mount, own[c]) for root, mount, kind, options in mounts if kind == "cgroup"
          for c in CONTROLLERS if c in options and c in own}
    if set(v1) == set(CONTROLLERS):
        return _tried(Place(1, tuple(v1[c] for c in CONTROLLERS)))
    unified = [_folder(root, mount, own.get("", "/")) for root, mount, kind, _ in mounts if kind == "cgroup2"]
    if unified and "" in own:
        return _delegated(unified[0])
    return Reason(N_("no cgroup hierarchy with the memory and pids controllers is mounted here"))


def _delegated(folder: Path) -> "Place | str":
    """v2: the grader's cgroup made the parent of its sandboxes' (the grader moved into its leaf)."""
    if folder.name == LEAF:  # a grader process before this one (the pool's parent) made it
        return _tried(Place(2, (folder.parent,)))
    try:
        available = set((folder / "cgroup.controllers").read_text().split())
        others = set((folder / "cgroup.procs").read_text().split()) - {str(os.getpid())}
    except OSError as error:
        return Reason(N_("its cgroup cannot be read ({error})"), error=str(error))
    if not set(CONTROLLERS) <= available:
        # TRANSLATORS: {folder} is a cgroup's folder; 'memory' and 'pids' are the names of cgroup controllers.
        return Reason(N_("the memory and pids controllers are not delegated to its cgroup {folder}"),
                      folder=str(folder))
    if others:
        # TRANSLATORS: {folder} is a cgroup's folder; keep the command as it is.
        return Reason(N_("its cgroup {folder} holds other processes (start the grader with systemd-run "
                         "--user --scope -p Delegate=yes to give it one of its own)"), folder=str(folder))
    try:
        (folder / LEAF).mkdir(exist_ok=True)
        (folder / LEAF / "cgroup.procs").write_text(str(os.getpid()))
        (folder / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
    except OSError as error:
        return Reason(N_("its cgroup {folder} is not writable ({error})"), folder=str(folder),
                      error=str(error))
    return _tried(Place(2, (folder,)))


def _tried(place: Place) -> "Place | str":
    """`place` if a cgroup can be made there, limited and entered; else why not."""
    try:
        trial = Cgroup.create(place, 256, 8)
    except OSError as error:
        return Reason(N_("its cgroup {folder} is not writable ({error})"), folder=str(place.parents[0]),
                      error=str(error))
    try:
        if os.spawnv(os.P_WAIT, "/bin/sh", trial.wrap(["/bin/true"])) != 0:
            return Reason(N_("a process cannot join a cgroup made in {folder}"), folder=str(place.parents[0]))
    finally:
        trial.remove()
    return place


class Cgroup:
    """One sandbox's cgroup: a folder in each hierarchy of `Place`, limits written, removed after."""

    def __init__(self, folders: list[Path]):
        self.folders = folders

    @classmethod
    def create(cls, place: Place, memory_mb: int, tasks: int) -> "Cgroup":
        """A new cgroup under `place` whose processes together use at most `memory_mb` MB, `tasks` tasks."""
        name = f"d2lmini-{os.getpid()}-{next(_numbers)}"
        made = cls([parent / name for parent in place.parents])
        try:
            for folder in made.folders:
                folder.mkdir()
            settings = _v1_settings if place.version == 1 else _v2_settings
            for file, value, needed in settings(memory_mb, tasks):
                found = [folder / file for folder in made.folders if (folder / file).exists()]
                if needed and not found:
                    raise FileNotFoundError(errno.ENOENT, "no such limit in the cgroup", file)
                for path in found:
                    path.write_text(value)
        except OSError:
            made.remove(0)
            raise
        return made

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv`, started inside this cgroup (a process that cannot join it ends with status 125)."""
        join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", join, "sh", *[str(f / "cgroup.procs") for f in self.folders], "--", *argv]

    def remove(self, seconds: float = 10.0) -> bool:
        """Remove the cgroup once its last process has left it (gone, but wait a moment); True if done."""
        deadline = time.monotonic() + seconds
        for folder in reversed(self.folders):
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as error:
                    if error.errno != errno.EBUSY or time.monotonic() > deadline:
                        return False
                    time.sleep(0.05)
        return True


def _v1_settings(memory_mb: int, tasks: int) -> list[tuple[str, str, bool]]:
    """(file, value, needed) for a v1 cgroup; memory.memsw (memory and swap) where swap is accounted."""
    memory = str(memory_mb * 2**20)
    return [("memory.limit_in_bytes", memory, True), ("memory.memsw.limit_in_bytes", memory, False),
            ("pids.max", str(tasks), True)]


def _v2_settings(memory_mb: int, tasks: int) -> list[tuple[str, str, bool]]:
    """(file, value, needed) for a v2 cgroup: no swap, so that the limit counts what it holds."""
    return [("memory.max", str(memory_mb * 2**20), True), ("memory.swap.max", "0", False),
            ("pids.max", str(tasks), True)]
