"""The grader's own files: a file name per student, whole-or-nothing writes, checks made before any work.

Nothing here deletes: the grader removes only the scratch folder it made itself (`gradebook`).
"""

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

KEY_LENGTH = 60  # characters of a student's name kept in their file names (plus a hash)


def student_key(name: str) -> str:
    """A file name for a student, distinct for distinct names.

    A name made only of letters, digits, '.', '-' and '_' is used as it is; any other (spaces,
    accents, 255 characters) is shortened, its other characters mapped to '_', and given a short
    hash of the real name, so that "a b" and "a_b", or "José" and "Jos_", get different files.
    """
    plain = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".")[:KEY_LENGTH] or "student"
    if plain == name:
        return plain
    return f"{plain}-{hashlib.sha256(os.fsencode(name)).hexdigest()[:8]}"


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
