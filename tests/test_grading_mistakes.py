"""The grader gives the catalogue's words: a student's function with a catalogued mistake is told its
cause and the section to re-read in the per-student feedback and in Gradescope's output, as in the
self-check (`d2lmini.exercises.mistakes`)."""

import json
import sys
from pathlib import Path

import pytest

from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.grading import gradescope
from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import load_config
from d2lmini.grading.gradebook.gradebook import grade_class, records

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import grading_samples  # noqa: E402  (tools/ is not a package)

pytestmark = pytest.mark.torch_dependent
EXERCISES = manifest.load()

CHUNG = '''import torch

def gru_cell(X, H, params):
    p = params
    r = torch.sigmoid(X @ p["W_xr"] + H @ p["W_hr"] + p["b_r"])
    z = torch.sigmoid(X @ p["W_xz"] + H @ p["W_hz"] + p["b_z"])
    n = torch.tanh(X @ p["W_xn"] + p["b_n"] + r * (H @ p["W_hn"] + p["b_hn"]))
    return z * n + (1 - z) * H
'''
CELL_FIRST = '''import torch

def lstm_cell(X, H, C, params):
    p = params
    gate = lambda g, act: act(X @ p[f"W_x{g}"] + H @ p[f"W_h{g}"] + p[f"b_{g}"])
    i, f, o = gate("i", torch.sigmoid), gate("f", torch.sigmoid), gate("o", torch.sigmoid)
    c = f * C + i * gate("g", torch.tanh)
    return c, o * torch.tanh(c)
'''


def the_cause(exercise: str, words: str) -> str:
    """The catalogue's full words ("Likely cause: ... Re-read ...") for the mistake of `exercise` whose
    cause starts with `words`."""
    return next(m.said() for m in mistakes_of(exercise) if m.cause.startswith(words))


@pytest.mark.slow
@pytest.mark.classes
def test_the_grader_and_gradescope_name_a_catalogued_mistake_in_the_catalogues_words(tmp_path, monkeypatch):
    monkeypatch.delenv("D2LMINI_LANG", raising=False)
    notebook = grading_samples.solved("09", whole=False)
    exercise_cells = grading_samples.released("09", whole=False)
    for stub, source in ((r"(?s)^def gru_cell\(.*return None", CHUNG),
                         (r"(?s)^def lstm_cell\(.*return None", CELL_FIRST)):
        notebook.cells[grading_samples._cell_index(exercise_cells, stub)].source = source
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    grading_samples.write(notebook, submissions / "student" / grading_samples.notebook_path("09").name)
    points = "\n".join(f'"{e.id}" = 1' for e in EXERCISES if e.notebook.startswith("09"))
    config = tmp_path / "points.toml"
    config.write_text(f"[grading]\nseed = 11\ncell_seconds = 120\n[points]\n{points}", "utf-8")
    grade_class(submissions, out, EXERCISES, load_config(config, EXERCISES), 1, progress=lambda _: None)

    [result] = json.loads((out / "results.json").read_text("utf-8"))
    marks = {m["exercise"]: m for m in result["marks"]}
    chung = the_cause("09:gru_cell", "the update gate is used the other way round")
    swapped = the_cause("09:lstm_cell", "(C', H') is returned in place of (H', C')")
    assert marks["09:gru_cell"]["points"] == 0 and chung in marks["09:gru_cell"]["message"]
    assert marks["09:lstm_cell"]["points"] == 0 and swapped in marks["09:lstm_cell"]["message"]
    feedback = next((out / "feedback").glob("*.md")).read_text("utf-8")
    assert chung in feedback and swapped in feedback
    [record] = records(out)
    outputs = {t["name"]: t["output"] for t in gradescope.results(record, EXERCISES)["tests"]}
    assert any(chung in output for output in outputs.values())
    assert any(swapped in output for output in outputs.values())
