"""The grader as a Gradescope autograder: build its zip, and grade one submission inside it.

    python -m d2lmini.grading --gradescope autograder.zip [--config points.toml]

builds a zip with `setup.sh` (a virtual environment with PyTorch's CPU wheel and d2lmini's
dependencies), `run_autograder`, the config and the d2lmini package. On Gradescope,
`run_autograder` runs `python -m d2lmini.grading.gradescope /autograder`: it grades the files
in /autograder/submission and writes /autograder/results/results.json (a test per exercise:
name, score, max_score, output) once every process the submission started is gone. Student
code runs in the same sandbox as locally (`d2lmini.grading.run.sandbox`): bubblewrap where the
container allows it, else as an unprivileged user (the autograder runs as root), with the
config (the seed) and the upload readable by root alone. `D2LMINI_AUTOGRADER_ROOT` replaces
/autograder (for tests). A zip built with `D2LMINI_LANG` set (`zh_CN`) grades in that language:
its `run_autograder` sets it, so the tests' messages and the feedback are written in it.
"""

import json
import shutil
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import torch

from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import DEFAULT_CONFIG, load_config
from d2lmini.grading.assignment.manifest import kind_label
from d2lmini.grading.gradebook.gradebook import grade_student
from d2lmini.grading.gradebook.report import feedback_text
from d2lmini.grading.run import sandbox
from d2lmini.i18n import ENGLISH, ENVIRONMENT_VARIABLE, _, language

PACKAGE = Path(__file__).parents[1]
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
GRADER_PACKAGES = ("ipykernel>=6.29", "jupyter_client>=8", "nbformat>=5.10", "cloudpickle>=3",
                   "copydetect>=0.5,<0.6")  # the grading extra: kernels, and the similarity evidence
KERNEL_MEMORY_MB = 512  # Gradescope's container has 768 MB: the kernel gets this much of it
RELEASED_EXERCISES = "exercises.json"  # in the zip when it grades a release (`--manifest`)

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when the autograder image is built: a virtual environment with
# PyTorch's CPU wheel (no GPU there) and d2lmini's dependencies. Needs Python 3.11 or newer
# (choose Gradescope's Ubuntu 24.04 base image).
set -euo pipefail
root="${{D2LMINI_AUTOGRADER_ROOT:-/autograder}}"
python="${{PYTHON:-python3}}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip
fi
# The sandbox for student code: bubblewrap where the container allows user namespaces, else
# setpriv (util-linux) runs it as an unprivileged user (docs/instructors.md, "Threat model").
if ! command -v bwrap >/dev/null || ! command -v setpriv >/dev/null; then
    apt-get update -q && apt-get install -y -q bubblewrap util-linux || true
fi
"$python" -m venv "$root/venv"
index="${{D2LMINI_TORCH_INDEX-{index}}}"
"$root/venv/bin/python" -m pip install -q ${{index:+--index-url "$index"}} "torch=={torch}"
"$root/venv/bin/python" -m pip install -q -r "$root/source/requirements.txt"
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: grade /autograder/submission, write
# /autograder/results/results.json.
set -euo pipefail
root="${D2LMINI_AUTOGRADER_ROOT:-/autograder}"
cd "$root/source"
PYTHONPATH="$root/source" OMP_NUM_THREADS=1 exec "$root/venv/bin/python" -m d2lmini.grading.gradescope "$root"
"""
# Put into RUN, before its last line, by a zip built in another language than English (the instructor's
# D2LMINI_LANG); an environment variable set on Gradescope wins.
RUN_LANGUAGE = 'export {variable}="${{{variable}:-{language}}}"\n'


def run_script() -> str:
    """`run_autograder`: RUN, speaking the language d2lmini speaks now (English: RUN as it is)."""
    if language() == ENGLISH:
        return RUN
    head, last = RUN.rstrip("\n").rsplit("\n", 1)
    return head + "\n" + RUN_LANGUAGE.format(variable=ENVIRONMENT_VARIABLE, language=language()) + last + "\n"


def _dependencies() -> list[str]:
    """d2lmini's declared dependencies: the installed package's, else its checkout's pyproject.toml."""
    try:
        return metadata.requires("d2lmini") or []
    except metadata.PackageNotFoundError:
        pyproject = PACKAGE.parent / "pyproject.toml"
        if not pyproject.is_file():
            raise RuntimeError(_("d2lmini is neither installed nor a checkout with pyproject.toml: pip "
                                 "install d2lmini, then build the zip again")) from None
        return tomllib.loads(pyproject.read_text("utf-8"))["project"]["dependencies"]


