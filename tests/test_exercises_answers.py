"""One fair rule for number answers, and the instructors' answers to every question exercise."""

import importlib
import math

import pytest
from course import WITH_EXERCISES
from IPython.lib.pretty import pretty
from solution_files import load_answers

from d2lmini.exercises import NOT_ANSWERED, clipping, number_verdict, perplexity, rnn_scratch, rounds_to

pytestmark = pytest.mark.torch_dependent

MODULES = {notebook.number: notebook.exercises for notebook in WITH_EXERCISES}


ALL_ANSWERS = [(nb, name, answer) for nb in MODULES for name, answer in load_answers(nb).items()]


@pytest.mark.parametrize("notebook, name, answer", ALL_ANSWERS, ids=[name for _, name, _ in ALL_ANSWERS])
def test_the_instructors_answer_is_accepted(notebook, name, answer):
    check = getattr(importlib.import_module(f"d2lmini.exercises.{MODULES[notebook]}"), name)
    result = check(answer)
    assert result, result.message


@pytest.mark.parametrize("notebook, name, answer",
                         [a for a in ALL_ANSWERS if isinstance(a[2], int | float) and math.isfinite(a[2])],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_an_answer_ten_percent_off_is_rejected(notebook, name, answer):
    check = getattr(importlib.import_module(f"d2lmini.exercises.{MODULES[notebook]}"), name)
    assert not check(answer * 1.1 + 1e-3)


@pytest.mark.parametrize("check, answer", [
    (rnn_scratch.check_temperature_probability, 0.87),  # 0.8668
    (clipping.check_per_tensor_bound, 2.24),  # sqrt(5) = 2.2361
    (perplexity.check_sequence_perplexity, 3.36),  # 3.3636
    (perplexity.check_bits_to_perplexity, (3.48, 1.25)),  # 3.4822, 1.2477
    (perplexity.check_compressed_bytes, 4217),
    (perplexity.check_compressed_bytes, 4217.0),
    (perplexity.check_compressed_bytes, 4.217e3),
    (clipping.check_value_clip_bound, 4.41),  # 0.05 * sqrt(7772) = 4.4079
])
def test_a_correctly_rounded_answer_is_accepted(check, answer):
    result = check(answer)
    assert result, result.message


def test_the_rounding_of_a_printed_number_is_accepted():
    assert rounds_to(3.94, 3.9357)  # the Markov floor, rounded to 3 figures
    assert rounds_to(3.936, 3.9357)
    assert not rounds_to(3.93, 3.9357)


def test_right_but_too_short_is_told_to_give_more_digits():
    result = number_verdict(0.9, 0.8668, "right", "a hint about the method")
    assert not result and result.message.startswith("Close — give more digits")
    assert "hint about the method" not in result.message


@pytest.mark.parametrize("answer", [0.86, 0.88, 0.8671])
def test_near_but_misrounded_is_close_but_not_told_that_more_digits_help(answer):
    result = number_verdict(answer, 0.8668, "right", "a hint about the method")
    assert not result and result.message.startswith("Close, but") and "rounding" in result.message
    assert "more digits" not in result.message.split(":")[0]
    assert "hint about the method" not in result.message


@pytest.mark.parametrize("answer", [0.5, 1.7, -0.8668, 86.68])
def test_far_off_gets_the_hint(answer):
    result = number_verdict(answer, 0.8668, "right", "a hint about the method")
    assert not result and "hint about the method" in result.message


@pytest.mark.parametrize("answer", ["0.87", True, [0.87], float("nan")])
def test_text_and_other_things_are_not_numbers(answer):
    result = number_verdict(answer, 0.8668, "right", "hint")
    assert not result and "Answer with a number" in result.message


def test_computed_answers_with_float_noise_are_accepted():
    assert rounds_to(0.1 + 0.2, 0.3)
    assert rounds_to(math.sqrt(5) * (1 + 1e-8), math.sqrt(5))


def test_none_is_not_answered_yet_and_shows_no_hint(capsys):
    result = clipping.check_max_step(None)
    assert not result and result.message == NOT_ANSWERED
    assert capsys.readouterr().out == ""  # nothing printed: the verdict displays itself
    assert pretty(result) == NOT_ANSWERED
