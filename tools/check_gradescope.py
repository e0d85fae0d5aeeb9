"""Run the Gradescope autograder as Gradescope would, in a fresh virtual environment, and check it.

    python tools/check_gradescope.py [--notebook 02] [--keep DIR]

Releases the course with a seed (`python -m d2lmini.grading release`: the computed questions ask
numbers of their own), builds the zip (`python -m d2lmini.grading --gradescope --manifest
released/exercises.json`) with a config that grades one notebook, unzips it into a temporary
/autograder (D2LMINI_AUTOGRADER_ROOT), runs `setup.sh` (a fresh venv; torch from pip's configured
index when D2LMINI_TORCH_INDEX is empty, as in CI, else PyTorch's CPU index) and `run_autograder`
on a submission made of the released notebook, solved (the instructors' functions, the answers to
the released numbers), and a file that is not a notebook, then checks results.json: Gradescope's
format, full marks for the solution, the bad file named. Prints the time of each stage and the
peak memory of the grading process and of the student's kernel (Gradescope allows 768 MB). Exits 1
on failure.

With `--as-user` (as root, where Gradescope's container may forbid the user namespaces bubblewrap
needs) the zip grades in its "user" isolation (D2LMINI_SANDBOX=user: student code as uid 65534
through setpriv), the isolation Gradescope's container leaves it (the bubblewrap one is graded by
the class tests): the solution must score full marks, and then an upload that makes five
attacks of tools/cheating_samples.py must score nothing, leave results.json and the zip's d2lmini
as the grader wrote them, and find the config unreadable. uid 65534 must be able to run the venv's
Python: give `--python` a system Python (Gradescope's image has /usr/bin/python3) and `--keep` a
folder others may enter.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cheating_samples  # noqa: E402  (a sibling script)
import grading_samples  # noqa: E402

from d2lmini.grading.assignment.release import release  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


SEED = 3
# The attacks made in "user" isolation, as one upload (each upload is about 20 s of grading): the first
# replaces the stub with a call into the package after patching the in-kernel machinery; the others add
# cells before it.
USER_CHEATS = ("patches_agent_and_hooks", "detached_process_rewrites_gradebook",
               "fork_child_and_daemon_thread", "edits_installed_checker", "reads_the_config")


def _config(notebook: str, exercises: list) -> str:
    ids = [e.id for e in exercises if e.notebook.startswith(notebook)]
    return f"[grading]\nseed = {SEED}\n[points]\n" + "".join(f'"{i}" = 1\n' for i in ids)


def _run(stage: str, command: list[str], env: dict) -> str:
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
        raise SystemExit(f"FAILED: {stage} exited with {done.returncode}")
    print(f"{stage:<16} {seconds:6.1f} s")
    return done.stdout


def check_results(path: Path, notebook: str) -> dict:
    """Check results.json against Gradescope's format and the expected marks; return it."""
    results = json.loads(path.read_text("utf-8"))
    tests = results["tests"]
    assert tests and all({"name", "score", "max_score", "output"} <= set(t) for t in tests), tests
    assert all(isinstance(t["score"], int | float) and isinstance(t["output"], str) for t in tests)
    assert results["score"] == sum(t["score"] for t in tests)
    assert all(t["name"].startswith(notebook) for t in tests)
    wrong = [t for t in tests if t["score"] != t["max_score"]]
    assert not wrong, f"the solution lost points: {wrong}"
    assert "could not be read as a Jupyter notebook" in results["output"], results["output"]
    return results


def _grade_upload(root: Path, files: dict, stage: str, env: dict) -> tuple[dict, str]:
    """Grade `files` (name -> sample) as one upload; return results.json and what the grader printed."""
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    for name, sample in files.items():
        grading_samples.write(sample, root / "submission" / name)
    printed = _run(stage, ["bash", str(root / "source" / "run_autograder")], env)
    return json.loads((root / "results" / "results.json").read_text("utf-8")), printed


def _others_can_enter(folder: Path) -> Path | None:
    """The first of `folder` and its parents that other users cannot enter, or None."""
    for path in (folder, *folder.parents):
        if not path.stat().st_mode & 0o001:
            return path
    return None


