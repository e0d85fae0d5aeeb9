"""The marks of one submitted notebook: run it (`d2lmini.grading.run.notebook`), judge each exercise
it recorded (`judge`), and give each its points and the message that says why (`earned`).

A grader's own failure (a kernel that never started, a fault while judging) is no grade: its mark
says so (`not_graded`), counts as "not graded", and is graded again on the next run.
"""

import contextlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from d2lmini.exercises import Verdict
from d2lmini.exercises.coding import Tally, counted_cases
from d2lmini.grading.assignment.manifest import Exercise
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.assignment.submission import Submission
from d2lmini.grading.judging.judge import judge
from d2lmini.grading.run import sandbox
from d2lmini.grading.run.kernel import GraderFailure
from d2lmini.grading.run.notebook import run_notebook
from d2lmini.i18n import _


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


def not_graded(reason: str) -> str:
    """The message of a mark the grader could not give (`Mark.graded` False): never a grade of 0."""
    # TRANSLATORS: {reason} says what failed in the grader ("the grading kernel did not start (...)").
    return _("Not graded — the grader failed: {reason}. This is not a mark of 0: tell your instructor, who "
             "grades it again.").format(reason=reason)


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
        run = run_notebook(submission, exercises, scratch, limits)
    except GraderFailure as failure:
        return [Mark(e.id, 0, points[e.id], not_graded(str(failure)), graded=False) for e in exercises]
    marks, found = [], []
    try:
        for exercise in exercises:
            worth = points[exercise.id]
            if exercise.id in run.missing:
                marks.append(Mark(exercise.id, 0, worth, run.missing[exercise.id]))
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
        for made in (scratch, *scratch.parent.glob(f".{scratch.name}-*")):  # what this grading created
            shutil.rmtree(made, ignore_errors=True)
        if stats is not None:
            stats["seconds"] = stats.get("seconds", 0) + time.monotonic() - started
            stats["kernel_mb"] = max(stats.get("kernel_mb", 0), run.kernel_mb)
            stats["isolation"] = sandbox.probe().describe()
            stats.setdefault("evidence", []).extend(found)
    return marks

