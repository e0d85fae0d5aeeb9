"""Who is in the class: each entry of the submissions folder, graded as a student or listed with why not.

A student is a folder (their files, searched recursively) or a single file (named after them).
A file and a folder of the same name ("bob.ipynb" beside "bob/") are one student with both.
Symbolic links are refused, at the top and inside a folder: a link can point at a classmate's work.
"""

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from d2lmini.i18n import _


@dataclass
class Student:
    """One student's name (the folder's or file's), their files, and notes about what was left out."""

    name: str
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Roster:
    """The students found, and each entry that is not a student with its reason."""

    students: dict[str, Student] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (entry name, reason)


def folder_files(folder: Path, student: Student) -> None:
    """Add the files under `folder` to `student`, and a note for each link or folder left out."""

    def unreadable(error: OSError) -> None:
        name = Path(error.filename).name
        # TRANSLATORS: {error} is the system's error text ("Permission denied").
        student.notes.append(_("{name} could not be read ({error}): not searched.").format(
            name=name, error=error.strerror))

    for root, dirs, files in os.walk(folder, onerror=unreadable, followlinks=False):
        here = Path(root)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                student.notes.append(
                    _("{path} is a link to a folder: not searched.").format(
                        path=(here / name).relative_to(folder))
                )
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (here / d).is_symlink())
        for name in sorted(files):
            path = here / name
            if name.startswith("."):
                continue
            if path.is_symlink():
                student.notes.append(
                    _("{path} is a link, not a file: not graded.").format(path=path.relative_to(folder)))
            elif path.is_file():
                student.files.append(path)


def read_roster(folder: Path) -> Roster:
    """The students of the submissions folder, and the entries refused with their reasons."""
    roster = Roster()
    for entry in sorted(Path(folder).iterdir()):
        mode = entry.lstat().st_mode
        if entry.name.startswith("."):
            roster.skipped.append((entry.name, _("a hidden entry (its name starts with '.')")))
        elif stat.S_ISLNK(mode):
            roster.skipped.append(
                (
                    entry.name,
                    _("a symbolic link (to {target}): refused, since a link can point at another student's "
                      "work").format(target=os.readlink(entry)),
                )
            )
        elif stat.S_ISDIR(mode):
            student = roster.students.setdefault(entry.name, Student(entry.name))
            folder_files(entry, student)
        elif stat.S_ISREG(mode):
            student = roster.students.setdefault(entry.stem, Student(entry.stem))
            student.files.append(entry)
        else:
            roster.skipped.append((entry.name, _("neither a file nor a folder")))
    for name, student in roster.students.items():
        sources = [p for p in student.files if p.parent == Path(folder)]
        if sources and (Path(folder) / name).is_dir() and not (Path(folder) / name).is_symlink():
            student.notes.insert(
                0,
                _("{file} and the folder {name}/ both belong to {name}: the notebooks of both were looked "
                  "at.").format(file=sources[0].name, name=name),
            )
        student.files.sort()
    return roster
