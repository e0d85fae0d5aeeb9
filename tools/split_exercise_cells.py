"""Split every coding exercise into a stub cell and a check cell (idempotent).

A coding exercise used to be one cell: the stub `def ...: return None` followed by the call of
its checker. Its message says "write your code in the cell above", so the stub now stands in
its own cell (no output) and the check in the next one. Run on notebooks/*.ipynb, then
re-execute them with tools/run_notebooks.py.
"""

import hashlib
import json
import sys
from pathlib import Path

INTRO_OLD = ("In a **coding exercise**, write the function in place of `return None`\n"
             "and run the cell: the check")
INTRO_NEW = ("In a **coding exercise**, write the function in place of `return None`\n"
             "in its cell, run that cell, then run the check cell below it: the check")


def split_source(source: str) -> tuple[str, str] | None:
    """(stub, check) of a combined exercise cell, or None if the cell is not one."""
    if "# your code here" not in source or "def " not in source:
        return None
    lines = source.split("\n")
    for i, line in enumerate(lines[1:], start=1):
        if line and not line[0].isspace() and "check_" in line:
            return "\n".join(lines[:i]).rstrip() + "\n", "\n".join(lines[i:]).rstrip("\n")
    return None


def lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def split_notebook(path: Path) -> bool:
    """Split the combined exercise cells of the notebook at `path` in place; True if it changed."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells, changed = [], False
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and INTRO_OLD in source:
            cell["source"] = lines(source.replace(INTRO_OLD, INTRO_NEW))
            changed = True
        parts = split_source(source) if cell["cell_type"] == "code" else None
        if parts is None:
            cells.append(cell)
            continue
        stub, check = parts
        stub_id = hashlib.sha1((cell.get("id", "") + "stub").encode()).hexdigest()[:8]
        cells.append({"cell_type": "code", "execution_count": None, "id": stub_id, "metadata": {},
                      "outputs": [], "source": lines(stub)})
        cell["source"] = lines(check)
        cells.append(cell)
        changed = True
    notebook["cells"] = cells
    if changed:
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(name, "split" if split_notebook(Path(name)) else "unchanged")
