"""Load the instructors' solutions (`solutions/notebook_NN.py`), which are not an installed package."""

import importlib.util
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


def load_solution(notebook: str):
    """Import solutions/notebook_<notebook>.py as a module (notebook: "01" ... "07")."""
    path = SOLUTIONS / f"notebook_{notebook}.py"
    spec = importlib.util.spec_from_file_location(f"solution_{notebook}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_answers(notebook: str) -> dict:
    """The `ANSWERS` of solutions/notebook_<notebook>.py: each question's answer by the name of its check."""
    return load_solution(notebook).ANSWERS
