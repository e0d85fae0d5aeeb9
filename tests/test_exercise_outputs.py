"""Stored notebooks never give an exercise away: checked on the files, without running them.

Every exercise cell is stored unattempted (its only output is the "not answered" or "not
attempted" message); every coding exercise is a stub cell that returns None, followed by its
check cell; no output and no prose anywhere in a notebook shows the answer to one of its
questions, and no cell before the exercises writes out a function a coding exercise asks for.
"""

import json
import math
import re
from pathlib import Path

import pytest
from course import CHAPTERS
from solution_files import load_answers

from d2lmini.exercises import NOT_ANSWERED
from d2lmini.exercises.coding import NOT_ATTEMPTED

ROOT = Path(__file__).resolve().parents[1]
COURSE = {notebook.number: notebook.stem for notebook in CHAPTERS}


def cells(name):
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def exercises_start(all_cells) -> int:
    return next(i for i, c in enumerate(all_cells)
                if c["cell_type"] == "markdown" and "".join(c["source"]).lstrip().startswith("## Exercises"))


def exercise_cells(name):
    """The code cells after the "## Exercises" heading that call a self-check."""
    all_cells = cells(name)
    return [c for c in all_cells[exercises_start(all_cells):]
            if c["cell_type"] == "code" and "check_" in "".join(c["source"])]


def stub_cells(name):
    """(stub cell, the cell after it) for every coding exercise of the notebook."""
    all_cells = cells(name)
    return [(c, all_cells[i + 1]) for i, c in enumerate(all_cells)
            if c["cell_type"] == "code" and "# your code here" in "".join(c["source"])]


def stub_name(cell) -> str:
    return re.match(r"def (\w+)\(", "".join(cell["source"])).group(1)


def printed(cell) -> str:
    return "".join("".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
                   for out in cell.get("outputs", []))


def written_forms(value: float) -> list[str]:
    """How a notebook would print `value` to 4 significant figures (whole numbers also with commas).

    Three figures would find coincidences (the nats of exercise 07.2, 1.248, are not the 1.25 that
    a perplexity example prints); four are the precision the notebooks print answers with.
    """
    forms = {f"{value:.4g}"}
    if value >= 1000 and value == int(value):
        forms |= {f"{int(value):,}", str(int(value))}
    return sorted(forms)


@pytest.mark.parametrize("notebook", COURSE)
def test_every_notebook_has_a_coding_exercise(notebook):
    stubs = stub_cells(COURSE[notebook])
    assert stubs, "at least one coding exercise"
    for stub, _ in stubs:
        source = "".join(stub["source"])
        assert "# your code here" in source and "    return None" in source, source


@pytest.mark.parametrize("notebook", COURSE)
def test_the_stub_has_its_own_cell_and_the_check_the_next(notebook):
    """The check says "write your code in the cell above": the stub is that cell, alone."""
    for stub, check in stub_cells(COURSE[notebook]):
        source, name = "".join(stub["source"]), stub_name(stub)
        assert "check_" not in source and not stub["outputs"], source
        check_source = "".join(check["source"])
        # check_x(fn), or the capstone's check_capstone(..., piece=fn, ...) over several stubs
        calls_check = re.search(rf"check_\w+\([^)]*\b{name}\b", check_source)
        assert check["cell_type"] == "code" and calls_check, check_source
        assert "def " not in check_source


@pytest.mark.parametrize("notebook", COURSE)
def test_exercise_cells_are_stored_unattempted(notebook):
    checks = exercise_cells(COURSE[notebook])
    assert checks
    for cell in checks:
        assert printed(cell).strip() in (NOT_ANSWERED, NOT_ATTEMPTED), "".join(cell["source"])


def searchable_answers(notebook):
    """Yield (question, written form) for every numeric answer of `notebook` distinctive enough to search."""
    for name, answer in load_answers(notebook).items():
        for value in answer if isinstance(answer, tuple) else (answer,):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            if len(f"{value:.4g}".replace(".", "").replace("-", "").strip("0")) < 3:
                continue  # 7, 2.5, 0.5: too common to search for
            for form in written_forms(value):
                yield name, form


@pytest.mark.parametrize("notebook", COURSE)
def test_no_output_shows_the_answer_to_a_question(notebook):
    everything = "\n".join(printed(c) for c in cells(COURSE[notebook]))
    for name, form in searchable_answers(notebook):
        assert form not in everything, f"{name}: the answer {form} is printed in notebook {notebook}"


def prose(name) -> str:
    return "\n".join("".join(c["source"]) for c in cells(name) if c["cell_type"] == "markdown")


@pytest.mark.parametrize("notebook", COURSE)
def test_no_prose_shows_the_answer_to_a_question(notebook):
    text = prose(COURSE[notebook])
    for name, form in searchable_answers(notebook):
        assert form not in text, f"{name}: the answer {form} is in the prose of notebook {notebook}"


# Answers that are formulas or rounded numbers, as the notebook would have written them (#17).
GIVEAWAYS = {
    "01": [r"\b100,000,000\b", r"\b10,000,000,000\b"],  # 100**4 and 100**5 bracket exercise 1
    "06": [r"\\theta\s*\\sqrt\{k\}", r"θ\s*√\s*k", r"88\.2·c", r"88\.16", r"4\.408"],  # exercises 2, 3
}


@pytest.mark.parametrize("notebook", GIVEAWAYS)
def test_no_formula_answer_is_given_away(notebook):
    everything = prose(COURSE[notebook]) + "\n".join(printed(c) for c in cells(COURSE[notebook]))
    for pattern in GIVEAWAYS[notebook]:
        assert not re.search(pattern, everything), f"{pattern} in notebook {notebook}"


@pytest.mark.parametrize("notebook", COURSE)
def test_no_cell_before_the_exercises_writes_out_a_coding_exercise(notebook):
    all_cells = cells(COURSE[notebook])
    body = "\n".join("".join(c["source"]) for c in all_cells[: exercises_start(all_cells)]
                     if c["cell_type"] == "code")
    for stub, _ in stub_cells(COURSE[notebook]):
        name = stub_name(stub)
        assert f"def {name}(" not in body, f"notebook {notebook} defines {name} before its exercise"
