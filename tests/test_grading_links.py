"""Root never follows a student's link (issue #43, item 4).

In "user" isolation the grader runs as root and the student's kernel as uid 65534 in a scratch folder it
owns, where it may leave links (to /etc/shadow, to classmates' records, to the gradebook, to the grader's
own modules; in loops; under every name the grader might use) before a cell ends the kernel and the
grader starts the next one there. Each test plants such a spray in a temporary folder and calls the
grader's own functions on it, as root would (with the sandbox user's uid when the tests run as root):
the hand-over of the connection file, the process that does it, the folder given to the sandbox user,
and the saved function read back for the judge. Nothing outside the scratch folder changes, nothing is
read through a link, and each costs a fixed number of steps however large the spray.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from d2lmini.grading.assignment.manifest import load
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.base.files import NotPlainFile, read_plain
from d2lmini.grading.judging.judge import judge
from d2lmini.grading.run import handover, sandbox
from d2lmini.grading.run.saved import FUNCTION_LIMIT, saved_function

# Windows has no sandbox user, no FIFOs and no descriptor-relative opens: `files` checks names there.
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no sandbox user or Unix links on Windows")

SPRAY = 2000  # links per name pattern and folder: thousands in all
OWNER = sandbox.SANDBOX_UID if os.geteuid() == 0 else os.getuid()  # whom the grader gives the folder
CONNECTION = b'{"key": "grader-secret", "shell_port": 5}'
CJK = re.compile(r"[\u4e00-\u9fff]")


def targets(tmp_path: Path) -> Path:
    """What a student would aim at: a shadow file, a classmate's record, the gradebook, a grader module."""
    folder = tmp_path / "grader-files"
    for name, text, mode in (("shadow", "root:$6$secret\n", 0o600), ("bob.json", '{"student": "bob"}', 0o600),
                             ("gradebook.csv", "student,total\r\nbob,4\r\n", 0o600),
                             ("hidden_state.py", "def check(): return True\n", 0o644)):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text, "utf-8")
        (folder / name).chmod(mode)
    return folder


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under `folder` as it is: its bytes, mode, owner and modification time, or its link."""
    found = {}
    for path in sorted(folder.rglob("*")):
        status = path.lstat()
        content = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else None
        found[str(path.relative_to(folder))] = (content, status.st_mode, status.st_uid, status.st_mtime_ns)
    return found


def spray(scratch: Path, aims: Path) -> None:
    """Thousands of links in `scratch` (and in the `.kernel` folder an older grader used) to every target,
    under the names a grader might write (the old hand-over's copies too), two links in a loop, and HOME
    replaced by a link to the targets' folder."""
    names = sorted(p.name for p in aims.iterdir())
    (scratch / ".kernel").mkdir(parents=True, exist_ok=True)
    for index in range(SPRAY):
        aim = str(aims / names[index % len(names)])
        for folder in (scratch, scratch / ".kernel"):
            os.symlink(aim, folder / f"connection-{index}-user.json")
            os.symlink(aim, folder / f".connection-{index:032x}.json")
    os.symlink("loop-b", scratch / "loop-a")
    os.symlink("loop-a", scratch / "loop-b")
    os.symlink(str(aims), scratch / sandbox.HOME)


def test_the_hand_over_writes_one_new_file_of_its_own_amid_a_spray_of_links(tmp_path):
    aims, scratch, private = targets(tmp_path), tmp_path / "scratch", tmp_path / "grader"
    private.mkdir()
    (private / "connection-1.json").write_bytes(CONNECTION)
    spray(scratch, aims)
    aimed, planted = snapshot(aims), snapshot(scratch)

    copy = handover.hand_over(private / "connection-1.json", scratch, OWNER)

    assert snapshot(aims) == aimed  # nothing written, chowned or chmodded through a link
    after = snapshot(scratch)
    assert set(after) - set(planted) == {copy.name}, "one new entry, the copy"
    assert {k: v for k, v in after.items() if k != copy.name} == planted  # every link as it was
    status = copy.lstat()
    assert copy.parent == scratch and copy.read_bytes() == CONNECTION
    assert (status.st_mode & 0o777, status.st_uid, status.st_nlink) == (0o600, OWNER, 1)
    assert not copy.is_symlink()


def test_a_link_in_place_of_the_connection_file_or_the_folder_is_refused_and_nothing_is_written(tmp_path):
    aims, scratch, private = targets(tmp_path), tmp_path / "scratch", tmp_path / "grader"
    private.mkdir()
    scratch.mkdir()
    os.symlink(aims / "shadow", private / "connection-1.json")  # the hand-over file replaced by a link
    aimed = snapshot(aims)
    with pytest.raises(handover.NotPlainFile):  # its own copy of files.py's: it imports no package
        handover.hand_over(private / "connection-1.json", scratch, OWNER)
    assert not any(scratch.iterdir())
    (private / "connection-2.json").write_bytes(CONNECTION)
    os.symlink(aims, tmp_path / "linked-scratch")
    with pytest.raises(handover.NotPlainFile):
        handover.hand_over(private / "connection-2.json", tmp_path / "linked-scratch", OWNER)
    assert snapshot(aims) == aimed


def test_the_starter_that_hands_over_runs_nothing_of_the_students_and_writes_nothing_through_home(tmp_path):
    """The hand-over process runs as root, in the student's folder, with the student's HOME: it imports
    no module left there (a `d2lmini` package, a `secrets.py`) and nothing it imports writes a cache or
    reads settings through HOME (torch, matplotlib and IPython would, through the d2lmini package)."""
    aims, scratch, private = targets(tmp_path), tmp_path / "scratch", tmp_path / "grader"
    private.mkdir()
    (private / "connection-1.json").write_bytes(CONNECTION)
    spray(scratch, aims)
    imported = tmp_path / "student-code-ran"
    planted = f"open({str(imported)!r}, 'a').write(__name__ + '\\n')\n"
    for module in ("d2lmini/__init__.py", "d2lmini/grading/__init__.py", "secrets.py", "pathlib.py"):
        (scratch / module).parent.mkdir(parents=True, exist_ok=True)
        (scratch / module).write_text(planted, "utf-8")
    aimed = snapshot(aims)
    home = str(scratch / sandbox.HOME)  # a link to the targets' folder
    env = {"HOME": home, "MPLCONFIGDIR": home, "IPYTHONDIR": f"{home}/.ipython", "XDG_CACHE_HOME": home,
           "PATH": "/usr/bin:/bin", "PYTHONPATH": f"{scratch}{os.pathsep}{sandbox.PACKAGE.parent}"}
    original = str(private / "connection-1.json")
    program = ["/bin/sh", "-c", 'cat "$0"', original]  # prints the file it is given: the copy

    done = subprocess.run(handover.command(original, scratch, OWNER, program), cwd=scratch, env=env,
                          capture_output=True, timeout=120)

    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout == CONNECTION  # the program ran on the copy
    assert not imported.exists(), imported.read_text("utf-8")
    assert snapshot(aims) == aimed


def test_the_sandbox_user_is_given_its_folder_and_home_alone_however_many_links_it_holds(tmp_path):
    aims, scratch = targets(tmp_path), tmp_path / "scratch"
    spray(scratch, aims)
    (scratch / "functions").mkdir()
    (scratch / "functions" / "f.pkl").write_bytes(b"student's")
    aimed, planted = snapshot(aims), snapshot(scratch)

    given = sandbox.give_folder(scratch, OWNER)

    assert given == [".", sandbox.HOME]  # two system calls, never a walk of the student's entries
    assert scratch.stat().st_uid == OWNER
    assert snapshot(aims) == aimed
    home = planted.pop(sandbox.HOME)
    assert snapshot(scratch) == planted | {sandbox.HOME: (home[0], home[1], OWNER, home[3])}
    os.symlink(aims, tmp_path / "linked-scratch")
    with pytest.raises(NotPlainFile):
        sandbox.give_folder(tmp_path / "linked-scratch", OWNER)
    assert snapshot(aims) == aimed


def _plant(scratch: Path, aims: Path, kind: str) -> None:
    """Put at `scratch`/functions/f.pkl what a student may leave in place of their saved function."""
    functions = scratch / "functions"
    scratch.mkdir()
    (scratch / "mine.pkl").write_bytes(b"a function of the student's own")
    if kind == "folder link":
        os.symlink(aims, functions)
        return
    functions.mkdir()
    file = functions / "f.pkl"
    if kind == "link out":
        os.symlink(aims / "shadow", file)
    elif kind == "link in":  # to a file inside the scratch folder: still a link, still refused
        os.symlink("../mine.pkl", file)
    elif kind == "hard link":  # a second name of the shadow file: reading it would read the shadow
        os.link(aims / "shadow", file)
    elif kind == "fifo":  # reading would wait for a writer forever
        os.mkfifo(file)
    elif kind == "loop":
        os.symlink("f.pkl", file)


LINKS = ["link out", "link in", "folder link", "hard link", "fifo", "loop"]


@pytest.mark.parametrize("kind", LINKS)
def test_a_saved_function_is_never_read_through_a_link(tmp_path, kind):
    aims, scratch = targets(tmp_path), tmp_path / "scratch"
    _plant(scratch, aims, kind)
    aimed = snapshot(aims)
    with pytest.raises(NotPlainFile):
        saved_function({"t": "function", "file": "functions/f.pkl"}, scratch)
    assert snapshot(aims) == aimed


def test_a_saved_function_is_read_from_a_plain_file_inside_the_scratch_folder_alone(tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "functions").mkdir(parents=True)
    (scratch / "functions" / "f.pkl").write_bytes(b"pickled")
    (tmp_path / "outside.pkl").write_bytes(b"not the student's")
    assert saved_function({"file": "functions/f.pkl"}, scratch) == b"pickled"
    deep = "/".join(["functions"] * 10_000) + "/f.pkl"  # refused at once, never walked
    for name in ("../outside.pkl", str(tmp_path / "outside.pkl"), "functions/missing.pkl", deep, "", "a\0b"):
        assert saved_function({"file": name}, scratch) is None, name
    (scratch / "functions" / "big.pkl").write_bytes(b"x" * (FUNCTION_LIMIT + 1))
    assert saved_function({"file": "functions/big.pkl"}, scratch) is None
    assert len(read_plain(scratch, "functions/big.pkl", 10)) == 11  # never more than the limit is read


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_a_link_costs_that_student_the_exercise_with_a_message_that_says_why(tmp_path, monkeypatch, language):
    """The grader refuses before any process is started: the student's own fault, a 0 that is a grade."""
    if language != "en":
        monkeypatch.setenv("D2LMINI_LANG", language)
    exercise = next(e for e in load() if e.id == "02:fused_step")
    aims, scratch = targets(tmp_path), tmp_path / "02_concat_matmul"
    _plant(scratch, aims, "link out")
    values = {"step_fn": {"t": "function", "handle": "02:fused_step/step_fn", "name": "fused_step",
                          "file": "functions/f.pkl"}}
    verdict = judge(exercise, values, scratch, Limits(), seed=11)
    assert not verdict.correct
    assert not list(tmp_path.glob(".*-call")), "no process was started to call it"
    assert "fused_step" in verdict.message
    if language == "en":
        assert "link" in verdict.message
    else:
        assert CJK.search(verdict.message) and "link" not in verdict.message
