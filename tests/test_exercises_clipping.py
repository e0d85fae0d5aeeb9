"""Tests for the self-checks of notebook 06 (d2lmini.exercises.clipping)."""

import math

import pytest
import torch
from IPython.lib.pretty import pretty

from d2lmini.exercises.clipping import (
    check_clip_function,
    check_clipped_entry,
    check_max_step,
    check_per_tensor_bound,
    check_value_clip_bound,
)

pytestmark = pytest.mark.torch_dependent


def test_number_checks_accept_the_right_answers():
    assert check_clipped_entry(6)  # norm 13, scale 6.5 / 13
    assert check_per_tensor_bound(2.2361)  # sqrt(5) to 4 decimals
    assert check_value_clip_bound(0.05 * math.sqrt(7772))
    assert check_max_step(2.5)


def test_number_checks_reject_wrong_answers_and_placeholders():
    assert not check_clipped_entry(12)
    assert not check_clipped_entry(6.5)
    assert not check_per_tensor_bound(1)
    assert not check_per_tensor_bound(5)
    assert not check_value_clip_bound(0.05)
    assert not check_value_clip_bound(0.05 * 7772)
    assert not check_max_step(1)
    for check in (check_clipped_entry, check_per_tensor_bound, check_value_clip_bound, check_max_step):
        assert not check(None)
        assert not check("a lot")


def test_checks_display_a_verdict(capsys):
    shown = pretty(check_max_step(2.5)) + pretty(check_max_step(None))
    assert "Correct!" in shown and "Not answered yet" in shown
    assert pretty(check_max_step(25)).startswith("Not yet.")
    assert capsys.readouterr().out == ""


def good_clip(grads, theta):
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads))
    return [g * min(1.0, theta / norm) if norm > 0 else g.clone() for g in grads]


def per_tensor_clip(grads, theta):
    return [g * min(1.0, theta / float(g.norm())) for g in grads]


def always_rescale(grads, theta):
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads))
    return [g * theta / norm for g in grads]


def in_place_without_return(grads, theta):
    torch.nn.utils.clip_grad_norm_  # noqa: B018 (a student might only look it up)
    for g in grads:
        g.mul_(0.5)


def crashes(grads, theta):
    raise RuntimeError("oops")


def test_clip_function_check():
    assert check_clip_function(good_clip)
    assert not check_clip_function(None)
    assert not check_clip_function(per_tensor_clip)
    assert not check_clip_function(always_rescale)
    assert not check_clip_function(in_place_without_return)
    failure = check_clip_function(crashes)
    assert not failure and "RuntimeError" in failure.message


@pytest.mark.parametrize("answer", ["6", "6.0", b"6", True])
def test_text_or_a_boolean_is_not_a_number_answer(answer):
    assert not check_clipped_entry(answer)
    assert check_clipped_entry(6) and check_clipped_entry(6.0)


def clip_returning_the_inputs_below_theta(grads, theta):
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads))
    return [g * (theta / norm) for g in grads] if norm > theta else list(grads)


def clip_returning_views_of_the_inputs_below_theta(grads, theta):
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads))
    return [g * (theta / norm) for g in grads] if norm > theta else [g.detach() for g in grads]


def clip_scaling_by_one_below_theta(grads, theta):
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads))
    return [g * min(1.0, theta / norm) if norm > 0 else g * 1.0 for g in grads]


@pytest.mark.parametrize("wrong", [clip_returning_the_inputs_below_theta,
                                   clip_returning_views_of_the_inputs_below_theta])
def test_returning_the_inputs_or_views_of_them_is_refused_and_named(wrong):
    # The exercise asks for "a list of new tensors": the values of these are right, their tensors are the
    # inputs' own memory (#45, the fresh held-apart set's "returns the input tensors themselves").
    result = check_clip_function(wrong)
    assert not result, result.message
    assert "new tensors" in result.message and "memory" in result.message, result.message
    assert "clone" not in result.message  # the mistake is named, the answer is not given


def test_new_tensors_with_the_inputs_values_are_accepted():
    assert check_clip_function(clip_scaling_by_one_below_theta)
    assert check_clip_function(good_clip)
