"""Run a submitted notebook in a fresh kernel, its check cells turned into recorders, and hand back
the finished run (`run_notebook`, the one way in).

Every check call of a cell is rewritten into the agent's recorder (`rewrite`, `d2lmini.grading.run.agent`)
before the cell runs in the kernel (`d2lmini.grading.run.kernel`); a cell that ends the kernel is left
out and the notebook run again in a fresh one. Before `run_notebook` returns, the functions the kernel
saved are brought out of its sandbox and the kernel is shut down, every process of its sandbox gone:
what it hands back is data (each exercise's recorded values, what went wrong in each cell, why an
exercise recorded nothing), and the saved functions lie in the scratch folder, read one at a time by
`saved.saved_function`, never through a link.
"""

import ast
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from d2lmini.grading.assignment.manifest import Exercise, check_calls, python_of
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.assignment.submission import Submission
from d2lmini.grading.run.kernel import OUTPUT_LIMIT, GraderFailure, Kernel
from d2lmini.grading.run.saved import FUNCTION_LIMIT, function_files
from d2lmini.i18n import _

BOOTSTRAP = "import d2lmini.grading.run.agent as __d2lmini_grading__"


@dataclass
class NotebookRun:
    """The records and problems of one run of a submission."""

    records: dict = field(default_factory=dict)  # exercise id -> {slot: wire value}
    cells: dict = field(default_factory=dict)  # cell index -> what went wrong in it
    check_cells: dict = field(default_factory=dict)  # exercise id -> index of the cell that checks it
    stopped: str | None = None  # why the run stopped before the last cell
    skipped: set = field(default_factory=set)  # cells left out because they ended a kernel
    missing: dict = field(default_factory=dict)  # exercise id -> why it recorded nothing (`missing_reason`)
    kernel_mb: float = 0.0  # the peak memory of its last kernel


def run_notebook(submission: Submission, exercises: list[Exercise], scratch: Path,
                 limits: Limits) -> NotebookRun:
    """The finished run of `submission` in `scratch`: its kernel shut down, every process of its sandbox
    gone, the functions it saved brought out into `scratch`, and in `missing` why each exercise of
    `exercises` that it did not record was not. Raises `GraderFailure` if a kernel did not start twice."""
    run, kernel = execute_retried(submission, exercises, scratch, limits)
    run.missing = {e.id: missing_reason(e, run, limits) for e in exercises if e.id not in run.records}
    if kernel is not None:  # every process of the student's sandbox is gone before anything is judged
        try:
            kernel.bring_out(function_files(run.records), FUNCTION_LIMIT)
        finally:
            kernel.shutdown()
        run.kernel_mb = kernel.peak
    return run


def rewrite(source: str, exercises: dict[str, Exercise]) -> tuple[str, list[str]]:
    """Return the cell's Python with every check call replaced by the agent's recorder, and their ids.

    `exercises` maps check names to the exercises of this notebook.
    """
    code = python_of(source)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):  # the kernel will say what is wrong with it
        return code, []
    lines = code.splitlines(keepends=True)
    found, edits = [], []
    for call in check_calls(tree, exercises):
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr
        exercise = exercises[name]
        found.append(exercise.id)
        stand_in = (f"__d2lmini_grading__.recorder({exercise.id!r}, {tuple(exercise.parameters)!r}, "
                    f"{tuple(exercise.slots)!r})")
        edits.append((func.lineno, func.col_offset, func.end_lineno, func.end_col_offset, stand_in))
    for start, col, end, end_col, text in sorted(edits, reverse=True):
        head = lines[start - 1].encode()[:col].decode()
        tail = lines[end - 1].encode()[end_col:].decode()
        lines[start - 1 : end] = [head + text + tail]
    return "".join(lines), found


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
        code, found = rewrite(source, exercises)
        left = limits.notebook_seconds - (time.monotonic() - started)
        if index not in run.skipped and left <= 0:
            # TRANSLATORS: why a notebook's grading stopped; it follows "Not graded: ".
            run.stopped = _("the notebook ran past its time limit of {seconds:g} s before cell "
                            "{cell}").format(seconds=limits.notebook_seconds, cell=index + 1)
            return None
        for exercise_id in found:
            run.check_cells[exercise_id] = index
        if index in run.skipped:
            continue
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


def missing_reason(exercise: Exercise, run: NotebookRun, limits: Limits) -> str:
    """Why `run` recorded nothing for `exercise`, in words for the student."""
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
