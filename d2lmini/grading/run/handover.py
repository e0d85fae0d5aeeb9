"""Hand a kernel's connection file to the sandbox user, then start the kernel as that user.

    python -I -B .../d2lmini/grading/run/handover.py CONNECTION_FILE FOLDER UID -- PROGRAM ARGS...

For "user" isolation (`d2lmini.grading.run.sandbox`, a grader running as root without user
namespaces): jupyter_client writes the connection file, readable by root alone, in the grader's own
folder just before it starts the kernel, so this starter, still root, copies it to a new file in
FOLDER (the kernel's scratch folder) that UID owns and replaces the program's mention of the original
by the copy before it runs the program (`setpriv ... ipykernel_launcher -f FILE`).

FOLDER is the student's: a kernel of theirs that ran there before may have planted links under any
name, and files. Nothing is opened through a link: FOLDER and the original are opened without
following one, and the copy is created under a fresh random name with O_EXCL, its owner and mode set
on the open file (`d2lmini.grading.base.files.create_plain`), so a spray of guessed names changes nothing
and costs nothing. And nothing of the student's is imported or read: this starter runs as a script
in Python's isolated mode (`command`), with the standard library and `base/files.py` alone (loaded
by its path), never the d2lmini package, whose import would bring torch and matplotlib, which write
their caches into HOME (the student's folder, through a link of theirs) and read its settings, and
never from its working folder (FOLDER, where the student may have left a `d2lmini/` of their own).
"""

import importlib.util
import os
import secrets
import sys
from pathlib import Path


def _base(name: str):
    """The module grading/base/`name`.py, loaded by its path: no package is imported for it."""
    spec = importlib.util.spec_from_file_location(f"_d2lmini_handover_{name}",
                                                  Path(__file__).parents[1] / "base" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


files = _base("files")
NotPlainFile = files.NotPlainFile
CONNECTION_LIMIT = 64 * 2**10  # bytes: a connection file is a few hundred


def command(connection_file: str, folder: Path, owner: int, program: list[str]) -> list[str]:
    """The argv that hands `connection_file` to `owner` in `folder`, then runs `program` (which names it)."""
    starter = str(Path(__file__).resolve())
    return [sys.executable, "-I", "-B", starter, connection_file, str(folder), str(owner), "--", *program]


def hand_over(original: Path, folder: Path, owner: int) -> Path:
    """Copy the connection file `original` to a new file in `folder` that `owner` owns; return the copy.

    Raises `NotPlainFile` (and writes nothing) if `original` or `folder` is a link.
    """
    data = files.read_plain(original.parent, original.name, CONNECTION_LIMIT)
    if len(data) > CONNECTION_LIMIT:
        raise ValueError(f"{original} is larger than a connection file")
    name = f".connection-{secrets.token_hex(16)}.json"  # nobody can plant a link under it beforehand
    files.create_plain(folder, name, data, 0o600, owner)
    return folder / name


def main(argv: list[str]) -> None:
    """Copy the connection file for the sandbox user, then replace this process by the program."""
    original, folder, owner, separator, *program = argv
    if separator != "--" or not program:
        raise SystemExit("usage: python -I -B handover.py CONNECTION_FILE FOLDER UID -- PROGRAM ARGS...")
    copy = str(hand_over(Path(original), Path(folder), int(owner)))
    os.execv(program[0], [copy if arg == original else arg for arg in program])


if __name__ == "__main__":
    main(sys.argv[1:])
