"""Every notebook follows the course's rules (CONTRIBUTING.md): checked without running it."""

import json
import re
from pathlib import Path

import pytest
from course import CHAPTERS, MAP, OPTIONAL

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
COURSE = [notebook.stem for notebook in CHAPTERS]
OPTIONAL_STEMS = [notebook.stem for notebook in OPTIONAL]
CHECK_TAG = "nbval-check-output"


def load(name):
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))


def sources(notebook, kind):
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == kind]


def output_text(cell):
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        parts.append("".join(out.get("data", {}).get("text/plain", "")))
    return "".join(parts)


@pytest.mark.parametrize("name", [MAP.stem, *COURSE, *OPTIONAL_STEMS])
def test_executed_top_to_bottom_without_errors(name):
    notebook = load(name)
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), \
        "re-execute with: python tools/run_notebooks.py"
    errors = [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("name", [MAP.stem, *COURSE, *OPTIONAL_STEMS])
def test_checked_cells_print_no_raw_tensors_or_devices(name):
    checked = [c for c in load(name)["cells"] if CHECK_TAG in c.get("metadata", {}).get("tags", [])]
    assert checked, f"tag the cells whose output is the same everywhere with {CHECK_TAG}"
    for cell in checked:
        text = output_text(cell)
        assert "tensor(" not in text and "device=" not in text, "".join(cell["source"])[:200]


@pytest.mark.parametrize("name", COURSE)
def test_course_notebook_has_every_required_part(name):
    notebook = load(name)
    markdown = "\n".join(sources(notebook, "markdown"))
    code = "\n".join(sources(notebook, "code"))
    assert sources(notebook, "markdown")[0].lstrip().startswith("# "), "a title first"
    for heading in ("What you will learn", "Exercise", "Summary", "Glossary"):
        assert re.search(rf"^#+ .*{heading}", markdown, re.M | re.I), f"missing a '{heading}' section"
    assert len(re.findall(r"^\s*assert\b", code, re.M)) >= 5, "at least five asserts"
    assert "d2lmini.widgets" in code, "at least one widget"
    assert "d2lmini.exercises" in code, "exercises with self-checks"
    glossary = markdown[re.search(r"^#+ .*Glossary", markdown, re.M | re.I).start():]
    assert len(re.findall(r"^\|.*[\u4e00-\u9fff].*\|\s*$", glossary, re.M)) >= 4, \
        "a glossary table with Chinese terms"
    assert "$" in markdown, "formulas in LaTeX"


def test_start_here_links_every_notebook_and_reads_no_sibling_files():
    """Notebook 00 must work opened alone (Colab): the course map is links, not a folder listing."""
    notebook = load(MAP.stem)
    markdown = "\n".join(sources(notebook, "markdown"))
    for name in COURSE:
        assert f"]({name}.ipynb)" in markdown, f"00 should link {name}"
    code = "\n".join(sources(notebook, "code"))
    assert ".ipynb" not in code and "glob(" not in code, "00 must not depend on the files beside it"
    first = sources(notebook, "markdown")[0]
    assert "Shift+Enter" in first and "Run All" in first and "Idle" in first, \
        "00 starts by saying how to run cells"


@pytest.mark.parametrize("name", [MAP.stem, *COURSE, *OPTIONAL_STEMS])
def test_text_that_stops_a_cell_with_the_mouse_names_the_keys_too(name):
    """Where the text says ■ (*Kernel → Interrupt*) stops a cell, it also says Esc, then I, I: a
    keyboard user can stop it too (issue 35; tests/test_browser_stop_keys.py presses them in 04)."""
    for text in sources(load(name), "markdown"):
        if "■" in text and "Interrupt" in text:
            assert re.search(r"Esc.{0,40}I, I", text, re.DOTALL), text[:300]


TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)
INLINE_MATH = re.compile(r"(?<!\$)\$(?!\$)(.+?)(?<!\$)\$(?!\$)")


@pytest.mark.parametrize("name", [MAP.stem, *COURSE, *OPTIONAL_STEMS, *(f"zh/{n}" for n in
                                                                     (MAP.stem, *COURSE, *OPTIONAL_STEMS))])
def test_a_formula_in_a_table_row_has_no_bar_that_would_split_its_cell(name):
    """A `|` inside `$...$` in a Markdown table row ends the cell on the course site (MyST reads the row
    before the formula), as `$|V|^n$` cut 00's course map: bars are written `\\lvert`, `\\rvert`, `\\mid`."""
    rows = [row for source in sources(load(name), "markdown") for row in TABLE_ROW.findall(source)]
    split = [formula for row in rows for formula in INLINE_MATH.findall(row) if "|" in formula]
    assert not split, f"{name}: {split}"