def requirements() -> list[str]:
    """d2lmini's dependencies except torch (installed from the CPU index), and the grader's own."""
    needed = [r for r in _dependencies() if "extra ==" not in r]
    return [r for r in needed if not r.replace(" ", "").startswith("torch")] + list(GRADER_PACKAGES)


def build_zip(path: Path, config: Path | None = None, exercises: Path | None = None) -> None:
    """Write the autograder zip to `path`, with `config` (default: every exercise's default points).

    `exercises`: the exercise list of a release (`release --out DIR` writes DIR/exercises.json),
    graded instead of the course's own, so the zip judges the numbers the released notebooks ask.
    """
    torch_version = torch.__version__.split("+")[0]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        _add_text(archive, "setup.sh", SETUP.format(index=TORCH_INDEX, torch=torch_version), executable=True)
        _add_text(archive, "run_autograder", run_script(), executable=True)
        _add_text(archive, "requirements.txt", "\n".join(requirements()) + "\n")
        _add_text(archive, "points.toml", Path(config or DEFAULT_CONFIG).read_text("utf-8"))
        if exercises is not None:
            _add_text(archive, RELEASED_EXERCISES, Path(exercises).read_text("utf-8"))
        for file in sorted(PACKAGE.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc":
                archive.write(file, str(Path("d2lmini") / file.relative_to(PACKAGE)))


def _add_text(archive: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (0o755 if executable else 0o644) << 16
    archive.writestr(info, text)


def results(result, exercises) -> dict:
    """Gradescope's results.json for one student's `result` (a test per exercise).

    The fields are Gradescope's; the test names and outputs are in the language d2lmini speaks now.
    """
    kinds = {e.id: e.kind for e in exercises}
    # TRANSLATORS: the name of a Gradescope test: an exercise's id and its kind ("question", "coding").
    name = _("{exercise} ({kind})")
    tests = [{"name": name.format(exercise=m.exercise, kind=kind_label(kinds.get(m.exercise, "exercise"))),
              "score": m.points, "max_score": m.max_points, "output": m.message, "visibility": "visible"}
             for m in result.marks]
    return {"score": result.total, "output": "\n".join(result.notes), "tests": tests}


def graded_exercises(source: Path) -> list:
    """The exercises the zip unpacked in `source` grades: a release's list if it carries one."""
    released = source / RELEASED_EXERCISES
    return manifest.load(released) if released.is_file() else manifest.load()


def main(root: Path) -> int:
    """Grade `root`/submission with `root`/source/points.toml; write `root`/results/results.json."""
    exercises = graded_exercises(root / "source")
    # The seed and the upload: root's alone (student code may run as another user here).
    for private in (root / "source" / "points.toml", root / "submission"):
        if private.exists():
            private.chmod(0o600 if private.is_file() else 0o700)
    print(_("submissions run {how}").format(how=sandbox.probe().describe()))
    config = load_config(root / "source" / "points.toml", exercises)
    config.limits.memory_mb = min(config.limits.memory_mb, KERNEL_MEMORY_MB)
    out = root / "results"
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in (root / "submission").rglob("*") if p.is_file())
    result = grade_student("submission", files, exercises, config, out / "work")
    shutil.rmtree(out / "work", ignore_errors=True)
    (out / "results.json").write_text(json.dumps(results(result, exercises), indent=1), "utf-8")
    print(feedback_text(result, exercises, config))
    import resource  # Unix only: Gradescope's autograder runs on Linux; importing this module need not

    grader_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(_("peak memory: grader {grader_mb:.0f} MB, kernel {kernel_mb:.0f} MB, function caller "
            "{caller_mb:.0f} MB; graded in {seconds:.1f} s").format(
                grader_mb=grader_mb, kernel_mb=result.stats.get("kernel_mb", 0),
                caller_mb=result.stats.get("caller_mb", 0), seconds=result.stats.get("seconds", 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/autograder")))
