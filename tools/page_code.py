"""Copy the package's source into the notebook cells that define it (CONTRIBUTING.md, "Code on the page").

    python tools/page_code.py                 # every notebook: rewrite the marked cells that differ
    python tools/page_code.py --check         # only list them; exit 1 if any differs
    python tools/page_code.py notebooks/05_bptt.ipynb

A marked cell starts with `# d2lmini.<module>.<name>`; its rest becomes
`inspect.getsource` of that object. Outputs are kept (a definition prints nothing), so
after editing a function in the package, run this, then re-execute the notebook.
`tests/test_page_code.py` fails while a cell and the package differ.
"""

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"# (d2lmini(?:\.\w+)+)\s*$")


def package_source(dotted: str) -> str:
    """Return the source of the object `dotted` names ("d2lmini.bptt.step_backward")."""
    module, _, name = dotted.rpartition(".")
    return inspect.getsource(getattr(importlib.import_module(module), name))


def sync(path: Path, write: bool) -> list[str]:
    """Return the markers of `path` whose cell differs from the package; rewrite them if `write`."""
    notebook = nbformat.read(path, as_version=4)
    changed = []
    for cell in notebook.cells:
        first, _, rest = cell.source.partition("\n")
        match = MARKER.fullmatch(first) if cell.cell_type == "code" else None
        if match:
            source = package_source(match.group(1)).rstrip("\n")
            if rest.rstrip() != source.rstrip():
                changed.append(match.group(1))
                cell.source = f"{first}\n{source}"
    if changed and write:
        nbformat.write(notebook, path)
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if a cell differs")
    args = parser.parse_args()
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    differs = False
    for path in paths:
        for dotted in sync(path, write=not args.check):
            differs = True
            print(f"{path.name}: {dotted} {'differs' if args.check else 'copied from the package'}")
    return 1 if differs and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
