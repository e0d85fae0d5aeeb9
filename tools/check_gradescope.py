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
import grading_samples  # noqa: E402  (a sibling script)

from d2lmini.grading.release import release  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


SEED = 3


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


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", default="02")
    parser.add_argument("--keep", type=Path, help="use (and keep) this folder as /autograder")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="autograder-"))
    config, released = root / "points.toml", root / "released"
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(released, ignore_errors=True)
    exercises = release(ROOT / "notebooks", released, SEED)
    config.write_text(_config(args.notebook, exercises), "utf-8")
    env = dict(os.environ, D2LMINI_AUTOGRADER_ROOT=str(root), D2LMINI_TORCH_INDEX=os.environ.get(
        "D2LMINI_TORCH_INDEX", ""))
    env.pop("PYTHONPATH", None)
    build = [sys.executable, "-m", "d2lmini.grading", "--gradescope", str(root / "autograder.zip"),
             "--config", str(config), "--manifest", str(released / "exercises.json")]
    _run("build zip", build, dict(os.environ))
    with zipfile.ZipFile(root / "autograder.zip") as archive:
        archive.extractall(root / "source")
    size = (root / "autograder.zip").stat().st_size
    name = grading_samples.notebook_path(args.notebook).name
    answers = grading_samples.released_answers(args.notebook, exercises)
    solved = grading_samples.solved(args.notebook, released, answers)
    grading_samples.write(solved, root / "submission" / name)
    grading_samples.write(b"not a notebook", root / "submission" / "notes.ipynb")
    _run("setup.sh", ["bash", str(root / "source" / "setup.sh")], env)
    printed = _run("run_autograder", ["bash", str(root / "source" / "run_autograder")], env)
    results = check_results(root / "results" / "results.json", args.notebook)
    memory = next(line for line in printed.splitlines() if line.startswith("peak memory"))
    print(f"zip {size / 1024:.0f} KB; results.json: {len(results['tests'])} tests, "
          f"score {results['score']:g}")
    print(memory)
    print("OK: the Gradescope autograder graded the sample submission in a fresh venv")


if __name__ == "__main__":
    main(sys.argv[1:])
