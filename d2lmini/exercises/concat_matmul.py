"""Self-checks for the exercises of notebook 02 (one matmul instead of two)."""

import functools

import torch

from d2lmini.exercises import Verdict, as_shape, count_verdict, self_check, verdict
from d2lmini.exercises.coding import at_most_matmuls, check_function
from d2lmini.exercises.guard.refusals import RNN
from d2lmini.exercises.hidden_state import rnn_step_cases
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.i18n import N_, _


@self_check
def check_stacked_weight_shape(answer, num_inputs: int = 28, num_hiddens: int = 64) -> Verdict:
    """Exercise 1: the shape of [W_xh; W_hh] for `num_inputs` inputs and `num_hiddens` hidden units."""
    expected = (num_inputs + num_hiddens, num_hiddens)
    return verdict(
        as_shape(answer) == expected,
        _("W_xh ({num_inputs} x {num_hiddens}) on top of W_hh ({num_hiddens} x {num_hiddens}) gives "
          "{expected}.").format(num_inputs=num_inputs, num_hiddens=num_hiddens, expected=expected),
        _("Stacking puts the rows of W_hh under the rows of W_xh: rows add up, columns stay. Give a tuple "
          "(rows, columns)."),
    )


def check_fused_step(step_fn) -> Verdict:
    """Exercise 2: `step_fn(X, H, W_xh, W_hh, b_h)` returns tanh(X W_xh + H W_hh + b_h) with one matmul."""
    return check_function(
        step_fn, functools.partial(rnn_step_cases, seed=2, sizes=((3, 5, 4), (1, 4, 2), (6, 28, 16))),
        _("One matmul, the same hidden state."),
        rules=[at_most_matmuls(1, N_("Your function multiplies matrices more than once; the exercise asks "
                                     "for a single matrix product."))],
        signature="fused_step(X, H, W_xh, W_hh, b_h)", bans=(RNN,),
        mistakes=mistakes_of("02:fused_step"))


def multiply_add_count(batch: int, num_inputs: int, num_hiddens: int) -> int:
    """Return the scalar multiplications of [X, H] [W_xh; W_hh]: batch * (inputs + hiddens) * hiddens."""
    return batch * (num_inputs + num_hiddens) * num_hiddens


@self_check
def check_multiplication_count(answer, batch: int = 32, num_inputs: int = 28,
                               num_hiddens: int = 64) -> Verdict:
    """Exercise 3: scalar multiplications of the fused product (the same as of the two products)."""
    expected = multiply_add_count(batch, num_inputs, num_hiddens)
    return count_verdict(
        answer, expected,
        _("{expected:,} multiplications, exactly as many as X W_xh and H W_hh together: fusing saves "
          "kernel launches and memory traffic, not arithmetic.").format(expected=expected),
        _("Each of the batch x hiddens entries of the result is a dot product of length inputs + hiddens."),
    )


@self_check
def check_gru_weight_shape(answer, num_inputs: int = 28, num_hiddens: int = 64) -> Verdict:
    """Exercise 4: the shape of `torch.nn.GRU(num_inputs, num_hiddens).weight_ih_l0`."""
    expected = tuple(torch.nn.GRU(num_inputs, num_hiddens).weight_ih_l0.shape)
    return verdict(
        as_shape(answer) == expected,
        _("{expected}: the input weights of the reset gate, the update gate and the candidate state are "
          "stacked into one matrix, so one matmul serves all three.").format(expected=expected),
        _("A GRU has three input-to-hidden weight matrices (two gates and a candidate); PyTorch stores "
          "them stacked, and transposed like nn.Linear (out_features first)."),
    )
