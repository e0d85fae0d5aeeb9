"""The operating-system boundary around everything a submission runs: Debian's bubblewrap (`bwrap`).

Each student's kernel, and each fresh process that calls a student's function for the judge
(`d2lmini.grading.run.caller`), starts as `bwrap ... PROGRAM`:

- `--unshare-all`: its own user, PID, network (loopback only), IPC, UTS and cgroup namespaces;
  inside it is uid/gid 65534 with no capabilities (`--cap-drop ALL`), even when the grader is
  root (CI, Gradescope's container);
- `--die-with-parent` and the PID namespace: when the sandbox's first process ends, the kernel
  ends every process it started, detached ones too; `wait_gone` waits for that before the
  grader writes any result;
- a file system made only of what Python needs, read-only: the system's `/usr`, `/etc` and
  library folders, this Python (its prefix and site folders) and the `d2lmini` package folder
  alone (not the repository beside it: no `solutions/`), a fresh `/proc` of its own PID
  namespace (the grader's command line is not there), its root and `/dev` read-only too, and
  three writable places, each a fresh tmpfs of at most `scratch_mb` MB (`--size`, bubblewrap 0.7
  and later): its scratch folder, `/tmp` and `/dev/shm` (and a kernel's folder for its Unix sockets,
  of a megabyte, which the grader reaches through /proc). The output folder, the submissions, the
  instructor's config, /root and /home are not in it (covered by an empty tmpfs where they lie
  under a folder that is). What the grader puts in the scratch folder for it is bound there
  read-only; what it leaves there the grader reads while it runs (`open_inside`);
- a clean environment (`--clearenv`), HOME and TMPDIR in its `/tmp`;
- a cgroup of its own where the grader may make one (`new_cgroup`, `d2lmini.grading.run.cgroups`),
  which counts the memory of all its processes together; rlimits on each process in any case
  (`d2lmini.grading.run.limits`).

Where bwrap is missing or cannot make namespaces (macOS, a container without user namespaces)
`probe` says why, the grader announces before it starts that submissions run NOT isolated, and
the results record it. A grader running as root where bwrap cannot run (Gradescope's
container) runs submissions as uid 65534 through `setpriv` instead ("user" isolation: its own
user, every process of that user ended before results are written, but the network and the
readable files shared; its scratch folder and /tmp are the machine's, bounded file by file only).
`D2LMINI_BWRAP` names another bwrap program; `D2LMINI_SANDBOX` forces a mode ("bwrap", "user",
"none"), for tests; `D2LMINI_CGROUP=none` switches cgroups off.
"""

import contextlib
import errno
import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.base.files import open_folder
from d2lmini.grading.run import cgroups
from d2lmini.grading.run.limits import ENVIRONMENT, TASKS, limited_command
from d2lmini.grading.run.reasons import Reason, shown
from d2lmini.i18n import ENVIRONMENT_VARIABLE, N_, _

PACKAGE = Path(__file__).resolve().parents[2]  # the d2lmini folder: the only part of a checkout bound
SANDBOX_UID = 65534  # "nobody" inside the user namespace
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
# Emptied where a bound folder holds them.
HIDDEN = ("/root", "/home", "/run", "/var", "/srv", "/mnt", "/media")
HOME = "home"  # the HOME folder a submission's program gets in its scratch folder, unless in bubblewrap


