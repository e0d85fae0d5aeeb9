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
