"""Tests for the self-checks of notebook 05's exercises."""

import torch
import torch.nn.functional as F
from IPython.lib.pretty import pretty

from d2lmini.exercises import bptt as ex
from d2lmini.exercises.coding import NOT_ATTEMPTED


def test_tanh_backward():
    assert ex.check_tanh_backward(2.0 * (1 - 0.36))
    assert ex.check_tanh_backward(1.28)
    assert not ex.check_tanh_backward(2.0 * (1 - 0.6))  # forgot to square
    assert not ex.check_tanh_backward(None)


def test_vanishing_steps():
    k = 0
    while 0.9**k >= 0.01:
        k += 1
    assert k == 44
    assert ex.vanishing_steps() == k
    assert ex.vanishing_steps(0.5, 0.25) == 3  # 0.5^2 = 0.25 is not below 0.25
    assert ex.check_vanishing_steps(44)
    assert not ex.check_vanishing_steps(43)
    assert not ex.check_vanishing_steps(True)
    assert not ex.check_vanishing_steps("forty-four")


def test_truncation_reach():
    assert ex.check_truncation_reach(20)
    assert not ex.check_truncation_reach(0)
    assert not ex.check_truncation_reach(13)
    assert not ex.check_truncation_reach(None)


def test_input_weight_grad_accepts_correct_functions():
    def with_one_hot(x_t, dA, vocab_size):
        return F.one_hot(x_t, vocab_size).to(dA.dtype).T @ dA

    def with_index_add(x_t, dA, vocab_size):
        return torch.zeros(vocab_size, dA.shape[1], dtype=dA.dtype).index_add_(0, x_t, dA)

    assert ex.check_input_weight_grad(with_one_hot)
    assert ex.check_input_weight_grad(with_index_add)


def test_input_weight_grad_rejects_wrong_answers():
    def overwrites(x_t, dA, vocab_size):  # a repeated token keeps only its last row
        grad = torch.zeros(vocab_size, dA.shape[1], dtype=dA.dtype)
        grad[x_t] = dA
        return grad

    def crashes(x_t, dA, vocab_size):
        raise RuntimeError("boom")

    assert not ex.check_input_weight_grad(None)
    assert ex.check_input_weight_grad(lambda x_t, dA, v: None).message == NOT_ATTEMPTED
    assert not ex.check_input_weight_grad(overwrites)
    result = ex.check_input_weight_grad(crashes)
    assert not result and "RuntimeError" in result.message
    assert not ex.check_input_weight_grad(lambda x_t, dA, v: dA)


def test_the_verdict_displays_itself_and_prints_nothing(capsys):
    assert pretty(ex.check_tanh_backward(1.28)).startswith("Correct!")
    assert capsys.readouterr().out == ""
