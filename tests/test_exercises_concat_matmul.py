"""Tests for the self-checks of notebook 02."""

import pytest
import torch

from d2lmini.exercises.concat_matmul import (
    check_fused_step,
    check_gru_weight_shape,
    check_multiplication_count,
    check_stacked_weight_shape,
)

pytestmark = pytest.mark.torch_dependent


def test_stacked_weight_shape():
    assert check_stacked_weight_shape((92, 64))
    assert not check_stacked_weight_shape((64, 92))
    assert not check_stacked_weight_shape(None)
    assert check_stacked_weight_shape((5, 4), num_inputs=1, num_hiddens=4)


def test_fused_step_accepts_a_correct_function():
    def fused(X, H, W_xh, W_hh, b_h):
        return torch.tanh(torch.cat((X, H), 1) @ torch.cat((W_xh, W_hh), 0) + b_h)

    assert check_fused_step(fused)


def test_fused_step_rejects_wrong_functions():
    assert not check_fused_step(None)
    assert not check_fused_step(lambda X, H, W_xh, W_hh, b_h: torch.tanh(X @ W_xh + b_h))
    assert not check_fused_step(lambda X, H, W_xh, W_hh, b_h: X @ W_xh + H @ W_hh + b_h)
    def fused_then_transposed(X, H, W_xh, W_hh, b_h):
        return torch.tanh(torch.cat((X, H), 1) @ torch.cat((W_xh, W_hh), 0) + b_h).T

    transposed = check_fused_step(fused_then_transposed)
    assert not transposed and "shape" in transposed.message


def test_fused_step_rejects_two_matmuls_though_the_values_are_right():
    result = check_fused_step(lambda X, H, W_xh, W_hh, b_h: torch.tanh(X @ W_xh + H @ W_hh + b_h))
    assert not result and "more than once" in result.message
    def mm_and_addmm(X, H, W_xh, W_hh, b_h):
        return torch.tanh(torch.mm(X, W_xh) + torch.addmm(b_h, H, W_hh))

    result = check_fused_step(mm_and_addmm)
    assert not result and "more than once" in result.message


def test_fused_step_reports_exceptions():
    def broken(X, H, W_xh, W_hh, b_h):
        return torch.cat((X, H), 0) @ torch.cat((W_xh, W_hh), 0)

    result = check_fused_step(broken)
    assert not result and "raised" in result.message


def test_multiplication_count():
    assert check_multiplication_count(32 * 92 * 64)
    assert check_multiplication_count(32 * 28 * 64 + 32 * 64 * 64)  # the same number
    assert not check_multiplication_count(32 * 92 * 92)


def test_gru_weight_shape():
    assert check_gru_weight_shape((192, 28))
    assert not check_gru_weight_shape((28, 192))
    assert not check_gru_weight_shape((64, 28))
