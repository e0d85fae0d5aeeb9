"""Notebooks 01 and 02's typical mistakes: the RNN step, the states over time, the fused step."""

from functools import partial

import torch

from d2lmini.exercises.coding import Mistake
from d2lmini.i18n import N_

STEP_SECTION = N_("notebook 01, section 6 (The RNN step and its output)")
UNROLL_SECTION = N_("notebook 01, section 7 (Unrolling in time)")
FUSED_SECTION = N_("notebook 02, section 3 (Why it works: block matrices)")


def _step_with(
    X,
    H,
    W_xh,
    W_hh,
    b_h,
    activation=torch.tanh,
    bias=1,
    transpose=False,
    bias_after=False,
    with_state=True,
    state_sign=1,
    input_after=False,
):
    """The RNN step tanh(X W_xh + H W_hh + b_h) with the flags' mistakes (defaults: none)."""
    recurrent = W_hh.T if transpose else W_hh  # one product, as notebook 02's fused step asks
    if input_after:
        return activation(H @ recurrent + b_h) + X @ W_xh
    inner = torch.cat((X, state_sign * H), 1) @ torch.cat((W_xh, recurrent), 0) if with_state else X @ W_xh
    if bias_after:
        return activation(inner) + b_h
    return activation(inner + bias * b_h)


def _step_mistakes(section: str) -> tuple[Mistake, ...]:
    return (
        Mistake(
            N_("the step uses sigmoid, not tanh: the RNN's state is squashed by tanh, between -1 and 1."),
            partial(_step_with, activation=torch.sigmoid),
            section,
        ),
        Mistake(
            N_("the step uses relu, not tanh: the RNN's state is squashed by tanh, between -1 and 1."),
            partial(_step_with, activation=torch.relu),
            section,
        ),
        Mistake(
            N_("tanh is missing: the new state is tanh of the sum of the two products and the bias."),
            partial(_step_with, activation=lambda a: a),
            section,
        ),
        Mistake(
            N_("b_h is missing from the step: the bias is added before the tanh."),
            partial(_step_with, bias=0),
            section,
        ),
        Mistake(N_("b_h is added twice in the step (once is right)."), partial(_step_with, bias=2), section),
        Mistake(
            N_("b_h is subtracted: the bias is added to the two products."),
            partial(_step_with, bias=-1),
            section,
        ),
        Mistake(
            N_(
                "the state's product is subtracted: the new state is tanh of the input's product plus the "
                "state's product plus the bias."
            ),
            partial(_step_with, state_sign=-1),
            section,
        ),
        Mistake(
            N_("the input's product is added after the tanh: both products and the bias go inside it."),
            partial(_step_with, input_after=True),
            section,
        ),
        Mistake(
            N_("b_h is added after the tanh: it belongs inside, with the two products."),
            partial(_step_with, bias_after=True),
            section,
        ),
        Mistake(
            N_(
                "W_hh is transposed: the state H (batch, hiddens) multiplies W_hh as it is, H @ W_hh, with "
                "W_hh of shape (hidden inputs, hidden outputs)."
            ),
            partial(_step_with, transpose=True),
            section,
        ),
        Mistake(
            N_("the previous state is left out: the new state depends on the input and on H, through W_hh."),
            partial(_step_with, with_state=False),
            section,
        ),
    )


RNN_STEP = _step_mistakes(STEP_SECTION)
# With the input's product outside the tanh there are two products, which the fused step's rule refuses.
FUSED_STEP = tuple(m for m in _step_mistakes(FUSED_SECTION) if "input_after" not in m.gives.keywords)


def _states_with(
    tokens,
    W_xh,
    W_hh,
    b_h,
    carry=True,
    shift=False,
    layout="steps",
    stack=True,
    reverse=False,
    start=0.0,
    **step,
):
    """H_1 ... H_T from a zero H_0 with the flags' mistakes: the step's (see `_step_with`), the state not
    carried, the states shifted by one (H_0 ... H_(T-1)), batch-major, or concatenated."""
    zero = torch.zeros(tokens.shape[0], W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    H, states = zero + start, [zero] if shift else []
    for t in reversed(range(tokens.shape[1])) if reverse else range(tokens.shape[1]):
        X = torch.nn.functional.one_hot(tokens[:, t], W_xh.shape[0]).to(W_xh.dtype)
        H = _step_with(X, H if carry else zero, W_xh, W_hh, b_h, **step)
        states.append(H)
    states = states[:-1] if shift else states
    if not stack:
        return torch.cat(states)
    stacked = torch.stack(states)
    return stacked.transpose(0, 1) if layout == "batch" else stacked


def _states_mistakes() -> tuple[Mistake, ...]:
    # Without its previous state the step gives what a state never carried gives: named below.
    steps = tuple(
        Mistake(m.cause, partial(_states_with, **m.gives.keywords), m.section)
        for m in RNN_STEP
        if "with_state" not in m.gives.keywords
    )
    return steps + (
        Mistake(
            N_(
                "the state is not carried from step to step: every step starts from the zero state instead "
                "of the state the step before computed."
            ),
            partial(_states_with, carry=False),
            UNROLL_SECTION,
        ),
        Mistake(
            N_(
                "the states are off by one: the result holds H_0 ... H_(T-1), the state before each step; "
                "it should hold H_1 ... H_T, the state after each step."
            ),
            partial(_states_with, shift=True),
            UNROLL_SECTION,
        ),
        Mistake(
            N_(
                "the states are stacked batch-major: the result is (steps, batch, hiddens), the state of "
                "step t at index t."
            ),
            partial(_states_with, layout="batch"),
            UNROLL_SECTION,
        ),
        Mistake(
            N_(
                "the tokens are read from last to first: step t reads the tokens at position t of every "
                "sequence, from the first position on."
            ),
            partial(_states_with, reverse=True),
            UNROLL_SECTION,
        ),
        Mistake(
            N_("H_0 is not zero: the exercise starts from a state of zeros."),
            partial(_states_with, start=1.0),
            UNROLL_SECTION,
        ),
        Mistake(
            N_(
                "the states are concatenated into one long matrix: stack them, so that step t's state is "
                "the t-th entry of a new first dimension."
            ),
            partial(_states_with, stack=False),
            UNROLL_SECTION,
        ),
    )


ALL_STATES = _states_mistakes()
