"""Before anyone is graded: can this machine start a student's sandboxed kernel and caller at all?

`preflight` starts one trivial kernel and one caller as a student's would be started and raises
`GraderUnavailable`, saying why, if either cannot start, so that a class of zeros is never written.
"""

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.run import sandbox
from d2lmini.grading.run.calling import Caller
from d2lmini.grading.run.kernel import GraderFailure, Kernel, kernel_env
from d2lmini.grading.run.limits import KERNEL_IMPORTS, limited_command
from d2lmini.grading.run.notebook import BOOTSTRAP
from d2lmini.i18n import _

PREFLIGHT_IMPORTS = KERNEL_IMPORTS  # what every graded kernel needs first


class GraderUnavailable(RuntimeError):
    """This machine cannot start a sandboxed kernel at all: no student can be graded here."""


# What preflight has started in this process: (isolation, limits, Python, environment). A class graded
# again by the same process (an instructor's notebook, the tests) starts nothing new to learn the same.
_STARTED: set[tuple] = set()


def preflight(work: Path, limits: Limits) -> None:
    """Start one trivial kernel in `work` as a student's would be started; raise `GraderUnavailable`,
    saying why, if it cannot start (before anyone is graded: a class of zeros is never written).

    Once a kernel and a caller have started in this process with the same isolation, bounds on
    memory and files (the limits a start depends on; the time limits and restarts do not), Python
    and environment, a later call checks only `work`'s own folders."""
    started = (sandbox.probe(), limits.memory_mb, limits.file_mb, limits.scratch_mb, sys.executable,
               tuple(sorted(os.environ.items())))
    problem = _closed_folder(work)
    if problem is None and started in _STARTED:
        return
    scratch = work / "preflight"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        problem = problem or _import_problem(scratch, limits)
        if problem is None:
            kernel = Kernel(scratch, limits)
            try:
                failed, ended = kernel.run(BOOTSTRAP, 120)
                problem = failed or (_("the kernel ended") if ended else None)
            finally:
                kernel.shutdown()
        if problem is None:  # and the process that calls a student's function, with a builtin
            caller = Caller({"function": pickle.dumps(len)}, work / ".preflight-call", limits,
                            with_models=False)
            try:
                problem = caller.ready()
            finally:
                caller.close()
    except (GraderFailure, OSError, subprocess.SubprocessError) as error:
        problem = str(error)
    finally:
        for made in (scratch, *work.glob(".preflight-*")):
            shutil.rmtree(made, ignore_errors=True)
    if problem is None:
        _STARTED.add(started)
    else:
        # TRANSLATORS: {how} says how submissions are isolated; {problem} is what failed (Python's error).
        raise GraderUnavailable(
            _("the grader cannot start a kernel for a submission here ({how}): {problem}. Nobody was graded; "
              "see docs/instructors.md, 'When the grader cannot start'").format(
                  how=sandbox.probe().describe(), problem=problem))


def _closed_folder(work: Path) -> str | None:
    """In "user" isolation: make `work` (the grader's own folder) enterable by the sandbox user, and say
    which folder above it that user cannot enter, if one (then no kernel could start in it)."""
    if sandbox.probe().mode != "user":
        return None
    work.chmod(work.stat().st_mode | 0o111)  # enter, not list: the students' folders are named inside
    for folder in work.absolute().parents:
        if not folder.stat().st_mode & 0o001 and folder.stat().st_uid != sandbox.SANDBOX_UID:
            # TRANSLATORS: {uid} is a number (65534); {folder} a path; chmod o+x is a command (keep it).
            return _("uid {uid}, which runs the submissions, cannot enter {folder}: allow it (chmod o+x "
                     "{folder}) or give an --out that it can reach").format(uid=sandbox.SANDBOX_UID,
                                                                            folder=folder)
    return None


def _import_problem(scratch: Path, limits: Limits) -> str | None:
    """The end of Python's error output if the sandboxed Python cannot import what a kernel needs."""
    program = limited_command(limits.memory_mb, limits.file_mb, [sys.executable, "-c", PREFLIGHT_IMPORTS])
    env, cgroup = sandbox.clean_env(scratch), None
    if sandbox.probe().isolated:
        cgroup = sandbox.new_cgroup(limits.memory_mb)
        argv = sandbox.command(program, scratch, env, scratch_mb=limits.scratch_mb, cgroup=cgroup)
        env = None if sandbox.probe().namespaces else env
    else:
        argv, env = program, kernel_env(scratch)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=scratch, env=env, timeout=300)
    finally:
        if cgroup is not None:
            cgroup.remove()
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return " / ".join(lines[-3:])[-400:] or _("exit status {code}").format(code=done.returncode)
