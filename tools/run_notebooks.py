"""Re-execute the course notebooks in place, each in a fresh kernel, top to bottom.

    python tools/run_notebooks.py                  # every notebook in notebooks/
    python tools/run_notebooks.py notebooks/03_one_hot.ipynb ...

Prints one line per notebook with the time it took; exits non-zero if any cell fails
(the failing notebook is left unchanged on disk).
"""

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def execute(path: Path, timeout: int) -> float:
    """Execute the notebook at `path` in a fresh kernel, save it, and return the seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nbformat.write(notebook, path)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell")
    args = parser.parse_args()
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    failed = []
    for index, path in enumerate(paths, 1):
        print(f"[{index}/{len(paths)}] {path.name} ...", end=" ", flush=True)
        try:
            print(f"{execute(path, args.timeout):.1f} s", flush=True)
        except Exception as error:  # report every notebook, then fail
            print(f"FAILED: {type(error).__name__}: {str(error)[-2000:]}", flush=True)
            failed.append(path.name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
