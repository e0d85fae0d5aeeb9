"""The grader's boundary: what a submission runs cannot reach the grader, the instructor or classmates.

The sandbox (bubblewrap) is checked directly, then a class of cheating submissions
(tools/cheating_samples.py) is graded between two honest classmates: every cheater scores 0,
the honest students keep full marks, and the gradebook, the feedback, the submissions and the
installed package are byte-identical after the cheaters' detached processes had time to act.
Where bubblewrap cannot run, the tests that need it are skipped and the fallback is announced.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import pytest
import torch

from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import load_config
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.assignment.submission import Submission
from d2lmini.grading.base.remote import RemoteFunction, decode, encode
from d2lmini.grading.gradebook.gradebook import grade_class
from d2lmini.grading.judging.marks import grade_notebook
from d2lmini.grading.run import sandbox
from d2lmini.grading.run.calling import Caller
from d2lmini.grading.run.limits import TASKS, address_mb, limited_command

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import cheating_samples  # noqa: E402  (tools/ is not a package)
import grading_samples  # noqa: E402

pytestmark = [pytest.mark.torch_dependent, pytest.mark.sandboxes]

EXERCISES = manifest.load()
needs_sandbox = pytest.mark.skipif(not sandbox.probe().isolated, reason=sandbox.probe().describe())
# What only namespaces hide (a fresh /proc, a file system of its own): "user" isolation (setpriv, for a
# root grader without namespaces) leaves what any user may read visible, and says so (Isolation.describe).
needs_namespaces = pytest.mark.skipif(not sandbox.probe().namespaces, reason=sandbox.probe().describe())


PROBE = r"""
import json, os, socket, sys
found = {"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}
found["cmdlines"] = [open(f'/proc/{p}/cmdline', 'rb').read().decode(errors='replace') for p in found["pids"]]
found["visible"] = {p: os.path.exists(p) for p in sys.argv[1:]}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    found["network"] = True
except OSError:
    found["network"] = False
writes = {}
for target in (sys.argv[1] + '/x', '/usr/x', os.path.dirname(json.__file__) + '/x', '/x', '/dev/x'):
    try:
        open(target, 'w').write('x')
        writes[target] = True
    except OSError:
        writes[target] = False
found["writes"] = writes
open('probe.json', 'w').write(json.dumps(found))  # the scratch folder: written, but in the sandbox alone
print(open('probe.json').read())
"""


@needs_namespaces
def test_the_sandbox_shows_only_its_scratch_folder_and_the_installed_code(tmp_path):
    import d2lmini

    scratch = tmp_path / "work" / "student" / "02"
    scratch.mkdir(parents=True)
    secret = tmp_path / "points.toml"
    secret.write_text("[grading]\nseed = 123456\n", "utf-8")
    package = Path(d2lmini.__file__).parent
    hidden = [str(package), str(secret), str(tmp_path / "work" / "other"), str(ROOT / "solutions"),
              str(ROOT / "tests"), "/root", "/home"]
    (tmp_path / "work" / "other").mkdir()
    argv = sandbox.command([sys.executable, "-c", PROBE, *hidden], scratch, sandbox.clean_env(scratch))
    found = json.loads(subprocess.run(argv, check=True, timeout=120, capture_output=True).stdout)
    assert not (scratch / "probe.json").exists()  # its scratch folder: a size-capped tmpfs of its own
    assert found["uid"] == sandbox.SANDBOX_UID
    grader = Path("/proc/self/cmdline").read_bytes().decode(errors="replace")
    assert grader not in found["cmdlines"] and len(found["pids"]) <= 3, found["cmdlines"]  # bwrap, python
    assert found["visible"][str(package)], "the installed package must be there, read-only"
    assert not any(found["visible"][p] for p in hidden[1:] if p not in ("/root", "/home")), found["visible"]
    assert not found["network"]
    assert list(found["writes"].values()) == [False] * 5, found["writes"]  # the sandbox's root and /dev too


@needs_sandbox
def test_a_detached_process_is_gone_when_the_sandbox_ends(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    status = tmp_path / "status"
    script = ("import subprocess, sys\n"
              "subprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); time.sleep(600)'],"
              " start_new_session=True)\nprint('started', flush=True)\n")
    argv = sandbox.command([sys.executable, "-c", script], scratch, sandbox.clean_env(scratch), status=status)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert process.stdout.readline() == b"started\n"
    inner = sandbox.sandbox_pid(status)
    assert inner is not None and Path(f"/proc/{inner}").exists()
    process.wait(timeout=60)
    assert sandbox.wait_gone(status)
    sleepers = [p for p in Path("/proc").iterdir()
                if p.name.isdigit() and _cmdline(p).endswith("time.sleep(600)")]
    assert sleepers == []


def test_one_upload_makes_every_attack_it_is_given_before_its_function(tmp_path):
    """The Gradescope check's "user" run grades one upload for five attacks: none may be lost."""
    places = cheating_samples.Places(tmp_path / "results", tmp_path / "submission", tmp_path / "x.ipynb",
                                     tmp_path / "d2lmini")
    samples = cheating_samples.cheating_class(places)
    names = ("patches_agent_and_hooks", "detached_process_rewrites_gradebook", "edits_installed_checker")
    combined = [c.source for c in cheating_samples.all_in_one(samples, names).cells]
    defined = next(i for i, source in enumerate(combined) if "def fused_step" in source)
    original = {c.source for c in grading_samples.released("02").cells}
    for name in names[1:]:
        added = [c.source for c in samples[name].cells if c.source not in original]
        assert len(added) == 1 and combined.index(added[0]) < defined, name
    assert "sys.setprofile = lambda" in combined[defined]  # the first sample's own function
    assert len(combined) == len(samples[names[0]].cells) + len(names) - 1


def test_the_limits_wrapper_sets_its_limits_and_imports_neither_torch_nor_the_package():
    """Every graded kernel and every caller process starts through it: importing d2lmini there cost 2.5 s."""
    shown = ("import resource; print(resource.getrlimit(resource.RLIMIT_FSIZE), "
             "resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_NPROC)[0])")
    argv = limited_command(64, 8, [sys.executable, "-c", shown])
    argv.insert(1, "-Ximporttime")  # the wrapper's own imports, on stderr
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    # the address space too (a shared mapping counts there, not in RLIMIT_DATA), and the processes
    assert done.stdout.split(") ")[0] + ")" == str((8 * 2**20, 8 * 2**20))
    address, tasks = (int(n) for n in done.stdout.split(") ")[1].split())
    assert address == address_mb(64) * 2**20 and tasks == TASKS, done.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "resource" in imported
    assert not [name for name in imported if name.split(".")[0] in ("torch", "d2lmini")], imported


@needs_sandbox
def test_a_sandbox_whose_folders_are_given_relative_to_the_graders_folder_starts(tmp_path, monkeypatch):
    """`python -m d2lmini.grading SUBS --out out` passes relative folders; a kernel starts in its scratch."""
    monkeypatch.chdir(tmp_path)
    scratch, status = Path("work") / "student", Path("status")
    scratch.mkdir(parents=True)
    script = "open('written', 'w').write('yes'); print(open('written').read())"
    argv = sandbox.command([sys.executable, "-c", script], scratch, sandbox.clean_env(scratch), status=status)
    finished = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=scratch)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == "yes\n"


