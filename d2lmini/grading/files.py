"""The grader's own files: a file name per student, whole-or-nothing writes, checks made before any work.

Nothing here deletes: the grader removes only the scratch folder it made itself (`gradebook`).
"""

import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

KEY_LENGTH = 60  # characters of a student's name kept in their file names (plus a hash)
HASHED = re.compile(r"-[0-9a-f]{8}$")  # how a hashed key ends
# OWASP's CSV injection rule: a spreadsheet reads a cell that starts with one of these as a formula
# (the full-width forms too, which some spreadsheets take for their ASCII twins).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
PLAIN_CELL = re.compile(r"[\w .:()/'-]*")  # text no spreadsheet splits or quotes differently
# A spreadsheet set to split at ';', a tab or '|' (Excel in many locales) splits inside a cell too; a line
# break ends its row: what follows one of them must not start a formula either.
INNER_FORMULA = re.compile(r"([;\t|\r\n])(?=\s*[=+\-@\uff1d\uff0b\uff0d\uff20])")


def student_key(name: str) -> str:
    """A file name for a student, distinct for distinct names.

    A name made only of letters, digits, '.', '-' and '_' is used as it is; any other (spaces,
    accents, 255 characters), and one that ends as a hashed key does, is shortened, its other
    characters mapped to '_', and given a short hash of the real name, so that "a b" and "a_b",
    "José" and "Jos_", or "José" and a folder named by his key, get different files.
    """
    plain = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".")[:KEY_LENGTH] or "student"
    if plain == name and not HASHED.search(name):  # a name that looks hashed ("Jos_-1a2b3c4d") is hashed
        return plain
    return f"{plain}-{hashlib.sha256(os.fsencode(name)).hexdigest()[:8]}"


def _cell(value) -> str:
    """One CSV field: a number as is; text quoted, with a "'" first where it could start a formula."""
    if value is None or value == "":
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    text = str(value)
    if PLAIN_CELL.fullmatch(text) and not text.lstrip(" ").startswith(FORMULA_STARTS):
        return text
    text = INNER_FORMULA.sub(r"\1'", text)
    if text.lstrip().startswith(FORMULA_STARTS) or text.startswith(FORMULA_STARTS):
        text = "'" + text
    # quoted whole, so that no spreadsheet splits it at a ';', a tab or a line break of its own
    return '"' + text.replace('"', '""') + '"'


def csv_text(rows: Iterable[Sequence]) -> str:
    """CSV for spreadsheets and LMS imports: no cell starts a formula, and numbers stay numbers.

    Numbers (int, float) are written as numbers, a negative one too; every other cell is text,
    and text that starts with `=`, `+`, `-`, `@`, a tab or a carriage return (after spaces) gets a
    leading "'" and quotes (OWASP's rule), so "-2+3" stays text and -2 a number.
    """
    return "".join(",".join(_cell(value) for value in row) + "\r\n" for row in rows)


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old file or the new one, never half of one."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_only(path: Path) -> bool:
    """Whether the instructor made `path` read-only (its owner's write bit is off; true even for root)."""
    try:
        return not Path(path).stat().st_mode & stat.S_IWUSR
    except FileNotFoundError:
        return False


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies inside it (both resolved, links followed)."""
    path, folder = Path(path).resolve(), Path(folder).resolve()
    return path == folder or folder in path.parents
