"""Grade one student's submitted notebooks: run each in its kernel, judge here, give points and messages.

Answers and functions come out of the student's sandboxed kernel (`d2lmini.grading.run.kernel`),
which is shut down, every process of its sandbox gone, before anything is judged. Each answer
is judged by the notebook's own check, in this process, with the released notebook's arguments
and the instructor's seed: the check's cases and expected values are never in the kernel. A
function is called for its check in a fresh sandboxed process (`d2lmini.grading.run.caller`) that
has none of the package's reference code, with the check's own bans.
"""

import ast
import contextlib
import functools
import importlib
import io
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from d2lmini.exercises import Verdict
from d2lmini.exercises.coding import Tally, counted_cases, shifted_seeds
from d2lmini.grading.assignment.manifest import Exercise, check_calls, python_of
from d2lmini.grading.base.files import NotPlainFile, create_plain, read_plain
from d2lmini.grading.base.remote import CALL_SECONDS, RemoteFunction, decode, local_device, read_line
from d2lmini.grading.judging import evidence, similarity
from d2lmini.grading.run import copies, sandbox
from d2lmini.grading.run.kernel import (
    CALL_MARGIN,
    OUTPUT_LIMIT,
    GraderFailure,
    Kernel,
    Limits,
    NotebookRun,
    kernel_env,
    peak_of_tree,
    rewrite,
)
from d2lmini.grading.run.limits import KERNEL_IMPORTS, limited_command
from d2lmini.i18n import _

FUNCTION_LIMIT = 64 * 2**20  # bytes of a saved function the grader passes on to a caller process
READY_SECONDS = 180.0  # for a caller process to start and load the function

BOOTSTRAP = "import d2lmini.grading.run.agent as __d2lmini_grading__"


@dataclass
class Mark:
    """The points one exercise earned and the message that says why."""

    exercise: str
    points: float
    max_points: float
    message: str
    # False: the grader itself failed (a dead worker, kernel or sandbox), so this is no grade; its 0
    # counts as "not graded", and the record is graded again on the next run, never kept.
    graded: bool = True


@dataclass
class Submission:
    """One submitted file: its cells' sources (None if it is not a notebook) and what was wrong with it."""

    path: Path
    cells: list[str] | None
    problem: str | None = None


def read_submission(path: Path) -> Submission:
    """Read a submitted file as a notebook; one that is not readable says why, in words for the student."""
    import nbformat

    if path.is_symlink() or path.parent.is_symlink():  # a link to a classmate's file is not an upload
        return Submission(path, None, _("{file} is a link to another file, not an uploaded notebook, so it "
                                        "was not graded: upload the .ipynb file itself.").format(
                                            file=path.name))
    try:
        notebook = nbformat.read(path, as_version=4)
        cells = [c.source for c in notebook.cells if c.cell_type == "code"]
    except Exception as error:  # anything at all may be uploaded
        reason = type(error).__name__
        # TRANSLATORS: {reason} is the name of a Python exception (JSONDecodeError).
        return Submission(path, None, _("{file} could not be read as a Jupyter notebook ({reason}): upload "
                                        "the .ipynb file that Jupyter saves, not a copy or an "
                                        "export.").format(
                                            file=path.name, reason=reason))
    return Submission(path, cells)


def matching_notebook(submission: Submission, exercises: list[Exercise]) -> str | None:
    """The course notebook whose check calls the submission has most of (None if it has none)."""
    if submission.cells is None:
        return None
    counts: dict[str, int] = {}
    names = {e.check for e in exercises}
    for source in submission.cells:
        try:
            calls = check_calls(ast.parse(python_of(source)), names)
        except (SyntaxError, ValueError, RecursionError):  # a cell Python cannot read (null bytes, nesting)
            continue
        for call in calls:
            name = call.func.id if hasattr(call.func, "id") else call.func.attr
            for e in exercises:
                if e.check == name:
                    counts[e.notebook] = counts.get(e.notebook, 0) + 1
    return max(counts, key=counts.get) if counts else None


