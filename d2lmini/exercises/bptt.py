"""Self-checks for the exercises of notebook 05 (backpropagation through time).

Each `check_*` takes the student's answer and returns a `Verdict` (with a hint when wrong),
which shows itself when a cell ends with the check; nothing is printed. The numbers of each
question are module constants.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from d2lmini.bptt import hidden_gradients, hidden_states, weight_gradients
from d2lmini.exercises import Verdict, count_verdict, number_verdict, self_check
from d2lmini.exercises.coding import Case, check_function, never, sampler
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.i18n import N_, _

# Exercise 1: one step back through tanh.
TANH_H, TANH_DH = 0.6, 2.0
# Exercise 2: a scalar linear RNN h_t = W * h_{t-1}; when is the gradient below SHARE of its start?
SCALAR_W, SHARE = 0.9, 0.01
# Exercise 3: the state is detached every WINDOW steps (steps t = 1, 2, ... as in the notebook).
WINDOW, LOSS_STEP = 10, 23


@self_check
def check_tanh_backward(answer, h: float = TANH_H, grad: float = TANH_DH) -> Verdict:
    """Exercise 1: dL/dA for H = tanh(A) = `h` and dL/dH = `grad`."""
    expected = grad * (1 - h**2)
    return number_verdict(
        answer, expected,
        _("dA = dH * (1 - H^2) = {grad:g} * (1 - {h:g}^2) = "
          "{expected:.4g}.").format(grad=grad, h=h, expected=expected),
        _("The derivative of tanh can be written with its own output: tanh'(a) = 1 - tanh(a)^2. Multiply "
          "dL/dH by it."),
    )


def vanishing_steps(w: float = SCALAR_W, share: float = SHARE) -> int:
    """Return the smallest k with |w|^k < share (for 0 < |w| < 1)."""
    k = math.ceil(math.log(share) / math.log(abs(w)))
    while abs(w) ** k >= share:  # guard the edge where the ratio is a whole number
        k += 1
    return k


@self_check
def check_vanishing_steps(answer, w: float = SCALAR_W) -> Verdict:
    """Exercise 2: steps back until the gradient of h_t = w h_{t-1} is below SHARE of its start."""
    expected = vanishing_steps(w)
    return count_verdict(
        answer, expected,
        # TRANSLATORS: {w:g}^{before} is a power.
        _("{w:g}^{before} = {above:.4f} is still above {share}, "
          "{w:g}^{steps} = {below:.4f} is below: after {steps} "
          "steps.").format(w=w, before=expected - 1, above=w ** (expected - 1), share=SHARE, steps=expected,
                           below=w**expected),
        _("Each step back multiplies the gradient by {w:g}. Find the smallest k with {w:g}^k < {share}, "
          "e.g. with math.log or a loop.").format(w=w, share=SHARE),
    )


@self_check
def check_truncation_reach(answer, loss_step: int = LOSS_STEP) -> Verdict:
    """Exercise 3: earliest step t whose H_t gets gradient from the loss at `loss_step` (window WINDOW)."""
    expected = (loss_step - 1) // WINDOW * WINDOW + 1
    return count_verdict(
        answer, expected,
        # TRANSLATORS: H_{before} and H_{first} are hidden states H with their step as index.
        _("Step {loss_step} lies in the window of steps {first}..{last}; the state "
          "entering it (H_{before}) was detached, so the gradient stops at "
          "H_{first}.").format(loss_step=loss_step, first=expected, last=expected + WINDOW - 1,
                               before=expected - 1),
        _("The windows are steps 1..{window}, {next_first}..{next_last}, ...; the gradient cannot "
          "leave the window that holds the loss. Which window holds step {loss_step}, and where does "
          "it start?").format(window=WINDOW, next_first=WINDOW + 1, next_last=2 * WINDOW,
                              loss_step=loss_step),
    )


# Exercise 4: the loss and its gradient for a minibatch of sequences padded at their ends.
def real_steps(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """Exercise 4's mask: True for the real (not padded) rows of step-major outputs, shape (steps*batch,)."""
    return (torch.arange(steps, device=lengths.device) < lengths[:, None]).T.reshape(-1)


def reference_masked_loss_and_grad(outputs, Y, lengths):
    """Exercise 4's (loss, dL/doutputs): the mean cross-entropy over the real steps, by autograd."""
    with torch.enable_grad():
        leaf = outputs.detach().clone().requires_grad_()
        losses = F.cross_entropy(leaf, Y.T.reshape(-1), reduction="none")
        loss = losses[real_steps(lengths, Y.shape[1])].mean()
        (d_outputs,) = torch.autograd.grad(loss, leaf)
    return float(loss.detach()), d_outputs


