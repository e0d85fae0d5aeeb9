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
    assert covered == coding - TRAINING
    assert set(held_apart_fresh.ENTRY_POINTS) == covered
    assert len(held_apart_fresh.WRONG) >= 300 and len(held_apart_fresh.CORRECT) >= 20
    assert all(len(SPEC[exercise]["slots"]) == 1 for exercise in covered)  # one function per answer


def test_every_correct_answer_is_accepted():
    rejected = [f"{exercise} [{label}]: {verdict.message[:300]}"
                for exercise, label, verdict in correct_verdicts() if not accepted(verdict)]
    assert rejected == [], "\n".join(rejected)


# Wrong answers the checks accepted when the set was first run (reported on #45, not fixed here): each is
# a gap in a check, not an answer that is right. The strict xfail below turns into a failure once a
# check refuses them, so the list and the mark are removed then; any other accepted answer fails now.
ACCEPTED_WHEN_FIRST_RUN = {
    ("06:clip_function", "returns the input tensors themselves below theta"):
        "the exercise asks for new tensors; the check tests that the inputs are unchanged, not that the "
        "returned tensors are new ones",
    ("07:perplexity_function", "returns a tensor"):
        "the exercise asks for 'the perplexity as a Python number'; a 0-dim tensor is accepted",
    ("07:kn_bigram", "c(ab) from str.count (misses overlapping pairs)"):
        "no case has a run of one character three long ('aaa'), where str.count undercounts the pair 'aa'",
    ("08:perplexity", "returns a tensor"):
        "the capstone's table asks for 'a number'; a 0-dim tensor is accepted",
}


def accepted_wrong_answers() -> set:
    return {(exercise, label) for exercise, label, verdict in wrong_verdicts() if accepted(verdict)}


def test_no_wrong_answer_is_accepted_beyond_those_already_reported():
    new = sorted(accepted_wrong_answers() - set(ACCEPTED_WHEN_FIRST_RUN))
    assert new == [], "\n".join(f"{exercise} [{label}]" for exercise, label in new)


@pytest.mark.xfail(strict=True, reason="4 wrong answers got 'Correct!' when the set was first run (see "
                                      "ACCEPTED_WHEN_FIRST_RUN): gaps in the checks, reported on #45")
def test_no_wrong_answer_is_accepted():
    wrongly = sorted(accepted_wrong_answers())
    assert wrongly == [], "\n".join(f"{exercise} [{label}]" for exercise, label in wrongly)


@pytest.mark.xfail(strict=True, reason="measured when the set was first run: 169 of 337 wrong answers "
                                      "(50.1 %) get a named cause; per notebook 01 60 %, 02 44 %, 03 44 %, "
                                      "04 47 %, 05 58 %, 06 47 %, 07 62 %, 08 41 %, 09 60 %")
def test_at_least_80_percent_of_the_wrong_answers_get_a_named_cause():
    print("\n" + rate_table())
    total, hits = rates()["all"]
    assert hits / total >= NAMED_AT_LEAST, rate_table()


def test_the_named_cause_rates_are_printed_per_notebook():
    table = rate_table()
    print("\n" + table)
    notebooks = {line.split()[0] for line in table.splitlines()[1:]}
    assert notebooks == {f"{n:02d}" for n in range(1, 10)} | {"all"}