def _run_cells(kernel: Kernel, cells: list[str], exercises: dict[str, Exercise], run: NotebookRun,
               limits: Limits, started: float) -> int | None:
    """Run the cells not skipped; return the index of a cell that ended the kernel, or None."""
    problem, ended = kernel.run(BOOTSTRAP, 120)
    if problem or ended:  # before any cell of the student's: the grader's failure
        raise GraderFailure(_("the grading kernel did not start: {problem}").format(problem=problem))

    def on_message(data):
        if "record" in data:
            run.records[data["record"]] = data.get("values", {})

    for index, source in enumerate(cells):
        if index in run.skipped:
            for exercise_id in rewrite(source, exercises)[1]:
                run.check_cells[exercise_id] = index
            continue
        left = limits.notebook_seconds - (time.monotonic() - started)
        if left <= 0:
            # TRANSLATORS: why a notebook's grading stopped; it follows "Not graded: ".
            run.stopped = _("the notebook ran past its time limit of {seconds:g} s before cell "
                            "{cell}").format(seconds=limits.notebook_seconds, cell=index + 1)
            return None
        code, found = rewrite(source, exercises)
        for exercise_id in found:
            run.check_cells[exercise_id] = index
        problem, ended = kernel.run(code, min(limits.cell_seconds, left), on_message)
        if ended:
            return index
        if problem:
            run.cells[index] = problem
    return None


def execute(submission: Submission, exercises: list[Exercise], scratch: Path,
            limits: Limits) -> tuple[NotebookRun, Kernel | None]:
    """Run the submission's cells in a fresh kernel (again without any cell that ends one)."""
    by_check = {e.check: e for e in exercises}
    skipped: set[int] = set()
    started = time.monotonic()
    for _attempt in range(limits.restarts + 1):
        run, kernel = NotebookRun(skipped=set(skipped)), Kernel(scratch, limits)
        killer = _run_cells(kernel, submission.cells, by_check, run, limits, started)
        if killer is None:
            return run, kernel
        skipped.add(killer)
        kernel.shutdown()
    # TRANSLATORS: why a notebook's grading stopped; it follows "Not graded: ".
    run.stopped = _("cells ended the kernel more often than the grader restarts it")
    return run, None


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


def execute_retried(submission: Submission, exercises: list[Exercise], scratch: Path,
                    limits: Limits) -> tuple[NotebookRun, Kernel | None]:
    """`execute`, once more if a kernel did not start (`GraderFailure`: the grader's fault, not the
    student's); a second failure is raised."""
    try:
        return execute(submission, exercises, scratch, limits)
    except GraderFailure as failure:
        print(_("warning: {file}: {error}; trying once more").format(file=submission.path, error=failure),
              file=sys.stderr)
    return execute(submission, exercises, scratch, limits)


def not_graded(reason: str) -> str:
    """The message of a mark the grader could not give (`Mark.graded` False): never a grade of 0."""
    # TRANSLATORS: {reason} says what failed in the grader ("the grading kernel did not start (...)").
    return _("Not graded — the grader failed: {reason}. This is not a mark of 0: tell your instructor, who "
             "grades it again.").format(reason=reason)


def _reason_missing(exercise: Exercise, run: NotebookRun, limits: Limits) -> str:
    index = run.check_cells.get(exercise.id)
    if index is None and run.stopped:
        # TRANSLATORS: {reason} says why the notebook's grading stopped.
        return _("Not graded: {reason}.").format(reason=run.stopped)
    if index is None:
        return _("The cell that checks this exercise (`{check}(...)`) is not in your notebook, or its call "
                 "was changed: copy it back from the released notebook and run it.").format(
                     check=exercise.check)
    if index in run.skipped:
        return _("Cell {cell}, which checks this exercise, ended the notebook's kernel (os._exit, a crash, "
                 "or more memory than allowed), so it was left out.").format(cell=index + 1)
    problem = run.cells.get(index)  # "time limit", "printing", or the error the cell stopped with
    if problem == "time limit":
        return _("Cell {cell}, which checks this exercise, was still running after {seconds:g} s and was "
                 "stopped.").format(cell=index + 1, seconds=limits.cell_seconds)
    if problem == "printing":
        return _("Cell {cell}, which checks this exercise, printed more than {limit:,} characters and was "
                 "stopped.").format(cell=index + 1, limit=OUTPUT_LIMIT)
    if problem and "allocate" in problem:
        # TRANSLATORS: {error} is Python's error message, in English.
        return _("Cell {cell}, which checks this exercise, asked for more memory than the {memory_mb:,} MB a "
                 "notebook may use when graded ({error}).").format(
                     cell=index + 1, memory_mb=limits.memory_mb, error=problem[:120])
    if problem:
        # TRANSLATORS: {error} is the error the cell raised ("ValueError: ...").
        return _("Cell {cell}, which checks this exercise, stopped with {error} before the check ran. Run "
                 "your notebook from top to bottom in a fresh kernel to see it.").format(
                     cell=index + 1, error=problem)
    return _("Not graded: {reason}.").format(
        reason=run.stopped or _("the check cell did not reach the check"))


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


