"""Limits that bind (#43, item 8): what a submission runs uses no more memory or disk than the grader allows.

The memory limit was once RLIMIT_DATA alone, which counts neither shared memory nor what several
processes hold together, and the scratch folder and /tmp were bounded per file only. Each way past
that is made here, as a graded function whose unpickling does it (the process that calls a student's
function runs in the same sandbox, with the same limits, as their kernel), in every isolation this
machine can make: a shared mapping touched page by page, 1.5 GB written to /tmp, five children of
400 MB each (under a 512 MB limit: the report's 900 MB under 2,048 MB), and 2 GB written into the
scratch folder in small files. Each must stop its process with an error or end it, and the grader
must say so and go on: a class with such a student and an honest one is graded, the honest student
in full. Where no mechanism binds one of them (no writable cgroup; "user" isolation, which mounts
nothing), the grader's announcement of its isolation says so, and that case is not asserted.
"""

import contextlib
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import validate_config
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.gradebook.gradebook import grade_class
from d2lmini.grading.run import sandbox
from d2lmini.grading.run.calling import Caller

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import grading_samples  # noqa: E402  (tools/ is not a package)

pytestmark = [pytest.mark.torch_dependent, pytest.mark.sandboxes]  # torch starts in every caller process

MEMORY_MB = 512
EXERCISES = manifest.load()

SHARED_MAPPING = """
import mmap
size = 3072 * 2**20  # six times the limit, as 3.4 GB was under 2,048 MB
shared = mmap.mmap(-1, size, flags=mmap.MAP_SHARED)
for offset in range(0, size, 4096):
    shared[offset] = 1
"""
SMALLER_SHARED_MAPPING = SHARED_MAPPING.replace("3072 * 2**20", "640 * 2**20")  # within RLIMIT_AS
TMP_FILL = """
for number in range(48):  # 1.5 GB in 32 MB files, each under the file size limit
    with open(f"/tmp/fill-{number}", "wb") as file:
        file.write(b"x" * 32 * 2**20)
"""
CHILDREN = """
import subprocess, sys
child = "import time; held = b'x' * (400 * 2**20); print('ready', flush=True); time.sleep(120)"
children = [subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE) for _ in range(5)]
try:
    said = [c.stdout.readline() for c in children]
    if said != [b"ready\\n"] * 5:
        raise MemoryError("a child process was stopped")
finally:
    for c in children:
        c.kill()
"""
SCRATCH_FILL = """
for number in range(2048):  # 2 GB in 1 MB files, in the working folder (the scratch folder)
    with open(f"fill-{number}", "wb") as file:
        file.write(b"x" * 2**20)
"""
# Which isolation binds which: "user" isolation mounts nothing (its /tmp and scratch folder are the
# machine's), and what processes use together is bounded only by a cgroup.
BOUND = {
    "shared mapping": ("bwrap", "bwrap without cgroup", "user", "user without cgroup"),
    "smaller shared mapping": ("bwrap", "user"),  # over the memory limit, within the address space's
    "/tmp": ("bwrap", "bwrap without cgroup"),
    "children": ("bwrap", "user"),
    "scratch folder": ("bwrap", "bwrap without cgroup"),
}
SCRIPTS = {"shared mapping": SHARED_MAPPING, "smaller shared mapping": SMALLER_SHARED_MAPPING,
           "/tmp": TMP_FILL, "children": CHILDREN, "scratch folder": SCRATCH_FILL}
CASES = [(name, mode) for name, modes in BOUND.items() for mode in modes]


class Runs:
    """Unpickled, runs `code` and becomes the builtin `len` (a function the caller process accepts)."""

    def __init__(self, code: str):
        self.code = code

    def __reduce__(self):
        return eval, (f"exec({self.code!r}, {{}}) or len",)


@pytest.fixture
def isolation(request, monkeypatch):
    """The isolation named by the test's parameter, or a skip where this machine cannot make it."""
    mode = request.param
    monkeypatch.setenv("D2LMINI_SANDBOX", mode.split()[0])
    if mode.endswith("without cgroup"):
        monkeypatch.setenv("D2LMINI_CGROUP", "none")
    sandbox.probe.cache_clear()
    found = sandbox.probe()
    if found.mode != mode.split()[0]:
        sandbox.probe.cache_clear()
        pytest.skip(found.describe())
    if mode in ("bwrap", "user") and "no cgroup" in found.describe():
        sandbox.probe.cache_clear()
        pytest.skip(found.describe())
    yield found
    monkeypatch.undo()
    sandbox.probe.cache_clear()


@pytest.fixture
def open_folder():
    """A folder uid 65534 may enter ("user" isolation runs the caller as that user); removed after."""
    folder = Path(tempfile.mkdtemp(dir="/tmp" if os.access("/tmp", os.W_OK) else None))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def leftover_cgroups() -> list[str]:
    """The cgroups this process made that are still there (each sandbox's is removed after it)."""
    found = []
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"):
        with contextlib.suppress(OSError):
            found += [str(p) for p in Path(root).rglob(f"d2lmini-{os.getpid()}-*")]
    return found


