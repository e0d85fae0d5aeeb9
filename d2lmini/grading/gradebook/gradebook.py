"""Grade a class: a record per student in OUT/records; the gradebook, results and feedback made from them.

Each student's record is written whole (a temporary file, then a rename) as soon as their
grading has ended, so a grader that is killed resumes where it stopped: a record whose files and
config are unchanged is kept, not graded again. The gradebook (CSV), `results.json` and the
feedback files are then assembled from all the records in OUT, so they always agree, and grading
one student (or one exercise, `only`) into the class's folder keeps every other row.
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from d2lmini.grading.assignment.config import Config
from d2lmini.grading.assignment.manifest import Exercise
from d2lmini.grading.assignment.submission import Submission, matching_notebook, read_submission
from d2lmini.grading.base.files import inside, read_only, student_key, write_atomic
from d2lmini.grading.gradebook import outfolder, workers
from d2lmini.grading.gradebook.outfolder import FEEDBACK, OUTPUTS, RECORDS
from d2lmini.grading.gradebook.report import assemble
from d2lmini.grading.gradebook.roster import Roster, read_roster
from d2lmini.grading.judging.marks import Mark, grade_notebook
from d2lmini.grading.run import sandbox
from d2lmini.grading.run.preflight import preflight
from d2lmini.i18n import _


@dataclass
class StudentResult:
    """One student's marks (one per graded exercise) and notes about their files."""

    student: str
    marks: list[Mark]
    notes: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # grading seconds, the kernel's peak memory (MB)
    rubric: dict[str, float] = field(default_factory=dict)  # points given by hand, per rubric item
    fingerprint: str = ""  # the files and settings it was graded from ("" after a partial or failed run)
    sources: dict[str, dict[str, str]] = field(default_factory=dict)  # exercise -> function -> its source

    @property
    def total(self) -> float:
        return sum(m.points for m in self.marks)


class GradingError(ValueError):
    """A problem with the command's folders or files, found before anything was written."""


def _cells_problem(submission: Submission) -> str | None:
    if submission.cells is not None and any(not isinstance(c, str) for c in submission.cells):
        return _("{file} has a cell whose source is not text: it was not graded; upload the .ipynb file that "
                 "Jupyter saves.").format(file=submission.path.name)
    return None


def grade_student(
    name: str, files: list[Path], exercises: list[Exercise], config: Config, work: Path
) -> StudentResult:
    """Grade one student's files: each graded course notebook from the file that matches it best."""
    graded = [e for e in exercises if e.id in config.points]
    notebooks = list(dict.fromkeys(e.notebook for e in graded))
    chosen: dict[str, Submission] = {}
    notes = []
    for path in files:
        submission = read_submission(path)
        problem = submission.problem or _cells_problem(submission)
        if problem:
            notes.append(problem)
            continue
        notebook = matching_notebook(submission, exercises)
        if notebook is None:
            notes.append(
                _("{file} has none of this course's check cells, so it was not graded: is it the notebook of "
                  "this course, with its exercise cells?").format(file=path.name)
            )
        elif notebook not in notebooks:
            notes.append(_("{file} is notebook {notebook}, which this assignment does not grade.").format(
                file=path.name, notebook=notebook))
        elif notebook in chosen:
            notes.append(
                _("{file} is a second copy of {notebook}; {graded} was graded.").format(
                    file=path.name, notebook=notebook, graded=chosen[notebook].path.name)
            )
        else:
            chosen[notebook] = submission
    marks, stats = [], {}
    for notebook in notebooks:
        mine = [e for e in graded if e.notebook == notebook]
        if notebook not in chosen:
            reason = _("No notebook of yours has the check cells of {notebook}: upload it as Jupyter saves "
                       "it.").format(notebook=notebook)
            marks += [Mark(e.id, 0, config.points[e.id], reason) for e in mine]
            continue
        scratch = work / student_key(name) / notebook
        try:
            marks += grade_notebook(
                chosen[notebook], mine, config.points, scratch, config.limits, config.seed, stats,
                config.partial_credit,
            )
        except Exception as error:  # the grader's own failure (a kernel that cannot start), not the batch's
            print(_("warning: {student}, {notebook}: {error_type}: {error}").format(
                student=name, notebook=notebook, error_type=type(error).__name__, error=error),
                file=sys.stderr)
            reason = _("Not graded: the grader could not run {notebook} ({error_type}); tell your "
                       "instructor.").format(notebook=notebook, error_type=type(error).__name__)
            marks += [Mark(e.id, 0, config.points[e.id], reason, graded=False) for e in mine]
    return StudentResult(name, marks, notes, stats, sources=stats.pop("sources", {}))