def user_isolation(root: Path, env: dict) -> dict:
    """`env` for the zip's "user" isolation, once uid 65534 is known to be able to enter the venv."""
    closed = _others_can_enter(root / "venv")
    if closed is not None:
        raise SystemExit(f"FAILED: uid 65534 cannot enter {closed}: use a --keep folder others may enter")
    return dict(env, D2LMINI_SANDBOX="user")


def check_cheats_in_user_isolation(root: Path, notebook: str, env: dict) -> None:
    """Grade one upload making the attacks of USER_CHEATS: it gets nothing and reaches nothing."""
    name = grading_samples.notebook_path(notebook).name
    package = root / "source" / "d2lmini"
    before = cheating_samples.tree_hash(package)
    places = cheating_samples.Places(root / "results", root / "submission", root / "submission" / name,
                                     package)
    samples = cheating_samples.cheating_class(places)
    leak = Path(tempfile.mkdtemp(prefix="leak-"))
    leak.chmod(0o1777)  # a shared folder, as /tmp is under setpriv
    samples["reads_the_config"] = cheating_samples.reads_the_config(root / "source" / "points.toml",
                                                                    leak / "config")
    cheat = cheating_samples.all_in_one(samples, USER_CHEATS)
    results, _ = _grade_upload(root, {name: cheat}, "user: cheating", env)
    written = (root / "results" / "results.json").read_bytes()
    time.sleep(1)  # a writer left behind tries every quarter second
    assert results["score"] == 0, results
    assert (root / "results" / "results.json").read_bytes() == written, "a cheat changed results.json"
    assert cheating_samples.tree_hash(package) == before, "a cheat changed the zip's d2lmini"
    said = (leak / "config").read_text("utf-8") if (leak / "config").exists() else "(the cell never ran)"
    shutil.rmtree(leak)
    assert said == "refused: PermissionError", f"the config was readable in user isolation: {said[:80]!r}"
    print(f"user isolation: one upload making {len(USER_CHEATS)} attacks scored 0 and reached nothing")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", default="02")
    parser.add_argument("--keep", type=Path, help="use (and keep) this folder as /autograder")
    parser.add_argument("--python", help="the Python setup.sh makes the venv with (default: python3)")
    parser.add_argument("--as-user", action="store_true",
                        help="grade in 'user' isolation (as root), then a cheating upload too")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="autograder-"))
    config, released = root / "points.toml", root / "released"
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # as Gradescope's /autograder
    shutil.rmtree(released, ignore_errors=True)
    exercises = release(ROOT / "notebooks", released, SEED)
    config.write_text(_config(args.notebook, exercises), "utf-8")
    env = dict(os.environ, D2LMINI_AUTOGRADER_ROOT=str(root), D2LMINI_TORCH_INDEX=os.environ.get(
        "D2LMINI_TORCH_INDEX", ""))
    env.pop("PYTHONPATH", None)
    if args.python:
        env["PYTHON"] = args.python
    build = [sys.executable, "-m", "d2lmini.grading", "--gradescope", str(root / "autograder.zip"),
             "--config", str(config), "--manifest", str(released / "exercises.json")]
    _run("build zip", build, dict(os.environ))
    with zipfile.ZipFile(root / "autograder.zip") as archive:
        archive.extractall(root / "source")
    size = (root / "autograder.zip").stat().st_size
    name = grading_samples.notebook_path(args.notebook).name
    answers = grading_samples.released_answers(args.notebook, exercises)
    solved = grading_samples.solved(args.notebook, released, answers)
    _run("setup.sh", ["bash", str(root / "source" / "setup.sh")], env)
    if args.as_user:
        env = user_isolation(root, env)
    _, printed = _grade_upload(root, {name: solved, "notes.ipynb": b"not a notebook"}, "run_autograder", env)
    results = check_results(root / "results" / "results.json", args.notebook)
    if args.as_user:
        assert "isolated by user only" in printed, printed[:2000]
    memory = next(line for line in printed.splitlines() if line.startswith("peak memory"))
    print(f"zip {size / 1024:.0f} KB; results.json: {len(results['tests'])} tests, "
          f"score {results['score']:g}")
    print(memory)
    if args.as_user:
        check_cheats_in_user_isolation(root, args.notebook, env)
    print("OK: the Gradescope autograder graded the sample submission in a fresh venv")


if __name__ == "__main__":
    main(sys.argv[1:])
