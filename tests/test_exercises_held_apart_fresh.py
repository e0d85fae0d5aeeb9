"""#45's "Done when" measurement on a fresh held-apart set (`tests/held_apart_fresh.py`, commit 391e993).

The set was written from the notebooks, exercises.json and the solutions only, without reading the
catalogue of mistakes, and committed before any answer was run through a self-check. Here every
answer goes through its exercise's self-check as the notebook calls it (`ex.check_xxx(fn)`, in
English, with stdout captured): each right answer must be accepted, no wrong answer may be
("Correct!"), and at least 80 % of the wrong answers must get a named cause ("Likely cause: ...",
as `tools/mistake_rates.py` counts it). The per-notebook rates are printed (`pytest -s` shows them).
"""

import contextlib
import functools
import importlib
import io
import json
import os
from collections import defaultdict
from pathlib import Path

import held_apart_fresh
import pytest

pytestmark = pytest.mark.torch_dependent

NAMED_AT_LEAST = 0.80
EXERCISES = json.loads((Path(__file__).resolve().parents[1] / "d2lmini/grading/exercises.json").read_text())
SPEC = {entry["id"]: entry for entry in EXERCISES}
# The two 08 checks that train for minutes are left out of the set, as its brief says.
TRAINING = {"08:train", "08:capstone"}
# Exercises added after the set was written (391e993): answers to them must be written, like the set, by
# someone who has not read their catalogued mistakes; until then the set says it does not cover them.
ADDED_AFTER_THE_SET = {"09:lstm_step_backward"}


def check_of(exercise: str):
    """The self-check that exercises.json names for this exercise id."""
    spec = SPEC[exercise]
    return getattr(importlib.import_module(spec["module"]), spec["check"])


def function_of(exercise: str, label: str, source: str):
    """The answer's function, compiled as a notebook cell would compile it."""
    namespace: dict = {}
    exec(compile(source, f"<cell {exercise}: {label}>", "exec"), namespace)  # noqa: S102 - a student's cell
    return namespace[held_apart_fresh.ENTRY_POINTS[exercise]]


def judge(exercise: str, label: str, source: str):
    """The verdict of the exercise's self-check on this answer, in English, with stdout captured."""
    saved = os.environ.pop("D2LMINI_LANG", None)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return check_of(exercise)(function_of(exercise, label, source))
    finally:
        if saved is not None:
            os.environ["D2LMINI_LANG"] = saved


def accepted(verdict) -> bool:
    return bool(verdict.correct) or verdict.message.startswith("Correct!")


def named(verdict) -> bool:
    return "Likely cause: " in verdict.message


@functools.cache
def wrong_verdicts() -> tuple:
    return tuple((exercise, label, judge(exercise, label, source))
                 for exercise, label, source in held_apart_fresh.WRONG)


@functools.cache
def correct_verdicts() -> tuple:
    return tuple((exercise, label, judge(exercise, label, source))
                 for exercise, label, source in held_apart_fresh.CORRECT)


def rates() -> dict[str, tuple[int, int]]:
    """Per notebook (and "all"): (wrong answers, answers with a named cause)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for exercise, _label, verdict in wrong_verdicts():
        for key in (exercise[:2], "all"):
            counts[key][0] += 1
            counts[key][1] += named(verdict)
    order = sorted(counts, key=lambda key: (key == "all", key))
    return {key: (counts[key][0], counts[key][1]) for key in order}


def rate_table() -> str:
    lines = ["notebook  answers  named   rate"]
    for key, (total, hits) in rates().items():
        lines.append(f"{key:>8}  {total:>7}  {hits:>5}  {hits / total:>6.1%}")
    return "\n".join(lines)


def test_the_set_covers_every_coding_exercise_of_01_to_09():
    coding = {entry["id"] for entry in EXERCISES if entry["kind"] == "coding" and entry["id"][:2] <= "09"}
    covered = {exercise for exercise, _, _ in held_apart_fresh.WRONG}
    assert covered == coding - TRAINING - ADDED_AFTER_THE_SET
    assert ADDED_AFTER_THE_SET <= coding  # an exercise that is gone leaves this list
    assert set(held_apart_fresh.ENTRY_POINTS) == covered
    assert len(held_apart_fresh.WRONG) >= 300 and len(held_apart_fresh.CORRECT) >= 20
    assert all(len(SPEC[exercise]["slots"]) == 1 for exercise in covered)  # one function per answer


def test_every_correct_answer_is_accepted():
    rejected = [f"{exercise} [{label}]: {verdict.message[:300]}"
                for exercise, label, verdict in correct_verdicts() if not accepted(verdict)]
    assert rejected == [], "\n".join(rejected)


def accepted_wrong_answers() -> set:
    return {(exercise, label) for exercise, label, verdict in wrong_verdicts() if accepted(verdict)}


def test_no_wrong_answer_is_accepted():
    # When the set was first run 4 wrong answers got "Correct!" (06 and 07/08 accepted the inputs
    # themselves where new tensors are asked and a tensor where a number is; 07's Kneser-Ney cases had
    # no pair that overlaps itself, so `str.count` passed): the checks now refuse them (#45).
    wrongly = sorted(accepted_wrong_answers())
    assert wrongly == [], "\n".join(f"{exercise} [{label}]" for exercise, label in wrongly)


@pytest.mark.xfail(strict=True, reason="first measured 50.1 % (169 of 337 wrong answers get a named cause) "
                                      "before anything was changed; per notebook 01 60 %, 02 44 %, 03 44 %, "
                                      "04 47 %, 05 58 %, 06 47 %, 07 62 %, 08 41 %, 09 60 %. Still 50.1 % "
                                      "(169/337, every notebook's rate the same) after the four checks that "
                                      "accepted a wrong answer were fixed: the four are now refused with "
                                      "what is wrong in their form or value, not a catalogued cause, and "
                                      "no catalogue entry was added, so nothing moved the rate")
def test_at_least_80_percent_of_the_wrong_answers_get_a_named_cause():
    print("\n" + rate_table())
    total, hits = rates()["all"]
    assert hits / total >= NAMED_AT_LEAST, rate_table()


def test_the_named_cause_rates_are_printed_per_notebook():
    table = rate_table()
    print("\n" + table)
    notebooks = {line.split()[0] for line in table.splitlines()[1:]}
    assert notebooks == {f"{n:02d}" for n in range(1, 10)} | {"all"}