@needs_sandbox
def test_a_message_over_the_limit_never_reaches_the_grader_and_ends_only_its_kernel(tmp_path, monkeypatch):
    """A kernel cannot make the grader hold a message of any size: its socket drops the connection
    (ZeroMQ's MAXMSGSIZE), and the cell ends the kernel, so the notebook is run again without it."""
    from d2lmini.grading.run import kernel as grading_kernel

    monkeypatch.setattr(grading_kernel, "MESSAGE_LIMIT", 2**20)
    (tmp_path / "work").mkdir()  # as the grader makes a scratch folder before its kernel starts there
    running = grading_kernel.Kernel(tmp_path / "work", Limits())
    try:
        assert running.run("print('a small message')", 60) == (None, False)
        started = time.monotonic()
        big = "from IPython.display import display\ndisplay({'text/plain': 'x' * 3_000_000}, raw=True)"
        problem, ended = running.run(big, 60)
        assert ended and problem == "the cell sent a message over 1 MB", (problem, ended)
        assert time.monotonic() - started < 45  # the reply, then LOST_OUTPUT_SECONDS, not the cell's limit
    finally:
        running.shutdown()


def _cmdline(path: Path) -> str:
    try:
        return (path / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _caller_for(function, tmp_path: Path) -> Caller:
    saved = cloudpickle.dumps(function)
    return Caller({"function": saved}, tmp_path / "caller", Limits(memory_mb=2048), with_models=False)


@needs_sandbox
def test_the_package_and_the_solutions_are_absent_where_a_graded_function_runs(tmp_path):
    from d2lmini.rnn import rnn_step

    caller = _caller_for(rnn_step, tmp_path)
    try:
        problem = caller.ready()
    finally:
        caller.close()
    assert problem is not None and "ModuleNotFoundError" in problem and "d2lmini.rnn" in problem


def test_a_compiled_copy_of_the_package_is_refused_where_a_graded_function_runs(tmp_path):
    import inspect

    import d2lmini.batching as batching

    namespace = {"__name__": "my_batches"}  # the whole module copied, renamed: pickled by value
    exec(compile(inspect.getsource(batching), "elsewhere.py", "exec", optimize=2), namespace)
    caller = _caller_for(namespace["sequential_batches"], tmp_path)
    try:
        problem = caller.ready()
    finally:
        caller.close()
    assert problem is not None and "copy of the package's d2lmini/batching.py:" in problem


STUDENT = """
import torch

def fused(X, H, W_xh, W_hh, b_h):
    return torch.tanh(torch.cat((X, H), 1) @ torch.cat((W_xh, W_hh), 0) + b_h)

def uses_rnn(X, H, W_xh, W_hh, b_h):
    return torch.rnn_tanh_cell(X, H, W_xh.T.contiguous(), W_hh.T.contiguous(), b_h, None)
"""


def test_a_caller_process_answers_with_plain_values_and_the_checks_bans(tmp_path):
    from d2lmini.exercises.guard import run_guarded
    from d2lmini.exercises.guard.refusals import RNN

    student = {"__name__": "student_notebook"}  # as a notebook's functions are: saved by value
    exec(STUDENT, student)
    args = tuple(torch.randn(*s) for s in ((2, 3), (2, 4), (3, 4), (4, 4), (4,)))
    for name, banned in (("fused", False), ("uses_rnn", True)):
        folder = tmp_path / name
        folder.mkdir()
        caller = _caller_for(student[name], folder)
        try:
            assert caller.ready() is None
            remote = RemoteFunction(caller.process, 60, name)
            outcome = run_guarded(remote, args, bans=(RNN,))
        finally:
            caller.close()
        if banned:
            assert outcome.error is not None and "refused" in str(outcome.error), outcome.error
        else:
            assert outcome.error is None and torch.allclose(outcome.value, student["fused"](*args))
            assert isinstance(outcome.value, torch.Tensor)


@needs_sandbox
def test_the_caller_process_stops_a_call_at_the_checks_limit(tmp_path):
    from d2lmini.exercises.guard import run_guarded

    student = {"__name__": "student_notebook"}  # saved by value, as a notebook's function is
    exec("def spins(x):\n    while True:\n        x = x + 1\n", student)
    caller = _caller_for(student["spins"], tmp_path)
    try:
        assert caller.ready() is None
        remote = RemoteFunction(caller.process, 300, "spins")
        started = time.monotonic()
        outcome = run_guarded(remote, (1,), seconds=1.0)
        took = time.monotonic() - started
        assert outcome.timed_out and not remote.state["broken"], outcome
    finally:
        caller.close()
    assert took < 4 * 1.0 + 20, took  # stopped there, not by the grading process's longer wait


def test_tuple_subclasses_cross_the_wire_as_tuples():
    from collections import namedtuple

    Pair = namedtuple("Pair", "rows columns")
    for value in (torch.Size([8, 64]), Pair(8, 64)):
        back = decode(json.loads(json.dumps(encode(value))))
        assert type(back) is tuple and back == (8, 64)


def test_without_a_sandbox_the_grader_says_so_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("D2LMINI_SANDBOX", "none")
    sandbox.probe.cache_clear()
    try:
        assert not sandbox.probe().isolated and "NOT isolated" in sandbox.probe().describe()
        submissions = tmp_path / "submissions"
        submissions.mkdir()
        (submissions / "bob.ipynb").write_text("not a notebook", "utf-8")
        said = []
        config = load_config(None, EXERCISES)
        grade_class(submissions, tmp_path / "out", EXERCISES, config, progress=said.append)
        assert said[0].startswith("WARNING: submissions run NOT isolated"), said
        assert said.index(said[0]) < next(i for i, line in enumerate(said) if line.startswith("bob"))
    finally:
        monkeypatch.delenv("D2LMINI_SANDBOX")
        sandbox.probe.cache_clear()


@pytest.mark.slow
@pytest.mark.classes
def test_an_unisolated_grading_is_recorded_in_the_results(tmp_path, monkeypatch):
    monkeypatch.setenv("D2LMINI_SANDBOX", "none")
    sandbox.probe.cache_clear()
    try:
        notebook = grading_samples.solved("02", whole=False)
        cells = [c.source for c in notebook.cells if c.cell_type == "code"]
        mine = [e for e in EXERCISES if e.notebook.startswith("02")]
        stats = {}
        marks = grade_notebook(Submission(tmp_path / "02.ipynb", cells), mine, {e.id: 1 for e in mine},
                               tmp_path / "work" / "02", Limits(), 11, stats)
        assert [m.points for m in marks] == [1] * len(mine), marks  # graded all the same, functions too
        assert stats["isolation"].startswith("NOT isolated")
    finally:
        monkeypatch.delenv("D2LMINI_SANDBOX")
        sandbox.probe.cache_clear()


@needs_sandbox
@pytest.mark.slow
@pytest.mark.classes
def test_cheating_submissions_score_nothing_and_touch_nobody(tmp_path):
    import d2lmini

    submissions, out = tmp_path / "submissions", tmp_path / "out"
    name = grading_samples.notebook_path("02").name
    honest = submissions / "aaa_honest" / name
    places = cheating_samples.Places(out, submissions, honest, Path(d2lmini.__file__).parent)
    grading_samples.write(grading_samples.solved("02", whole=False), honest)
    for student, sample in cheating_samples.cheating_class(places).items():
        grading_samples.write(sample, submissions / student / name)
    (submissions / "symlink_to_classmate").mkdir()
    (submissions / "symlink_to_classmate" / name).symlink_to(honest)
    grading_samples.write(grading_samples.solved("02", whole=False), submissions / "zzz_honest" / name)
    config = tmp_path / "points.toml"
    config.write_text("[grading]\nseed = 11\ncell_seconds = 60\n[points]\n" + "\n".join(
        f'"{e.id}" = 1' for e in EXERCISES if e.notebook.startswith("02")), "utf-8")
    package_before = cheating_samples.tree_hash(places.package)
    submissions_before = cheating_samples.tree_hash(submissions)

    results = grade_class(submissions, out, EXERCISES, load_config(config, EXERCISES), 2,
                          progress=lambda _: None)
    written = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    time.sleep(5)  # the cheaters' detached writers, were any left, try every quarter second

    totals = {r.student: r.total for r in results}
    assert totals.pop("aaa_honest") == 4 and totals.pop("zzz_honest") == 4, totals
    assert totals == {student: 0 for student in totals}, totals
    assert len(totals) == len(cheating_samples.cheating_class(places)) + 1
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == written
    assert cheating_samples.tree_hash(places.package) == package_before, "the installed package was changed"
    assert cheating_samples.tree_hash(submissions) == submissions_before
    feedback = (out / "feedback" / "aaa_honest.md").read_text("utf-8")
    assert feedback.count("Correct!") == 4
    marks = {m.exercise: m.message for r in results if r.student == cheating_samples.SOLVES_WITH_A_COPY
             for m in r.marks}
    assert "copy of the package's d2lmini/batching.py:" in marks["02:fused_step"]
    assert os.path.islink(submissions / "symlink_to_classmate" / name)
    stats = json.loads((out / "results.json").read_text("utf-8"))
    assert all(s["stats"].get("isolation", "isolated").startswith("isolated") for s in stats)

