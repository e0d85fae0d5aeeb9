"""Load the instructors' solutions (`solutions/notebook_NN.py`), which are not an installed package.

The self-checks refuse the solutions' own code (imported from a clone, or compiled anywhere
with their docstrings and lines), so the tests feed them as a student who wrote the same
functions would: compiled from a cell (`<cell solutions/...>`) with no docstrings.
"""

import types
from pathlib import Path

import pytest

from d2lmini.exercises.guard import refusals

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"

# The self-checks recognise the solutions by their files, in a clone where solutions/ lies beside
# the package; a d2lmini installed from a wheel has none beside it.
needs_solutions_beside_the_package = pytest.mark.skipif(not refusals.SOLUTIONS.is_dir(), reason=(
    "the refusal recognises the solutions in a clone, where solutions/ lies beside the package; "
    "this d2lmini is installed from a wheel, which has none"))


def load_solution(notebook: str):
    """The functions and ANSWERS of solutions/notebook_<notebook>.py (notebook: "01" ... "07"), as written
    in a notebook cell by a student: same code, no docstrings."""
    path = SOLUTIONS / f"notebook_{notebook}.py"
    module = types.ModuleType(f"solution_{notebook}")
    code = compile(path.read_text(encoding="utf-8"), f"<cell solutions/{path.name}>", "exec",
                   dont_inherit=True, optimize=2)
    exec(code, module.__dict__)  # noqa: S102 - our own solution file
    return module


def load_answers(notebook: str) -> dict:
    """The `ANSWERS` of solutions/notebook_<notebook>.py: each question's answer by the name of its check."""
    return load_solution(notebook).ANSWERS
