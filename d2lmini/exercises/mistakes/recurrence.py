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
    only_state=False,
    state_weight=True,
    scale=1.0,
    blocks="same",
):
    """The RNN step tanh(X W_xh + H W_hh + b_h) with the flags' mistakes (defaults: none): `blocks` says
    whether the inputs side by side and the weights stacked are in the same order."""
    recurrent = W_hh.T if transpose else W_hh  # one product, as notebook 02's fused step asks
    if input_after:
        return activation(H @ recurrent + b_h) + X @ W_xh
    if only_state:
        return X @ W_xh + activation(H @ recurrent) + b_h
    inputs = (state_sign * H, X) if blocks == "inputs swapped" else (X, state_sign * H)
    weights = (recurrent, W_xh) if blocks == "weights swapped" else (W_xh, recurrent)
    if not state_weight:
        inner = X @ W_xh + H
    else:
        inner = torch.cat(inputs, 1) @ torch.cat(weights, 0) if with_state else X @ W_xh
    inner = scale * inner
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
        Mistake(
            N_("H is added without its weight: the previous state enters the step through W_hh, H @ W_hh."),
            partial(_step_with, state_weight=False),
            section,
        ),
        Mistake(
            N_(
                "the two products are averaged: the step adds them, X W_xh + H W_hh, and the bias, before "
                "the tanh."
            ),
            partial(_step_with, scale=0.5),
            section,
        ),
        Mistake(
            N_("tanh wraps only the state's product: both products and the bias go inside it."),
            partial(_step_with, only_state=True),
            section,
        ),
        *(
            Mistake(
                N_(
                    "the blocks are side by side in one order and stacked in the other: [X, H] multiplies "
                    "W_xh stacked above W_hh, so that each input meets its own weight."
                ),
                partial(_step_with, blocks=blocks),
                FUSED_SECTION,
            )
            for blocks in ("inputs swapped", "weights swapped")
        ),
    )


RNN_STEP = _step_mistakes(STEP_SECTION)
# With a product outside the tanh there are two products, which the fused step's rule refuses.
FUSED_STEP = tuple(
    m for m in _step_mistakes(FUSED_SECTION) if not {"input_after", "only_state"} & set(m.gives.keywords)
)


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
    loop_over=1,
    kept="all",
    **step,
):
    """H_1 ... H_T from a zero H_0 with the flags' mistakes: the step's (see `_step_with`), the state not
    carried (or carried before its tanh), the states shifted by one (H_0 ... H_(T-1)), H_0 kept too, the
    loop over the batch's dimension, batch-major, concatenated, only the last, or every one the last."""
    zero = torch.zeros(tokens.shape[0], W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    H, states = zero + start, [zero] if shift else []
    for t in reversed(range(tokens.shape[1])) if reverse else range(tokens.shape[loop_over]):
        X = torch.nn.functional.one_hot(tokens[:, t], W_xh.shape[0]).to(W_xh.dtype)
        if carry == "pre-activation":  # H holds X W_xh + H W_hh + b_h; its tanh is stored
            H = _step_with(X, H, W_xh, W_hh, b_h, activation=lambda a: a)
            states.append(torch.tanh(H))
            continue
        H = _step_with(X, H if carry else zero, W_xh, W_hh, b_h, **step)
        states.append(H)
    states = states[:-1] if shift is True else states
    if kept == "last":
        return states[-1]
    states = [states[-1]] * len(states) if kept == "every one the last" else states
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
            N_(
                "the states include H_0: the result holds H_1 ... H_T, the state after each step, not the "
                "initial state before them."
            ),
            partial(_states_with, shift="with H_0"),
            UNROLL_SECTION,
        ),
        Mistake(
            N_("only the last state is returned: the result holds every state, H_1 ... H_T, stacked."),
            partial(_states_with, kept="last"),
            UNROLL_SECTION,
        ),
        Mistake(
            N_(
                "every stored state is the last one: the state was changed in place (H[:] = ..., +=), so "
                "each stored entry is the same tensor. Compute a new tensor at each step."
            ),
            partial(_states_with, kept="every one the last"),
            UNROLL_SECTION,
        ),
        Mistake(
            N_(
                "the state carried is the sum before the tanh: the step carries H_t = tanh(...), the very "
                "state it stores, into the next step."
            ),
            partial(_states_with, carry="pre-activation"),
            UNROLL_SECTION,
        ),
        Mistake(
            N_(
                "the loop runs over the batch's dimension: tokens is (batch, steps), so the loop over time "
                "runs over its second dimension, tokens.shape[1]."
            ),
            partial(_states_with, loop_over=0),
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