@dataclass(frozen=True)
class Isolation:
    """How submissions are isolated: "bwrap", "user" (root without namespaces: setpriv), or not at all."""

    program: str | None  # bwrap or setpriv, or None: not isolated
    mode: str | None = None  # "bwrap", "user" or None
    reason: str = ""  # why not bwrap (a `Reason`: English, translated by `describe`)
    sizes: bool = True  # bwrap caps the size of a tmpfs (--size: bubblewrap 0.7 and later)
    cgroups: object = None  # where each sandbox's cgroup is made (`cgroups.Place`), why nowhere (a `Reason`)

    @property
    def isolated(self) -> bool:
        return self.mode is not None

    @property
    def namespaces(self) -> bool:
        """True in a bubblewrap sandbox (own network, file system and PID namespace)."""
        return self.mode == "bwrap"

    def describe(self) -> str:
        """One line for the instructor and for results.json."""
        if self.mode == "bwrap":
            return "; ".join([_("isolated: each submission in its own bubblewrap sandbox (no network, "
                                "read-only system)"), *self.bounds()])
        if self.mode == "user":
            # TRANSLATORS: {reason} says why bubblewrap cannot be used; 'Threat model' names a section of the
            # English docs (keep it).
            said = _("isolated by user only: submissions run as uid 65534 (setpriv), every process of that "
                     "user ended before results are written, because {reason}; they can reach the network "
                     "and read what any user may (see docs/instructors.md, 'Threat model')").format(
                         reason=shown(self.reason))
            return "; ".join([said, *self.bounds()])
        # TRANSLATORS: {reason} says why submissions cannot be isolated; 'Threat model' names a section of the
        # English docs (keep it).
        return _("NOT isolated: {reason}. Submissions run as the grader's own user and can read and change "
                 "what it can (see docs/instructors.md, 'Threat model'); install bubblewrap (apt-get install "
                 "bubblewrap) on Linux to isolate them").format(reason=shown(self.reason))

    def bounds(self) -> list[str]:
        """What bounds a submission's memory and files together, where that is less than everywhere."""
        said = []
        if isinstance(self.cgroups, cgroups.Place):
            said.append(_("the memory of all its processes counted together, in a cgroup of its own"))
        elif self.cgroups is not None:
            # TRANSLATORS: {reason} says why no cgroup can be made ("cgroups switched off (...)").
            said.append(_("memory bounded per process only, not for all its processes together (no cgroup: "
                          "{reason})").format(reason=shown(self.cgroups)))
        if self.mode == "user":
            said.append(_("the files it writes bounded one by one only: its scratch folder and /tmp are not "
                          "capped in size"))
        elif not self.sizes:
            # TRANSLATORS: {program} is the bwrap program; keep --size.
            said.append(_("its scratch folder and /tmp not capped in size ({program} has no --size; "
                          "bubblewrap 0.7 and later have it)").format(program=self.program))
        return said


