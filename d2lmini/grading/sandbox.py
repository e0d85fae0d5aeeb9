"""The operating-system boundary around everything a submission runs: Debian's bubblewrap (`bwrap`).

Each student's kernel, and each fresh process that calls a student's function for the judge
(`d2lmini.grading.caller`), starts as `bwrap ... PROGRAM`:

- `--unshare-all`: its own user, PID, network (loopback only), IPC, UTS and cgroup namespaces;
  inside it is uid/gid 65534 with no capabilities (`--cap-drop ALL`), even when the grader is
  root (CI, Gradescope's container);
- `--die-with-parent` and the PID namespace: when the sandbox's first process ends, the kernel
  ends every process it started, detached ones too; `wait_gone` waits for that before the
  grader writes any result;
- a file system made only of what Python needs, read-only: the system's `/usr`, `/etc` and
  library folders, this Python (its prefix and site folders) and the `d2lmini` package folder
  alone (not the repository beside it: no `solutions/`), a fresh `/tmp`, a fresh `/proc` of its
  own PID namespace (the grader's command line is not there), and one writable folder, its
  scratch. The output folder, the submissions, the instructor's config, /root and /home are not
  in it (covered by an empty tmpfs where they lie under a folder that is);
- a clean environment (`--clearenv`), HOME and TMPDIR in the scratch folder.

Where bwrap is missing or cannot make namespaces (macOS, a container without user namespaces)
`probe` says why, the grader announces before it starts that submissions run NOT isolated, and
the results record it. `D2LMINI_BWRAP` names another bwrap program ("" turns the sandbox off,
for tests of that announcement).
"""

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

PACKAGE = Path(__file__).resolve().parents[1]  # the d2lmini folder: the only part of a checkout bound
SANDBOX_UID = 65534  # "nobody" inside the user namespace
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
HIDDEN = ("/root", "/home", "/run", "/var", "/srv", "/mnt", "/media")  # emptied where a bound folder holds them


@dataclass(frozen=True)
class Isolation:
    """Whether submissions run in a sandbox, and why not when they do not."""

    program: str | None  # the bwrap executable, or None: not isolated
    reason: str = ""

    @property
    def isolated(self) -> bool:
        return self.program is not None

    def describe(self) -> str:
        """One line for the instructor and for results.json."""
        if self.isolated:
            return "isolated: each submission in its own bubblewrap sandbox (no network, read-only system)"
        return ("NOT isolated: " + self.reason + ". Submissions run as the grader's own user and can read and "
                "change what it can (see docs/instructors.md, 'Threat model'); install bubblewrap "
                "(apt-get install bubblewrap) on Linux to isolate them")


@functools.cache
def probe() -> Isolation:
    """Find bwrap and check that it can make a sandbox here (once per process)."""
    name = os.environ.get("D2LMINI_BWRAP", "bwrap")
    program = shutil.which(name) if name else None
    if program is None:
        return Isolation(None, f"bubblewrap ({name or 'switched off by D2LMINI_BWRAP'}) is not installed")
    try:
        trial = subprocess.run([program, *_namespaces(), "--ro-bind", "/", "/", "--", "true"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Isolation(None, f"{program} could not run ({error})")
    if trial.returncode != 0:
        return Isolation(None, f"{program} cannot make a sandbox here ({trial.stderr.strip()[:200]})")
    return Isolation(program)


def _namespaces() -> list[str]:
    return ["--unshare-all", "--die-with-parent", "--new-session", "--uid", str(SANDBOX_UID), "--gid",
            str(SANDBOX_UID), "--cap-drop", "ALL"]


def _python_folders() -> list[Path]:
    """The folders this Python imports from, except a checkout holding d2lmini (its package is bound alone)."""
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
            hide: tuple[Path, ...] = (), status: Path | None = None) -> list[str]:
    """The argv that runs `program` in a sandbox whose only writable folder is `scratch`.

    `package_files`: only these files of the d2lmini package are in the sandbox (the judge's
    caller), else the whole package folder. `hide`: more folders to cover with an empty tmpfs
    where a bound folder holds them (the output folder, the submissions). `status`: a file where
    bwrap writes the host PID of the sandbox's first process (`wait_gone` reads it).
    """
    isolation = probe()
    if not isolation.isolated:
        raise RuntimeError(isolation.describe())
    argv = [isolation.program, *_namespaces()]
    bound = [Path(p) for p in SYSTEM if Path(p).exists()]
    for path in bound:
        argv += ["--ro-bind", str(path), str(path)] if not Path(path).is_symlink() else \
            ["--symlink", os.readlink(path), str(path)]
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
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/tmp/home", "--bind", str(scratch), str(scratch),
             "--chdir", str(scratch), "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    if status is not None:
        return ["/bin/sh", "-c", f'exec "$@" 3>"{status}"', "sh", *argv, "--json-status-fd", "3", "--",
                *program]
    return [*argv, "--", *program]


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
    there (an IPython startup file) outlives the sandbox; unsandboxed they are in `scratch`.
    """
    home = Path("/tmp/home") if probe().isolated else scratch / "home"
    if not probe().isolated:
        home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "TMPDIR": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8", "MPLCONFIGDIR": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
            "D2LMINI_CACHE": str(home / ".cache" / "d2lmini"), "IPYTHONDIR": str(home / ".ipython"),
            "JUPYTER_RUNTIME_DIR": str(home / ".runtime"), "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "agg", "PYTHONNOUSERSITE": "1", "PIP_NO_INDEX": "1",
            "PYTHONPATH": str(PACKAGE.parent), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
