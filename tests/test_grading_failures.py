"""The grader's own failures are never a student's 0 (#43, item 6), and it grades nobody where it cannot
isolate or cannot start a kernel at all (item 8).

A worker process killed outright (as the OOM killer does), a kernel that dies before it answers, or a
sandbox that does not start costs only the student being graded, and only as "not graded — the grader
failed" (`Mark.graded` False, never kept as a grade); a machine that cannot start a sandboxed kernel
at all stops before anyone is graded, saying why.
"""

import csv
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest

from d2lmini.grading.__main__ import UNSANDBOXED, main
from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import validate_config
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.assignment.submission import read_submission
from d2lmini.grading.gradebook.gradebook import GradingError, StudentResult, grade_class, read_record
from d2lmini.grading.judging.marks import Mark, grade_notebook
from d2lmini.grading.run import sandbox
from d2lmini.grading.run.preflight import GraderUnavailable, preflight

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import grading_samples  # noqa: E402  (tools/ is not a package)

pytestmark = [pytest.mark.torch_dependent, pytest.mark.sandboxes]  # kernels, and tensors on the grader's wire
EXERCISES = manifest.load()
IDS = ["02:stacked_weight_shape", "02:fused_step"]
KILLED = "oom"


def config():
    return validate_config({"grading": {}, "points": {i: 1 for i in IDS}}, EXERCISES, "test")


def killed_or_graded(name, files, exercises, config, work):
    """The worker grading KILLED dies by SIGKILL (as the OOM killer ends it); the others get full points
    after a moment, so that they are in the pool, running or waiting, when it breaks."""
    if name == KILLED:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.5)
    return StudentResult(name, [Mark(i, p, p, "Correct!") for i, p in config.points.items()])


def write_class(folder: Path, names) -> Path:
    folder.mkdir(parents=True)
    for name in names:
        (folder / f"{name}.ipynb").write_text("{}", "utf-8")
    return folder


def gradebook(out: Path) -> dict[str, dict]:
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.mark.slow
def test_a_killed_worker_costs_no_classmate_a_point_and_its_student_is_not_graded(tmp_path):
    honest = ["ada", "bob", "cy", "dan"]
    subs, out = write_class(tmp_path / "subs", [*honest, KILLED]), tmp_path / "out"
    said = []
    results = {r.student: r for r in grade_class(subs, out, EXERCISES, config(), jobs=2,
                                                 progress=said.append, grade=killed_or_graded)}
    for name in honest:  # before: those in the broken pool got 0, "Not graded ... (BrokenProcessPool)"
        assert results[name].total == 2 and all(m.graded for m in results[name].marks), results[name]
    lost = results[KILLED]
    assert [m.graded for m in lost.marks] == [False, False]
    assert all(m.message.startswith("Not graded") for m in lost.marks)
    assert read_record(out / "records" / f"{KILLED}.json").fingerprint == ""  # never kept as a grade
    rows = gradebook(out)
    assert [rows[KILLED][i] for i in IDS] == ["not graded"] * 2 and rows["ada"][IDS[0]] == "1"
    calls = []

    def counted(name, files, exercises, config, work):  # in this process: nobody is killed now
        calls.append(name)
        return StudentResult(name, [Mark(i, p, p, "Correct!") for i, p in config.points.items()])

    grade_class(subs, out, EXERCISES, config(), progress=said.append, grade=counted)
    assert calls == [KILLED], "a not-graded student is graded again on the next run; the others are kept"


FAILING_BWRAP = """#!/bin/sh
# bubblewrap that makes its sandbox (the probe's `true` runs) but cannot start a program in it
case "$*" in *python*) echo "bwrap: Can't mount proc on /newroot/proc: Operation not permitted" >&2; exit 1;;
esac
exec {bwrap} "$@"
"""