@functools.cache
def probe() -> Isolation:
    """Find how to isolate submissions here (once per process).

    bubblewrap where it can make a sandbox; else, for a grader running as root (a container such
    as Gradescope's, where user namespaces are forbidden), a separate unprivileged user through
    setpriv; else nothing. `D2LMINI_SANDBOX` ("bwrap", "user", "none") forces one, for tests.
    """
    wanted = os.environ.get("D2LMINI_SANDBOX", "auto")
    if wanted == "none":
        return Isolation(None, None, Reason(N_("isolation switched off (D2LMINI_SANDBOX=none)")))
    why = _bwrap_problem() if wanted != "user" else "D2LMINI_SANDBOX=user"
    if why is None:
        program = shutil.which(os.environ.get("D2LMINI_BWRAP", "bwrap"))
        return Isolation(program, "bwrap", sizes=_caps_sizes(program), cgroups=cgroups.find())
    setpriv = shutil.which("setpriv")
    if wanted != "bwrap" and os.geteuid() == 0 and setpriv is not None:
        python = limited_command(4096, 64, [sys.executable, "-c", "import d2lmini.grading.run.caller"])
        # as the kernel and the caller start: Python runs Python
        user = [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups", "--"]
        trial = subprocess.run([*user, *python], capture_output=True, text=True, timeout=120,
                               env={"PYTHONPATH": str(PACKAGE.parent)}, cwd="/")
        if trial.returncode == 0:
            return Isolation(setpriv, "user", why, cgroups=cgroups.find())
        # TRANSLATORS: {why} says why bubblewrap cannot be used; {error} is the end of Python's error output.
        why = Reason(N_("{why}; and uid {uid} cannot run this Python and d2lmini ({error})"), why=why,
                     uid=SANDBOX_UID, error=trial.stderr.strip()[-150:])
    return Isolation(None, None, why)


def _bwrap_problem() -> str | None:
    """Why bwrap cannot make a sandbox here, or None if it can."""
    name = os.environ.get("D2LMINI_BWRAP", "bwrap")
    program = shutil.which(name) if name else None
    if program is None:
        # TRANSLATORS: {name} is the bwrap program's name, or the text "switched off by D2LMINI_BWRAP".
        return Reason(N_("bubblewrap ({name}) is not installed"),
                      name=name or Reason(N_("switched off by D2LMINI_BWRAP")))
    try:
        trial = subprocess.run([program, *_namespaces(), "--ro-bind", "/", "/", "--", "true"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Reason(N_("{program} could not run ({error})"), program=program, error=str(error))
    if trial.returncode != 0:
        # TRANSLATORS: {error} is the start of bwrap's own error output.
        return Reason(N_("{program} cannot make a sandbox here ({error})"), program=program,
                      error=trial.stderr.strip()[:200])
    return None


def _caps_sizes(program: str) -> bool:
    """Whether `program` (bwrap) makes a tmpfs of a given size (`--size`, bubblewrap 0.7 and later)."""
    trial = [program, *_namespaces(), "--ro-bind", "/", "/", "--size", str(2**20), "--tmpfs", "/tmp", "--",
             "true"]
    try:
        return subprocess.run(trial, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _namespaces() -> list[str]:
    return ["--unshare-all", "--die-with-parent", "--new-session", "--uid", str(SANDBOX_UID), "--gid",
            str(SANDBOX_UID), "--cap-drop", "ALL"]


def _python_folders() -> list[Path]:
    """The folders this Python imports from; not a checkout holding d2lmini (its package is bound alone)."""
    folders = {Path(sys.base_prefix), Path(sys.prefix)}
    folders |= {Path(p) for p in sysconfig.get_paths().values()}
    for entry in sys.path:  # installed packages only: never the working folder or a checkout
        path = Path(entry).resolve() if entry else None
        if path is not None and path.name in ("site-packages", "dist-packages") and path.is_dir():
            folders.add(path)
    real = {Path(os.path.realpath(sys.executable)).parent.parent}
    return sorted(p for p in folders | real if p.is_dir())


def _covered(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def command(program: list[str], scratch: Path, env: dict[str, str], package_files: list[Path] | None = None,
            hide: tuple[Path, ...] = (), status: Path | None = None, sockets: Path | None = None,
            scratch_mb: int | None = None, cgroup: "cgroups.Cgroup | None" = None,
            inputs: tuple[Path, ...] = ()) -> list[str]:
    """The argv that runs `program` in a sandbox whose only writable folder is `scratch`.

    `package_files`: only these files of the d2lmini package are in the sandbox (the judge's
    caller), else the whole package folder. `hide`: more folders to cover with an empty tmpfs
    where a bound folder holds them (the output folder, the submissions). `status`: a file where
    bwrap writes the host PID of the sandbox's first process (`wait_gone` reads it). `sockets`: a
    second writable folder, with a short path, for the kernel's Unix sockets (at most 107 bytes): a
    tmpfs of a megabyte there, which the grader reaches through the sandbox's root in /proc.
    `cgroup`: the sandbox's own (`new_cgroup`), which it joins before anything runs.

    In bubblewrap, `scratch` is a fresh tmpfs of at most `scratch_mb` MB (the setting's default
    when None), and so are /tmp and /dev/shm; everything else is read-only, the sandbox's root and
    /dev too. What the grader put in `scratch` for it is seen there read-only: `inputs`. What the
    sandbox writes there the grader reads while it runs (`open_inside`).
    """
    isolation = probe()
    if not isolation.isolated:
        raise RuntimeError(isolation.describe())  # in the language d2lmini speaks now
    # A kernel's bwrap starts in the scratch folder, where a path relative to the grader's folder (from
    # `--out out`) names nothing: every sandbox would fail to start.
    scratch = Path(scratch).absolute()
    sockets, status = (Path(p).absolute() if p is not None else None for p in (sockets, status))
    if not isolation.namespaces:
        argv = _as_sandbox_user(isolation.program, program, scratch)
        return cgroup.wrap(argv) if cgroup is not None else argv
    megabytes = scratch_mb if scratch_mb is not None else Limits().scratch_mb
    size = ["--size", str(megabytes * 2**20)] if isolation.sizes else []
    argv = [isolation.program, *_namespaces(), *_read_only(size, package_files, hide)]
    if sockets is not None:
        argv += [*(["--size", str(2**20)] if size else []), "--tmpfs", str(sockets)]
    argv += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
             *size, "--tmpfs", str(scratch)]
    for path in inputs:
        argv += ["--ro-bind", str(Path(path).absolute()), str(Path(path).absolute())]
    argv += ["--remount-ro", "/", "--chdir", str(scratch), "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    if status is not None:
        argv = ["/bin/sh", "-c", f'exec "$@" 3>"{status}"', "sh", *argv, "--json-status-fd", "3"]
    argv = [*argv, "--", *program]
    return cgroup.wrap(argv) if cgroup is not None else argv


def _read_only(size: list[str], package_files: list[Path] | None, hide: tuple[Path, ...]) -> list[str]:
    """bwrap's arguments for the system, Python and the package, read-only, and /tmp (`size`: its cap)."""
    argv, bound = [], [Path(p) for p in SYSTEM if Path(p).exists()]
    for path in bound:
        argv += ["--ro-bind", str(path), str(path)] if not Path(path).is_symlink() else \
            ["--symlink", os.readlink(path), str(path)]
    argv += [*size, "--tmpfs", "/tmp", "--dir", "/tmp/home"]  # before the binds: a venv in /tmp stays seen
    for folder in _python_folders():
        if not _covered(folder, bound):
            argv += ["--ro-bind", str(folder), str(folder)]
            bound.append(folder)
    if _covered(PACKAGE, bound):  # an installed (not editable) d2lmini: empty its folder, then bind
        argv += ["--tmpfs", str(PACKAGE)]
    for path in (package_files if package_files is not None else [PACKAGE]):
        argv += ["--ro-bind", str(path), str(path)]
    bound += [PACKAGE]
    for path in (*[Path(p) for p in HIDDEN], PACKAGE.parent / "solutions", *hide):
        path = Path(path).resolve()
        if path.is_dir() and _covered(path, bound) and not _covered(PACKAGE, [path]):
            argv += ["--tmpfs", str(path)]
    return argv


def new_cgroup(memory_mb: int) -> "cgroups.Cgroup | None":
    """A cgroup of its own for a sandbox, limited to `memory_mb` MB and `limits.TASKS` tasks; None where
    this machine has no writable cgroup (`Isolation.cgroups` says why) or no sandbox to put in one.
    Removed with `Cgroup.remove`."""
    isolation = probe()
    if not isolation.isolated or not isinstance(isolation.cgroups, cgroups.Place):
        return None
    return cgroups.Cgroup.create(isolation.cgroups, memory_mb, TASKS)


def open_inside(status: Path, folder: Path) -> int:
    """A descriptor of `folder` as the running sandbox of `status` sees it (its scratch folder, a tmpfs
    there), walked from the sandbox's root without following a link, as `files.read_plain` walks on."""
    pid = sandbox_pid(status)
    if pid is None:
        raise FileNotFoundError(errno.ESRCH, "no sandbox is running", str(status))
    descriptor = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in Path(folder).absolute().parts[1:]:
            inner = open_folder(part, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = inner
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _as_sandbox_user(setpriv: str, program: list[str], scratch: Path) -> list[str]:
    """`program` run as uid/gid 65534 with no groups and no way to gain privileges; `scratch` made its own."""
    give_folder(scratch, SANDBOX_UID)
    return [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups", "--no-new-privs",
            "--", *program]


def give_folder(scratch: Path, owner: int) -> list[str]:
    """Give `scratch` and the HOME folder `clean_env` makes in it to `owner`; return the names given.

    Nothing else: everything else there was made by `owner` (a kernel of the student's that ran there
    before), or by the grader for `owner` only to read. No link is followed, and no walk is made, so a
    folder holding millions of a student's links costs two system calls, never a chown through a link.
    """
    descriptor = open_folder(scratch)
    try:
        os.fchown(descriptor, owner, owner)
        given = ["."]
        try:  # a link a student left under this name: its own owner changes, not its target's
            os.chown(HOME, owner, owner, dir_fd=descriptor, follow_symlinks=False)
            given.append(HOME)
        except FileNotFoundError:
            pass
    finally:
        os.close(descriptor)
    return given


def end_user_processes(seconds: float = 30.0) -> bool:
    """End every process of the sandbox user (user isolation); True once none is left."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _uid_of(p) == SANDBOX_UID]
        if not left:
            return True
        subprocess.run([probe().program, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
                        "--", "kill", "-KILL", "-1"], capture_output=True, timeout=30)
        time.sleep(0.1)
    return False


def _uid_of(process: Path) -> int | None:
    try:
        line = next(x for x in (process / "status").read_text().splitlines() if x.startswith("Uid:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1])


def sandbox_pid(status: Path) -> int | None:
    """The host PID of the sandbox's first process (bwrap wrote it to `status`), or None."""
    try:
        for line in status.read_text("utf-8").splitlines():
            data = json.loads(line)
            if "child-pid" in data:
                return int(data["child-pid"])
    except (OSError, ValueError):
        return None
    return None


def wait_gone(status: Path, seconds: float = 30.0) -> bool:
    """Wait until the sandbox whose status file is `status` has no process left; True if so.

    Its first process is the PID namespace's init: the kernel ends every process of the
    namespace when it ends, so its PID disappearing means the whole tree is gone.
    """
    if probe().mode == "user":
        return end_user_processes(seconds)
    pid = sandbox_pid(status)
    if pid is None:
        return True
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        if state.rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def clean_env(scratch: Path) -> dict[str, str]:
    """The environment a program of a submission gets: no proxies, no secrets, HOME in a fresh place.

    In a sandbox HOME, TMPDIR and IPython's folder are in its own fresh /tmp, so nothing written
    there (an IPython startup file) outlives the sandbox; unsandboxed they are in `scratch`. The
    grader's language (`D2LMINI_LANG`) is passed on when it is set: the kernel's errors and the
    caller process's refusals end up in the feedback, which is written in that language.
    """
    home = Path("/tmp/home") if probe().namespaces else scratch / HOME
    if not probe().namespaces:
        with contextlib.suppress(FileExistsError):  # a student's own, from a run before (a link, even)
            home.mkdir(parents=True)
    env = {"HOME": str(home), "TMPDIR": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "MPLCONFIGDIR": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "D2LMINI_CACHE": str(home / ".cache" / "d2lmini"), "IPYTHONDIR": str(home / ".ipython"),
           "JUPYTER_RUNTIME_DIR": str(home / ".runtime"), "PYTHONDONTWRITEBYTECODE": "1",
           "MPLBACKEND": "agg", "PYTHONNOUSERSITE": "1", "PIP_NO_INDEX": "1",
           "PYTHONPATH": str(PACKAGE.parent), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "MALLOC_ARENA_MAX": ENVIRONMENT["MALLOC_ARENA_MAX"]}  # fewer reserved arenas: less address space
    if os.environ.get(ENVIRONMENT_VARIABLE):
        env[ENVIRONMENT_VARIABLE] = os.environ[ENVIRONMENT_VARIABLE]
    return env