def _where_in_outputs(batch: int) -> Callable[[str, tuple], str]:
    def locate(what: str, index: tuple) -> str:
        if len(index) != 2:
            return ""
        row, column = index
        # TRANSLATORS: {where} of "the result is wrong{where}", with its leading space in English.
        return _(" at row {row} (step {step}, sequence {sequence}), column {column}").format(
            row=row, step=row // batch + 1, sequence=row % batch, column=column)
    return locate


def _masked_loss_cases(device: torch.device):
    rand = sampler(4, device, torch.float64)
    generator = torch.Generator().manual_seed(40)
    inputs = [  # targets Y (batch, steps), lengths, vocabulary size
        (torch.tensor([[1, 3, 3, 0], [3, 1, 0, 0], [4, 0, 0, 0]]), [4, 2, 1], 5),
        (torch.tensor([[1]]), [1], 2),
        (torch.randint(2, (2, 5), generator=generator), [5, 5], 2),
        (torch.randint(7, (4, 6), generator=generator), [2, 6, 1, 5], 7),
    ]
    for Y, lengths, vocab in inputs:
        batch, steps = Y.shape
        args = (rand(steps * batch, vocab) * 2, Y.to(device), torch.tensor(lengths, device=device))
        label = (_("batch={batch}, steps={steps}, vocab={vocab}, lengths {lengths} (no padding)")
                 if min(lengths) == steps else
                 _("batch={batch}, steps={steps}, vocab={vocab}, lengths {lengths} (padded)"))
        yield Case(label.format(batch=batch, steps=steps, vocab=vocab, lengths=lengths), args,
                   reference=reference_masked_loss_and_grad, names=("loss", "d_outputs"),
                   locate=_where_in_outputs(batch))


def check_masked_loss_and_grad(fn) -> Verdict:
    """Exercise 4: `fn(outputs, Y, lengths)` returns (loss, d_outputs) for sequences padded at their ends.

    outputs are step-major logits (steps*batch, vocab), Y the targets (batch, steps) and
    lengths[i] the number of real steps of sequence i; the loss is the mean cross-entropy
    over the real steps only. Compared in float64 with autograd; autograd is not allowed in `fn`.
    """
    return check_function(
        fn, _masked_loss_cases,
        _("Padded steps send no gradient, and the mean divides by the number of real steps. Since the "
          "padding comes after every real step of its sequence, no gradient from it could reach a real "
          "step anyway: the backward loop itself needs no change."),
        rules=[never(AUTOGRAD_NAMES, N_("Compute the gradient by hand; the exercise does not allow "
                                        "autograd (backward, torch.autograd.grad, torch.func, "
                                        "requires_grad_, grad_fn)."))],
        signature="masked_loss_and_grad(outputs, Y, lengths)", rtol=1e-9, atol=1e-12,
        mistakes=mistakes_of("05:masked_loss_and_grad"))


def reference_bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    """The package's backward pass (`d2lmini.bptt`) as exercise 6 asks for it: (dW_xh, dW_hh, db_h)."""
    vocab_size, num_hiddens = W_hq.shape[1], W_hq.shape[0]
    cache = {"X": X, "state": state, "hiddens": hiddens, "W_hh": W_hh, "W_hq": W_hq,
             "W_xh": torch.empty(vocab_size, num_hiddens, dtype=W_hh.dtype, device=W_hh.device)}
    _dH, dA_all, _d_state = hidden_gradients(d_outputs, None, cache)
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
    """The capstone's backward piece: `fn(X, state, hiddens, d_outputs, W_hh, W_hq)` -> (dW_xh, dW_hh, db_h).

    The tanh RNN of notebook 05, whose page shows this loop (its exercise 5 is `check_leaky_bptt`).
    hiddens is (steps, batch, hiddens) with hiddens[i] = H_{i+1}; d_outputs is dL/dO,
    (steps*batch, vocab), step-major. The gradients are compared with `d2lmini.bptt` in float64;
    autograd is not allowed.
    """
    return check_function(
        fn, _bptt_cases,
        _("You walked the unrolled graph backwards: each dH_t adds what comes from its output and from the "
          "next step, and each weight collects its gradient from every step."),
        rules=[never({"backward", "grad", "_run_backward"}, N_("Compute the gradients by hand; the "
                                                               "exercise does not allow autograd (backward "
                                                               "or torch.autograd.grad)."))],
        signature="bptt(X, state, hiddens, d_outputs, W_hh, W_hq)", rtol=1e-7, atol=1e-10)


# Exercise 5: BPTT by hand for an RNN that is not on the page, a leaky integrator with ReLU:
#   A_t = X_t W_xh + H_{t-1} W_hh + b_h,   H_t = (1 - alpha) H_{t-1} + alpha relu(A_t).
# Its expected gradients come from autograd, which the student's function may not use.
AUTOGRAD_NAMES = frozenset({"backward", "grad", "_run_backward", "grad_fn", "requires_grad_"})
# The rule of every exercise that writes a backward pass by hand (05's leaky_bptt, 09's LSTM step).
GRADIENTS_BY_HAND = never(AUTOGRAD_NAMES, N_("Compute the gradients by hand; the exercise does not allow "
                                             "autograd (backward, torch.autograd.grad, torch.func, "
                                             "requires_grad_, grad_fn)."))


def leaky_states(X, state, W_xh, W_hh, b_h, alpha: float) -> torch.Tensor:
    """Return H_1..H_T of exercise 5's leaky-integrator ReLU RNN, stacked (steps, batch, hiddens)."""
    H, hiddens = state, []
    for i in range(X.shape[1]):  # step t = i + 1
        H = (1 - alpha) * H + alpha * torch.relu(W_xh[X[:, i]] + H @ W_hh + b_h)
        hiddens.append(H)
    return torch.stack(hiddens)


def reference_leaky_bptt(X, state, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    """Exercise 5's (dW_xh, dW_hh, db_h, d_state) and the hidden states, by autograd on `leaky_states`."""
    with torch.enable_grad():
        leaves = [t.detach().clone().requires_grad_() for t in (W_xh, W_hh, b_h, state)]
        hiddens = leaky_states(X, leaves[3], *leaves[:3], alpha)
        outputs = hiddens.reshape(-1, W_hh.shape[0]) @ W_hq
        grads = torch.autograd.grad(outputs, leaves, grad_outputs=d_outputs)
    return tuple(g.detach() for g in grads), hiddens.detach()


def _leaky_bptt_cases(device: torch.device):
    rand = sampler(7, device, torch.float64)
    generator = torch.Generator().manual_seed(70)
    shapes = (  # batch, steps, vocab, hiddens, alpha, start from a zero state
        (2, 4, 5, 3, 0.5, False), (3, 6, 7, 4, 0.3, False), (1, 1, 3, 2, 0.5, False),
        (4, 5, 6, 3, 1.0, True))
    for batch, steps, vocab, hiddens, alpha, zero_state in shapes:
        X = torch.randint(vocab, (batch, steps), generator=generator).to(device)
        W_xh, W_hh, b_h = rand(vocab, hiddens), rand(hiddens, hiddens) * 0.5, rand(hiddens) * 0.5
        W_hq = rand(hiddens, vocab)
        state = rand(batch, hiddens).abs() * (0 if zero_state else 1)
        d_outputs = rand(steps * batch, vocab)
        _grads, hiddens_all = reference_leaky_bptt(X, state, d_outputs, W_xh, W_hh, b_h, W_hq, alpha)
        label = (_("batch={batch}, steps={steps}, vocab={vocab}, hiddens={hiddens}, alpha={alpha}, a zero "
                   "initial state") if zero_state else
                 _("batch={batch}, steps={steps}, vocab={vocab}, hiddens={hiddens}, alpha={alpha}, a "
                   "random initial state"))
        yield Case(label.format(batch=batch, steps=steps, vocab=vocab, hiddens=hiddens, alpha=alpha),
                   (X, state, hiddens_all, d_outputs, W_xh, W_hh, b_h, W_hq, alpha),
                   reference=_leaky_reference, names=("dW_xh", "dW_hh", "db_h", "d_state"))


def _leaky_reference(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    """The gradients `reference_leaky_bptt` computes for a case's inputs (computed after the call)."""
    return reference_leaky_bptt(X, state, d_outputs, W_xh, W_hh, b_h, W_hq, alpha)[0]


def check_leaky_bptt(fn) -> Verdict:
    """Exercise 5: `fn(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha)` returns
    (dW_xh, dW_hh, db_h, d_state) of the leaky-integrator ReLU RNN, written by hand.

    hiddens[i] = H_{i+1} (steps, batch, hiddens); d_outputs is dL/dO (steps*batch, vocab),
    step-major; d_state = dL/dH_0. Compared in float64 with autograd on the same model;
    autograd is not allowed in `fn`, and neither is the package's code.
    """
    return check_function(
        fn, _leaky_bptt_cases,
        # TRANSLATORS: H_{t-1} is the formula's H with index t-1, not a field: keep it as it is.
        _("You adapted the step's backward: ReLU's derivative needs A_t, H_{t-1} sends its gradient back "
          "along both of its paths, and each weight sums its gradient over time."),
        rules=[GRADIENTS_BY_HAND],
        signature="leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha)",
        rtol=1e-7, atol=1e-10, mistakes=mistakes_of("05:leaky_bptt"))
