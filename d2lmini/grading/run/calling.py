"""The grader's side of the process that calls a student's saved functions (`caller`): start it in a
sandbox and a cgroup of its own, with the package files it needs and none of the reference code
(`caller_files`), wait until it has loaded the functions, and end it, every process it started gone.
"""

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.base.files import create_plain
from d2lmini.grading.base.remote import read_line
from d2lmini.grading.run import copies, sandbox
from d2lmini.grading.run.kernel import GraderFailure, peak_of_tree
from d2lmini.grading.run.limits import limited_command
from d2lmini.i18n import _

READY_SECONDS = 180.0  # for a caller process to start and load the function
CALL_MARGIN = 20.0  # seconds a remote call may take beyond the guard's own limit (transfers)


@functools.cache
def caller_files(with_models: bool) -> tuple[Path, ...]:
    """The package files a caller process needs (the exercise machinery; with the model classes if asked).

    With them the compiled catalogs (`d2lmini/locale`): the process writes its messages in the
    grader's language (`D2LMINI_LANG`, passed on by `sandbox.clean_env`).
    """
    modules = "d2lmini.grading.run.limits, d2lmini.grading.run.caller" + (
        ", d2lmini.rnn" if with_models else "")
    listing = (f"import sys, json, {modules}; print(json.dumps(sorted({{m.__file__ for n, m in "
               "list(sys.modules.items()) if n.split('.')[0] == 'd2lmini' "
               "and getattr(m, '__file__', None)})))")
    env = dict(os.environ, PYTHONPATH=str(sandbox.PACKAGE.parent))
    found = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, env=env,
                           check=True)
    catalogs = sorted((sandbox.PACKAGE / "locale").rglob("*.mo"))
    return tuple(Path(f) for f in json.loads(found.stdout.splitlines()[-1])) + tuple(catalogs)


@functools.cache
def package_fingerprints() -> dict[str, str]:
    """The fingerprints of the package's functions (`d2lmini.grading.run.copies`), computed here."""
    return copies.known_fingerprints([sandbox.PACKAGE])


class Caller:
    """A fresh process, sandboxed, that calls a student's saved functions for one check.

    `functions`: each slot's saved function, as the bytes `saved_function` read (never a path the grader
    would open again: the student's scratch folder is not read twice).
    """

    def __init__(self, functions: dict[str, bytes], folder: Path, limits: Limits, with_models: bool):
        shutil.rmtree(folder, ignore_errors=True)
        self.scratch, self.status = folder / "scratch", folder / "status"
        self.scratch.mkdir(parents=True)
        known, saved = self.scratch / "known.json", []
        files = {known.name: json.dumps(package_fingerprints()).encode()}
        for index, (slot, function) in enumerate(functions.items()):
            files[f"function-{index}.pkl"] = function
            saved.append(f"{slot}={self.scratch / f'function-{index}.pkl'}")
        for name, data in files.items():  # the grader's, for the sandbox user to read
            create_plain(self.scratch, name, data, 0o644)
        program = limited_command(limits.memory_mb, limits.file_mb,
                              [sys.executable, "-m", "d2lmini.grading.run.caller", str(known), *saved])
        self.cgroup = sandbox.new_cgroup(limits.memory_mb)
        try:
            self.process = self._start(program, files, limits, with_models)
        except BaseException:
            if self.cgroup is not None:
                self.cgroup.remove()
            raise

    def _start(self, program: list[str], files: dict, limits: Limits, with_models: bool) -> subprocess.Popen:
        """Start `program` (the caller, under its limits) in its sandbox and cgroup."""
        env = sandbox.clean_env(self.scratch)
        if sandbox.probe().namespaces:  # its scratch folder a tmpfs there, the grader's files in it
            argv = sandbox.command(program, self.scratch, env, caller_files(with_models), status=self.status,
                                   scratch_mb=limits.scratch_mb, cgroup=self.cgroup,
                                   inputs=tuple(self.scratch / name for name in files))
            env = {}
        elif sandbox.probe().isolated:  # another user, with the grader's Python path
            argv = sandbox.command(program, self.scratch, env, cgroup=self.cgroup)
        else:
            argv, env = program, dict(os.environ) | env | {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, cwd=self.scratch, env=env or None,
                                start_new_session=True)

    def ready(self) -> str | None:
        """Wait for the process to load the function; None if it did, else what went wrong.

        Raises `GraderFailure` if the process never said it started (before any of the student's code
        loads): the sandbox or the process failed, not the student's function.
        """
        started = _parse_line(read_line(self.process.stdout, READY_SECONDS))
        if started.get("started") is not True:
            raise GraderFailure(_("the process that calls your function did not start"))
        answer = _parse_line(read_line(self.process.stdout, READY_SECONDS))
        if not answer:
            return _("the process that calls your function ended while it loaded your function")
        if answer.get("ready") is True:
            return None
        error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
        which = f"{str(answer.get('function', ''))[:60]}: " if answer.get("function") else ""
        return f"{which}{str(error.get('type', 'Error'))[:60]}: {str(error.get('message', ''))[:300]}"

    def close(self) -> None:
        """End the process and every process it started; return once they are gone.

        Keeps the peak resident memory of its processes (MB) in `peak`.
        """
        self.peak = peak_of_tree(self.process.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        if not sandbox.wait_gone(self.status):
            raise RuntimeError(_("the sandbox of {folder} did not end").format(folder=self.scratch))
        if self.cgroup is not None:
            self.cgroup.remove()


def _parse_line(line: bytes | None) -> dict:
    """A reply line as a dict ({} for none, or for one that is not a JSON object)."""
    try:
        answer = json.loads(line) if line is not None else None
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def start_caller(saved: dict[str, bytes], folder: Path, limits: Limits, with_models: bool) -> tuple:
    """A `Caller` for `saved` and what `ready` said; a caller that did not start is tried once more."""
    for attempt in (1, 2):
        caller = None
        try:
            try:
                caller = Caller(saved, folder, limits, with_models)
            except OSError as error:  # the sandbox's program, or its folder
                raise GraderFailure(_("the process that calls your function did not start ({error})").format(
                    error=error)) from error
            return caller, caller.ready()
        except GraderFailure as failure:
            if caller is not None:
                caller.close()
            if attempt == 2:
                raise
            print(_("warning: {file}: {error}; trying once more").format(file=folder, error=failure),
                  file=sys.stderr)
    raise AssertionError("unreachable")
