"""Put the Colab install cell first in every course notebook (or check that it is there).

    python tools/colab_cell.py          # insert or update the cell in notebooks/*.ipynb
    python tools/colab_cell.py --check  # exit 1 if any notebook's cell is missing or stale

On Google Colab, Kaggle (or a VS Code kernel without the course installed) nothing
provides d2lmini, so each notebook starts with one cell that installs it, and does nothing where
d2lmini is already importable: this release (pyproject.toml's version) from the package index, or,
where the index has no such release, from the project's repository with git; the address is
written once, in pyproject.toml's [project.urls] Repository. A d2lmini from the index whose
metadata names another repository is removed, not used. The platform's torch, numpy, matplotlib
and ipywidgets must stay as they are: d2lmini is installed with `--no-deps`, then only the
requirements (read from its metadata) whose package is missing, such as anywidget with
psygnal and pyppmd, under a constraints file written at run time that holds every installed
distribution at its version. The cell is plain Python, so it checks pip's exit status: an
install that fails (no network, a wrong address, a conflict) prints pip's reason and what
to do, and on Kaggle, where a new widget library needs a restart, it says so
(tests/test_colab_cell.py; tools/simulate_platforms.py runs it in Colab- and Kaggle-like venvs).
Re-execute the notebooks afterwards (python tools/run_notebooks.py).
"""

import argparse
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MARKER = "# Colab / Kaggle: install d2lmini"


def repository_url() -> str:
    """Return the project's repository address from pyproject.toml."""
    return project()["urls"]["Repository"]


CELL = """\
{marker}, and what this platform lacks
# (anywidget, psygnal, pyppmd), never upgrading or downgrading what it ships (torch, numpy,
# matplotlib, ipywidgets). Does nothing where d2lmini is installed.
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


def installed_versions():
    \"\"\"Every installed distribution's name and version (those pip can read).\"\"\"
    versions = {{}}
    for dist in importlib.metadata.distributions():  # in import order: the one imported comes first
        try:
            versions.setdefault(canonicalize_name(dist.metadata["Name"]), str(Version(dist.version)))
        except (InvalidVersion, TypeError, AttributeError):  # a broken install pip could not pin either
            pass
    return versions


def missing_requirements(requirements, installed):
    \"\"\"The `requirements` (extras left out) whose package is not among the `installed` names.\"\"\"
    have = {{canonicalize_name(name) for name in installed}}
    wanted = [Requirement(text) for text in requirements]
    return [str(r) for r in wanted if canonicalize_name(r.name) not in have
            and (r.marker is None or r.marker.evaluate({{"extra": ""}}))]


def pip_error(stderr):
    \"\"\"pip's error lines as plain text: from its first error line on, without colour codes or its notes
    (its last line is often "note: This error originates from a subprocess", which says nothing).\"\"\"
    lines = [re.sub(r"\\x1b\\[[0-9;]*[A-Za-z]", "", line).rstrip() for line in stderr.splitlines()]
    lines = [line for line in lines if line.strip()
             and not line.lstrip().lower().startswith(("note:", "hint:", "[notice]"))]
    first = next((i for i, line in enumerate(lines) if line.lstrip().lower().startswith("error")), 0)
    shown = lines[first:][-15:]
    return "\\n".join("    " + line for line in shown) or "    pip failed"


def pip_install(*arguments):
    \"\"\"Run pip install with every installed package held at its version; return pip's error or "".\"\"\"
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as held:
        held.write("".join(f"{{name}}=={{version}}\\n" for name, version in installed_versions().items()))
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-color", "-c", held.name, *arguments]
    done = subprocess.run(pip, capture_output=True, text=True)
    importlib.invalidate_caches()
    return "" if done.returncode == 0 else pip_error(done.stderr)


# The Chinese edition's first cell sets D2LMINI_LANG before this one; d2lmini's catalogs are not here yet.
CHINESE = os.environ.get("D2LMINI_LANG", "").lower().startswith("zh")
RELEASE = "d2lmini=={version}"  # tools/colab_cell.py writes pyproject.toml's version here
REPOSITORY = "{url}"


def names_this_repository():
    \"\"\"Whether the installed d2lmini names this course's repository (not a namesake from some index).\"\"\"
    urls = importlib.metadata.metadata("d2lmini").get_all("Project-URL") or []
    return any(u.split(",", 1)[-1].strip().rstrip("/") == REPOSITORY for u in urls)


def say(english, chinese):
    \"\"\"The line in this edition's language.\"\"\"
    return chinese if CHINESE else english


def install_d2lmini():
    \"\"\"Install d2lmini without its dependencies; return what was installed, pip's error or "", and
    the line that says where it came from.\"\"\"
    wheel = os.environ.get("D2LMINI_WHEEL")  # CI: a wheel built from this repository (simulate_platforms.py)
    if wheel:
        return wheel, pip_install("--no-deps", wheel), say(f"Installed {{wheel}}.", f"已安装 {{wheel}}。")
    # A wheel only: a namesake's sdist would run its own build code here.
    error = pip_install("--no-deps", "--only-binary", "d2lmini", RELEASE)
    if not error and names_this_repository():
        return RELEASE, "", say(f"Installed {{RELEASE}} from the package index.",
                                f"已从软件包索引安装 {{RELEASE}}。")
    if error and "no matching distribution found for d2lmini" not in error.lower():
        return RELEASE, error, ""
    if not error:  # a namesake from some index, not this course's package: never keep it
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", "d2lmini"])
    source = f"d2lmini @ git+{{REPOSITORY}}"
    why = say("is not on the package index", "不在软件包索引上") if error else say(
        "on the package index is not this course's", "在软件包索引上的不是本课程的包")
    return source, pip_install("--no-deps", source), say(f"{{RELEASE}} {{why}}: installed {{source}}.",
                                                         f"{{RELEASE}} {{why}}：已安装 {{source}}。")


if importlib.util.find_spec("d2lmini") is None:
    source, error, route = install_d2lmini()
    missing = []
    if not error:
        missing = missing_requirements(importlib.metadata.requires("d2lmini"), installed_versions())
        error = pip_install(*missing) if missing else ""
        if error:  # so that running the cell again retries everything
            subprocess.run([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", "d2lmini"])
    if error:
        print(say(f"Could not install {{source}}. pip said:\\n{{error}}\\nNo internet? On Kaggle: Settings > "
                  "Internet > on (it needs a phone-verified account). Then run this cell again.",
                  f"无法安装 {{source}}。pip 的报错：\\n{{error}}\\n没有联网？在 Kaggle 上：Settings > "
                  "Internet > on（需要已验证手机号的账号）。然后再运行一次本单元格。"), file=sys.stderr)
    else:
        print(route)
    restart = "KAGGLE_KERNEL_RUN_TYPE" in os.environ and any(r.startswith("anywidget") for r in missing)
    if restart and not error:
        print(say("Kaggle shows the panels only after a restart: Run > Restart & clear cell outputs, then "
                  "run the notebook from the top.",
                  "Kaggle 要重启后才显示面板：Run > Restart & clear cell outputs，然后从头运行本笔记本。"))
"""


