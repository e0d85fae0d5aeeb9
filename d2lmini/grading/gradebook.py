"""Grade a class: every student's files, one gradebook (CSV), one feedback file per student.

A submissions folder holds one folder per student (named after the student, any files in it)
or one file per student (named after the student). Each file is matched to the course notebook
whose check cells it has; everything else is reported in the student's feedback.
"""

import csv
import json
import multiprocessing
import re
import shutil
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from d2lmini.grading import sandbox
from d2lmini.grading.config import Config
from d2lmini.grading.judge import Mark, Submission, grade_notebook, matching_notebook, read_submission
from d2lmini.grading.manifest import Exercise


@dataclass
class StudentResult:
    """One student's marks (one per graded exercise) and notes about their files."""

    student: str
    marks: list[Mark]
    notes: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # grading seconds, the kernel's peak memory (MB)

    @property
    def total(self) -> float:
        return sum(m.points for m in self.marks)


def students(folder: Path) -> dict[str, list[Path]]:
    """Each student's files: a subfolder per student (its files, recursively) or a file per student."""
    found: dict[str, list[Path]] = {}
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            found[entry.name] = sorted(p for p in entry.rglob("*") if p.is_file() and not _hidden(p, entry))
        elif entry.is_file():
            found[entry.stem] = [entry]
    return found


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def safe_name(name: str) -> str:
    """A file name made from a student's name (letters, digits, '.', '-' and '_' only)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "student"


def grade_student(name: str, files: list[Path], exercises: list[Exercise], config: Config,
                  work: Path) -> StudentResult:
    """Grade one student's files: each graded course notebook from the file that matches it best."""
    graded = [e for e in exercises if e.id in config.points]
    notebooks = list(dict.fromkeys(e.notebook for e in graded))
    chosen: dict[str, Submission] = {}
    notes = []
    for path in files:
        submission = read_submission(path)
        if submission.problem:
            notes.append(submission.problem)
            continue
        notebook = matching_notebook(submission, exercises)
        if notebook is None:
            notes.append(f"{path.name} has none of this course's check cells, so it was not graded: is it "
                         "the notebook of this course, with its exercise cells?")
        elif notebook not in notebooks:
            notes.append(f"{path.name} is notebook {notebook}, which this assignment does not grade.")
        elif notebook in chosen:
            notes.append(f"{path.name} is a second copy of {notebook}; "
                         f"{chosen[notebook].path.name} was graded.")
        else:
            chosen[notebook] = submission
    marks, stats = [], {}
    for notebook in notebooks:
        mine = [e for e in graded if e.notebook == notebook]
        if notebook not in chosen:
            reason = f"No notebook of yours has the check cells of {notebook}: upload it as Jupyter saves it."
            marks += [Mark(e.id, 0, config.points[e.id], reason) for e in mine]
            continue
        scratch = work / safe_name(name) / notebook
        try:
            marks += grade_notebook(chosen[notebook], mine, config.points, scratch, config.limits,
                                    config.seed, stats)
        except Exception as error:  # the grader's own failure (a kernel that cannot start), not the batch's
            print(f"warning: {name}, {notebook}: {type(error).__name__}: {error}", file=sys.stderr)
            reason = (f"Not graded: the grader could not run {notebook} ({type(error).__name__}); "
                      "tell your instructor.")
            marks += [Mark(e.id, 0, config.points[e.id], reason) for e in mine]
    return StudentResult(name, marks, notes, stats)


def feedback_text(result: StudentResult, exercises: list[Exercise]) -> str:
    """The student's feedback as Markdown: each exercise's points and the check's message."""
    by_id = {e.id: e for e in exercises}
    possible = sum(m.max_points for m in result.marks)
    lines = [f"# Feedback for {result.student}", "", f"**Total: {result.total:g} / {possible:g}**", ""]
    lines += [f"- {note}" for note in result.notes] + ([""] if result.notes else [])
    notebook = None
    for mark in result.marks:
        exercise = by_id[mark.exercise]
        if exercise.notebook != notebook:
            notebook = exercise.notebook
            lines += [f"## {notebook}", ""]
        lines += [f"### {mark.exercise} ({exercise.kind}): {mark.points:g} / {mark.max_points:g}", "",
                  _quoted(mark.message), ""]
    return "\n".join(lines)


def _quoted(message: str) -> str:
    return "\n".join("> " + line for line in message.splitlines() or [""])


def grade_class(submissions: Path, out: Path, exercises: list[Exercise], config: Config, jobs: int = 1,
                progress: Callable[[str], None] = print) -> list[StudentResult]:
    """Grade every student in `submissions`; write out/gradebook.csv, out/feedback/*.md, out/results.json."""
    out = Path(out)
    isolation = sandbox.probe()  # said before any submission runs
    progress(("" if isolation.isolated else "WARNING: ") + "submissions run " + isolation.describe())
    (out / "feedback").mkdir(parents=True, exist_ok=True)
    work = out / "work"
    roster = students(submissions)
    results = []

    def record(result: StudentResult) -> None:
        feedback = out / "feedback" / f"{safe_name(result.student)}.md"
        feedback.write_text(feedback_text(result, exercises), "utf-8")
        progress(f"{result.student}: {result.total:g} / {sum(m.max_points for m in result.marks):g}")
        results.append(result)

    if jobs == 1:
        for name, files in roster.items():
            record(grade_student(name, files, exercises, config, work))
    else:  # processes, not threads: a guarded call redirects its process's sys.stdout while it runs
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(grade_student, name, files, exercises, config, work)
                       for name, files in roster.items()]
            for future in as_completed(futures):
                record(future.result())
    order = list(roster)
    results.sort(key=lambda r: order.index(r.student))
    shutil.rmtree(work, ignore_errors=True)
    write_gradebook(out / "gradebook.csv", results, [e.id for e in exercises if e.id in config.points])
    (out / "results.json").write_text(json.dumps(
        [{"student": r.student, "total": r.total, "notes": r.notes, "stats": r.stats,
          "marks": [asdict(m) for m in r.marks]}
         for r in results], indent=1), "utf-8")
    return results


def write_gradebook(path: Path, results: list[StudentResult], columns: list[str]) -> None:
    """One row per student: a column per exercise (its points), the total and the maximum."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *columns, "total", "max"])
        for result in results:
            points = {m.exercise: m.points for m in result.marks}
            writer.writerow([result.student, *(f"{points.get(c, 0):g}" for c in columns), f"{result.total:g}",
                             f"{sum(m.max_points for m in result.marks):g}"])
