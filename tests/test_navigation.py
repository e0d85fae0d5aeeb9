"""Every notebook ends by pointing to the next one, and every course notebook leads back to the map."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ORDER = sorted(path.stem for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
MAP = "00_start_here"
LINK = re.compile(r"\]\(([^)\s]+\.ipynb)\)")


def markdown_cells(name: str) -> list[str]:
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown"]


def last_cell(name: str) -> dict:
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"][-1]


def test_the_course_is_ten_notebooks_in_order():
    assert ORDER[0] == MAP and ORDER[-1] == "09_gates" and len(ORDER) == 10


@pytest.mark.parametrize("name, following", list(zip(ORDER, ORDER[1:], strict=False)))
def test_the_last_cell_links_to_the_next_notebook(name, following):
    cell = last_cell(name)
    line = "".join(cell["source"]).strip().splitlines()[-1]  # the notebook's last line
    assert cell["cell_type"] == "markdown" and line.startswith("Next: "), f"{name} ends with: {line!r}"
    assert LINK.findall(line)[0] == f"{following}.ipynb"


@pytest.mark.parametrize("name", ORDER[1:-1])
def test_the_last_cell_links_back_to_the_map(name):
    assert f"{MAP}.ipynb" in LINK.findall("".join(last_cell(name)["source"]))


def test_the_last_notebook_links_back_to_the_map():
    assert f"{MAP}.ipynb" in LINK.findall("".join(last_cell(ORDER[-1])["source"]))


@pytest.mark.parametrize("name", ORDER)
def test_every_notebook_link_points_to_a_notebook_that_exists(name):
    targets = [target for text in markdown_cells(name) for target in LINK.findall(text)]
    missing = [t for t in targets if not (NOTEBOOKS / t).is_file()]
    assert missing == []
