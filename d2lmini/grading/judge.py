"""Grade one student's submitted notebooks: run each in its kernel, judge here, give points and messages.

Answers and functions come out of the student's kernel (`d2lmini.grading.kernel`); each is
judged by the notebook's own check, in this process, with the released notebook's arguments
and the instructor's seed: the check's cases and expected values are never in the kernel.
"""

import ast
import contextlib
import io
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from d2lmini.exercises import Verdict
from d2lmini.exercises.coding import shifted_seeds
from d2lmini.grading.kernel import CALL_MARGIN, OUTPUT_LIMIT, Kernel, Limits, NotebookRun, rewrite
from d2lmini.grading.manifest import Exercise, check_calls, python_of
from d2lmini.grading.remote import CALL_SECONDS, RemoteFunction, decode, local_device

BOOTSTRAP = "import d2lmini.grading.agent as __d2lmini_grading__"


@dataclass
class Mark:
    """The points one exercise earned and the message that says why."""

    exercise: str
    points: float
    max_points: float
    message: str


@dataclass
class Submission:
    """One submitted file: its cells' sources (None if it is not a notebook) and what was wrong with it."""

    path: Path
    cells: list[str] | None
    problem: str | None = None


def read_submission(path: Path) -> Submission:
    """Read a submitted file as a notebook; one that is not readable says why, in words for the student."""
    import nbformat

    try:
        notebook = nbformat.read(path, as_version=4)
        cells = [c.source for c in notebook.cells if c.cell_type == "code"]
    except Exception as error:  # anything at all may be uploaded
        reason = type(error).__name__
        return Submission(path, None, f"{path.name} could not be read as a Jupyter notebook ({reason}): "
                                      "upload the .ipynb file that Jupyter saves, not a copy or an export.")
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
    if problem or ended:
        raise RuntimeError(f"the grading kernel did not start: {problem}")

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
            run.stopped = (f"the notebook ran past its time limit of {limits.notebook_seconds:g} s "
                           f"before cell {index + 1}")
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
    for _ in range(limits.restarts + 1):
        run, kernel = NotebookRun(skipped=set(skipped)), Kernel(scratch, limits)
        killer = _run_cells(kernel, submission.cells, by_check, run, limits, started)
        if killer is None:
            return run, kernel
        skipped.add(killer)
        kernel.shutdown()
    run.stopped = "cells ended the kernel more often than the grader restarts it"
    return run, None


def _reason_missing(exercise: Exercise, run: NotebookRun, limits: Limits) -> str:
    index = run.check_cells.get(exercise.id)
    if index is None and run.stopped:
        return f"Not graded: {run.stopped}."
    if index is None:
        return (f"The cell that checks this exercise (`{exercise.check}(...)`) is not in your notebook, "
                "or its call was changed: copy it back from the released notebook and run it.")
    if index in run.skipped:
        return (f"Cell {index + 1}, which checks this exercise, ended the notebook's kernel (os._exit, "
                "a crash, or more memory than allowed), so it was left out.")
    problem = run.cells.get(index)
    if problem == "time limit":
        return (f"Cell {index + 1}, which checks this exercise, was still running after "
                f"{limits.cell_seconds:g} s and was stopped.")
    if problem == "printing":
        return (f"Cell {index + 1}, which checks this exercise, printed more than {OUTPUT_LIMIT:,} "
                "characters and was stopped.")
    if problem and "allocate" in problem:
        return (f"Cell {index + 1}, which checks this exercise, asked for more memory than the "
                f"{limits.memory_mb:,} MB a notebook may use when graded ({problem[:120]}).")
    if problem:
        return (f"Cell {index + 1}, which checks this exercise, stopped with {problem} before the check ran. "
                "Run your notebook from top to bottom in a fresh kernel to see it.")
    return f"Not graded: {run.stopped or 'the check cell did not reach the check'}."


def judge(exercise: Exercise, values: dict, kernel: Kernel | None, seed: int) -> Verdict:
    """Judge one recorded exercise with its check, in this process, on the instructor's seed."""
    arguments = exercise.instructor_arguments()
    for slot in exercise.slots:
        data = values.get(slot)
        if isinstance(data, dict) and data.get("t") == "function":
            if kernel is None:
                return Verdict(False, "Not graded: the kernel holding your function stopped.")
            arguments[slot] = RemoteFunction(data["handle"], kernel.client, kernel.manager.is_alive,
                                             CALL_SECONDS + CALL_MARGIN, str(data.get("name", slot)),
                                             getattr(kernel.manager.provisioner, "pid", None))
        else:
            arguments[slot] = decode(data, local_device)
    with shifted_seeds(seed), contextlib.redirect_stdout(io.StringIO()):  # the verdict goes to feedback
        return exercise.checker()(**arguments)


def grade_notebook(submission: Submission, exercises: list[Exercise], points: dict[str, float],
                   scratch: Path, limits: Limits, seed: int, stats: dict | None = None) -> list[Mark]:
    """The marks of one submitted notebook (its exercises are `exercises`, all of one notebook).

    `stats`, if given, gets the grading time ("seconds") and the kernel's peak memory ("kernel_mb").
    """
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    run, kernel = execute(submission, exercises, scratch, limits)
    marks = []
    try:
        for exercise in exercises:
            worth = points[exercise.id]
            if exercise.id not in run.records:
                marks.append(Mark(exercise.id, 0, worth, _reason_missing(exercise, run, limits)))
                continue
            if kernel is not None and not kernel.alive():
                kernel.shutdown()
                run, kernel = execute(submission, exercises, scratch, limits)
            try:
                verdict = judge(exercise, run.records.get(exercise.id, {}), kernel, seed)
            except Exception as error:  # a grader fault must cost nobody the batch; it is reported
                verdict = Verdict(False, "Not graded: the grader failed on this exercise "
                                         f"({type(error).__name__}: {error}); tell your instructor.")
            marks.append(Mark(exercise.id, worth if verdict.correct else 0, worth, verdict.message))
    finally:
        if kernel is not None:
            kernel.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
        if stats is not None:
            stats["seconds"] = stats.get("seconds", 0) + time.monotonic() - started
            stats["kernel_mb"] = max(stats.get("kernel_mb", 0), getattr(kernel, "peak", 0.0))
    return marks
