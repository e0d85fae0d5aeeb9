"""The gradebook in the forms an LMS imports, and the points an instructor gives by hand (a rubric CSV).

Canvas (Grades → Import) matches a row by its `ID`, `SIS User ID` or `SIS Login ID` and reads
each other column headed `Assignment name (assignment id)`; those ids are Canvas's, so the
export starts from the gradebook CSV Canvas exports (Grades → Export) and fills one assignment
column of it. Moodle (Grades → Import → CSV file) maps an identifier column to a user field
(username, ID number or email address, chosen when importing) and a grade column to a grade item.
"""

import csv
import io
import math
from pathlib import Path

from d2lmini.grading.assignment.config import Config
from d2lmini.grading.base.files import csv_text
from d2lmini.grading.gradebook.report import final_total
from d2lmini.i18n import N_, _

CANVAS_KEYS = ("SIS Login ID", "SIS User ID", "ID", "Student")  # tried in this order against the name
CANVAS_FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def _read_table(path: Path, what: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and the rows (with their line numbers) of the CSV at `path`, the `what` (marked with `N_`).

    Raise ValueError naming the file, the line and the problem: not readable, not UTF-8, not CSV, empty,
    a column named twice, a row with more cells than the header. A shorter row's missing cells are empty.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        # TRANSLATORS: {what} is "the rubric" or "the Canvas gradebook export"; {error} the system's text.
        raise ValueError(_("{path}: cannot read {what} ({error})").format(
            path=path, what=_(what), error=error.strerror or error)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(_("{path}, line {line}: not UTF-8 text; save {what} as \"CSV UTF-8\"").format(
            path=path, line=data[:error.start].count(b"\n") + 1, what=_(what))) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    lines = []
    try:
        lines = [(reader.line_num, row) for row in reader if row]
    except csv.Error as error:
        # TRANSLATORS: {error} is Python's csv module's text ("line contains NUL").
        raise ValueError(_("{path}, line {line}: not CSV ({error})").format(
            path=path, line=reader.line_num, error=error)) from None
    if not lines:
        raise ValueError(_("{path}: empty: {what} needs a header row").format(path=path, what=_(what)))
    (first, header), rows = lines[0], []
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        raise ValueError(_("{path}, line {line}: the column(s) {columns} appear more than once").format(
            path=path, line=first, columns=", ".join(repr(c) for c in twice)))
    for line, row in lines[1:]:
        if len(row) > len(header):
            raise ValueError(
                _("{path}, line {line}: {cells} cells, but the header has {columns} columns").format(
                    path=path, line=line, cells=len(row), columns=len(header)))
        rows.append((line, dict(zip(header, row + [""] * (len(header) - len(row)), strict=True))))
    return header, rows


def canvas_text(results, config: Config, canvas_export: Path, assignment: str) -> tuple[str, list[str]]:
    """Canvas's import CSV: the export's student columns and `assignment` filled; and the names not found."""
    header, rows = _read_table(canvas_export, N_("the Canvas gradebook export"))
    if any(key not in header for key in CANVAS_FIXED):
        # TRANSLATORS: {columns} are Canvas's column names; "Grades → Export" is Canvas's menu (as Canvas
        # shows it in the instructor's language).
        raise ValueError(
            _("{path}: a Canvas gradebook export has the columns {columns}; export it from Canvas (Grades → "
              "Export)").format(path=canvas_export, columns=", ".join(CANVAS_FIXED))
        )
    totals = {r.student: final_total(r, config) for r in results}
    table = [[*CANVAS_FIXED, assignment]]
    found = set()
    for _line, row in rows:
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
    header, rows = _read_table(path, N_("the rubric"))
    if "student" not in header:
        raise ValueError(
            _("{path}: the rubric needs a `student` column and one column per [rubric] item").format(
                path=path))
    unknown = [c for c in header if c != "student" and c not in config.rubric]
    if unknown:
        # TRANSLATORS: {items} lists the config's rubric items, or says "none".
        raise ValueError(
            _("{path}: column(s) {columns} are not items of the config's [rubric] ({items})").format(
                path=path, columns=", ".join(map(repr, unknown)), items=", ".join(config.rubric) or _("none"))
        )
    given, lines = {}, {}
    for line, row in rows:
        student = row["student"]
        if student not in students:
            raise ValueError(_("{path}, line {line}: no graded student called {student!r}").format(
                path=path, line=line, student=student))
        if student in given:
            raise ValueError(_("{path}, line {line}: a second row for {student!r} (the first is line "
                               "{first}); keep one").format(path=path, line=line, student=student,
                                                            first=lines[student]))
        given[student], lines[student] = _rubric_points(row, header, config, f"{path}, line {line}"), line
    return given


def _rubric_points(row: dict[str, str], header: list[str], config: Config, where: str) -> dict[str, float]:
    points = {}
    for item in (c for c in header if c != "student"):
        text = row[item].strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 <= value <= config.rubric[item]:
            raise ValueError(
                _("{where}: {item} of {student} must be a number from 0 to {maximum:g}, not {text!r}").format(
                    where=where, item=item, student=row["student"], maximum=config.rubric[item], text=text)
            )
        points[item] = value
    return points


def rubric_template(results, config: Config) -> str:
    """A rubric CSV to fill: a row per graded student, a column per `[rubric]` item (given points kept)."""
    return csv_text([
        ["student", *config.rubric],
        *([r.student, *(r.rubric.get(i, "") for i in config.rubric)] for r in results),
    ])
