"""#45's "Done when" measurement on the held-apart sets written after the first one.

- "fresh": `tests/held_apart_fresh.py` (commit 391e993). Since then it has been used to extend the
  catalogue of mistakes, so it no longer counts as held apart; its assertions stay.
- "third": `tests/held_apart_third.py` (commit 967a009), written by a helper session when the
  fresh set stopped being held apart; since used to extend the catalogue too.
- "fourth": `tests/held_apart_fourth.py` (commit 7ea847b), written by another helper session while the
  third set was being used, and measured here once, after that extension: the held-apart measurement.

Each set was written from the notebooks, exercises.json and the solutions only, without reading the
catalogue of mistakes, and committed before any answer was run through a self-check. Here every
answer goes through its exercise's self-check as the notebook calls it (`ex.check_xxx(fn)`, in
English, with stdout captured): each right answer must be accepted, no wrong answer may be
("Correct!"), and at least 80 % of the wrong answers must get a named cause ("Likely cause: ...",
as `tools/mistake_rates.py` counts it). Every test runs once per set, through the same code; the
per-notebook rates are printed (`pytest -s` shows them).
"""

import contextlib
import functools
import importlib
import io
import json
import os
import random
import types
from collections import defaultdict
from pathlib import Path

import held_apart_fourth
import held_apart_fresh
import held_apart_third
import pytest
import torch

pytestmark = pytest.mark.torch_dependent

NAMED_AT_LEAST = 0.80
EXERCISES = json.loads(
    (Path(__file__).resolve().parents[1] / "d2lmini/grading/assignment/exercises.json").read_text())
SPEC = {entry["id"]: entry for entry in EXERCISES}
# The two 08 checks that train for minutes are left out of the set, as its brief says.
TRAINING = {"08:train", "08:capstone"}
# Per set, the exercises added after it was written: answers to them must be written, like the set, by
# someone who has not read their catalogued mistakes; until then the set says it does not cover them.
SETS = {
    "fresh": (held_apart_fresh, {"09:lstm_step_backward"}),  # 391e993
    "third": (held_apart_third, set()),  # 967a009: every coding exercise of 01-09 but the two above
    "fourth": (held_apart_fourth, set()),  # 7ea847b: the same exercises, written while the third was used
}
BY_SET = pytest.mark.parametrize("name", list(SETS))
# Answers a set labels wrong that its exercise, read again, accepts: recorded here (the sets are never
# edited after a check has seen them), left out of the wrong answers, and each must stay accepted.
MISLABELLED = {
    ("third", "08:clip", "the norm returned as a tensor, not a number"):
        "08's table and stub ask for 'that norm', not a Python number (the perplexity row below it says "
        "'a number', and its check requires one): a 0-dim tensor holding the joint norm is right",
}


def check_of(exercise: str):
    """The self-check that exercises.json names for this exercise id."""
    spec = SPEC[exercise]
    return getattr(importlib.import_module(spec["module"]), spec["check"])


def function_of(name: str, exercise: str, label: str, source: str):
    """The answer's function, compiled as a notebook cell would compile it."""
    namespace: dict = {}
    exec(compile(source, f"<cell {exercise}: {label}>", "exec"), namespace)  # noqa: S102 - a student's cell
    return namespace[SETS[name][0].ENTRY_POINTS[exercise]]


@contextlib.contextmanager
def same_draws():
    """Every answer meets the same random state (Python's and torch's, put back after): a few answers
    draw an offset of their own, and a rate must not change from run to run."""
    state = random.getstate()
    random.seed(0)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            yield
    finally:
        random.setstate(state)


def judge(name: str, exercise: str, label: str, source: str):
    """The verdict of the exercise's self-check on this answer, in English, with stdout captured.

    A check that raises instead of giving a verdict is recorded as a refusal without a named cause
    (`crashed`), so the rates can still be measured; `test_every_answer_gets_a_verdict` lists them.
    """
    saved = os.environ.pop("D2LMINI_LANG", None)
    try:
        with contextlib.redirect_stdout(io.StringIO()), same_draws():
            return check_of(exercise)(function_of(name, exercise, label, source))
    except Exception as error:  # noqa: BLE001 - a check bug, reported by its own test
        return types.SimpleNamespace(correct=False, crashed=True,
                                     message=f"the check raised {type(error).__name__}: {error}")
    finally:
        if saved is not None:
            os.environ["D2LMINI_LANG"] = saved


