"""The instructors' grader (d2lmini.grading): its parts without a kernel, then whole classes with one.

The class tests grade sample submissions built from the released notebooks and the
instructors' solutions (tools/grading_samples.py): the solutions score full marks, the
untouched notebooks 0, and each bad submission loses exactly the exercises it breaks.
"""

import csv
import json
import math
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

from d2lmini.exercises import Verdict
from d2lmini.exercises.coding import counted_cases, sampler, shifted_seeds
from d2lmini.exercises.one_hot import check_one_hot
from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import DEFAULT_CONFIG, config_text, load_config, validate_config
from d2lmini.grading.base.files import student_key
from d2lmini.grading.base.remote import Unreadable, decode, encode
from d2lmini.grading.gradebook.gradebook import grade_class
from d2lmini.grading.gradebook.outfolder import MARKER
from d2lmini.grading.judging.marks import earned
from d2lmini.grading.run.notebook import rewrite

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import grading_samples  # noqa: E402  (tools/ is not a package)

pytestmark = pytest.mark.torch_dependent

EXERCISES = manifest.load()


def test_the_shipped_exercise_list_is_the_released_notebooks():
    assert [e.id for e in manifest.discover(ROOT / "notebooks")] == [e.id for e in EXERCISES]
    assert manifest.discover(ROOT / "notebooks") == EXERCISES, "python -m d2lmini.grading --discover ..."


def test_the_default_config_grades_every_exercise():
    config = load_config(None, EXERCISES)
    assert set(config.points) == {e.id for e in EXERCISES}
    assert DEFAULT_CONFIG.read_text("utf-8") == config_text(EXERCISES), "python -m d2lmini.grading --discover"
    kinds = {e.id: e.kind for e in EXERCISES}
    assert {config.points[i] for i in config.points if kinds[i] == "question"} == {1}


@pytest.mark.parametrize("data, words", [
    ({"points": {"99:nothing": 1}}, "no exercise called 99:nothing"),
    ({"points": {"01:ngram_order": -1}}, "must be a number from 0"),
    ({"points": {"01:ngram_order": True}}, "must be a number from 0"),
    ({"points": {}}, "lists no exercise"),
    ({"points": {"01:ngram_order": 1}, "grading": {"seed": 1.5}}, "seed must be a whole number"),
    ({"points": {"01:ngram_order": 1}, "grading": {"cell_seconds": 0}},
     "cell_seconds must be a number from 1"),
    ({"points": {"01:ngram_order": 1}, "grading": {"speed": 3}}, "unknown setting(s) speed"),
])
def test_a_wrong_config_is_named(data, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        validate_config(data, EXERCISES, "points.toml")


def test_a_config_with_one_notebook_grades_only_it():
    config = validate_config({"points": {"03:lookup": 4}, "grading": {"seed": 5, "memory_mb": 900}},
                             EXERCISES, "x")
    assert config.points == {"03:lookup": 4.0} and config.seed == 5 and config.limits.memory_mb == 900


@pytest.mark.parametrize("value", [
    7, 2**80, 0.25, math.inf, -math.inf, "sequential", True, None, Fraction(3, 7), Decimal("0.059"),
    (3.482, 1.248), [1, (2, "x")], np.float32(2.24), np.int64(7), np.arange(6).reshape(2, 3),
])
def test_plain_values_cross_the_wire_unchanged(value):
    back = decode(json.loads(json.dumps(encode(value))))
    assert type(back) is type(value)
    assert np.array_equal(back, value) if isinstance(value, np.ndarray) else back == value


def test_tensors_cross_the_wire_with_dtype_shape_and_grad():
    tensor = torch.tensor([[0.8670, 2.0]], dtype=torch.float32, requires_grad=True)
    back = decode(json.loads(json.dumps(encode(tensor))), torch.device)
    assert back.dtype == torch.float32 and back.requires_grad and torch.equal(back.detach(), tensor.detach())
    assert decode(encode(torch.tensor(3, dtype=torch.int64))).item() == 3


def test_what_the_wire_cannot_carry_arrives_as_unreadable_never_unpickled():
    for value in (object(), np.array([object()], dtype=object), {1: 2}, torch.empty(2, device="meta")):
        back = decode(json.loads(json.dumps(encode(value))))
        assert isinstance(back, Unreadable)
        with pytest.raises(TypeError):
            float(back)


def test_check_calls_become_recorders_whatever_their_form():
    exercises = {e.check: e for e in EXERCISES if e.notebook.startswith("01")}
    code, found = rewrite("answer = 7\nresult = ex.check_ngram_order(answer, vocab_size=2)\n"
                          "%time x = 1\n!echo hi\ncheck_same_bag(('ab', 'ba'))", exercises)
    assert found == ["01:ngram_order", "01:same_bag"]
    assert "check_ngram_order" not in code and "check_same_bag" not in code
    assert code.count("__d2lmini_grading__.recorder(") == 2 and "(answer, vocab_size=2)" in code
    assert rewrite("def f(:\n    ex.check_ngram_order(1)", exercises)[1] == []


def test_the_instructors_seed_changes_every_sampled_input():
    plain = sampler(4, torch.device("cpu"))(3)
    with shifted_seeds(2026):
        shifted = sampler(4, torch.device("cpu"))(3)
    assert not torch.equal(plain, shifted)
    assert torch.equal(plain, sampler(4, torch.device("cpu"))(3))


def one_hot_of_the_indices(X, vocab_size):
    """Right for 2-D indices (3 of check_one_hot's 5 cases, not the first); 1-D ones get int64 rows."""
    rows = X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device)
    return rows.float() if X.dim() > 1 else rows.long()