def project() -> dict:
    """Return pyproject.toml's [project] table."""
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]


def install_cell_source(url: str, version: str | None = None) -> str:
    """Return the source of the install cell for the repository at `url` and release `version`
    (pyproject.toml's where None).

    It installs `d2lmini==version` from the package index (a wheel, whose metadata must name `url`),
    and only where the index has no such release, d2lmini from the repository with git; it says in
    one line which route it took. Plain Python (no `%pip` magic), so that a failed install is
    noticed: pip's exit status is checked and a failure is reported with pip's own error lines
    (plain text) and what to do, in Chinese where the Chinese edition's first cell set
    D2LMINI_LANG. d2lmini itself is installed with `--no-deps`; then only the requirements whose
    package is missing, under a constraints file that holds every installed distribution at its
    version, so pip may add packages but never replace one.
    """
    version = version or project()["version"]
    return CELL.format(marker=MARKER, url=url.rstrip("/"), version=version).rstrip("\n")


def first_code_cell(notebook):
    """Return the first code cell of `notebook`, or None."""
    return next((cell for cell in notebook.cells if cell.cell_type == "code"), None)


def put_install_cell(notebook, url: str) -> bool:
    """Insert or update the install cell as the first code cell; return True if it changed."""
    source = install_cell_source(url)
    first = first_code_cell(notebook)
    if first is not None and first.source.startswith(MARKER):
        changed = first.source != source
        first.source = source
        return changed
    position = notebook.cells.index(first) if first is not None else len(notebook.cells)
    notebook.cells.insert(position, nbformat.v4.new_code_cell(source))
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report notebooks that need the cell")
    args = parser.parse_args()
    url, stale = repository_url(), []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        if put_install_cell(notebook, url):
            stale.append(path.name)
            if not args.check:
                nbformat.write(notebook, path)
    print(("needs the install cell: " if args.check else "updated: ") + (", ".join(stale) or "none"))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
