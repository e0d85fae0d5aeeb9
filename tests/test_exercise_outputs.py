"""Stored notebooks never give an exercise away: checked on the files, without running them.

Every exercise cell is stored unattempted (its only output is the "not answered" or "not
attempted" message); every coding exercise is a stub that returns None; no output anywhere
in a notebook shows the answer to one of its questions.
"""

import json
import math
from pathlib import Path

import pytest
from solution_files import load_answers

from d2lmini.exercises import NOT_ANSWERED
from d2lmini.exercises.coding import NOT_ATTEMPTED

ROOT = Path(__file__).resolve().parents[1]
COURSE = {"01": "01_hidden_state", "02": "02_concat_matmul", "03": "03_one_hot", "04": "04_rnn_scratch",
          "05": "05_bptt", "06": "06_gradient_clipping", "07": "07_perplexity"}


def cells(name):
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def exercise_cells(name):
    """The code cells after the "## Exercises" heading that call a self-check."""
    all_cells = cells(name)
    start = next(i for i, c in enumerate(all_cells)
                 if c["cell_type"] == "markdown" and "".join(c["source"]).lstrip().startswith("## Exercises"))
    return [c for c in all_cells[start:] if c["cell_type"] == "code" and "check_" in "".join(c["source"])]


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
    stubs = [c for c in exercise_cells(COURSE[notebook]) if "def " in "".join(c["source"])]
    assert stubs, "at least one coding exercise"
    for cell in stubs:
        source = "".join(cell["source"])
        assert "# your code here" in source and "    return None" in source, source


@pytest.mark.parametrize("notebook", COURSE)
def test_exercise_cells_are_stored_unattempted(notebook):
    checks = exercise_cells(COURSE[notebook])
    assert checks
    for cell in checks:
        assert printed(cell).strip() in (NOT_ANSWERED, NOT_ATTEMPTED), "".join(cell["source"])


@pytest.mark.parametrize("notebook", COURSE)
def test_no_output_shows_the_answer_to_a_question(notebook):
    everything = "\n".join(printed(c) for c in cells(COURSE[notebook]))
    for name, answer in load_answers(notebook).items():
        numbers = answer if isinstance(answer, tuple) else (answer,)
        for value in numbers:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            if len(f"{value:.4g}".replace(".", "").replace("-", "").strip("0")) < 3:
                continue  # 7, 2.5, 0.5: too common to search for
            for form in written_forms(value):
                assert form not in everything, f"{name}: the answer {form} is printed in notebook {notebook}"
