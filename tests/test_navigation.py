"""Every notebook ends by pointing to the next one, and every course notebook leads back to the map."""

import importlib
import json
import re
from pathlib import Path

import pytest
from course import COURSE

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ORDER = [notebook.stem for notebook in COURSE]
CORE = [notebook.stem for notebook in COURSE if not notebook.optional]  # what "Next" links walk through
MAP = COURSE[0].stem
LINK = re.compile(r"\](?!\(https?://)\(([^)\s]+\.ipynb)\)")  # relative: not the Colab and Kaggle badges


def markdown_cells(name: str) -> list[str]:
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown"]


def last_cell(name: str) -> dict:
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"][-1]


def test_the_course_table_names_every_notebook_once_in_file_name_order():
    """tests/course.py and notebooks/ agree: a new notebook needs its row, a row needs its notebook,
    and the file names sort in course order (JupyterLab's file browser shows them so)."""
    on_disk = sorted(path.stem for path in NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
    assert ORDER == on_disk
    assert ORDER[0] == "00_start_here" and len(set(ORDER)) == len(ORDER)
    assert len({notebook.number for notebook in COURSE}) == len(COURSE), "two notebooks share a number"


def next_core(name: str) -> str:
    """The core notebook after `name` in course order: an optional notebook leads back to the core path."""
    return next(stem for stem in ORDER[ORDER.index(name) + 1:] if stem in CORE)


@pytest.mark.parametrize("name, following", [(name, next_core(name)) for name in ORDER[:-1]])
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


@pytest.mark.parametrize("notebook", COURSE, ids=lambda notebook: notebook.stem)
def test_each_row_names_the_checks_solutions_and_panel_keys_its_notebook_has(notebook):
    cells = json.loads(notebook.path.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
    if notebook.exercises:
        importlib.import_module(f"d2lmini.exercises.{notebook.exercises}")
        assert re.search(rf"^(import|from) d2lmini\.exercises(\.{notebook.exercises}\b| import [\w, ]*\b"
                         rf"{notebook.exercises}\b)", code, re.M), \
            f"{notebook.stem} does not import the self-checks its row names ({notebook.exercises})"
    if notebook is not COURSE[0] and not notebook.optional:
        assert (NOTEBOOKS.parent / "solutions" / f"notebook_{notebook.number}.py").is_file(), \
            f"solutions/notebook_{notebook.number}.py: the instructors' answers and solutions"
    if "d2lmini.widgets" in code:
        assert notebook.keyboard, f"{notebook.stem} shows a panel: its row needs the keys that drive it"


def test_the_course_site_lists_every_notebook_in_course_order():
    """site/index.md's table of contents follows the course table (Sphinx fails on a page it omits)."""
    index = (NOTEBOOKS.parent / "site" / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^notebooks/(\S+)$", index, re.M)
    assert listed == ORDER, "site/index.md's toctree must list tests/course.py's notebooks in order"
