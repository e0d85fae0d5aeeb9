"""Self-checks for the exercises of notebook 05 (backpropagation through time).

Each `check_*` takes the student's answer, prints a verdict (with a hint when wrong)
and returns a `Verdict`. The numbers of each question are module constants.
"""

import math

import torch
import torch.nn.functional as F

from d2lmini.exercises import Verdict, close_enough, is_count, verdict

# Exercise 1: one step back through tanh.
TANH_H, TANH_DH = 0.6, 2.0
# Exercise 2: a scalar linear RNN h_t = W * h_{t-1}; when is the gradient below SHARE of its start?
SCALAR_W, SHARE = 0.9, 0.01
# Exercise 3: the state is detached every WINDOW steps (steps counted from 0).
WINDOW, LOSS_STEP = 10, 23


def check_tanh_backward(answer, quiet: bool = False) -> Verdict:
    """Exercise 1: dL/dA for H = tanh(A) = TANH_H and dL/dH = TANH_DH."""
    expected = TANH_DH * (1 - TANH_H**2)
    return verdict(
        close_enough(answer, expected, rel=1e-3),
        f"dA = dH * (1 - H^2) = {TANH_DH} * (1 - {TANH_H}^2) = {expected:.2f}.",
        "The derivative of tanh can be written with its own output: tanh'(a) = 1 - tanh(a)^2. "
        "Multiply dL/dH by it.",
        quiet,
    )


def vanishing_steps(w: float = SCALAR_W, share: float = SHARE) -> int:
    """Return the smallest k with |w|^k < share (for 0 < |w| < 1)."""
    k = math.ceil(math.log(share) / math.log(abs(w)))
    while abs(w) ** k >= share:  # guard the edge where the ratio is a whole number
        k += 1
    return k


def check_vanishing_steps(answer, quiet: bool = False) -> Verdict:
    """Exercise 2: steps back until the gradient of h_t = W h_{t-1} is below SHARE of its start."""
    expected = vanishing_steps()
    ok = is_count(answer, expected)
    return verdict(
        ok,
        f"{SCALAR_W}^{expected - 1} = {SCALAR_W ** (expected - 1):.4f} is still above {SHARE}, "
        f"{SCALAR_W}^{expected} = {SCALAR_W**expected:.4f} is below: after {expected} steps.",
        f"Each step back multiplies the gradient by {SCALAR_W}. Find the smallest k with "
        f"{SCALAR_W}^k < {SHARE}, e.g. with math.log or a loop.",
        quiet,
    )


def check_truncation_reach(answer, quiet: bool = False) -> Verdict:
    """Exercise 3: earliest step t whose H_t gets gradient from the loss at LOSS_STEP (window WINDOW)."""
    expected = (LOSS_STEP // WINDOW) * WINDOW
    ok = is_count(answer, expected)
    return verdict(
        ok,
        f"Step {LOSS_STEP} lies in the window of steps {expected}..{expected + WINDOW - 1}; the state "
        f"entering it (H_{expected - 1}) was detached, so the gradient stops at H_{expected}.",
        f"The windows are steps 0..{WINDOW - 1}, {WINDOW}..{2 * WINDOW - 1}, ...; the gradient cannot "
        "leave the window that holds the loss. Which window holds step "
        f"{LOSS_STEP}, and where does it start?",
        quiet,
    )


def check_input_weight_grad(fn, quiet: bool = False) -> Verdict:
    """Exercise 4: `fn(x_t, dA, vocab_size)` must return X_t^T dA for one-hot X_t, shape (vocab, hiddens)."""
    generator = torch.Generator().manual_seed(5)
    x_t = torch.tensor([3, 0, 3, 5])  # token 3 appears twice: its rows must add up
    dA = torch.randn(4, 6, generator=generator, dtype=torch.float64)
    expected = F.one_hot(x_t, 7).double().T @ dA
    hint = ("Write a function of (x_t, dA, vocab_size). X_t^T dA adds row b of dA into row x_t[b] "
            "of a (vocab_size, hiddens) zero matrix: use F.one_hot(x_t, vocab_size).T @ dA, or "
            "torch.zeros(...).index_add_(0, x_t, dA). A repeated token must get the sum of its rows.")
    if not callable(fn):
        return verdict(False, "", hint, quiet)
    try:
        result = fn(x_t, dA, 7)
        if result is None:
            return verdict(False, "", "Your function returned None. " + hint, quiet)
        result = torch.as_tensor(result, dtype=torch.float64)
    except Exception as error:  # the student's code may fail in any way
        return verdict(False, "", f"Your function raised {type(error).__name__}: {error}. " + hint, quiet)
    ok = tuple(result.shape) == (7, 6) and torch.allclose(result, expected, rtol=1e-9, atol=1e-12)
    return verdict(ok, "Your input-weight gradient adds the rows of dA into the rows of the tokens read.",
                   hint, quiet)
