"""The grader's output folder is its own, holds one assignment, and gives every student a record of their own.

Checked before anything is written, so that no run erases another's work:

- the folder is new, empty, or one the grader made (its marker file `MARKER`, or, from a grader
  older than the marker, only the grader's own files with at least one record): a folder of yours
  is never written into;
- the records already there are of the exercises this config grades: grading another assignment
  into a class's folder would replace every student's marks with the new assignment's;
- no two students share a file name (`files.student_key`), nor a record written for someone else.
"""

import json
from pathlib import Path

import d2lmini
from d2lmini.grading.base.files import inside, student_key, write_atomic
from d2lmini.i18n import _

MARKER = ".d2lmini-grading.json"
RECORDS, FEEDBACK = "records", "feedback"
# The files a grading writes into its folder (gradebook.py), each listed once: the folder check below
# may replace exactly these.
OUTPUTS = ("gradebook.csv", "results.json", "not_graded.csv", "similarity.csv", "canvas.csv", "moodle.csv")
PACKAGE = Path(d2lmini.__file__).resolve().parent
OWN_FILES = {*OUTPUTS, RECORDS, FEEDBACK}


class FolderError(ValueError):
    """The output folder is not one the grader may write this class into; nothing was written."""


def made_by_grader(out: Path) -> bool:
    """Whether `out` holds the grader's marker, or only what an earlier grader (without one) wrote."""
    if (out / MARKER).is_file():
        return True
    entries = {p.name for p in out.iterdir()}
    legacy = entries - OWN_FILES
    return not {e for e in legacy if not e.startswith(".work-")} and any((out / RECORDS).glob("*.json"))


def check_own(out: Path) -> None:
    """Raise FolderError unless `out` is missing, empty, or the grader's own folder."""
    out = Path(out)
    if not out.is_dir() or not any(out.iterdir()) or made_by_grader(out):
        return
    raise FolderError(
        # TRANSLATORS: {marker} is the grader's marker file's name (keep it).
        _("--out {out} is a folder the grader did not make (it has no {marker}): nothing in it was replaced; "
          "give a new or empty folder").format(out=out, marker=MARKER))


def check_assignment(out: Path, graded: set[str], records) -> None:
    """Raise FolderError if the `records` in `out` grade other exercises than `graded` (another assignment).
    """
    held = {m.exercise for record in records for m in record.marks}
    if held and held != graded:
        # TRANSLATORS: {held} and {graded} are lists of exercise ids.
        raise FolderError(
            _("--out {out} holds the gradebook of another assignment (exercises {held}), not of this "
              "config's ({graded}): grading into it would replace those marks. Give this assignment its own "
              "--out (or, to grade that assignment again from scratch, move its {records}/ away)").format(
                out=out, held=", ".join(sorted(held)), graded=", ".join(sorted(graded)), records=RECORDS))


def check_names(out: Path, names, read_record) -> None:
    """Raise FolderError if two of `names` would share a record (or one is another student's record)."""
    owners: dict[str, str] = {}
    for name in names:
        key = student_key(name)
        other = owners.setdefault(key.casefold(), name)  # casefold: one file on macOS and Windows
        if other == name:
            old = read_record(Path(out) / RECORDS / f"{key}.json")
            other = old.student if old is not None else name
        if other != name:
            raise FolderError(
                # TRANSLATORS: {first} and {second} are two students' names (folders or files).
                _("{first!r} and {second!r} would share one record ({file}): rename one of their folders or "
                  "files; nobody was graded").format(first=other, second=name, file=f"{RECORDS}/{key}.json"))


def check(out: Path, names, graded: set[str], records, read_record) -> None:
    """Every check above, before anything is written: `records` and `read_record` read `out`'s records."""
    check_own(out)
    if Path(out).is_dir():
        check_assignment(out, graded, records(out))
    check_names(out, names, read_record)


def mark(out: Path) -> None:
    """Write the grader's marker into `out`, which it now writes into."""
    if not (out / MARKER).is_file():
        write_atomic(out / MARKER, json.dumps({"written_by": "python -m d2lmini.grading", "format": 1}))


def check_outside_package(path: Path, option: str) -> None:
    """Raise FolderError if `path` (given with `option`) lies in the installed package, never written.

    The package's own config and exercises are what every later run (and every student's kernel)
    reads; `--force` replaces a file of yours, never one of the package's.
    """
    if inside(path, PACKAGE):
        # TRANSLATORS: {option} is the command's option (keep it); {suggestion} a file's name.
        raise FolderError(
            _("{option} {path} lies inside the installed d2lmini package ({package}), which the grader never "
              "changes: write it elsewhere, e.g. {option} {suggestion}, and pass that file on").format(
                option=option, path=path, package=PACKAGE, suggestion=Path(path).name))