def accepted(verdict) -> bool:
    return bool(verdict.correct) or verdict.message.startswith("Correct!")


def named(verdict) -> bool:
    return "Likely cause: " in verdict.message


@functools.cache
def wrong_verdicts(name: str) -> tuple:
    return tuple((exercise, label, judge(name, exercise, label, source))
                 for exercise, label, source in SETS[name][0].WRONG
                 if (name, exercise, label) not in MISLABELLED)


@functools.cache
def correct_verdicts(name: str) -> tuple:
    return tuple((exercise, label, judge(name, exercise, label, source))
                 for exercise, label, source in SETS[name][0].CORRECT)


def rates(name: str) -> dict[str, tuple[int, int]]:
    """Per notebook (and "all"): (wrong answers, answers with a named cause)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for exercise, _label, verdict in wrong_verdicts(name):
        for key in (exercise[:2], "all"):
            counts[key][0] += 1
            counts[key][1] += named(verdict)
    order = sorted(counts, key=lambda key: (key == "all", key))
    return {key: (counts[key][0], counts[key][1]) for key in order}


def rate_table(name: str) -> str:
    lines = [f"set {name!r}", "notebook  answers  named   rate"]
    for key, (total, hits) in rates(name).items():
        lines.append(f"{key:>8}  {total:>7}  {hits:>5}  {hits / total:>6.1%}")
    return "\n".join(lines)


@BY_SET
def test_the_set_covers_every_coding_exercise_of_01_to_09(name):
    module, added_after_the_set = SETS[name]
    coding = {entry["id"] for entry in EXERCISES if entry["kind"] == "coding" and entry["id"][:2] <= "09"}
    covered = {exercise for exercise, _, _ in module.WRONG}
    assert covered == coding - TRAINING - added_after_the_set
    assert added_after_the_set <= coding  # an exercise that is gone leaves this list
    assert set(module.ENTRY_POINTS) == covered
    assert {exercise for exercise, _, _ in module.CORRECT} == covered
    assert len(module.WRONG) >= 300 and len(module.CORRECT) >= 20
    assert all(len(SPEC[exercise]["slots"]) == 1 for exercise in covered)  # one function per answer


@BY_SET
def test_every_correct_answer_is_accepted(name):
    rejected = [f"{exercise} [{label}]: {verdict.message[:300]}"
                for exercise, label, verdict in correct_verdicts(name) if not accepted(verdict)]
    assert rejected == [], "\n".join(rejected)


def accepted_wrong_answers(name: str) -> set:
    return {(exercise, label) for exercise, label, verdict in wrong_verdicts(name) if accepted(verdict)}


def crashes(name: str) -> list[str]:
    return [f"{exercise} [{label}]: {verdict.message[:200]}"
            for exercise, label, verdict in correct_verdicts(name) + wrong_verdicts(name)
            if getattr(verdict, "crashed", False)]


@BY_SET
def test_every_answer_gets_a_verdict(name):
    # When the third set was first run, 08's check_clip raised ValueError (zip() argument 2 is longer
    # than argument 1) on an answer that returns a list of per-tensor norms where the joint norm is asked.
    crashed = crashes(name)
    assert crashed == [], "\n".join(crashed)


def test_each_mislabelled_answer_is_in_its_set_and_accepted():
    for (name, exercise, label), why in MISLABELLED.items():
        [source] = [source for e, lab, source in SETS[name][0].WRONG if (e, lab) == (exercise, label)]
        assert accepted(judge(name, exercise, label, source)), (exercise, label, why)


@BY_SET
def test_no_wrong_answer_is_accepted(name):
    # When the set was first run 4 wrong answers got "Correct!" (06 and 07/08 accepted the inputs
    # themselves where new tensors are asked and a tensor where a number is; 07's Kneser-Ney cases had
    # no pair that overlaps itself, so `str.count` passed): the checks now refuse them (#45).
    # When the third set was first run 6 wrong answers got "Correct!": 01's all_states and 03's lookup
    # returning float32 for float64 weights and 08's sgd converting to float32 (no case in another
    # dtype), 07's and 08's perplexity clamping p(target) at 1e-10 / 1e-12 (no case where the true
    # token's probability is that small); the sixth, 08's clip returning the norm as a tensor, is
    # right by the exercise's own words (MISLABELLED).
    wrongly = sorted(accepted_wrong_answers(name))
    assert wrongly == [], "\n".join(f"{exercise} [{label}]" for exercise, label in wrongly)


# Every set now passes the bar, so none is an xfail; what each measured is kept here.
FRESH_RECORD = (
    "first measured 50.1 % (169 of 337 wrong answers get a named cause) before anything was "
    "changed; per notebook 01 60 %, 02 44 %, 03 44 %, 04 47 %, 05 58 %, 06 47 %, 07 62 %, "
    "08 41 %, 09 60 %. Still 50.1 % (169/337, every notebook's rate the same) after the four checks "
    "that accepted a wrong answer were fixed: the four are now refused with what is wrong in "
    "their form or value, not a catalogued cause, and no catalogue entry was added, so nothing "
    "moved the rate. Then the catalogue was extended using this set's unnamed answers (734b0ea): "
    "58.5 % (197/337; 01 95 %, 02 75 %, 03 53 %, 04 47 %, 05 63 %, 06 76 %, 07 62 %, 08 44 %, 09 64 %), "
    "no longer a held-apart measurement (the third set is). Then, with the families found from the third "
    "set's unnamed answers (not from this set's): 80.4 % (271/337; 01 100 %, 02 100 %, 03 80 %, 04 63 %, "
    "05 81 %, 06 94 %, 07 74 %, 08 74 %, 09 85 %; one answer that draws a random offset is named or not "
    "from run to run, 270/337 is still 80.1 %)"
)
THIRD_RECORD = (
    "first measured 52.1 % (173 of 332 wrong answers get a named cause), before anything was changed "
    "for this set; per notebook 01 76 %, 02 53 %, 03 45 %, 04 71 %, 05 56 %, 06 73 %, 07 59 %, "
    "08 37 %, 09 59 %; 53.2 % (176/331) when its unnamed answers began to be used. Then the catalogue "
    "was extended with families of mistakes found from them (how a function failed, the slips of a "
    "loop over time, the slips of a gated step and of its backward pass, the shared relations named "
    "beside a hint): 90.3 % (299/331; 01 94 %, 02 93 %, 03 90 %, 04 82 %, 05 94 %, 06 100 %, 07 78 %, "
    "08 90 %, 09 93 %; two "
    "answers that draw a random offset are named or not from run to run), no longer a held-apart "
    "measurement (the fourth set is)"
)


FOURTH_RECORD = (
    "measured once, when registered, after the catalogue was extended from the third set and never from "
    "this one: 81.4 % (272 of 334; 01 100 %, 02 100 %, 03 90 %, 04 80 %, 05 83 %, 06 92 %, 07 68 %, "
    "08 77 %, 09 81 %), the same at torch 2.13 (AVX2) and 2.3.1 (default kernels); 0 right answers "
    "refused, 0 wrong accepted"
)


@BY_SET
def test_at_least_80_percent_of_the_wrong_answers_get_a_named_cause(name):
    print("\n" + rate_table(name))
    total, hits = rates(name)["all"]
    assert hits / total >= NAMED_AT_LEAST, rate_table(name)


@BY_SET
def test_the_named_cause_rates_are_printed_per_notebook(name):
    table = rate_table(name)
    print("\n" + table)
    notebooks = {line.split()[0] for line in table.splitlines()[2:]}
    assert notebooks == {f"{n:02d}" for n in range(1, 10)} | {"all"}