@pytest.fixture
def failing_bwrap(tmp_path, monkeypatch):
    real = sandbox.shutil.which("bwrap")
    if real is None or not sandbox.probe().namespaces:
        pytest.skip(sandbox.probe().describe())
    fake = tmp_path / "bwrap"
    fake.write_text(FAILING_BWRAP.format(bwrap=real), "utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("D2LMINI_BWRAP", str(fake))
    sandbox.probe.cache_clear()
    yield
    monkeypatch.delenv("D2LMINI_BWRAP")
    sandbox.probe.cache_clear()


def solved_class(folder: Path) -> Path:
    """One student, ada, who solved notebook 02."""
    (folder / "ada").mkdir(parents=True)
    name = grading_samples.notebook_path("02").name
    grading_samples.write(grading_samples.solved("02", whole=False), folder / "ada" / name)
    return folder


@pytest.mark.slow
def test_a_machine_that_cannot_start_a_sandboxed_kernel_grades_nobody_and_says_why(tmp_path, failing_bwrap,
                                                                                  capsys):
    subs, out = solved_class(tmp_path / "subs"), tmp_path / "out"
    status = main([str(subs), "--out", str(out)])
    error = capsys.readouterr().err
    assert status == 2, error  # before: every kernel died, and the class got 0 / 2
    assert "Nobody was graded" in error and "Can't mount proc" in error, error
    assert not (out / "gradebook.csv").exists() and not list((out / "records").glob("*.json"))
    assert not list(out.glob(".work-*"))


@pytest.mark.slow
def test_a_kernel_that_never_starts_is_tried_again_then_not_graded_never_zero(tmp_path, failing_bwrap):
    subs = solved_class(tmp_path / "subs")
    submission = read_submission(next((subs / "ada").iterdir()))
    assert submission.cells
    mine = [e for e in EXERCISES if e.id in IDS]
    marks = grade_notebook(submission, mine, {i: 1 for i in IDS}, tmp_path / "work" / "02", Limits(), 11)
    assert [m.graded for m in marks] == [False, False], marks  # before: 0 points, a RuntimeError
    assert all("the grader failed" in m.message and "not a mark of 0" in m.message for m in marks)


@pytest.mark.slow
def test_without_a_sandbox_the_command_grades_nobody_unless_told_the_risk_by_name(tmp_path, monkeypatch,
                                                                               capsys):
    monkeypatch.setenv("D2LMINI_SANDBOX", "none")
    sandbox.probe.cache_clear()
    try:
        subs, out = write_class(tmp_path / "subs", ["ada"]), tmp_path / "out"
        assert main([str(subs), "--out", str(out)]) == 2  # before: a WARNING line, then graded as the grader
        error = capsys.readouterr().err
        assert UNSANDBOXED in error and "NOT isolated" in error and not out.exists()
        assert main([str(subs), "--out", str(out), UNSANDBOXED]) == 0
        assert set(gradebook(out)) == {"ada"}
    finally:
        monkeypatch.delenv("D2LMINI_SANDBOX")
        sandbox.probe.cache_clear()


@pytest.fixture
def user_isolation(monkeypatch):
    if os.geteuid() != 0 or sandbox.shutil.which("setpriv") is None:
        pytest.skip("'user' isolation needs root and setpriv")
    monkeypatch.setenv("D2LMINI_SANDBOX", "user")
    sandbox.probe.cache_clear()
    yield sandbox.probe()
    monkeypatch.delenv("D2LMINI_SANDBOX")
    sandbox.probe.cache_clear()


def test_in_user_isolation_a_folder_uid_65534_cannot_enter_stops_the_grader_before_anyone(tmp_path,
                                                                                         monkeypatch):
    # stops before any kernel starts: the isolation is only said, so this runs where setpriv cannot
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Isolation("/usr/bin/setpriv", "user", "test"))
    closed = tmp_path / "closed"
    subs, out = write_class(tmp_path / "subs", ["ada"]), closed / "out"
    closed.mkdir(mode=0o700)
    with pytest.raises(GraderUnavailable, match=f"cannot enter {closed}"):  # before: every kernel died, 0 / 2
        grade_class(subs, out, EXERCISES, config(), progress=lambda _: None)
    assert not (out / "gradebook.csv").exists() and not list(out.glob(".work-*"))


