"""The held-apart wrong answers (`tests/held_apart_wrong_answers.py`, written apart from the catalogue
of mistakes): none is accepted, at least 80 % get a named cause, and no verdict quotes a number of the
reference's result. The working answers they start from, and the solutions, are still accepted."""

import functools
import re
import sys
from pathlib import Path

import pytest
import torch
from solution_files import load_solution

from d2lmini.exercises import bptt, clipping, gates, hidden_state, one_hot, perplexity
from d2lmini.exercises.capstone import pieces

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import held_apart_wrong_answers  # noqa: E402 - beside this file
import mistake_rates  # noqa: E402 - a tool script, imported from tools/

pytestmark = [pytest.mark.torch_dependent, pytest.mark.usefixtures("english")]
NAMED_AT_LEAST = 0.80


@pytest.fixture
def english(monkeypatch):
    monkeypatch.delenv("D2LMINI_LANG", raising=False)


@functools.cache
def tallies() -> dict:
    return mistake_rates.judge_all()


def test_no_held_apart_wrong_answer_is_accepted():
    accepted = [label for tally in tallies().values() for label in tally.accepted]
    assert accepted == []


def test_at_least_80_percent_of_the_held_apart_wrong_answers_get_a_named_cause():
    answers = sum(t.answers for t in tallies().values())
    named = sum(t.named for t in tallies().values())
    assert answers >= 300
    assert named / answers >= NAMED_AT_LEAST, mistake_rates.table(tallies())


@pytest.mark.parametrize(
    "exercise, function",
    held_apart_wrong_answers.right_answers(),
    ids=[e for e, _ in held_apart_wrong_answers.right_answers()],
)
def test_the_working_answers_the_slips_start_from_are_accepted(exercise, function):
    verdict = mistake_rates.check_of(exercise)(function)
    assert verdict, verdict.message


SOLVED = [
    ("01:all_states", "01", "all_states"),
    ("02:fused_step", "02", "fused_step"),
    ("03:lookup", "03", "lookup"),
    ("03:one_hot", "03", "one_hot"),
    ("03:sequential_batches", "03", "batches_with_tail"),
    ("04:train_loop", "04", "train_loop"),
    ("05:masked_loss_and_grad", "05", "masked_loss_and_grad"),
    ("05:leaky_bptt", "05", "leaky_bptt"),
    ("06:clip_function", "06", "my_clip"),
    ("07:perplexity_function", "07", "perplexity"),
    ("07:kn_bigram", "07", "kn_bigram"),
    ("09:gru_cell", "09", "gru_cell"),
    ("09:lstm_cell", "09", "lstm_cell"),
    ("09:lstm_step_backward", "09", "lstm_step_backward"),
]


@pytest.mark.parametrize("exercise, notebook, name", SOLVED, ids=[e for e, _, _ in SOLVED])
def test_the_solutions_are_still_accepted(exercise, notebook, name):
    verdict = mistake_rates.check_of(exercise)(getattr(load_solution(notebook), name))
    assert verdict, verdict.message


# Each exercise's cases, whose reference results no verdict may quote.
CASES = {
    "01:all_states": hidden_state._all_states_cases,
    "03:lookup": one_hot._lookup_cases,
    "03:one_hot": one_hot._one_hot_cases,
    "03:sequential_batches": one_hot._sequential_cases,
    "05:masked_loss_and_grad": bptt._masked_loss_cases,
    "05:leaky_bptt": bptt._leaky_bptt_cases,
    "06:clip_function": clipping._clip_cases,
    "07:perplexity_function": perplexity._perplexity_cases,
    "07:kn_bigram": perplexity._kn_cases,
    "09:gru_cell": gates._gru_cases,
    "09:lstm_cell": gates._lstm_cases,
    "09:lstm_step_backward": gates._lstm_backward_cases,
    "08:forward": pieces._forward_cases,
    "08:perplexity": pieces._perplexity_cases,
}
DECIMAL = re.compile(r"-?\d+\.\d{2,}")


def _numbers(value) -> list[float]:
    if isinstance(value, torch.Tensor):
        return [float(v) for v in value.detach().double().reshape(-1).tolist()]
    if isinstance(value, list | tuple):
        return [n for item in value for n in _numbers(item)]
    return [float(value)] if isinstance(value, int | float) else []


@functools.cache
def reference_numbers(exercise: str) -> dict[str, tuple[float, ...]]:
    """Each case's label and the numbers of its reference result, away from 0 (on the CPU)."""
    return {
        case.label: tuple(n for n in _numbers(case.reference(*case.args)) if abs(n) > 1e-3)
        for case in CASES[exercise](torch.device("cpu"))
    }


def quotes_a_reference_number(message: str, exercise: str) -> str | None:
    """The decimal in `message` that matches a number of the reference result of the case the message
    names (of any case, when it names none) to its digits, or None."""
    cases = reference_numbers(exercise)
    named = [label for label in cases if f"For {label}" in message]
    numbers = cases[max(named, key=len)] if named else [n for values in cases.values() for n in values]
    for text in DECIMAL.findall(message):
        said, digits = float(text), len(text.split(".")[1])
        if any(abs(said - n) <= 0.5 * 10**-digits for n in numbers):
            return text
    return None


def test_a_quoted_reference_number_would_be_found():
    label, numbers = next(iter(reference_numbers("09:gru_cell").items()))
    assert quotes_a_reference_number(f"For {label}: the right entry is {numbers[0]:.4f}", "09:gru_cell")
    assert quotes_a_reference_number(f"the right entry is {numbers[0]:.4f}", "09:gru_cell")


@pytest.mark.parametrize("exercise", sorted(CASES))
def test_no_verdict_on_a_wrong_answer_quotes_a_number_of_the_reference(exercise):
    checked = 0
    for answer_exercise, label, function in held_apart_wrong_answers.wrong_answers():
        if answer_exercise != exercise:
            continue
        message = mistake_rates.check_of(exercise)(function).message
        assert quotes_a_reference_number(message, exercise) is None, (label, message)
        checked += 1
    assert checked > 0