def function_files(records: dict) -> list[str]:
    """The files, relative to the scratch folder, that the functions in a run's `records` were saved in."""
    return [str(data["file"]) for values in records.values() if isinstance(values, dict)
            for data in values.values()
            if isinstance(data, dict) and data.get("t") == "function" and isinstance(data.get("file"), str)]


def saved_function(data: dict, scratch: Path) -> bytes | None:
    """The saved function's bytes, read from its file inside the kernel's scratch folder; None if there is
    none there or it is too large.

    The scratch folder is the student's: the file is read without following a link anywhere on its way
    (`files.read_plain`), so a link planted there, to a classmate's files or the grader's, is refused
    (`NotPlainFile`, the student's fault) and nothing is read through it.
    """
    try:
        content = read_plain(scratch, str(data.get("file", "")), FUNCTION_LIMIT)
    except NotPlainFile:
        raise
    except (OSError, ValueError):
        return None
    return content if len(content) <= FUNCTION_LIMIT else None


def judge(exercise: Exercise, values: dict, scratch: Path, limits: Limits, seed: int,
          cells: list[str] | None = None, found: list | None = None, stats: dict | None = None) -> Verdict:
    """Judge one recorded exercise with its check, in this process, on the instructor's seed.

    The exercise's functions are called in one fresh sandboxed process; `found` gets the evidence
    about them (`d2lmini.grading.judging.evidence`), `stats` the peak memory of that process and, under
    "sources", the source of each function the student attempted (`similarity.graded_sources`).
    """
    arguments = exercise.instructor_arguments()
    saved, names, functions, caller = {}, {}, [], None
    for slot in exercise.slots:
        data = values.get(slot)
        if not (isinstance(data, dict) and data.get("t") == "function"):
            arguments[slot] = decode(data, local_device)
            continue
        names[slot] = name = str(data.get("name", slot))[:80]
        if data.get("error"):
            # TRANSLATORS: {error} is Python's error ("TypeError: cannot pickle ...").
            return Verdict(False, _("Not graded: your function {name} could not be saved for grading "
                                    "({error}).").format(name=name, error=str(data["error"])[:200]))
        try:
            saved[slot] = saved_function(data, scratch)
        except NotPlainFile:
            return Verdict(False, _("Not graded: the file your function {name} was saved to is a link, or "
                                    "not a plain file, and the grader reads nothing through a link. Leave "
                                    "the files grading saves (in functions/) as they are.").format(name=name))
        if saved[slot] is None:
            return Verdict(False, _("Not graded: your function {name} was not found after your notebook "
                                    "ran.").format(name=name))
    try:
        if saved:  # one process for all the exercise's functions (the capstone passes eight)
            with_models = hasattr(importlib.import_module(exercise.module), "RNNScratch")
            caller, problem = start_caller(saved, scratch.parent / f".{scratch.name}-call", limits,
                                           with_models)
            if problem is not None:
                return Verdict(False, _("Your function was refused: it could not be loaded in the grader's "
                                        "clean process ({problem}). The exercise asks you to write it "
                                        "yourself: the package's own implementation (d2lmini's modules) and "
                                        "the solutions are not there, and a copy of them is refused.").format(
                                            problem=problem))
            state = {"broken": False}
            for slot in saved:
                arguments[slot] = RemoteFunction(caller.process, CALL_SECONDS + CALL_MARGIN, names[slot],
                                                 slot, state)
                functions.append(arguments[slot])
        with shifted_seeds(seed), contextlib.redirect_stdout(io.StringIO()):  # the verdict goes to feedback
            return exercise.checker()(**arguments)
    finally:
        if caller is not None:
            caller.close()
            if stats is not None:
                stats["caller_mb"] = max(stats.get("caller_mb", 0.0), caller.peak)
        for function in functions if found is not None and cells is not None else ():
            report = evidence.report(exercise.id, cells, function.__name__, dict(function.calls))
            if report is not None:
                found.append(report)
        _keep_sources(exercise, cells, names, stats)


