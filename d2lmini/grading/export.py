"""The gradebook in the forms an LMS imports, and the points an instructor gives by hand (a rubric CSV).

Canvas (Grades → Import) matches a row by its `ID`, `SIS User ID` or `SIS Login ID` and reads
each other column headed `Assignment name (assignment id)`; those ids are Canvas's, so the
export starts from the gradebook CSV Canvas exports (Grades → Export) and fills one assignment
column of it. Moodle (Grades → Import → CSV file) maps an identifier column to a user field
(username, ID number or email address, chosen when importing) and a grade column to a grade item.
"""

import csv
import math
from pathlib import Path

from d2lmini.grading.config import Config
from d2lmini.grading.files import csv_text
from d2lmini.grading.report import final_total
from d2lmini.i18n import N_, _

CANVAS_KEYS = ("SIS Login ID", "SIS User ID", "ID", "Student")  # tried in this order against the name
CANVAS_FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def _read_csv(path: Path, problem: str) -> list[dict]:
    """The rows of the CSV at `path`; `problem` (marked with `N_`) says, with {path} and {error}, why not."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as handle:
            return list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ValueError(_(problem).format(path=path, error=error)) from None


def canvas_text(results, config: Config, canvas_export: Path, assignment: str) -> tuple[str, list[str]]:
    """Canvas's import CSV: the export's student columns and `assignment` filled; and the names not found."""
    rows = _read_csv(canvas_export, N_("{path}: cannot read the Canvas gradebook export ({error})"))
    if not rows or any(key not in rows[0] for key in CANVAS_FIXED):
        # TRANSLATORS: {columns} are Canvas's column names; "Grades → Export" is Canvas's menu (as Canvas
        # shows it in the instructor's language).
        raise ValueError(
            _("{path}: a Canvas gradebook export has the columns {columns}; export it from Canvas (Grades → "
              "Export)").format(path=canvas_export, columns=", ".join(CANVAS_FIXED))
        )
    totals = {r.student: final_total(r, config) for r in results}
    table = [[*CANVAS_FIXED, assignment]]
    found = set()
    for row in rows:
        if "Points Possible" in row["Student"]:  # Canvas's second row: not a student
            continue
        name = next((row[k] for k in CANVAS_KEYS if row.get(k) in totals), None)
        found.add(name)
        table.append([*(row[k] for k in CANVAS_FIXED), totals[name] if name is not None else ""])
    return csv_text(table), sorted(set(totals) - found)


def moodle_text(results, config: Config, item: str, identifier: str = "username") -> str:
    """Moodle's import CSV: an identifier column (the student's folder name) and one grade column."""
    return csv_text([[identifier, item], *([r.student, final_total(r, config)] for r in results)])


def read_rubric(path: Path, config: Config, students: set[str]) -> dict[str, dict[str, float]]:
    """The points per student and rubric item in the CSV at `path`; raise ValueError naming any bad cell.

    Its columns are `student` and items of the config's `[rubric]`; an empty cell is not yet graded.
    """
    rows = _read_csv(path, N_("{path}: cannot read the rubric ({error})"))
    header = list(rows[0]) if rows else []
    if "student" not in header:
        raise ValueError(
            _("{path}: the rubric needs a `student` column and one column per [rubric] item").format(
                path=path))
    unknown = [c for c in header if c != "student" and c not in config.rubric]
    if unknown:
        # TRANSLATORS: {items} lists the config's rubric items, or says "none".
        raise ValueError(
            _("{path}: column(s) {columns} are not items of the config's [rubric] ({items})").format(
                path=path, columns=", ".join(unknown), items=", ".join(config.rubric) or _("none"))
        )
    given = {}
    for line, row in enumerate(rows, start=2):
        if row["student"] not in students:
            raise ValueError(_("{path}, line {line}: no graded student called {student!r}").format(
                path=path, line=line, student=row["student"]))
        points = {}
        for item in (c for c in header if c != "student"):
            text = (row.get(item) or "").strip()
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not 0 <= value <= config.rubric[item]:
                raise ValueError(
                    _("{path}, line {line}: {item} of {student} must be a number from 0 to {maximum:g}, not "
                      "{text!r}").format(path=path, line=line, item=item, student=row["student"],
                                         maximum=config.rubric[item], text=text)
                )
            points[item] = value
        given[row["student"]] = points
    return given


def rubric_template(results, config: Config) -> str:
    """A rubric CSV to fill: a row per graded student, a column per `[rubric]` item (given points kept)."""
    return csv_text([
        ["student", *config.rubric],
        *([r.student, *(r.rubric.get(i, "") for i in config.rubric)] for r in results),
    ])
