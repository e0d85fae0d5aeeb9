"""Put the Colab install cell first in every course notebook (or check that it is there).

    python tools/colab_cell.py          # insert or update the cell in notebooks/*.ipynb
    python tools/colab_cell.py --check  # exit 1 if any notebook's cell is missing or stale

On Google Colab (and Kaggle, or a VS Code kernel without the course installed) nothing
provides d2lmini, so each notebook starts with one short cell that installs it from the
project's repository, and does nothing where d2lmini is already importable. The address
is written once, in pyproject.toml's [project.urls] Repository. `--no-deps` keeps the
platform's own torch, numpy, matplotlib and ipywidgets; pyppmd, the one dependency such
platforms lack (the PPMd compressor baseline of notebook 07), is named explicitly. The
cell is plain Python, so it checks pip's exit status: an install that fails (no network, a
wrong address) prints one line that says so and what to do (tests/test_colab_cell.py).
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
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["urls"]["Repository"]


def install_cell_source(url: str) -> str:
    """Return the source of the install cell for the repository at `url`.

    Plain Python (no `%pip` magic), so that a failed install is noticed: pip's exit status is
    checked and a failure is reported in one line that says what to do.
    """
    return (f"{MARKER} when it is missing; does nothing where it is installed.\n"
            "import importlib.util\n"
            "import subprocess\n"
            "import sys\n\n"
            'if importlib.util.find_spec("d2lmini") is None:\n'
            f'    source = "d2lmini @ git+{url}"\n'
            '    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "pyppmd", source]\n'
            "    if subprocess.run(pip, capture_output=True).returncode != 0:\n"
            '        print(f"Could not install {source}: connect this runtime to the internet "\n'
            '              "(or check the address) and run this cell again.", file=sys.stderr)\n'
            "    importlib.invalidate_caches()")


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
