"""Open the course as Colab, Kaggle and Binder do, each in a fresh venv, and run every notebook.

    python tools/simulate_platforms.py --work /tmp/platforms                  # all three
    python tools/simulate_platforms.py --work DIR --platform kaggle --wheel DIR/dist/d2lmini-*.whl
    python tools/simulate_platforms.py --work DIR --platform colab --colab-torch torch==2.13.0

- colab: what Google Colab ships that matters here, at the lowest versions d2lmini supports
  (tools/lowest_versions.py: the oldest torch, numpy, matplotlib, ipywidgets 7.7), and no
  anywidget, psygnal or pyppmd;
- kaggle: the newest torch, numpy and matplotlib the index has (Kaggle's image follows the
  releases; PyPI's torch is the CUDA build, as Kaggle's is), ipywidgets 8, no anywidget, psygnal
  or pyppmd.

In each, for every distinct first cell (tools/colab_cell.py gives every notebook the same one):
d2lmini and what the cell installs are removed, the cell runs as a script with D2LMINI_WHEEL
pointing at a wheel built here (no network but the package index), and the script asserts that the
cell printed nothing to stderr, installed d2lmini, anywidget, psygnal and pyppmd, and left torch,
numpy, matplotlib and ipywidgets at the versions the platform had. Then every notebook runs top to
bottom under nbval, each copied alone into an empty folder of its own (notebooks/conftest.py and
sanitize.cfg one level up), with that venv's python: its asserts must hold and its cells tagged
`nbval-check-output` must give their stored output back at that platform's versions. These two
runs are the course's notebook runs at the lowest and the newest versions (.ci/run runs no other
there; with `--edition zh` the Chinese edition's notebooks run instead: .ci/run runs the English at
the lowest and the Chinese at the newest).

- binder: binder/requirements.txt, the file mybinder.org and .devcontainer/ install, in a fresh
  venv where torch is already installed from the package index (`--binder-torch`); with
  `--offline-torch-index` its PyTorch CPU index line is left out, for a machine that cannot reach
  download.pytorch.org. Then one notebook runs (`--binder-notebook`).

Prints how long each step took. Exits non-zero at the first failure, saying what failed.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
# The Chinese edition: the same code cells after a first cell that sets D2LMINI_LANG (tools/translations.py).
EDITIONS = {"en": NOTEBOOKS, "zh": sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]*_*.ipynb"))}
PLATFORM_PACKAGES = ["torch", "numpy", "matplotlib", "ipywidgets"]  # the platform's: never replaced
CELL_INSTALLS = ["d2lmini", "anywidget", "psygnal", "pyppmd"]        # what the first cell must bring
KERNEL_TOOLS = ["ipykernel", "nbclient", "nbformat", "pytest", "nbval"]  # to run notebooks and compare
TORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"


class SimulationFailed(Exception):
    """A platform did not behave as the course needs; the message says what and where."""


def lowest_pins() -> list[str]:
    """Return tools/lowest_versions.py's pins, e.g. ["torch~=2.3.0", ..., "ipywidgets==7.7.1"]."""
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "lowest_versions.py")],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def declared_dependencies() -> list[str]:
    """Return pyproject.toml's runtime dependencies, e.g. ["torch>=2.3,<3", ...]."""
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["dependencies"]


def base_requirements(platform: str, colab_torch: str | None) -> list[str]:
    """Return the pip arguments that install what `platform` ships before any notebook runs."""
    if platform == "colab":
        pins = [p for p in lowest_pins() if p.split("=")[0].rstrip("~") in PLATFORM_PACKAGES]
        if colab_torch:
            pins = [colab_torch if p.startswith("torch") else p for p in pins]
        return [*pins, *KERNEL_TOOLS]
    if platform == "kaggle":
        newest = {"torch", "numpy", "matplotlib"}  # within pyproject's ranges; ipywidgets is 8 on Kaggle
        ranges = [r for r in declared_dependencies() if re.match(r"[\w-]+", r).group(0) in newest]
        return [*ranges, "ipywidgets>=8,<9", *KERNEL_TOOLS]
    raise ValueError(f"platform must be colab or kaggle, not {platform!r}")


