"""Who is in the class: each entry of the submissions folder, graded as a student or listed with why not.

A student is a folder (their files, searched recursively) or a single file (named after them).
A file and a folder of the same name ("bob.ipynb" beside "bob/") are one student with both.
Symbolic links are refused, at the top and inside a folder: a link can point at a classmate's work.
"""

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path


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
        student.notes.append(f"{name} could not be read ({error.strerror}): not searched.")

    for root, dirs, files in os.walk(folder, onerror=unreadable, followlinks=False):
        here = Path(root)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                student.notes.append(
                    f"{(here / name).relative_to(folder)} is a link to a folder: not searched."
                )
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (here / d).is_symlink())
        for name in sorted(files):
            path = here / name
            if name.startswith("."):
                continue
            if path.is_symlink():
                student.notes.append(f"{path.relative_to(folder)} is a link, not a file: not graded.")
            elif path.is_file():
                student.files.append(path)


def read_roster(folder: Path) -> Roster:
    """The students of the submissions folder, and the entries refused with their reasons."""
    roster = Roster()
    for entry in sorted(Path(folder).iterdir()):
        mode = entry.lstat().st_mode
        if entry.name.startswith("."):
            roster.skipped.append((entry.name, "a hidden entry (its name starts with '.')"))
        elif stat.S_ISLNK(mode):
            roster.skipped.append(
                (
                    entry.name,
                    f"a symbolic link (to {os.readlink(entry)}): refused, since "
                    "a link can point at another student's work",
                )
            )
        elif stat.S_ISDIR(mode):
            student = roster.students.setdefault(entry.name, Student(entry.name))
            folder_files(entry, student)
        elif stat.S_ISREG(mode):
            student = roster.students.setdefault(entry.stem, Student(entry.stem))
            student.files.append(entry)
        else:
            roster.skipped.append((entry.name, "neither a file nor a folder"))
    for name, student in roster.students.items():
        sources = [p for p in student.files if p.parent == Path(folder)]
        if sources and (Path(folder) / name).is_dir() and not (Path(folder) / name).is_symlink():
            student.notes.insert(
                0,
                f"{sources[0].name} and the folder {name}/ both belong to {name}: "
                "the notebooks of both were looked at.",
            )
        student.files.sort()
    return roster
