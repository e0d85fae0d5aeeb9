"""Self-checks for the exercises of notebook 05 (backpropagation through time).

Each `check_*` takes the student's answer, prints a verdict (with a hint when wrong)
and returns a `Verdict`. The numbers of each question are module constants.
"""

import math

import torch

from d2lmini.bptt import hidden_gradients, hidden_states, weight_gradients
from d2lmini.exercises import Verdict, count_verdict, number_verdict, self_check
from d2lmini.exercises.coding import Case, check_function, never, sampler

# Exercise 1: one step back through tanh.
TANH_H, TANH_DH = 0.6, 2.0
# Exercise 2: a scalar linear RNN h_t = W * h_{t-1}; when is the gradient below SHARE of its start?
SCALAR_W, SHARE = 0.9, 0.01
# Exercise 3: the state is detached every WINDOW steps (steps counted from 0).
WINDOW, LOSS_STEP = 10, 23


@self_check
def check_tanh_backward(answer) -> Verdict:
    """Exercise 1: dL/dA for H = tanh(A) = TANH_H and dL/dH = TANH_DH."""
    expected = TANH_DH * (1 - TANH_H**2)
    return number_verdict(
        answer, expected,
        f"dA = dH * (1 - H^2) = {TANH_DH} * (1 - {TANH_H}^2) = {expected:.2f}.",
        "The derivative of tanh can be written with its own output: tanh'(a) = 1 - tanh(a)^2. "
        "Multiply dL/dH by it.",
    )


def vanishing_steps(w: float = SCALAR_W, share: float = SHARE) -> int:
    """Return the smallest k with |w|^k < share (for 0 < |w| < 1)."""
    k = math.ceil(math.log(share) / math.log(abs(w)))
    while abs(w) ** k >= share:  # guard the edge where the ratio is a whole number
        k += 1
    return k


@self_check
def check_vanishing_steps(answer) -> Verdict:
    """Exercise 2: steps back until the gradient of h_t = W h_{t-1} is below SHARE of its start."""
    expected = vanishing_steps()
    return count_verdict(
        answer, expected,
        f"{SCALAR_W}^{expected - 1} = {SCALAR_W ** (expected - 1):.4f} is still above {SHARE}, "
        f"{SCALAR_W}^{expected} = {SCALAR_W**expected:.4f} is below: after {expected} steps.",
        f"Each step back multiplies the gradient by {SCALAR_W}. Find the smallest k with "
        f"{SCALAR_W}^k < {SHARE}, e.g. with math.log or a loop.",
    )


@self_check
def check_truncation_reach(answer) -> Verdict:
    """Exercise 3: earliest step t whose H_t gets gradient from the loss at LOSS_STEP (window WINDOW)."""
    expected = (LOSS_STEP // WINDOW) * WINDOW
    return count_verdict(
        answer, expected,
        f"Step {LOSS_STEP} lies in the window of steps {expected}..{expected + WINDOW - 1}; the state "
        f"entering it (H_{expected - 1}) was detached, so the gradient stops at H_{expected}.",
        f"The windows are steps 0..{WINDOW - 1}, {WINDOW}..{2 * WINDOW - 1}, ...; the gradient cannot "
        "leave the window that holds the loss. Which window holds step "
        f"{LOSS_STEP}, and where does it start?",
    )


def _input_weight_grad_reference(x_t, dA, vocab_size):
    """X_t^T dA for one-hot X_t, as `d2lmini.bptt.weight_gradients` computes it: an index_add of rows."""
    return torch.zeros(vocab_size, dA.shape[1], dtype=dA.dtype, device=dA.device).index_add_(0, x_t, dA)


def _input_weight_grad_cases(device: torch.device):
    rand = sampler(5, device, torch.float64)
    generator = torch.Generator().manual_seed(50)
    inputs = [("x_t = [3, 0, 3, 5] (token 3 twice), vocab_size=7, 6 hidden units",
               torch.tensor([3, 0, 3, 5]), 7, 6)]
    inputs += [(f"batch={batch}, vocab_size={vocab}, {hiddens} hidden units",
                torch.randint(vocab, (batch,), generator=generator), vocab, hiddens)
               for batch, vocab, hiddens in ((8, 28, 16), (1, 3, 2))]
    for label, x_t, vocab, hiddens in inputs:
        args = (x_t.to(device), rand(len(x_t), hiddens), vocab)
        yield Case(label, args, reference=_input_weight_grad_reference)


def check_input_weight_grad(fn) -> Verdict:
    """Exercise 4: `fn(x_t, dA, vocab_size)` must return X_t^T dA for one-hot X_t, shape (vocab, hiddens)."""
    return check_function(
        fn, _input_weight_grad_cases,
        "Your input-weight gradient adds the rows of dA into the rows of the tokens read.",
        signature="input_weight_grad(x_t, dA, vocab_size)", rtol=1e-9, atol=1e-12)


def reference_bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    """The package's backward pass (`d2lmini.bptt`) as exercise 6 asks for it: (dW_xh, dW_hh, db_h)."""
    vocab_size, num_hiddens = W_hq.shape[1], W_hq.shape[0]
    cache = {"X": X, "state": state, "hiddens": hiddens, "W_hh": W_hh, "W_hq": W_hq,
             "W_xh": torch.empty(vocab_size, num_hiddens, dtype=W_hh.dtype, device=W_hh.device)}
    _, dA_all, _ = hidden_gradients(d_outputs, None, cache)
    grads = weight_gradients(d_outputs, dA_all, cache)
    return grads["W_xh"], grads["W_hh"], grads["b_h"]


def _bptt_cases(device: torch.device):
    rand = sampler(6, device, torch.float64)
    generator = torch.Generator().manual_seed(60)
    for batch, steps, vocab, hiddens in ((2, 4, 5, 3), (3, 6, 7, 4), (1, 1, 3, 2)):
        X = torch.randint(vocab, (batch, steps), generator=generator).to(device)
        W_xh, W_hh = rand(vocab, hiddens), rand(hiddens, hiddens) * 0.5
        b_h, W_hq = rand(hiddens), rand(hiddens, vocab)
        state = rand(batch, hiddens).tanh()
        hiddens_all = hidden_states(X, state, W_xh, W_hh, b_h)
        d_outputs = rand(steps * batch, vocab)
        args = (X, state, hiddens_all, d_outputs, W_hh, W_hq)
        yield Case(f"batch={batch}, steps={steps}, vocab={vocab}, hiddens={hiddens}", args,
                   reference=reference_bptt, names=("dW_xh", "dW_hh", "db_h"))


def check_bptt(fn) -> Verdict:
    """Exercise 6: `fn(X, state, hiddens, d_outputs, W_hh, W_hq)` returns (dW_xh, dW_hh, db_h) by hand.

    hiddens is (steps, batch, hiddens) with H_t = hiddens[t]; d_outputs is dL/dO, (steps*batch, vocab),
    step-major. The gradients are compared with `d2lmini.bptt` in float64; autograd is not allowed.
    """
    return check_function(
        fn, _bptt_cases,
        "You walked the unrolled graph backwards: each dH_t adds what comes from its output and "
        "from the next step, and each weight collects its gradient from every step.",
        rules=[never({"backward", "grad", "_run_backward"}, "Compute the gradients by hand; the exercise "
                     "does not allow autograd (backward or torch.autograd.grad).")],
        signature="bptt(X, state, hiddens, d_outputs, W_hh, W_hq)", rtol=1e-7, atol=1e-10)