def fingerprint(files: list[Path], config: Config, exercises: list[Exercise]) -> str:
    """A digest of a student's files and of what grades them: equal digests, equal marks.

    It covers the seed, the limits, the points, partial credit and each graded check's own
    arguments (a release's numbers), so grading with another config or `--manifest` grades again.
    """
    graded = {e.id: [e.module, e.check, e.fixed] for e in exercises if e.id in config.points}
    settings = [config.seed, asdict(config.limits), config.points, graded, config.partial_credit]
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in files:
        digest.update(str(path.name).encode("utf-8", "surrogateescape") + b"\0")
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError as error:
            digest.update(repr(error).encode())
    return digest.hexdigest()


def read_record(path: Path) -> StudentResult | None:
    """The record at `path`, or None if it is missing or not one the grader wrote."""
    try:
        data = json.loads(path.read_text("utf-8"))
        data["marks"] = [Mark(**m) for m in data["marks"]]
        return StudentResult(**data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_record(out: Path, result: StudentResult) -> None:
    """Write one student's record whole, under a file name that is theirs alone."""
    write_atomic(out / RECORDS / f"{student_key(result.student)}.json", json.dumps(asdict(result), indent=1))


def records(out: Path) -> list[StudentResult]:
    """Every student's record in `out`, sorted by name (a record the grader cannot read is reported)."""
    found = []
    for path in sorted((Path(out) / RECORDS).glob("*.json")):
        record = read_record(path)
        if record is None:
            print(_("warning: {path} is not a record this grader wrote; it was left out").format(path=path),
                  file=sys.stderr)
        else:
            found.append(record)
    return sorted(found, key=lambda r: r.student)


def check_folders(submissions: Path, out: Path) -> Roster:
    """The class's roster; raise GradingError, before anything is written, if the folders are wrong."""
    submissions, out = Path(submissions), Path(out)
    if not submissions.is_dir():
        raise GradingError(
            _("SUBMISSIONS {submissions} is not a folder: give the folder of the class's submissions (one "
              "folder or notebook per student)").format(submissions=submissions)
        )
    if inside(out, submissions):
        raise GradingError(
            _("--out {out} lies inside SUBMISSIONS {submissions}: the grader would grade its own output as "
              "students; choose an output folder outside it").format(out=out, submissions=submissions)
        )
    if (
        out.exists()
        and any(inside(submissions, out / part) for part in (RECORDS, FEEDBACK))
        or submissions.resolve() == out.resolve()
    ):
        raise GradingError(
            _("SUBMISSIONS {submissions} lies inside the grader's output {out}: keep the submissions outside "
              "it").format(submissions=submissions, out=out)
        )
    if out.exists() and not out.is_dir():
        raise GradingError(_("--out {out} is a file, not a folder").format(out=out))
    roster = read_roster(submissions)
    if not roster.students and roster.skipped:
        # TRANSLATORS: an entry of the submissions folder that was left out, and why.
        left_out = "; ".join(_("{entry} ({reason})").format(entry=n, reason=why) for n, why in roster.skipped)
        raise GradingError(
            _("SUBMISSIONS {submissions} holds no student's folder or notebook; left out: {entries}. Nothing "
              "was written.").format(submissions=submissions, entries=left_out)
        )
    if not roster.students:
        raise GradingError(
            _("SUBMISSIONS {submissions} holds no student's folder or notebook. Nothing was written.").format(
                submissions=submissions)
        )
    check_writable(out)
    return roster


def check_writable(out: Path) -> None:
    """Raise GradingError if a file or folder the grader will write in `out` is read-only."""
    out = Path(out)
    paths = [out, out / RECORDS, out / FEEDBACK, *(out / name for name in OUTPUTS)]
    if (out / FEEDBACK).is_dir():
        paths += sorted((out / FEEDBACK).iterdir())
    if (out / RECORDS).is_dir():
        paths += sorted((out / RECORDS).iterdir())
    locked = [str(p) for p in paths if read_only(p)]
    if locked:
        raise GradingError(
            _("read-only: {paths}: make it writable, or give another --out; nothing was graded").format(
                paths=", ".join(locked[:5]))
        )


def _merge(old: StudentResult | None, new: StudentResult, only: set[str]) -> StudentResult:
    """`new` (marks and sources of the exercises in `only`) with every other mark and source of `old` kept."""
    if old is None:
        return replace(new, fingerprint="")
    kept = [m for m in old.marks if m.exercise not in only]
    by_id = {m.exercise: m for m in kept + new.marks}
    order = [m.exercise for m in old.marks] + [m.exercise for m in new.marks if m.exercise not in only]
    sources = {i: functions for i, functions in old.sources.items() if i not in only} | new.sources
    return replace(
        old, marks=[by_id[i] for i in dict.fromkeys(order)], notes=new.notes, stats=new.stats, fingerprint="",
        sources=sources,
    )


def _failed(name: str, config: Config, error: BaseException) -> StudentResult:
    print(_("warning: {student}: the grader failed: {error_type}: {error}").format(
        student=name, error_type=type(error).__name__, error=error), file=sys.stderr)
    reason = _("Not graded: the grader failed on your files ({error_type}); tell your instructor.").format(
        error_type=type(error).__name__)
    return StudentResult(name, [Mark(i, 0, p, reason, graded=False) for i, p in config.points.items()])


def grade_class(
    submissions: Path,
    out: Path,
    exercises: list[Exercise],
    config: Config,
    jobs: int = 1,
    progress: Callable[[str], None] = print,
    only: list[str] | None = None,
    grade: Callable[..., StudentResult] = grade_student,
) -> list[StudentResult]:
    """Grade every student in `submissions` into `out`; return the class's records, all of them.

    `only` (exercise ids) grades those exercises and keeps every other mark of each student's
    record. `grade` grades one student (`grade_student`; a test passes a stand-in).
    """
    out, submissions = Path(out).absolute(), Path(submissions).absolute()  # the sandboxes start elsewhere
    roster = check_folders(submissions, out)
    outfolder.check(out, roster.students, set(config.points), records, read_record)
    isolation = sandbox.probe()  # said before any submission runs
    if isolation.mode == "user" and jobs > 1:
        # TRANSLATORS: 'user' isolation and uid 65534 as in the grader's other messages; keep --jobs 1.
        raise GradingError(_("--jobs {jobs}: in 'user' isolation every submission runs as the same user (uid "
                             "65534), so two students graded at once could read each other's work and end "
                             "each other's processes; grade with --jobs 1, or install bubblewrap (each "
                             "submission then has a sandbox of its own)").format(jobs=jobs))
    if isolation.isolated:
        # TRANSLATORS: {how} says how submissions are isolated ("isolated: each submission in its own ...").
        progress(_("submissions run {how}").format(how=isolation.describe()))
    else:
        # TRANSLATORS: {how} says why submissions are not isolated ("NOT isolated: ...").
        progress(_("WARNING: submissions run {how}").format(how=isolation.describe()))
    if only:
        config = replace(config, points={i: p for i, p in config.points.items() if i in only})
    for folder in (out, out / RECORDS, out / FEEDBACK):
        folder.mkdir(exist_ok=True, parents=folder == out)
    outfolder.mark(out)
    work = Path(tempfile.mkdtemp(prefix=".work-", dir=out))  # the one folder the grader removes
    try:
        if grade is grade_student:  # a machine that cannot start a student's kernel grades nobody
            preflight(work, config.limits)
        todo = []
        for name, student in roster.students.items():
            old = read_record(out / RECORDS / f"{student_key(name)}.json")
            stamp = fingerprint(student.files, config, exercises)
            if not only and old is not None and old.fingerprint == stamp and old.student == name:
                progress(
                    _("{student}: kept ({total:g}), graded before from the same files and settings").format(
                        student=name, total=old.total))
                continue
            todo.append((name, student, stamp, old))
        _grade_all(todo, out, exercises, config, jobs, progress, set(only or ()), grade, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return assemble(out, exercises, config, records(out), roster.skipped)


def end_with_grader(grader: int, every: float = 0.5) -> None:
    """Run in each worker process of `grade_class`: end the worker once process `grader` is gone.

    A grader killed outright (SIGKILL, SIGTERM, a closed terminal) runs no cleanup, and a worker would
    go on grading, with its sandboxes, for a gradebook nobody writes. The sandboxes end with the
    worker (bubblewrap's --die-with-parent).
    """
    def watch() -> None:
        while os.getppid() == grader:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="end-with-grader", daemon=True).start()


def _grade_all(todo, out, exercises, config, jobs, progress, only, grade, work) -> None:
    def record(name, student, stamp, old, result: StudentResult) -> None:
        result = replace(
            result,
            notes=student.notes + result.notes,
            # a mark the grader failed to give is graded again on the next run, never kept
            fingerprint=stamp if all(m.graded for m in result.marks) else "",
            rubric=(old.rubric if old is not None else {}),
        )
        if only:
            result = _merge(old, result, only)
        write_record(out, result)
        # TRANSLATORS: one student graded: their points of the most they could earn.
        progress(_("{student}: {total:g} / {possible:g}").format(
            student=name, total=result.total, possible=sum(m.max_points for m in result.marks)))

    if jobs == 1:
        for name, student, stamp, old in todo:
            try:
                result = grade(name, student.files, exercises, config, work)
            except Exception as error:  # one student's failure costs the batch nothing
                result, stamp = _failed(name, config, error), ""
            record(name, student, stamp, old, result)
        return
    # a dead worker's students are graded again, each alone (`workers`): a classmate's crash is nobody's 0
    workers.grade_in_processes(
        todo, jobs, grade, lambda task: (task[0], task[1].files, exercises, config, work),
        done=lambda task, result: record(*task, result),
        failed=lambda task, error: record(task[0], task[1], "", task[3], _failed(task[0], config, error)),
        initializer=end_with_grader, initargs=(os.getpid(),))