def clean_environment() -> dict:
    """os.environ without PYTHONPATH: nothing may find d2lmini's source folder instead of the install."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environment.setdefault("OMP_NUM_THREADS", "1")
    return environment


def run(command: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    """Run `command` with its python's bin/ first on PATH; raise SimulationFailed naming `what`,
    with its output's tail, if it fails."""
    environment = clean_environment()
    environment["PATH"] = str(Path(command[0]).parent) + os.pathsep + environment["PATH"]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, **kwargs)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SimulationFailed(f"{what} failed (exit {done.returncode}):\n{tail}")
    return done


def make_venv(folder: Path, interpreter: str = sys.executable) -> Path:
    """Create a fresh venv of `interpreter` in `folder` and return its python."""
    run([interpreter, "-m", "venv", "--clear", str(folder)], f"creating the venv {folder}")
    return folder / "bin" / "python"


def pip(python: Path, *arguments: str, what: str) -> None:
    """Run `python -m pip install` quietly with `arguments`."""
    run([str(python), "-m", "pip", "install", "--quiet", *arguments], what)


def versions(python: Path, names: list[str]) -> dict[str, str | None]:
    """Return the installed version of each distribution in `names` (None where it is absent)."""
    code = ("import importlib.metadata as m, json, sys\n"
            "def version(name):\n"
            "    try:\n        return m.version(name)\n"
            "    except m.PackageNotFoundError:\n        return None\n"
            "print(json.dumps({name: version(name) for name in sys.argv[1:]}))")
    # -I: not from the current folder, where building the wheel leaves d2lmini.egg-info behind
    return json.loads(run([str(python), "-I", "-c", code, *names], "reading versions").stdout)


def first_cell(path: Path) -> str:
    """Return the source of the notebook's first code cell (its install cell)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def check_install_cell(python: Path, path: Path, wheel: Path, shipped: dict) -> None:
    """Remove what the cell installs, run the notebook's first cell, and check what it did."""
    run([str(python), "-m", "pip", "uninstall", "--yes", "--quiet", *CELL_INSTALLS], "pip uninstall")
    with tempfile.TemporaryDirectory() as empty:  # not the repository: its d2lmini/ would be found
        environment = clean_environment() | {"D2LMINI_WHEEL": str(wheel)}
        done = subprocess.run([str(python), "-c", first_cell(path)], capture_output=True, text=True,
                              cwd=empty, env=environment, timeout=600)
    if done.returncode != 0 or done.stderr.strip():
        raise SimulationFailed(f"{path.name}: the install cell failed:\n{done.stdout}{done.stderr}")
    after = versions(python, PLATFORM_PACKAGES + CELL_INSTALLS)
    missing = [name for name in CELL_INSTALLS if after[name] is None]
    changed = {name: (shipped[name], after[name])
               for name in PLATFORM_PACKAGES if after[name] != shipped[name]}
    if missing or changed:
        raise SimulationFailed(f"{path.name}: the install cell left out {missing}; changed {changed}")


def run_notebooks_alone(python: Path, paths: list[Path], work: Path) -> None:
    """Run each notebook under nbval with `python`, alone in an empty folder of its own.

    nbval starts each notebook's kernel in the notebook's folder; notebooks/conftest.py (lax mode,
    stderr ignored) and sanitize.cfg sit one level up, where pytest finds them. Nothing is saved back.
    """
    alone = work / "alone"
    shutil.rmtree(alone, ignore_errors=True)
    alone.mkdir(parents=True)
    for name in ("conftest.py", "sanitize.cfg"):
        shutil.copy(ROOT / "notebooks" / name, alone / name)
    copies = []
    for path in paths:
        (alone / path.stem).mkdir()
        copies.append(str(shutil.copy(path, alone / path.stem / path.name)))
    run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(alone), *copies],
        "running the notebooks under nbval", cwd=alone)


def lacking(python: Path, requirements: list[str], what: str) -> list[str]:
    """The distributions `pip install requirements` would install into `python`'s environment ([]: none).
    Installs nothing (`--dry-run`)."""
    check = [str(python), "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", *requirements]
    report = json.loads(run(check, what).stdout)
    return [f'{item["metadata"]["name"]} {item["metadata"]["version"]}' for item in report["install"]]