def test_in_user_isolation_two_students_are_never_graded_at_once(tmp_path, monkeypatch, capsys):
    # every sandbox there is uid 65534: with --jobs 2 one student's kernel could read a classmate's scratch
    # folder, and ending "every process of the user" ended the classmate's kernel
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Isolation("/usr/bin/setpriv", "user", "test"))
    subs, out = write_class(tmp_path / "subs", ["ada", "bo"]), tmp_path / "out"
    with pytest.raises(GradingError, match="--jobs 2.*uid 65534.*--jobs 1"):  # before: graded two at once
        grade_class(subs, out, EXERCISES, config(), jobs=2, progress=lambda _: None)
    assert not out.exists()
    assert main([str(subs), "--out", str(out), "--jobs", "2"]) == 2
    assert "--jobs 1" in capsys.readouterr().err and not out.exists()


@pytest.mark.slow
def test_in_user_isolation_the_graders_own_folder_is_made_enterable(tmp_path, user_isolation):
    if not user_isolation.isolated:
        pytest.skip(user_isolation.describe())
    open_folder = Path(tempfile.mkdtemp(dir="/tmp" if os.access("/tmp", os.W_OK) else None))
    try:
        open_folder.chmod(0o755)
        work = Path(tempfile.mkdtemp(prefix=".work-", dir=open_folder))  # 0700, as grade_class makes it
        preflight(work, Limits())  # before: "Kernel died before replying to kernel_info" for everyone
        assert work.stat().st_mode & 0o001
    finally:
        shutil.rmtree(open_folder, ignore_errors=True)


def test_preflight_starts_a_kernel_once_per_process_and_setup_but_checks_each_folder(tmp_path, monkeypatch):
    # what preflight starts is stood in for (the real start is every class test's): here, how often
    from d2lmini.grading.run import preflight as preflight_module

    started = []

    class Started:
        def __init__(self, folder, *args, **kwargs):
            started.append(folder)

        def run(self, *args):
            return None, False

        def shutdown(self):
            pass

        def ready(self):
            return None

        def close(self):
            pass

    monkeypatch.setattr(preflight_module, "_import_problem", lambda scratch, limits: None)
    monkeypatch.setattr(preflight_module, "Kernel", Started)
    monkeypatch.setattr(preflight_module, "Caller", Started)
    monkeypatch.setattr(preflight_module, "_STARTED", set())
    for name in ("first", "second"):
        work = tmp_path / name
        work.mkdir()
        preflight(work, Limits())
    assert len(started) == 2, started  # a kernel and a caller; before: both again for every class
    for kind in ("cell_seconds", "notebook_seconds", "restarts"):  # a kernel starts under any of these
        preflight(tmp_path / "second", dataclasses.replace(Limits(), **{kind: getattr(Limits(), kind) + 1}))
    assert len(started) == 2, started
    preflight(tmp_path / "second", Limits(memory_mb=Limits().memory_mb + 1))  # bounds on the start: anew
    assert len(started) == 4, started
    preflight(tmp_path / "second", Limits(file_mb=Limits().file_mb + 1))
    assert len(started) == 6, started
    monkeypatch.setenv("D2LMINI_PREFLIGHT_TEST", "1")  # another environment: started anew
    preflight(tmp_path / "second", Limits())
    assert len(started) == 8, started
    closed = tmp_path / "closed"
    monkeypatch.setattr(preflight_module, "_closed_folder", lambda work: "closed" if work == closed else None)
    with pytest.raises(GraderUnavailable, match="closed"):  # each class's own folders, every time
        preflight(closed, Limits())
    assert len(started) == 8, started
