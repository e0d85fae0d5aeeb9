"""The grader's own files: a file name per student, whole-or-nothing writes, checks made before any work.

Nothing here deletes: the grader removes only the scratch folder it made itself (`gradebook`).

A folder a student's sandboxed code could write (its scratch folder) is opened here without following a
link anywhere (`read_plain`, `create_plain`): the grader, which may run as root, never reads, writes or
hands over a file through a link a student planted there, and each open costs a fixed number of system
calls however many links were planted. Where the system opens nothing relative to a folder's descriptor
(Windows, where no sandbox runs a submission as another user), the same refusals are made by name.
"""

import errno
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

KEY_LENGTH = 60  # characters of a student's name kept in their file names (plus a hash)
HASHED = re.compile(r"-[0-9a-f]{8}$")  # how a hashed key ends
# OWASP's CSV injection rule: a spreadsheet reads a cell that starts with one of these as a formula
# (the full-width forms too, which some spreadsheets take for their ASCII twins).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
PLAIN_CELL = re.compile(r"[\w .:()/'-]*")  # text no spreadsheet splits or quotes differently
# A spreadsheet set to split at ';', a tab or '|' (Excel in many locales) splits inside a cell too; a line
# break ends its row: what follows one of them must not start a formula either.
INNER_FORMULA = re.compile(r"([;\t|\r\n])(?=\s*[=+\-@\uff1d\uff0b\uff0d\uff20])")


# Opened without following a link at the path's last part; a folder opened with O_DIRECTORY too is refused
# if it is a link (ENOTDIR), so a walk from one descriptor to the next follows none.
NO_LINKS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NO_LINKS
DESCRIPTORS = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")  # POSIX; not Windows
MAX_PARTS = 16  # parts of a relative path `read_plain` walks: a path of 10,000 parts is refused at once


class NotPlainFile(OSError):
    """A link, a folder, a FIFO or a file with other hard links where the grader expected a plain file or
    folder of its own: the grader neither reads, writes nor hands over anything through it."""


def _refused(error: OSError, path) -> OSError:
    """`error` from opening `path` without following links: a `NotPlainFile` where a link stood there."""
    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST):
        return NotPlainFile(error.errno, os.strerror(error.errno), str(path))
    return error


def open_folder(path, dir_fd: int | None = None) -> int:
    """A descriptor of the folder `path` (relative to `dir_fd` if given); `NotPlainFile` if it is a link."""
    try:
        return os.open(path, FOLDER, dir_fd=dir_fd)
    except OSError as error:
        raise _refused(error, path) from None


def read_plain(folder: Path | int, relative: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of the plain file `relative` under `folder` (a path, or a descriptor of an
    open folder, which stays open), following no link on the way.

    Raises `NotPlainFile` if `folder`, a folder on the way or the file is a link, or the file is not a
    regular file with this one name (a FIFO, a hard link to a file elsewhere); `FileNotFoundError` if it is
    missing or `relative` leaves `folder` ("..", an absolute path, more than `MAX_PARTS` parts).
    """
    parts = PurePosixPath(relative).parts
    if not parts or len(parts) > MAX_PARTS or PurePosixPath(relative).is_absolute() or \
            any(part in (".", "..") for part in parts):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), relative)
    if not DESCRIPTORS:
        return _read_plain_by_name(Path(folder), parts, limit)
    descriptor = os.dup(folder) if isinstance(folder, int) else open_folder(folder)
    named = Path(relative) if isinstance(folder, int) else Path(folder, relative)  # in errors
    try:
        for part in parts[:-1]:
            inner = open_folder(part, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = inner
        try:  # O_NONBLOCK: a FIFO planted as the file is refused, not waited on
            file = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | NO_LINKS, dir_fd=descriptor)
        except OSError as error:
            raise _refused(error, named) from None
    finally:
        os.close(descriptor)
    with os.fdopen(file, "rb") as opened:
        found = os.fstat(opened.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            raise NotPlainFile(errno.EPERM, "not a plain file", str(named))
        return opened.read(limit + 1)


def _read_plain_by_name(folder: Path, parts: tuple[str, ...], limit: int) -> bytes:
    """`read_plain` where folders have no descriptors to open from (Windows): each part checked by name."""
    paths = [folder]
    for part in parts:
        paths.append(paths[-1] / part)
    for path in paths:
        if path.is_symlink():
            raise NotPlainFile(errno.ELOOP, "a link", str(path))
    if not path.is_file():
        raise NotPlainFile(errno.EPERM, "not a plain file", str(path)) if path.exists() else \
            FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    with path.open("rb") as opened:
        return opened.read(limit + 1)


def create_plain(folder: Path, name: str, data: bytes, mode: int, owner: int | None = None) -> None:
    """Write `data` to a new file `name` in `folder`, with `mode` and (unless None) `owner` as user and group.

    `folder` is opened without following a link, and the file created in it with O_EXCL: never through
    a link nor into a file that is already there (`NotPlainFile`); the owner and mode are set on the open
    file, never on a name someone could replace meanwhile.
    """
    if not DESCRIPTORS:
        with Path(folder, name).open("xb") as opened:
            opened.write(data)
        return
    descriptor = open_folder(folder)
    try:
        file = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_LINKS, mode, dir_fd=descriptor)
    except OSError as error:
        raise _refused(error, Path(folder, name)) from None
    finally:
        os.close(descriptor)
    with os.fdopen(file, "wb") as opened:
        if owner is not None:
            os.fchown(opened.fileno(), owner, owner)
        os.fchmod(opened.fileno(), mode)  # whatever the umask
        opened.write(data)


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