def _keep_sources(exercise: Exercise, cells: list[str] | None, names: dict[str, str],
                  stats: dict | None) -> None:
    """Keep in `stats["sources"]` the graded functions the student attempted, to compare classmates."""
    if stats is None or not cells:
        return
    sources = similarity.graded_sources(exercise.notebook, cells, names)
    if sources:
        stats.setdefault("sources", {})[exercise.id] = sources


def counts_cases(tally: Tally | None, verdict: Verdict) -> bool:
    """True if `verdict` is the verdict of the one function check that `tally` counted, which was
    attempted and never refused: then its passed cases earn partial credit."""
    return (tally is not None and tally.checks == 1 and tally.verdict is verdict and tally.total > 0
            and not tally.refused and not tally.unattempted)


def earned(verdict: Verdict, worth: float, tally: Tally | None = None) -> tuple[float, str]:
    """The points `verdict` earns of `worth`, and the message to give with them.

    All or nothing; but with a `tally` (partial credit on) a wrong verdict that came from a function
    check's cases earns the fraction of them that passed, and its message says how many.
    """
    if verdict.correct:
        return worth, verdict.message
    if not counts_cases(tally, verdict):
        return 0, verdict.message
    return (round(worth * tally.passed / tally.total, 6),
            verdict.message + "\n\n" + _("Partial credit: {passed} of {total} graded cases passed.").format(
                passed=tally.passed, total=tally.total))


def grade_notebook(submission: Submission, exercises: list[Exercise], points: dict[str, float],
                   scratch: Path, limits: Limits, seed: int, stats: dict | None = None,
                   partial: bool = False) -> list[Mark]:
    """The marks of one submitted notebook (its exercises are `exercises`, all of one notebook).

    `stats`, if given, gets the grading time ("seconds"), the peak memory of the kernel ("kernel_mb")
    and of the processes that called the functions ("caller_mb"), the isolation ("isolation") and the
    evidence about graded functions ("evidence"). `partial` gives coding exercises partial credit
    per case (`earned`).
    """
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        run, kernel = execute_retried(submission, exercises, scratch, limits)
    except GraderFailure as failure:
        return [Mark(e.id, 0, points[e.id], not_graded(str(failure)), graded=False) for e in exercises]
    if kernel is not None:  # every process of the student's sandbox is gone before anything is judged
        kernel.bring_out(function_files(run.records), FUNCTION_LIMIT)
        kernel.shutdown()
    marks, found = [], []
    try:
        for exercise in exercises:
            worth = points[exercise.id]
            if exercise.id not in run.records:
                marks.append(Mark(exercise.id, 0, worth, _reason_missing(exercise, run, limits)))
                continue
            tally, counting = None, counted_cases() if partial else contextlib.nullcontext()
            try:
                with counting as tally:
                    verdict = judge(exercise, run.records.get(exercise.id, {}), scratch, limits, seed,
                                    submission.cells, found, stats)
            except Exception as error:  # a grader fault must cost nobody the batch; it is reported
                # TRANSLATORS: {error_type} names a Python exception raised by the grader itself.
                reason = _("the grader failed on this exercise ({error_type}: {error})").format(
                    error_type=type(error).__name__, error=error)
                marks.append(Mark(exercise.id, 0, worth, not_graded(reason), graded=False))
                continue
            got, message = earned(verdict, worth, tally)
            marks.append(Mark(exercise.id, got, worth, message))
    finally:
        if kernel is not None:
            kernel.shutdown()
        for made in (scratch, *scratch.parent.glob(f".{scratch.name}-*")):  # what this grading created
            shutil.rmtree(made, ignore_errors=True)
        if stats is not None:
            stats["seconds"] = stats.get("seconds", 0) + time.monotonic() - started
            stats["kernel_mb"] = max(stats.get("kernel_mb", 0), getattr(kernel, "peak", 0.0))
            stats["isolation"] = sandbox.probe().describe()
            stats.setdefault("evidence", []).extend(found)
    return marks