def test_partial_credit_is_the_fraction_of_the_graded_cases_passed():
    with counted_cases() as tally:
        verdict = check_one_hot(one_hot_of_the_indices)
    assert not verdict and (tally.passed, tally.total) == (3, 5)
    points, message = earned(verdict, 2.0, tally)
    assert points == pytest.approx(1.2)
    assert message.startswith(verdict.message) and message.endswith("3 of 5 graded cases passed.")
    assert earned(verdict, 2.0) == (0, verdict.message)  # partial credit off: all or nothing
    plain = check_one_hot(one_hot_of_the_indices)  # outside the tally: the self-check's verdict
    assert plain.message == verdict.message


def test_partial_credit_gives_nothing_to_a_refusal_a_stub_or_a_verdict_not_from_the_cases():
    def banned_once(X, vocab_size):  # calls one_hot, which the exercise refuses, for 1-D inputs only
        if X.dim() == 1:
            return torch.nn.functional.one_hot(X, vocab_size).float()
        return (X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device)).float()

    def stub(X, vocab_size):
        return None

    for function in (banned_once, stub):
        with counted_cases() as tally:
            verdict = check_one_hot(function)
        assert not verdict and earned(verdict, 2.0, tally) == (0, verdict.message)
    with counted_cases() as tally:
        check_one_hot(one_hot_of_the_indices)
    assert earned(Verdict(False, "Not yet. The loop is wrong."), 2.0, tally)[0] == 0  # another verdict
    with counted_cases() as tally:
        right = check_one_hot(lambda X, vocab_size: (X.unsqueeze(-1) == torch.arange(vocab_size)).float())
    assert right and (tally.passed, tally.total) == (5, 5)
    assert earned(right, 2.0, tally) == (2.0, right.message)


def _config(tmp_path: Path, notebooks: tuple[str, ...], cell_seconds: float = 120) -> Path:
    points = [f'"{e.id}" = 1' for e in EXERCISES if e.notebook[:2] in notebooks]
    path = tmp_path / "points.toml"
    path.write_text(f"[grading]\nseed = 11\ncell_seconds = {cell_seconds}\n[points]\n" + "\n".join(points),
                    "utf-8")
    return path


def _files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _grade(tmp_path: Path, submissions: Path, config: Path, jobs: int = 2) -> tuple[dict, Path]:
    """Grade from an empty working folder; check that nothing was written outside the output folder."""
    out, here = tmp_path / "out", tmp_path / "here"
    here.mkdir()
    before = _files(tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(here)
        grade_class(submissions, out, EXERCISES, load_config(config, EXERCISES), jobs,
                    progress=lambda _: None)
    after = {path: data for path, data in _files(tmp_path).items() if out not in path.parents}
    assert after == before and not any(here.iterdir()), "the grader wrote outside --out"
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "feedback", "gradebook.csv", "not_graded.csv",
                                                     "records", "results.json", "similarity.csv"]
    results = {r["student"]: r for r in json.loads((out / "results.json").read_text("utf-8"))}
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(results)
    for name, result in results.items():
        assert float(rows[name]["total"]) == result["total"] == sum(m["points"] for m in result["marks"])
        assert (out / "feedback" / f"{student_key(name)}.md").exists()
    return results, out