@pytest.mark.parametrize(("name", "isolation"), CASES, indirect=["isolation"])
def test_each_way_past_the_memory_and_disk_limits_is_stopped(name, isolation, open_folder):
    caller = Caller({"function": pickle.dumps(Runs(SCRIPTS[name]))}, open_folder / "caller",
                    Limits(memory_mb=MEMORY_MB), with_models=False)
    try:
        problem = caller.ready()  # before: None, every way past the limits ran to its end
    finally:
        caller.close()
    assert problem is not None, f"{name}: ran to its end under {isolation.describe()}"
    assert any(word in problem for word in ("MemoryError", "No space left", "Cannot allocate memory",
                                            "ended while it loaded")), problem
    assert leftover_cgroups() == []


def test_the_announcement_says_what_is_not_bounded_without_a_cgroup(monkeypatch):
    monkeypatch.setenv("D2LMINI_CGROUP", "none")
    sandbox.probe.cache_clear()
    try:
        told = sandbox.probe().describe()
        if not sandbox.probe().isolated:
            pytest.skip(told)
        # before: nothing said; children of 900 MB each passed a 2,048 MB limit unsaid
        assert "no cgroup" in told and "D2LMINI_CGROUP=none" in told, told
    finally:
        monkeypatch.undo()
        sandbox.probe.cache_clear()


def bypassing() -> object:
    """Notebook 02 solved, each of whose four check cells first tries one way past the limits."""
    notebook = grading_samples.solved("02", whole=False)
    ways = iter(["shared mapping", "scratch folder", "children", "/tmp"])
    for cell in notebook.cells:
        if cell.cell_type == "code" and "ex.check_" in cell.source:
            cell.source = f"exec({SCRIPTS[next(ways)]!r}, {{}})\n" + cell.source
    return notebook


@pytest.mark.slow
def test_a_student_past_the_limits_loses_those_exercises_and_the_class_is_graded(tmp_path):
    if not sandbox.probe().isolated:
        pytest.skip(sandbox.probe().describe())
    subs, out = tmp_path / "subs", tmp_path / "out"
    name = grading_samples.notebook_path("02").name
    grading_samples.write(bypassing(), subs / "aaa_past_the_limits" / name)
    grading_samples.write(grading_samples.solved("02", whole=False), subs / "zzz_honest" / name)
    ids = [e.id for e in EXERCISES if e.notebook.startswith("02")]
    # a kernel over its cgroup's limit is ended: enough restarts for each cell to say what became of it
    grading = {"memory_mb": MEMORY_MB, "restarts": 4}
    config = validate_config({"grading": grading, "points": {i: 1 for i in ids}}, EXERCISES, "test")
    results = {r.student: r for r in grade_class(subs, out, EXERCISES, config, progress=lambda _: None)}
    assert results["zzz_honest"].total == len(ids), results["zzz_honest"].marks
    past = results["aaa_past_the_limits"]
    assert past.total == 0, past.marks  # before: 4 of 4, every way past the limits ran to its end
    for mark in past.marks:
        said = ("ended the notebook's kernel", "stopped with", "asked for more memory")
        assert mark.graded and any(words in mark.message for words in said), mark


def test_a_v2_cgroup_is_made_only_where_its_controllers_are_delegated_and_the_grader_is_alone(tmp_path):
    """The grader moves itself into a leaf of its v2 cgroup only where that cgroup is its own: never anyone
    else's process, and not where the memory and pids controllers cannot be turned on below it."""
    from d2lmini.grading.run import cgroups

    folder = tmp_path / "app-grader.scope"
    folder.mkdir()
    (folder / "cgroup.controllers").write_text("cpu io\n")
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n")
    assert "not delegated" in cgroups._delegated(folder)
    (folder / "cgroup.controllers").write_text("cpu io memory pids\n")
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n1\n")  # the shell that started it, say
    assert "systemd-run --user --scope" in cgroups._delegated(folder)
    assert not (folder / cgroups.LEAF).exists()  # nobody was moved


SOCKETS_FILL = """
import os
from ipykernel.connect import get_connection_file
folder = os.path.dirname(get_connection_file())  # where its connection file and Unix sockets are
for inside in (folder, os.path.join(folder, "ipc")):
    try:
        for number in range(64):
            with open(os.path.join(inside, f"fill-{number}"), "wb") as file:
                file.write(b"x" * 2**20)
    except OSError:
        pass
"""


def test_the_folder_of_a_kernels_sockets_takes_nothing_of_its_files(tmp_path):
    """The folder of a kernel's connection file and sockets is the grader's, in the machine's /tmp: what the
    kernel writes there stays in its sandbox (before: bound writable, it took any number of files)."""
    from d2lmini.grading.run.kernel import Kernel

    if not sandbox.probe().namespaces:
        pytest.skip(sandbox.probe().describe())
    (tmp_path / "work").mkdir()
    running = Kernel(tmp_path / "work", Limits())
    try:
        assert running.run(SOCKETS_FILL, 60) == (None, False)
        assert running.run("print('still answering')", 60) == (None, False)
        assert sorted(p.name for p in running.sockets.iterdir()) == ["connection.json", "ipc"]
    finally:
        running.shutdown()