def reuse_venv(python: Path, requirements: list[str], platform: str) -> None:
    """Make an existing venv the platform's: remove what the install cell brings, then check that the
    platform's packages are already there, at the platform's versions."""
    run([str(python), "-m", "pip", "uninstall", "--yes", "--quiet", *CELL_INSTALLS], "pip uninstall")
    wanted = lacking(python, requirements, f"{platform}: checking the reused venv")
    if wanted:
        raise SimulationFailed(f"{platform}: the reused venv {python.parent.parent} lacks {wanted}")


def simulate_notebook_platform(platform: str, work: Path, wheel: Path, colab_torch: str | None,
                               timings: list, venv: Path | None = None, edition: str = "en") -> None:
    """Colab- or Kaggle-like: install what the platform ships, check every install cell, run all the
    notebooks of `edition` ("en" or "zh": their code cells, install cell included, are the same).

    `venv`: an existing venv to use instead of a fresh one; it must already hold the platform's
    packages at the platform's versions (.ci/run passes its lowest and newest venvs, done with).
    """
    start = time.perf_counter()
    requirements = base_requirements(platform, colab_torch)
    if venv is None:
        python = make_venv(work / platform)
        pip(python, *requirements, what=f"{platform}: the platform's packages")
    else:
        python = venv / "bin" / "python"
        reuse_venv(python, requirements, platform)
    shipped = versions(python, PLATFORM_PACKAGES + CELL_INSTALLS)
    present = [name for name in CELL_INSTALLS if shipped[name] is not None]
    if present:
        raise SimulationFailed(f"{platform}: the platform already has {present}; the cell would go untested")
    made = "venv with the platform's packages" + (f" (reused: {venv})" if venv is not None else "")
    timings.append((platform, made, time.perf_counter() - start, shipped))
    start = time.perf_counter()
    distinct = {first_cell(path): path for path in NOTEBOOKS}  # tools/colab_cell.py writes one cell for all
    for path in distinct.values():
        check_install_cell(python, path, wheel, shipped)
    checked = f"first cell of {len(NOTEBOOKS)} notebooks ({len(distinct)} distinct, each checked)"
    timings.append((platform, checked, time.perf_counter() - start, ""))
    start = time.perf_counter()
    notebooks = EDITIONS[edition]
    run_notebooks_alone(python, notebooks, work / platform)
    ran = f"{len(notebooks)} notebooks ({edition}) under nbval"
    timings.append((platform, ran, time.perf_counter() - start, ""))


def binder_requirements(offline_torch_index: bool) -> Path:
    """Return binder/requirements.txt, or a copy beside it without the PyTorch index line."""
    path = ROOT / "binder" / "requirements.txt"
    if not offline_torch_index:
        return path
    lines = path.read_text(encoding="utf-8").splitlines()
    if TORCH_CPU_INDEX not in lines:
        raise SimulationFailed(f"binder/requirements.txt has no line {TORCH_CPU_INDEX!r}")
    copy = path.with_name(".requirements-offline.txt")  # beside it: its -r ../ lines stay right
    copy.write_text("\n".join(line for line in lines if line != TORCH_CPU_INDEX) + "\n", encoding="utf-8")
    return copy


def binder_python_version() -> str:
    """The Python that binder/runtime.txt asks repo2docker for ("python-3.11" gives "3.11").

    Without that file the builder picks its own default Python (3.10 in its newest source read here),
    which pyproject's requires-python refuses: the build would stop."""
    path = ROOT / "binder" / "runtime.txt"
    if not path.exists():
        raise SimulationFailed("binder: binder/runtime.txt is missing: the builder's default Python is used")
    text = path.read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-(3\.\d+)", text)
    if not match:
        raise SimulationFailed(f"binder: binder/runtime.txt says {text!r}, not python-3.X")
    return match.group(1)