@pytest.mark.slow
@pytest.mark.classes
def test_a_class_of_bad_submissions_is_graded_and_each_loses_only_what_it_broke(tmp_path):
    submissions = tmp_path / "submissions"
    name = grading_samples.notebook_path("02").name
    grading_samples.write(grading_samples.solved("02", whole=False), submissions / "solved" / name)
    grading_samples.write(grading_samples.untouched("02", whole=False), submissions / "untouched" / name)
    expected = grading_samples.bad_class("02")
    for student, (sample, _) in expected.items():
        grading_samples.write(sample, submissions / student / name)
    results, out = _grade(tmp_path, submissions, _config(tmp_path, ("02",), cell_seconds=10))
    ids = [e.id for e in EXERCISES if e.notebook.startswith("02")]
    assert all(m["points"] == 1 for m in results["solved"]["marks"])
    assert all(m["points"] == 0 for m in results["untouched"]["marks"])
    for student, (_, lost) in expected.items():
        marks = {m["exercise"]: m for m in results[student]["marks"]}
        for exercise in ids:
            reason = lost.get(exercise, lost.get("*"))
            if reason is None:
                assert marks[exercise]["points"] == 1, (student, marks[exercise])
            else:
                assert marks[exercise]["points"] == 0, (student, exercise)
                said = marks[exercise]["message"] + " ".join(results[student]["notes"])
                assert reason in said, (student, said)
    feedback = (out / "feedback" / "solved.md").read_text("utf-8")
    assert feedback.count("Correct!") == len(ids)
    with (out / "similarity.csv").open(encoding="utf-8") as handle:
        pairs = list(csv.DictReader(handle))  # the bad ones kept the solution's fused_step
    assert any("solved" in (p["student_a"], p["student_b"]) for p in pairs)
    assert all(p["student_a"] < p["student_b"] and "untouched" not in (p["student_a"], p["student_b"])
               and float(p["ratio"]) >= 0.85 for p in pairs)


@pytest.mark.slow
@pytest.mark.classes
def test_the_solutions_score_full_marks(tmp_path):
    """Every released notebook, solved, graded as one student. (An untouched notebook scores zero in
    the class of bad submissions above; each stub is "not attempted" in the exercises' own tests.)"""
    numbers = tuple(sorted({e.notebook[:2] for e in EXERCISES}))
    submissions = tmp_path / "submissions"
    for number in numbers:
        name = grading_samples.notebook_path(number).name
        grading_samples.write(grading_samples.solved(number), submissions / "solutions" / name)
    results, _ = _grade(tmp_path, submissions, _config(tmp_path, numbers))
    assert len(results["solutions"]["marks"]) == len(EXERCISES)
    wrong = [m for m in results["solutions"]["marks"] if m["points"] != 1]
    assert not wrong, wrong


@pytest.mark.slow
@pytest.mark.classes
def test_shortcuts_that_work_in_the_students_own_process_earn_nothing_from_the_grader(tmp_path):
    submissions = tmp_path / "submissions"
    name = grading_samples.notebook_path("02").name
    for student, sample in grading_samples.shortcut_class().items():
        grading_samples.write(sample, submissions / student / name)
    results, _ = _grade(tmp_path, submissions, _config(tmp_path, ("02",)))
    assert set(results) == set(grading_samples.SHORTCUTS)
    for student, result in results.items():
        marks = {m["exercise"]: m for m in result["marks"]}
        assert marks.pop("02:fused_step")["points"] == 0, student
        assert all(m["points"] == 1 for m in marks.values()), (student, marks)
    refused = {m["exercise"]: m for m in results["package_function"]["marks"]}["02:fused_step"]["message"]
    assert "d2lmini.rnn" in refused and "refused" in refused  # absent from the process that calls it
