"""What a student hands in: a submitted file read as a notebook's code cells (`read_submission`), and
which of the course's notebooks it is (`matching_notebook`: the one whose check calls it has most of)."""

import ast
from dataclasses import dataclass
from pathlib import Path

from d2lmini.grading.assignment.manifest import Exercise, check_calls, python_of
from d2lmini.i18n import _


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
