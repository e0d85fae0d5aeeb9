"""Numeric questions are judged as a person would (#17): each case the issue lists, with its verdict.

Whole-number questions take whole numbers, shapes take whole-number tuples, "give more digits"
only where more digits would make the answer right, "about" and measured questions accept a
sensible rounding, and the notebook's own examples are not accepted as the student's.
"""

import pytest

from d2lmini.exercises import (
    as_shape,
    bptt,
    clipping,
    concat_matmul,
    hidden_state,
    number_verdict,
    perplexity,
    rnn_scratch,
    whole_number,
)

pytestmark = pytest.mark.torch_dependent


@pytest.mark.parametrize("check, answer", [
    (bptt.check_vanishing_steps, 43.7), (bptt.check_vanishing_steps, 44.3),
    (hidden_state.check_ngram_order, 4.5), (hidden_state.check_ngram_order, 5.4),
    (hidden_state.check_rnn_parameter_count, 7092.5),
])
def test_a_fraction_is_not_a_whole_number_answer(check, answer):
    result = check(answer)
    assert not result and "whole number" in result.message, result.message


@pytest.mark.parametrize("check, answer", [
    (bptt.check_vanishing_steps, 44), (bptt.check_vanishing_steps, 44.0),
    (hidden_state.check_ngram_order, 5), (hidden_state.check_ngram_order, 5.0),
])
def test_the_whole_number_is_right_as_int_or_float(check, answer):
    assert check(answer)


@pytest.mark.parametrize("answer", [(8.9, 64.2), ("8", "64"), (8.0, 64.0), (True, 64), "(8, 64)", (8, 64, 1)])
def test_only_whole_number_tuples_are_shapes(answer):
    result = hidden_state.check_hidden_state_shape(answer)
    assert not result and "whole numbers" in result.message


def test_a_shape_may_be_a_list_or_a_torch_size():
    import torch

    assert hidden_state.check_hidden_state_shape([8, 64])
    assert hidden_state.check_hidden_state_shape(torch.Size([8, 64]))
    assert concat_matmul.check_stacked_weight_shape((92, 64))
    assert not concat_matmul.check_gru_weight_shape((192.0, 28.0))
    assert as_shape((3, 4)) == (3, 4) and as_shape((3.0, 4)) is None
    assert whole_number(7.0) == 7 and whole_number(7.4) is None and whole_number(True) is None


@pytest.mark.parametrize("check, answer", [
    (perplexity.check_compressed_bytes, 4218),  # "about how many bytes"
    (perplexity.check_compressed_bytes, 4200),
    (perplexity.check_compressed_bytes, 4217.04),
    (clipping.check_value_clip_bound, 4.40790),  # 0.05 * 88.158: a rounded square root carried on
    (rnn_scratch.check_hidden_term_std, 0.5007),  # measured, as the question invites
    (rnn_scratch.check_hidden_term_std, 0.497),
])
def test_a_sensible_rounding_or_measurement_is_accepted(check, answer):
    result = check(answer)
    assert result, result.message


@pytest.mark.parametrize("check, answer", [
    (perplexity.check_compressed_bytes, 4100), (perplexity.check_compressed_bytes, 4300),
    (rnn_scratch.check_hidden_term_std, 0.52), (clipping.check_value_clip_bound, 4.39),
])
def test_a_rounding_too_far_off_is_not_accepted(check, answer):
    assert not check(answer)


@pytest.mark.parametrize("answer, expected, words", [
    (0.9, 0.8668, "Close — give more digits"),  # right at one figure: more digits would do it
    (0.86, 0.8668, "Close, but"),  # misrounded: more digits cannot help
    (2.69, 2.681417, "Close, but"),
    (4, 4.217, "Close — give more digits"),
    (4.3e3, 4217.04, "Close, but"),
])
def test_more_digits_is_suggested_only_when_it_would_help(answer, expected, words):
    result = number_verdict(answer, expected, "right", "hint")
    assert not result and result.message.startswith(words), result.message


@pytest.mark.parametrize("pair", [("listen", "silent"), ("silent", "listen"),
                                  ("dog bites man", "man bites dog")])
def test_the_notebooks_own_example_is_not_the_students(pair):
    result = hidden_state.check_same_bag(pair)
    assert not result and "your own" in result.message


def test_a_long_answer_from_a_rounded_step_is_accepted():
    # 06-3 as the issue found it: 0.05 * sqrt(2876) = 2.681417, answered 2.68135 (0.05 * 53.627)
    assert number_verdict(2.68135, 0.05 * 2876**0.5, "right", "hint")


def test_a_pair_of_ones_own_is_accepted():
    assert hidden_state.check_same_bag(("stop", "pots"))