def binder_python() -> str:
    """The interpreter of binder/runtime.txt's version on this machine, not the one running this script."""
    version = binder_python_version()
    found = shutil.which(f"python{version}")
    if found is None:
        raise SimulationFailed(f"binder: binder/runtime.txt asks for Python {version}, which this machine "
                               f"lacks (no python{version} on PATH): install it to check Binder's build")
    return found


def simulate_binder(work: Path, binder_torch: str, notebook: str, offline_torch_index: bool,
                    timings: list) -> None:
    """A fresh venv of binder/runtime.txt's Python, binder/requirements.txt installed from the
    repository root, one notebook run."""
    start = time.perf_counter()
    python = make_venv(work / "binder", interpreter=binder_python())
    pip(python, binder_torch, what="binder: torch")
    requirements = binder_requirements(offline_torch_index)
    try:
        run([str(python), "-m", "pip", "install", "--quiet", "-r", str(requirements)],
            "binder: pip install -r binder/requirements.txt", cwd=ROOT)
    finally:
        if requirements.name.startswith("."):
            requirements.unlink()
    installed = versions(python, PLATFORM_PACKAGES + CELL_INSTALLS + ["jupyterlab"])
    absent = [name for name, version in installed.items() if version is None]
    if absent:
        raise SimulationFailed(f"binder: binder/requirements.txt did not install {absent}")
    timings.append(("binder", "venv from binder/requirements.txt", time.perf_counter() - start, installed))
    start = time.perf_counter()
    pip(python, "pytest", "nbval", what="binder: pytest and nbval, to run the notebook")
    run_notebooks_alone(python, [ROOT / "notebooks" / f"{notebook}.ipynb"], work / "binder")
    timings.append(("binder", f"{notebook} under nbval", time.perf_counter() - start, ""))


def build_wheel(work: Path) -> Path:
    """Build d2lmini's wheel once into work/dist and return its path."""
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(work / "dist"), str(ROOT)],
        "building the wheel")
    (wheel,) = glob.glob(str(work / "dist" / "d2lmini-*.whl"))
    return Path(wheel)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="a folder for the wheel and the venvs")
    parser.add_argument("--platform", action="append", choices=["colab", "kaggle", "binder"],
                        help="one platform (repeatable); all three when not given")
    parser.add_argument("--wheel", type=Path, help="a d2lmini wheel already built (else built here)")
    parser.add_argument("--colab-torch", help="replace the lowest torch pin, e.g. torch==2.13.0")
    for name in ("colab", "kaggle"):
        parser.add_argument(f"--{name}-venv", type=Path,
                            help=f"use this venv, holding {name.title()}'s packages, not a new one")
    parser.add_argument("--binder-torch", default="torch==2.13.0", help="torch installed before binder/")
    parser.add_argument("--binder-notebook", default="00_start_here", help="the notebook binder runs")
    parser.add_argument("--edition", choices=sorted(EDITIONS), default="en",
                        help="the notebooks colab and kaggle run under nbval: en (notebooks/) or zh "
                             "(notebooks/zh/, the same code cells)")
    parser.add_argument("--offline-torch-index", action="store_true",
                        help="leave binder/requirements.txt's PyTorch index line out (no route to it)")
    args = parser.parse_args()
    platforms = args.platform or ["colab", "kaggle", "binder"]
    args.work.mkdir(parents=True, exist_ok=True)
    timings = []
    try:
        start = time.perf_counter()
        wheel = args.wheel.resolve() if args.wheel else build_wheel(args.work)
        timings.append(("all", f"wheel {wheel.name}", time.perf_counter() - start, ""))
        for platform in platforms:
            if platform == "binder":
                simulate_binder(args.work, args.binder_torch, args.binder_notebook,
                                args.offline_torch_index, timings)
            else:
                venv = args.colab_venv if platform == "colab" else args.kaggle_venv
                simulate_notebook_platform(platform, args.work, wheel, args.colab_torch, timings, venv,
                                           args.edition)
    except SimulationFailed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    finally:
        print("| platform | step | seconds | versions |\n|---|---|---|---|")
        for platform, step, seconds, found in timings:
            shown = ", ".join(f"{k} {v}" for k, v in found.items()) if isinstance(found, dict) else found
            print(f"| {platform} | {step} | {seconds:.0f} | {shown} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
